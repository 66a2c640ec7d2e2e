"""The agent's Prometheus metric families as OpenTelemetry metrics, one for one.

Every sink sends the families of :func:`~driftwatch.sinks.prometheus.measures.
measure_collectors`; this module renders what those collectors yield as the OpenTelemetry
SDK's :class:`MetricsData`, which the OTLP exporter encodes. The mapping keeps what a
dashboard or alert rule reads: the metric name is the sample name ``/metrics`` shows, and a
sample's labels are its data point's attributes, so a series is found under the same name
and labels whichever sink carried it (docs/exporters.md, "OTLP mapping"):

- gauge (and info, stateset, unknown): an OTLP Gauge per sample name, the value as a double
  (an info family's ``<name>_info`` is a gauge of 1, its labels the attributes);
- counter: an OTLP Sum, monotonic and cumulative, named ``<name>_total`` as on ``/metrics``
  (the ``_created`` sample is left out: the data points' start time carries it);
- histogram: an OTLP Histogram named as the family, with the bucket bounds (``le``, without
  ``+Inf``) as explicit bounds and the counts per bucket (Prometheus' are cumulative); sum
  and count as given. Min and max are not known to a Prometheus histogram and are not sent.

NaN values (an AUC before the window holds both classes) are sent as NaN, as ``/metrics``
shows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    DataT,
    Gauge,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from prometheus_client.metrics_core import Metric as Family
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

__all__ = ["metrics_data", "otlp_metrics"]

_CUMULATIVE = AggregationTemporality.CUMULATIVE


def metrics_data(collectors: Iterable[Collector], resource: Resource,
                 scope: InstrumentationScope, start_ns: int, now_ns: int) -> MetricsData:
    """What ``collectors`` yield now, as one export of ``resource`` and ``scope``: data
    points at ``now_ns``, the cumulative ones started at ``start_ns``."""
    metrics = [metric for collector in collectors for family in collector.collect()
               for metric in otlp_metrics(family, start_ns, now_ns)]
    return MetricsData(resource_metrics=[ResourceMetrics(
        resource=resource, schema_url="",
        scope_metrics=[ScopeMetrics(scope=scope, metrics=metrics, schema_url="")])])


def otlp_metrics(family: Family, start_ns: int, now_ns: int) -> list[Metric]:
    """``family`` as OTLP metrics (one, or one per sample name for a gauge-like family)."""
    if family.type == "counter":
        points = [_number(sample, start_ns, now_ns) for sample in family.samples
                  if sample.name.endswith("_total")]
        return [_metric(family, family.name + "_total",
                        Sum(data_points=points, aggregation_temporality=_CUMULATIVE,
                            is_monotonic=True))] if points else []
    if family.type == "histogram":
        return [_metric(family, family.name, Histogram(
            data_points=_histogram_points(family, start_ns, now_ns),
            aggregation_temporality=_CUMULATIVE))] if family.samples else []
    by_name: dict[str, list[NumberDataPoint]] = {}
    for sample in family.samples:
        if not sample.name.endswith("_created"):
            by_name.setdefault(sample.name, []).append(_number(sample, start_ns, now_ns))
    return [_metric(family, name, Gauge(data_points=points))
            for name, points in by_name.items()]


def _metric(family: Family, name: str, data: DataT) -> Metric:
    return Metric(name=name, description=family.documentation, unit=family.unit, data=data)


def _number(sample: Sample, start_ns: int, now_ns: int) -> NumberDataPoint:
    return NumberDataPoint(attributes=dict(sample.labels), start_time_unix_nano=start_ns,
                           time_unix_nano=now_ns, value=float(sample.value))


def _histogram_points(family: Family, start_ns: int, now_ns: int
                      ) -> list[HistogramDataPoint]:
    """One data point per label set: Prometheus' cumulative ``_bucket`` counts made counts
    per bucket, the ``+Inf`` bucket the last one."""
    series: dict[tuple[tuple[str, str], ...], list[Sample]] = {}
    for sample in family.samples:
        labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))
        series.setdefault(labels, []).append(sample)
    points = []
    for labels, samples in series.items():
        buckets = sorted((float(s.labels["le"]), s.value) for s in samples
                          if s.name == family.name + "_bucket")
        total = _value(samples, family.name + "_sum")
        count = _value(samples, family.name + "_count")
        cumulative = [int(value) for _, value in buckets]
        points.append(HistogramDataPoint(
            attributes=dict(labels), start_time_unix_nano=start_ns, time_unix_nano=now_ns,
            count=int(count), sum=total,
            bucket_counts=[after - before for before, after
                           in zip([0, *cumulative[:-1]], cumulative, strict=True)],
            explicit_bounds=[bound for bound, _ in buckets if bound != float("inf")],
            min=None, max=None))  # type: ignore[arg-type]  # unknown: left unset
    return points


def _value(samples: Sequence[Sample], name: str) -> float:
    return next(float(s.value) for s in samples if s.name == name)
