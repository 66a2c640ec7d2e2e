"""The push exporters' own series: ``driftwatch_exporter_*`` from their
:class:`~driftwatch.sinks.export_stats.ExportStats`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from driftwatch.sinks.export_stats import ExportStats

__all__ = ["ExportCollector"]


class ExportCollector(Collector):
    """Per push exporter (label ``exporter``, e.g. ``otlp``): exports attempted, failed, and
    the time of the last accepted one. A rising failure count means values are being dropped
    (the sink logs only the first failure of a run)."""

    def __init__(self, stats: Mapping[str, ExportStats]) -> None:
        self.stats = stats

    def _families(self) -> tuple[CounterMetricFamily, CounterMetricFamily, GaugeMetricFamily]:
        return (
            CounterMetricFamily(
                "driftwatch_exporter_exports",
                "Exports a push exporter attempted (exporters.otlp: each interval's and the "
                "last at shutdown).", labels=("exporter",)),
            CounterMetricFamily(
                "driftwatch_exporter_export_failures",
                "Exports whose values were dropped: refused, unreachable or timed out after "
                "the exporter's retries.", labels=("exporter",)),
            GaugeMetricFamily(
                "driftwatch_exporter_last_success_timestamp_seconds",
                "Unix time of the last export the receiver accepted. Absent before the first.",
                labels=("exporter",)),
        )

    def collect(self) -> Iterator[Metric]:
        exports, failures, last = self._families()
        for name, stats in sorted(self.stats.items()):
            exports.add_metric([name], stats.exports)
            failures.add_metric([name], stats.failures)
            if stats.last_success_time is not None:
                last.add_metric([name], stats.last_success_time)
        return iter((exports, failures, last))

    def describe(self) -> Iterator[Metric]:
        return iter(self._families())
