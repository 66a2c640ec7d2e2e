"""The OTLP sink's lifecycle against a real receiver started here: it exports on its
interval, once more at close, and a refused export is logged, never raised, its next export
carrying the values of its own time."""

from __future__ import annotations

import logging
import math
import time
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from driftwatch.core.monitor import Snapshot
from driftwatch.settings import OtlpExporterSettings
from driftwatch.sinks.sink import Published
from driftwatch.sinks.snapshot import AgentSnapshot
from tests.sinks.otlp.receiver import otlp_receiver, samples

if TYPE_CHECKING:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

    from driftwatch.sinks.otlp.sink import OtlpSink

T0 = 1_700_000_000.0


def published(events: list[int]) -> Published:
    """An agent's published values with one model whose event count is ``events[0]``: the
    test changes it between exports."""
    def snapshot() -> AgentSnapshot:
        model = Snapshot(model="fraud", events=events[0], positives=10, negatives=90,
                         values={"auc": 0.9}, normalized={}, thresholds={},
                         detector_states={}, alarms={}, last_event_time=T0,
                         last_alarm_time=math.nan)
        return AgentSnapshot(monitors=(model,), rejected={}, consumer_lag={}, ready=True,
                             started_time=T0)
    return Published(snapshot=snapshot, comparisons=None, ready=lambda: True,
                     not_ready_reasons=lambda: ())


def sink_for(url: str, events: list[int], interval: float = 3600, timeout: float = 5
             ) -> OtlpSink:
    # Imported here: the otlp extra (tests/sinks/otlp/conftest.py reports its absence).
    from driftwatch.sinks.otlp.sink import OtlpSink

    settings = OtlpExporterSettings(enabled=True, endpoint=url, interval_seconds=interval,
                                    timeout_seconds=timeout, compression="none")
    return OtlpSink(published(events), settings, thresholds=None)


def events_sent(request: ExportMetricsServiceRequest) -> float:
    return samples(request)[("driftwatch_events_processed_total", (("model", "fraud"),))]


OTLP = (("exporter", "otlp"),)
LAST_SUCCESS = ("driftwatch_exporter_last_success_timestamp_seconds", OTLP)


def exporter_counts(request: ExportMetricsServiceRequest) -> tuple[float, float]:
    """The exports and failures the request says the sink counted."""
    sent = samples(request)
    return (sent[("driftwatch_exporter_exports_total", OTLP)],
            sent[("driftwatch_exporter_export_failures_total", OTLP)])


def test_exports_every_interval_and_once_more_at_close() -> None:
    events = [100]
    with otlp_receiver() as receiver:
        sink = sink_for(receiver.url, events, interval=1, timeout=1)
        sink.start()
        try:
            receiver.wait_for(2)  # two interval exports, no close yet
        finally:
            events[0] = 250
            sink.close()
        received = len(receiver.requests)
        sink.close()  # idempotent: nothing more is sent
        assert len(receiver.requests) == received
    assert receiver.headers[0]["Content-Encoding"] is None  # compression: none
    assert receiver.sizes[0] == receiver.requests[0].ByteSize()
    assert [events_sent(r) for r in receiver.requests[:2]] == [100, 100]
    assert events_sent(receiver.requests[-1]) == 250  # the last values, sent at close


def test_a_refused_export_is_logged_once_and_the_next_sends_current_values(
        caplog: pytest.LogCaptureFixture) -> None:
    events = [100]
    with otlp_receiver(status=400) as receiver:
        sink = sink_for(receiver.url, events)
        with caplog.at_level(logging.INFO, logger="driftwatch.sinks.otlp.sink"):
            sink.publish()
            sink.publish()  # still failing: not logged again
            receiver.status = 200
            events[0] = 130
            sink.publish()
            sink.close()
    messages = [r.getMessage() for r in caplog.records if r.name == "driftwatch.sinks.otlp.sink"]
    assert sum("failed; these values are dropped" in m for m in messages) == 1, messages
    assert sum("succeed again" in m for m in messages) == 1, messages
    assert [events_sent(r) for r in receiver.requests] == [100, 100, 130, 130]
    # Counted, and carried by the later exports: each counts itself as attempted, and the
    # failures before it; the last success's time is sent once there was one.
    assert [exporter_counts(r) for r in receiver.requests] == [(1, 0), (2, 1), (3, 2), (4, 2)]
    assert [LAST_SUCCESS in samples(r) for r in receiver.requests] == [False] * 3 + [True]
    assert (sink.stats.exports, sink.stats.failures) == (4, 2)
    assert sink.stats.last_success_time is not None


