"""Prometheus families into OTLP metrics (driftwatch.sinks.otlp.translate), on worked
numbers: each kind of family, its name, its labels as attributes, a histogram's cumulative
buckets made counts per bucket."""

from __future__ import annotations

import math
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
)

START, NOW = 1_000, 2_000


def translated(family: Any) -> list[Any]:
    from driftwatch.sinks.otlp.translate import otlp_metrics

    return otlp_metrics(family, START, NOW)


def points(metric: Any) -> dict[tuple[tuple[str, Any], ...], float]:
    return {tuple(sorted(p.attributes.items())): p.value for p in metric.data.data_points}


def test_a_gauge_is_a_gauge_of_its_name_with_labels_as_attributes() -> None:
    from opentelemetry.sdk.metrics.export import Gauge

    family = GaugeMetricFamily("driftwatch_measure", "help", labels=["model", "measure"])
    family.add_metric(["m", "auc"], 0.75)
    family.add_metric(["m", "precision"], math.nan)
    (metric,) = translated(family)
    assert (metric.name, metric.description, type(metric.data)) == \
        ("driftwatch_measure", "help", Gauge)
    values = points(metric)
    assert values[(("measure", "auc"), ("model", "m"))] == 0.75
    assert math.isnan(values[(("measure", "precision"), ("model", "m"))])
    assert {(p.start_time_unix_nano, p.time_unix_nano) for p in metric.data.data_points} == \
        {(START, NOW)}


def test_a_counter_is_a_cumulative_monotonic_sum_named_total_without_created() -> None:
    from opentelemetry.sdk.metrics.export import AggregationTemporality, Sum

    family = CounterMetricFamily("driftwatch_alarms", "help", labels=["model"], created=5.0)
    family.add_metric(["m"], 3, created=5.0)
    (metric,) = translated(family)
    assert metric.name == "driftwatch_alarms_total"
    assert isinstance(metric.data, Sum) and metric.data.is_monotonic
    assert metric.data.aggregation_temporality is AggregationTemporality.CUMULATIVE
    assert points(metric) == {(("model", "m"),): 3.0}


def test_an_info_family_is_a_gauge_of_one_named_info() -> None:
    family = InfoMetricFamily("driftwatch_build", "help", value={"version": "0.2.0"})
    (metric,) = translated(family)
    assert metric.name == "driftwatch_build_info"
    assert points(metric) == {(("version", "0.2.0"),): 1.0}


def test_a_histogram_sends_counts_per_bucket_and_the_finite_bounds() -> None:
    from opentelemetry.sdk.metrics.export import Histogram

    family = HistogramMetricFamily("driftwatch_batch_processing_seconds", "help",
                                   labels=["model"])
    # Observations 0.5, 1.5, 1.7, 9: cumulative 1 at le=1, 3 at le=2, 4 at +Inf.
    family.add_metric(["m"], [("1.0", 1), ("2.0", 3), ("+Inf", 4)], sum_value=12.7)
    (metric,) = translated(family)
    assert metric.name == "driftwatch_batch_processing_seconds"
    assert isinstance(metric.data, Histogram)
    (point,) = metric.data.data_points
    assert dict(point.attributes) == {"model": "m"}
    assert list(point.explicit_bounds) == [1.0, 2.0]
    assert list(point.bucket_counts) == [1, 2, 1]
    assert (point.count, point.sum) == (4, 12.7)


def test_a_family_without_samples_sends_nothing() -> None:
    assert translated(GaugeMetricFamily("g", "help", labels=["model"])) == []
    assert translated(CounterMetricFamily("c", "help", labels=["model"])) == []
    assert translated(HistogramMetricFamily("h", "help", labels=["model"])) == []
