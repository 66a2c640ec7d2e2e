"""The Prometheus sink: the agent's families on the metrics server's ``/metrics``, rendered
at each scrape (a pull :class:`~driftwatch.sinks.sink.Sink`: nothing to send between
scrapes)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.registry import Collector

__all__ = ["PrometheusSink"]


class PrometheusSink:
    """Registers ``collectors`` (:func:`~driftwatch.sinks.prometheus.measures.
    measure_collectors`) with ``registry``, the one the metrics server exposes, from
    :meth:`start` to :meth:`close`."""

    name = "prometheus"

    def __init__(self, registry: CollectorRegistry, collectors: list[Collector]) -> None:
        self.registry = registry
        self.collectors = collectors
        self._registered: list[Collector] = []

    def start(self) -> None:
        """Register the collectors: the next scrape shows their families."""
        for collector in self.collectors:
            self.registry.register(collector)
            self._registered.append(collector)

    def publish(self) -> None:
        """Nothing: Prometheus reads the published values when it scrapes."""

    def close(self) -> None:
        """Unregister the collectors; idempotent."""
        while self._registered:
            self.registry.unregister(self._registered.pop())
