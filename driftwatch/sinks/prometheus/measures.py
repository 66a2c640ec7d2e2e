"""The collectors of what the agent publishes (:class:`~driftwatch.sinks.sink.Published`),
for every sink: the Prometheus sink registers them with its server's registry, the OTLP sink
collects them on its interval (:mod:`driftwatch.sinks.otlp.translate`). One list, so every
sink sends the same families with the same names and labels."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from prometheus_client import PlatformCollector, ProcessCollector
from prometheus_client.registry import Collector

from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.prometheus.comparison_collector import ComparisonCollector
from driftwatch.sinks.prometheus.join_collector import JoinCollector
from driftwatch.sinks.sink import Published

if TYPE_CHECKING:
    from driftwatch.settings import AlertThresholds

__all__ = ["measure_collectors"]


def measure_collectors(published: Published,
                       thresholds: Callable[[str], AlertThresholds] | None, *,
                       deprecated: bool, per_model: str = "all",
                       per_model_overrides: Mapping[str, str] | None = None
                       ) -> list[Collector]:
    """The collectors of ``published``: the snapshot's families (with each model's alert
    ``thresholds``, and the names deprecated in 0.2.0 when ``deprecated``), the join's, the
    comparisons' (when the agent runs some), the process' (``process_*``: CPU, memory,
    descriptors; Linux) and the platform's (``python_info``). ``per_model`` and
    ``per_model_overrides`` say how much each model exports (``metrics.per_model``)."""
    collectors: list[Collector] = [
        SnapshotCollector(published.snapshot, thresholds, deprecated=deprecated,
                          per_model=per_model, per_model_overrides=per_model_overrides),
        JoinCollector(lambda: published.snapshot().join),
        ProcessCollector(registry=None),  # registered by the caller
        PlatformCollector(registry=None),
    ]
    if published.comparisons is not None:
        collectors.append(ComparisonCollector(published.comparisons))
    return collectors