def test_close_returns_when_nothing_listens(caplog: pytest.LogCaptureFixture) -> None:
    with otlp_receiver() as receiver:
        url = receiver.url
    sink = sink_for(url, [1], timeout=1)  # the receiver has stopped: connection refused
    sink.start()
    with caplog.at_level(logging.WARNING, logger="driftwatch.sinks.otlp.sink"):
        sink.close()
    assert any("failed" in r.getMessage() for r in caplog.records)


def test_the_export_level_applies_to_otlp_as_to_metrics() -> None:
    """``metrics.per_model: minimal`` keeps a model's AUC and drops its other measures, in the
    OTLP export as on ``/metrics``."""
    from driftwatch.sinks.otlp.sink import OtlpSink

    def snapshot() -> AgentSnapshot:
        model = Snapshot(model="fraud", events=100, positives=10, negatives=90,
                         values={"auc": 0.9, "f1": 0.5}, normalized={}, thresholds={},
                         detector_states={}, alarms={}, last_event_time=T0,
                         last_alarm_time=math.nan)
        return AgentSnapshot(monitors=(model,), rejected={}, consumer_lag={}, ready=True,
                             started_time=T0)

    source = Published(snapshot=snapshot, comparisons=None, ready=lambda: True,
                       not_ready_reasons=lambda: ())
    exported = {}
    for level in ("all", "minimal"):
        with otlp_receiver() as receiver:
            settings = OtlpExporterSettings(enabled=True, endpoint=receiver.url,
                                            interval_seconds=3600, compression="none")
            sink = OtlpSink(source, settings, thresholds=None, per_model=level)
            sink.start()
            sink.close()  # one export, at close
            exported[level] = samples(receiver.requests[-1])
    measures = {level: {dict(labels)["measure"] for (name, labels) in got
                        if name == "driftwatch_measure"}
                for level, got in exported.items()}
    assert measures == {"all": {"auc", "f1"}, "minimal": {"auc"}}


def test_metrics_shows_the_otlp_exports_and_their_failures() -> None:
    """With both sinks on, ``/metrics`` counts the OTLP sink's exports and failures: the
    endpoint operators alert on sees a receiver that drops the values."""
    from contextlib import ExitStack

    from driftwatch.settings import Settings
    from driftwatch.sinks.build import start_sinks
    from tests.sinks.prometheus.in_process import samples as scraped

    def scrape(url: str) -> dict[str, float]:
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        return {name: value for (name, labels), value in scraped(text).items()
                if name.startswith("driftwatch_exporter_") and labels == OTLP}

    with otlp_receiver(status=503) as receiver, ExitStack() as resources:
        settings = Settings(metrics={"host": "127.0.0.1", "port": 0},
                            exporters={"otlp": {"enabled": True, "endpoint": receiver.url,
                                                "interval_seconds": 1, "timeout_seconds": 1}})
        server = start_sinks(published([5]), settings, resources)
        receiver.wait_for(1)
        wait_until(lambda: scrape(server.url).get(
            "driftwatch_exporter_export_failures_total", 0) >= 1)
        failing = scrape(server.url)
        assert failing["driftwatch_exporter_exports_total"] >= 1
        assert LAST_SUCCESS[0] not in failing
        receiver.status = 200
        wait_until(lambda: LAST_SUCCESS[0] in scrape(server.url))
        shown = scrape(server.url)
    assert shown["driftwatch_exporter_export_failures_total"] >= 1
    assert shown["driftwatch_exporter_exports_total"] > shown[
        "driftwatch_exporter_export_failures_total"]


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll ``condition`` until true (fail after ``timeout`` s: a bound on a hang)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition never held")
        time.sleep(0.05)
