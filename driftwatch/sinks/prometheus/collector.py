"""Prometheus exposition: a collector over an immutable agent snapshot.

The agent's loop thread owns the monitors; the HTTP server answers scrapes on its own threads.
They meet in one place only: a ``source`` callable that returns the latest
:class:`~driftwatch.sinks.snapshot.AgentSnapshot`, an immutable value the loop replaces wholesale
(one attribute assignment, atomic in CPython). :class:`SnapshotCollector` calls it once per
scrape and builds every metric family from that one value, so a scrape never sees
half-updated state and processing an event costs the exporter nothing. The families
themselves, what each series means and why, are :mod:`driftwatch.sinks.prometheus.families`.

One series never fails a scrape: a sample whose labels cannot be encoded (a model id holding
a lone surrogate, from an old checkpoint: the decoder refuses such ids now) or whose building
raises is left out with the rest of its model's series, counted in
``driftwatch_scrape_dropped_series_total`` and logged once per model; everything else is
served with status 200. Only a failure of the snapshot itself answers 500.

The HTTP server that answers the scrapes
(:class:`~driftwatch.sinks.prometheus.server.MetricsServer`, with its own connection series from
:class:`~driftwatch.sinks.prometheus.server.HttpCollector`) lives in
:mod:`driftwatch.sinks.prometheus.server`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from driftwatch.sinks.prometheus.families import Families, ModelText
from driftwatch.sinks.snapshot import AgentSnapshot

if TYPE_CHECKING:
    from driftwatch.settings import AlertThresholds

__all__ = ["SnapshotCollector"]

logger = logging.getLogger(__name__)

_MAX_LOGGED_MODELS = 100
"""Model ids whose dropped series are logged (once each); further ones are only counted."""


class SnapshotCollector(Collector):
    """A Prometheus collector that renders the latest :class:`AgentSnapshot` at each scrape.

    ``source`` is called once per scrape, on the HTTP server's thread: it must be cheap and
    thread-safe, typically returning an attribute the agent's loop replaces. Every family is built
    fresh from that one value (the only state kept between scrapes is the count of dropped series,
    and each model's series as text, written again only for models whose snapshot changed:
    :mod:`driftwatch.sinks.prometheus.rendered`), so the per-event cost is zero and the scrape cost
    is O(models × measures) of joining text, plus the writing of the changed models' series. If
    ``source`` raises, the scrape fails (HTTP 500, Prometheus sets ``up`` to 0) rather than showing
    partial data; a model whose series cannot be encoded is left out and counted instead
    (``driftwatch_scrape_dropped_series_total``, see the module docstring).

    ``thresholds``, when given, maps a model id to its alert thresholds (the settings'
    ``alerts.thresholds``); they are exported for every model the snapshot holds, with the
    same labels as its measures.

    ``per_model``: how much each model exports, ``all``, ``standard`` or ``minimal`` (the
    settings' ``metrics.per_model``; :class:`~driftwatch.sinks.prometheus.families.Families`),
    and ``per_model_overrides`` the level of single models by id.

    ``deprecated``: whether to export the names deprecated until 0.3.0 as well
    (:mod:`driftwatch.sinks.prometheus.deprecated`; the settings'
    ``metrics.export_deprecated_metrics``).

    :meth:`describe` lists the families without calling ``source``, so registering the
    collector does not scrape it.

    Example:
        >>> from prometheus_client import CollectorRegistry
        >>> registry = CollectorRegistry()
        >>> registry.register(SnapshotCollector(lambda: AgentSnapshot.empty(1.7e9)))
        >>> registry.get_sample_value("driftwatch_ready")
        0.0
    """

    def __init__(self, source: Callable[[], AgentSnapshot],
                 thresholds: Callable[[str], AlertThresholds] | None = None,
                 deprecated: bool = True, per_model: str = "all",
                 per_model_overrides: Mapping[str, str] | None = None) -> None:
        self.source = source
        self.per_model = per_model
        self.per_model_overrides = dict(per_model_overrides or {})
        self.thresholds = thresholds
        self.deprecated = deprecated
        self._lock = threading.Lock()
        self._dropped = 0
        self._logged_models: set[str] = set()
        self._rendered: dict[str, ModelText] = {}

    def collect(self) -> Iterator[Metric]:
        families = self._families()
        rendered = families.fill(self.source(), self.thresholds, self._rendered)
        with self._lock:  # scrapes run on concurrent server threads
            self._rendered = rendered
            self._dropped += families.dropped_now
            dropped = self._dropped
            new = [m for m in families.dropped_models if m not in self._logged_models]
            if len(self._logged_models) < _MAX_LOGGED_MODELS:
                self._logged_models.update(new)
            else:
                new = []
        for model in new:
            logger.warning("model %s: its series cannot be exported (left out of every scrape, "
                           "counted in driftwatch_scrape_dropped_series_total)", ascii(model))
        families.dropped.add_metric([], dropped)
        return iter(families.all())

    def describe(self) -> Iterator[Metric]:
        return iter(self._families().all())

    def _families(self) -> Families:
        return Families(self.deprecated, self.per_model, self.per_model_overrides)
