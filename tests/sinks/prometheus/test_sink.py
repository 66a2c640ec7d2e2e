"""The Prometheus sink switched off (``exporters.prometheus.enabled: false``): the metrics
endpoint keeps running (for the probes; the scrape below is answered), and ``/metrics`` shows
only the endpoint's own connection series."""

from __future__ import annotations

from pathlib import Path

from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from tests.sinks.prometheus.in_process import samples, scrape_after

BATCH = [Record("events", 0, i, None, b'{"model": "m", "label": %d, "score": 0.%d}'
                % (i % 2, i), 0) for i in range(10)]


def settings(tmp_path: Path, enabled: bool) -> Settings:
    return Settings(checkpoint={"backend": "file", "directory": str(tmp_path)},
                    metrics={"host": "127.0.0.1", "port": 0},
                    exporters={"prometheus": {"enabled": enabled}})


def test_without_the_prometheus_sink_metrics_shows_only_the_endpoints_own_series(
        tmp_path: Path) -> None:
    on = {name for name, _ in samples(scrape_after(settings(tmp_path / "on", True), BATCH))}
    off = {name for name, _ in samples(scrape_after(settings(tmp_path / "off", False), BATCH))}
    assert "driftwatch_events_processed_total" in on
    assert off and all(name.startswith("driftwatch_http_") for name in off), off
    assert off < on
