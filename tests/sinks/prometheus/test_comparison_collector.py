"""ComparisonCollector: the comparisons' snapshots rendered for Prometheus, read back from a
registry."""

from __future__ import annotations

import doctest

from prometheus_client import CollectorRegistry

from driftwatch.agent.comparisons import Comparisons
from driftwatch.sinks.prometheus import comparison_collector
from driftwatch.sinks.prometheus.comparison_collector import ComparisonCollector
from tests.agent.test_comparisons import CONFIG, FMT, feed, records


def test_doctests() -> None:
    assert doctest.testmod(comparison_collector).failed == 0


def test_collector_renders_the_snapshot_and_omits_undefined_values() -> None:
    comparisons = Comparisons([CONFIG], FMT)
    registry = CollectorRegistry()
    registry.register(ComparisonCollector(comparisons.snapshots))
    labels = {"comparison": "v2", "model": "churn"}
    assert registry.get_sample_value("driftwatch_comparison_events_total", labels) == 0
    assert registry.get_sample_value("driftwatch_comparison_auc_difference", labels) is None
    feed(comparisons, records(4, 200))
    values = comparisons.snapshots()[0].statistics
    assert registry.get_sample_value("driftwatch_comparison_events_total", labels) == 200
    assert (
        registry.get_sample_value("driftwatch_comparison_auc_difference", labels)
        == values["auc_difference"]
    )
    for test, key in [
        ("delong", "delong_p_value"),
        ("mcnemar", "mcnemar_p_value"),
        ("sign", "sign_p_value"),
        ("wilcoxon", "wilcoxon_p_value"),
    ]:
        assert (
            registry.get_sample_value("driftwatch_comparison_p_value", {**labels, "test": test})
            == values[key]
        )
    assert (
        registry.get_sample_value("driftwatch_comparison_auc", {**labels, "role": "challenger"})
        == values["challenger_auc"]
    )
    assert registry.get_sample_value("driftwatch_comparison_blocks", labels) == 5
    names = {family.name for family in ComparisonCollector(lambda: ()).describe()}
    assert names == {
        f"driftwatch_comparison_{n}"
        for n in (
            "events",
            "unpaired",
            "auc",
            "auc_difference",
            "statistic",
            "p_value",
            "kappa",
            "blocks",
        )
    }
