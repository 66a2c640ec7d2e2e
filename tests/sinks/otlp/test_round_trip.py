"""The OTLP sink's round trip: an agent exports over OTLP/HTTP into a real receiver started
here (tests/sinks/otlp/receiver.py decodes the protobuf with opentelemetry-proto) and every
series it sends equals what its own ``/metrics`` shows for the same run, name, labels and
value.

Two agents run in-process on memory sources (nothing here is about Kafka), as the exporter's
tests run them (tests/sinks/prometheus/in_process.py): one joins predictions with delayed
labels, watches the scores and estimates (the join and estimate families), the other compares
a champion with a challenger (the comparison families); both export the snapshot's, the
process' and the platform's families. Each is scraped once it has processed every record,
then stopped: the OTLP sink's export at shutdown sends the same snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.version import __version__
from tests.sinks.otlp.receiver import (
    differences,
    normalized,
    otlp_receiver,
    resource_attributes,
    samples,
)
from tests.sinks.prometheus.in_process import samples as scraped
from tests.sinks.prometheus.in_process import scrape_after
from tests.sinks.prometheus.test_metrics_reference import compared_values, joined_values

ONLY_ON_METRICS = ("driftwatch_http_",)
"""The metrics endpoint's own series (its connections), about /metrics itself: not a sink's."""

EXPORT_COUNTS = "driftwatch_exporter_"
"""The OTLP sink's counts of its own exports: the same series on both, but an export counts
itself before it is sent (tests/sinks/otlp/test_sink.py checks their values)."""

READ_AT_COLLECTION = ("process_",)
"""Read from /proc at each collection (CPU seconds, memory): same series, values of their
own moment."""


def agent_settings(tmp_path: Path, endpoint: str, **extra: Any) -> Settings:
    return Settings(
        checkpoint={"backend": "file", "directory": str(tmp_path)},
        metrics={"host": "127.0.0.1", "port": 0, "export_deprecated_metrics": False},
        exporters={"otlp": {"enabled": True, "endpoint": endpoint,
                            "interval_seconds": 3600, "headers": {"X-Api-Key": "k1"}}},
        events={"time_field": "ts"},
        monitoring={"defaults": {"window_size": 200, "estimation": {"enabled": True}}},
        **extra)


@pytest.mark.parametrize("kind", ["join", "comparison"])
def test_otlp_export_equals_the_scrape(tmp_path: Path, kind: str) -> None:
    extra: dict[str, Any] = {
        "join": {"join": {"enabled": True, "kind_field": "kind", "max_pending": 500,
                          "score_drift": {"window": 200, "block_size": 100,
                                          "reference_size": 500}}},
        "comparison": {"comparisons": [{"name": "c", "model": "m",
                                        "challenger_score_field": "challenger"}]},
    }[kind]
    values = joined_values() if kind == "join" else compared_values()
    batch = [Record("events", 0, i, None, value, 0) for i, value in enumerate(values)]
    with otlp_receiver() as receiver:
        text = scrape_after(agent_settings(tmp_path, receiver.url, **extra), batch)
        receiver.wait_for(1)
    assert len(receiver.requests) == 1  # the interval is an hour: only the one at shutdown
    assert receiver.headers[0]["X-Api-Key"] == "k1"
    assert receiver.headers[0]["Content-Encoding"] == "gzip"  # exporters.otlp.compression
    assert receiver.sizes[0] * 2 < receiver.requests[0].ByteSize()
    resource = resource_attributes(receiver.requests[0])
    assert resource["service.name"] == "driftwatch"
    assert resource["service.version"] == __version__

    sent = samples(receiver.requests[0])
    shown = {key: value for key, value in normalized(scraped(text)).items()
             if not key[0].startswith(ONLY_ON_METRICS) and not key[0].endswith("_created")}
    assert sent.keys() == shown.keys()
    sent_now = {key: value for key, value in sent.items()
                if not key[0].startswith((*READ_AT_COLLECTION, EXPORT_COUNTS))}
    assert differences(sent_now, shown) == {}
    # Not vacuous: the run's own families are there, with values.
    names = {name for name, _ in sent}
    must = {"join": {"driftwatch_join_matched_total", "driftwatch_measure_estimated",
                     "driftwatch_label_delay_seconds_bucket"},
            "comparison": {"driftwatch_comparison_events_total", "driftwatch_comparison_auc"}}[kind]
    assert must | {"driftwatch_measure", "driftwatch_batch_processing_seconds_bucket",
                   "driftwatch_build_info", "python_info"} <= names, sorted(names)
