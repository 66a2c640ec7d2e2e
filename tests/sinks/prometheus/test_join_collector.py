"""JoinCollector: the join's health and the label-free signals, read back from a registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from driftwatch.core.delayed import DELAY_BUCKETS, DelayedLabels
from driftwatch.core.detectors import registry as detectors
from driftwatch.core.join import Join, Label, Prediction
from driftwatch.core.prediction_watch import PredictionWatch
from driftwatch.core.score_drift import SIGNALS, ScoreDrift
from driftwatch.sinks.prometheus.join_collector import JoinCollector


def watch_for(model: str) -> PredictionWatch:
    return PredictionWatch(model, ScoreDrift(window=10, block_size=10, reference_size=20), {
        name: [detectors.create("page_hinkley", direction="up")] for name in SIGNALS})


def test_metrics_follow_the_snapshot() -> None:
    labels = DelayedLabels(Join(max_pending=100, max_age=2e9), watch_for)
    for i in range(60):
        labels.add_prediction(Prediction(f"e{i}", "fraud", i / 60, None, 1000.0 + i))
    labels.add_prediction(Prediction("e0", "fraud", 0.1, None, 1001.0))  # a replay
    for i, delay in [(0, 30.0), (1, 90.0), (2, 4000.0), (3, 1e9)]:
        labels.add_label(Label(f"e{i}", 1, 1000.0 + i + delay))
    labels.add_label(Label("x", 0, 2e9))  # no prediction: waits
    registry = CollectorRegistry()
    registry.register(JoinCollector(labels.snapshot))
    get = registry.get_sample_value
    assert get("driftwatch_join_predictions_total", {"model": "fraud"}) == 60
    assert get("driftwatch_join_labels_total") == 5
    assert get("driftwatch_join_matched_total", {"model": "fraud"}) == 4
    assert get("driftwatch_join_pending_predictions", {"model": "fraud"}) == 56
    assert get("driftwatch_join_pending_labels") == 1
    assert get("driftwatch_join_dropped_total",
               {"stream": "prediction", "reason": "duplicate"}) == 1
    assert get("driftwatch_join_dropped_total", {"stream": "label", "reason": "overflow"}) == 0
    assert get("driftwatch_join_watermark_timestamp_seconds", {"stream": "label"}) == 2e9
    bucket = {"model": "fraud"}
    assert get("driftwatch_label_delay_seconds_bucket", {**bucket, "le": "60.0"}) == 1
    assert get("driftwatch_label_delay_seconds_bucket", {**bucket, "le": "300.0"}) == 2
    assert get("driftwatch_label_delay_seconds_bucket", {**bucket, "le": "14400.0"}) == 3
    assert get("driftwatch_label_delay_seconds_bucket",
               {**bucket, "le": repr(DELAY_BUCKETS[-1])}) == 3
    assert get("driftwatch_label_delay_seconds_bucket", {**bucket, "le": "+Inf"}) == 4
    assert get("driftwatch_label_delay_seconds_count", bucket) == 4
    assert get("driftwatch_label_delay_seconds_sum", bucket) == 30 + 90 + 4000 + 1e9
    # 60 predictions: a reference of 20, then four blocks of 10.
    assert get("driftwatch_score_drift_blocks_total", {"model": "fraud"}) == 4
    assert get("driftwatch_score_drift", {"model": "fraud", "signal": "ks"}) == 1.0
    assert get("driftwatch_score_drift_z", {"model": "fraud", "signal": "ks"}) > 3
    labels_ph = {"model": "fraud", "signal": "psi", "detector": "page_hinkley"}
    assert get("driftwatch_score_drift_detector_state", labels_ph) == 0
    assert get("driftwatch_score_drift_alarms_total", labels_ph) == 0


def test_nothing_without_a_join() -> None:
    registry = CollectorRegistry()
    registry.register(JoinCollector(lambda: None))
    assert b"driftwatch_join" not in generate_latest(registry)
