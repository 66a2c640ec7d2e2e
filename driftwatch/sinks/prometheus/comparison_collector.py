"""Prometheus families of the champion/challenger comparisons
(:mod:`driftwatch.agent.comparisons`): :class:`ComparisonCollector` renders the published
:class:`~driftwatch.sinks.comparison_snapshot.ComparisonSnapshot` values at each scrape, like
:class:`~driftwatch.sinks.prometheus.collector.SnapshotCollector`. Undefined values (an AUC
without both classes, a test without enough events) are omitted, as the exporter omits
undefined measures.

Metrics (label sets in braces)::

    driftwatch_comparison_events_total{comparison,model}             counter paired events
    driftwatch_comparison_unpaired_total{comparison,model,reason}    counter no challenger
    driftwatch_comparison_auc{comparison,model,role}                 gauge   champion|challenger
    driftwatch_comparison_auc_difference{comparison,model}           gauge   challenger − champion
    driftwatch_comparison_statistic{comparison,model,test}           gauge   z, χ², T, wins
    driftwatch_comparison_p_value{comparison,model,test}             gauge   two-sided
    driftwatch_comparison_kappa{comparison,model,kind}               gauge   relative|agreement
    driftwatch_comparison_blocks{comparison,model}                   gauge   complete recent blocks

``test`` is ``delong`` (AUC difference over the window), ``mcnemar`` (crisp predictions over
the window), ``sign`` and ``wilcoxon`` (AUC over the recent blocks). Bifet et al. 2015 (§4)
recommends the block tests; the alert rule template in ``helm/driftwatch/files/alerts.yaml``
uses Wilcoxon with at least 6 blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from driftwatch.sinks.comparison_snapshot import ComparisonSnapshot

TESTS = ("delong", "mcnemar", "sign", "wilcoxon")

_STATISTIC_OF = {
    "delong": "delong_z",
    "mcnemar": "mcnemar_statistic",
    "wilcoxon": "wilcoxon_statistic",
}
_P_VALUE_OF = {
    "delong": "delong_p_value",
    "mcnemar": "mcnemar_p_value",
    "sign": "sign_p_value",
    "wilcoxon": "wilcoxon_p_value",
}


class ComparisonCollector(Collector):
    """Renders the latest comparison snapshots at each scrape (see the module docstring).

    ``source`` is called once per scrape on the HTTP server's thread and must return an
    immutable value the agent's loop replaces. :meth:`describe` does not call it.

    Example:
        >>> from prometheus_client import CollectorRegistry
        >>> registry = CollectorRegistry()
        >>> snapshot = ComparisonSnapshot("v2", "churn", 3, {"missing_field": 1},
        ...                               {"auc_difference": 0.04, "wilcoxon_p_value": 0.01})
        >>> registry.register(ComparisonCollector(lambda: (snapshot,)))
        >>> labels = {"comparison": "v2", "model": "churn"}
        >>> registry.get_sample_value("driftwatch_comparison_auc_difference", labels)
        0.04
        >>> test = {**labels, "test": "wilcoxon"}
        >>> registry.get_sample_value("driftwatch_comparison_p_value", test)
        0.01
    """

    def __init__(self, source: Callable[[], Sequence[ComparisonSnapshot]]) -> None:
        self.source = source

    def describe(self) -> Iterator[Metric]:
        return iter(_families())

    def collect(self) -> Iterator[Metric]:
        (events, unpaired, auc, difference, statistic, p_value, kappa, blocks) = _families()
        for snap in self.source():
            base = [snap.name, snap.model]
            events.add_metric(base, snap.events)
            for reason, count in sorted(snap.unpaired.items()):
                unpaired.add_metric([*base, reason], count)
            # Undefined values (NaN) are omitted, as the exporter omits undefined measures.
            values = {k: v for k, v in snap.statistics.items() if math.isfinite(v)}
            for role in ("champion", "challenger"):
                if f"{role}_auc" in values:
                    auc.add_metric([*base, role], values[f"{role}_auc"])
            if "auc_difference" in values:
                difference.add_metric(base, values["auc_difference"])
            for test in TESTS:
                name = _STATISTIC_OF.get(test)
                if name is not None and name in values:
                    statistic.add_metric([*base, test], values[name])
                if _P_VALUE_OF[test] in values:
                    p_value.add_metric([*base, test], values[_P_VALUE_OF[test]])
            for kind in ("relative", "agreement"):
                if f"{kind}_kappa" in values:
                    kappa.add_metric([*base, kind], values[f"{kind}_kappa"])
            if "blocks" in values:
                blocks.add_metric(base, values["blocks"])
        yield from (events, unpaired, auc, difference, statistic, p_value, kappa, blocks)


_Families = tuple[
    CounterMetricFamily,
    CounterMetricFamily,
    GaugeMetricFamily,
    GaugeMetricFamily,
    GaugeMetricFamily,
    GaugeMetricFamily,
    GaugeMetricFamily,
    GaugeMetricFamily,
]


def _families() -> _Families:
    labels = ["comparison", "model"]
    return (
        CounterMetricFamily(
            "driftwatch_comparison_events",
            "Paired events (the model's events that carried the challenger's score).",
            labels=labels,
        ),
        CounterMetricFamily(
            "driftwatch_comparison_unpaired",
            "The model's events without a usable challenger score, by the decoder's reason.",
            labels=[*labels, "reason"],
        ),
        GaugeMetricFamily(
            "driftwatch_comparison_auc",
            "Prequential AUC of the champion and the challenger over the same window.",
            labels=[*labels, "role"],
        ),
        GaugeMetricFamily(
            "driftwatch_comparison_auc_difference",
            "Challenger AUC minus champion AUC over the window.",
            labels=labels,
        ),
        GaugeMetricFamily(
            "driftwatch_comparison_statistic",
            "Test statistic: DeLong's z, McNemar's statistic, Wilcoxon's T over recent blocks.",
            labels=[*labels, "test"],
        ),
        GaugeMetricFamily(
            "driftwatch_comparison_p_value",
            "Two-sided p-value of DeLong, McNemar (window), sign and Wilcoxon (recent blocks).",
            labels=[*labels, "test"],
        ),
        GaugeMetricFamily(
            "driftwatch_comparison_kappa",
            "κ of the challenger relative to the champion, and their agreement κ (window).",
            labels=[*labels, "kind"],
        ),
        GaugeMetricFamily(
            "driftwatch_comparison_blocks",
            "Complete recent blocks the sign and Wilcoxon tests use.",
            labels=labels,
        ),
    )
