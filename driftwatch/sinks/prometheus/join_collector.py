"""Prometheus metrics of delayed labels: the join's health and the label-free signals.

A second collector beside :class:`~driftwatch.sinks.prometheus.collector.SnapshotCollector`, on
the same registry and endpoint, built the same way: ``source`` returns the latest immutable
:class:`~driftwatch.core.delayed.JoinSnapshot` (None when predictions and labels come joined,
and then nothing is exported), and every family is built from that one value at scrape time.

Metrics (label sets in braces)::

    driftwatch_join_predictions_total{model}               counter  predictions (replays excluded)
    driftwatch_join_labels_total                           counter  label records
    driftwatch_join_matched_total{model}                   counter  pairs joined
    driftwatch_join_dropped_total{stream,reason}           counter  left unjoined, by reason
    driftwatch_join_pending_predictions{model}             gauge    waiting for their label
    driftwatch_join_pending_labels                         gauge    waiting for their prediction
    driftwatch_join_watermark_timestamp_seconds{stream}    gauge    latest record time per stream
    driftwatch_label_delay_seconds{model}                  histogram  label time − prediction time
    driftwatch_score_drift{model,signal}                   gauge    sliding KS, PSI, positive rates
    driftwatch_score_drift_z{model,signal}                 gauge    latest block's z-score
    driftwatch_score_drift_blocks_total{model}             counter  blocks compared
    driftwatch_score_drift_detector_state{model,signal,detector}  gauge  0 stable, 1 warn, 2 drift
    driftwatch_score_drift_alarms_total{model,signal,detector}    counter  drift alarms

``stream`` is ``prediction`` or ``label``; ``reason`` one of ``duplicate``, ``late``,
``expired``, ``overflow`` (:mod:`driftwatch.core.join`), every pair exported from 0.

Useful expressions: the match rate over an hour,
``increase(driftwatch_join_matched_total[1h]) / increase(driftwatch_join_predictions_total[1h])``
(of predictions an hour or more older than the typical delay); labels that stopped arriving,
``increase(driftwatch_join_labels_total[1h]) == 0 and on() sum(increase(
driftwatch_join_predictions_total[1h])) > 0``; how far labels trail predictions,
``driftwatch_join_watermark_timestamp_seconds{stream="prediction"} - ignoring(stream)
driftwatch_join_watermark_timestamp_seconds{stream="label"}``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from driftwatch.core.delayed import DELAY_BUCKETS
from driftwatch.core.join import REASONS, STREAMS
from driftwatch.core.prediction_watch import SIGNAL_MEASURES

if TYPE_CHECKING:
    from driftwatch.core.delayed import JoinSnapshot

_STATE_CODES = {"stable": 0, "warning": 1, "drift": 2}
_SIGNAL_OF = {measure: signal for signal, measure in SIGNAL_MEASURES.items()}


def _families() -> dict[str, Any]:
    # Any: the gauge, counter and histogram families' add_metric signatures differ, and the
    # Metric base class has none.
    return {
        "predictions": CounterMetricFamily(
            "driftwatch_join_predictions", "Prediction records accepted by the join (replayed "
            "duplicates excluded).", labels=["model"]),
        "labels": CounterMetricFamily(
            "driftwatch_join_labels", "Label records read."),
        "matched": CounterMetricFamily(
            "driftwatch_join_matched", "Predictions joined with their label.", labels=["model"]),
        "dropped": CounterMetricFamily(
            "driftwatch_join_dropped", "Records that left the join unjoined, by stream and "
            "reason (duplicate, late, expired, overflow).", labels=["stream", "reason"]),
        "pending": GaugeMetricFamily(
            "driftwatch_join_pending_predictions", "Predictions waiting for their label.",
            labels=["model"]),
        "pending_labels": GaugeMetricFamily(
            "driftwatch_join_pending_labels", "Labels waiting for their prediction."),
        "watermark": GaugeMetricFamily(
            "driftwatch_join_watermark_timestamp_seconds", "Latest record time seen per "
            "stream (event time, Unix seconds).", labels=["stream"]),
        "delay": HistogramMetricFamily(
            "driftwatch_label_delay_seconds", "Label time minus prediction time of joined "
            "pairs.", labels=["model"]),
        "drift": GaugeMetricFamily(
            "driftwatch_score_drift", "Label-free signals over the sliding window of recent "
            "predictions against the reference: ks, psi, positive_rate, "
            "reference_positive_rate.", labels=["model", "signal"]),
        "z": GaugeMetricFamily(
            "driftwatch_score_drift_z", "The latest block's standardized signal (N(0, 1) "
            "while the score distribution holds).", labels=["model", "signal"]),
        "blocks": CounterMetricFamily(
            "driftwatch_score_drift_blocks", "Blocks of predictions compared with the "
            "reference.", labels=["model"]),
        "state": GaugeMetricFamily(
            "driftwatch_score_drift_detector_state", "State of a label-free signal's detector: "
            "0 stable, 1 warning, 2 drift.", labels=["model", "signal", "detector"]),
        "alarms": CounterMetricFamily(
            "driftwatch_score_drift_alarms", "Drift alarms of a label-free signal's detector.",
            labels=["model", "signal", "detector"]),
    }


class JoinCollector(Collector):
    """Renders the latest :class:`~driftwatch.core.delayed.JoinSnapshot` at each scrape.

    ``source`` is called once per scrape on the HTTP thread: it must be cheap and
    thread-safe (an attribute the agent's loop replaces). Returns no family when it gives
    None. :meth:`describe` lists the families without calling it.
    """

    def __init__(self, source: Callable[[], JoinSnapshot | None]) -> None:
        self.source = source

    def describe(self) -> Iterator[Metric]:
        return iter(_families().values())

    def collect(self) -> Iterator[Metric]:
        snap = self.source()
        if snap is None:
            return iter(())
        f = _families()
        for model, n in snap.predictions.items():
            f["predictions"].add_metric([model], n)
            f["matched"].add_metric([model], snap.matched.get(model, 0))
            f["pending"].add_metric([model], snap.pending.get(model, 0))
            cumulative, buckets = 0, []
            for bound, count in zip((*DELAY_BUCKETS, math.inf), snap.delay_buckets[model],
                                    strict=True):
                cumulative += count
                buckets.append(("+Inf" if bound == math.inf else repr(bound), cumulative))
            f["delay"].add_metric([model], buckets, snap.delay_sum[model])
        f["labels"].add_metric([], snap.labels)
        f["pending_labels"].add_metric([], snap.pending_labels)
        for stream in STREAMS:
            for reason in REASONS:
                f["dropped"].add_metric([stream, reason], snap.dropped.get((stream, reason), 0))
        for stream, mark in (("prediction", snap.prediction_watermark),
                             ("label", snap.label_watermark)):
            if math.isfinite(mark):
                f["watermark"].add_metric([stream], mark)
        for watch in snap.watches:
            for signal, value in watch.values.items():
                if not math.isnan(value):
                    f["drift"].add_metric([watch.model, signal], value)
            for signal, z in watch.z.items():
                if not math.isnan(z):
                    f["z"].add_metric([watch.model, signal], z)
            f["blocks"].add_metric([watch.model], watch.blocks)
            for (measure, detector), state in watch.states.items():
                labels = [watch.model, _SIGNAL_OF[measure], detector]
                f["state"].add_metric(labels, _STATE_CODES[state])
                f["alarms"].add_metric(labels, watch.alarms.get((measure, detector), 0))
        return iter(f.values())
