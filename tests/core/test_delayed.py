"""DelayedLabels: joined events, watches fed once per prediction, counts, exact restore."""

from __future__ import annotations

import bisect
import json
import math
import random
from typing import Any

import pytest

from driftwatch.core.delayed import DELAY_BUCKETS, DelayedLabels, merge_snapshots
from driftwatch.core.detectors import registry
from driftwatch.core.join import Join, Joined, Label, Prediction
from driftwatch.core.monitor import Monitor
from driftwatch.core.prediction_watch import PredictionWatch
from driftwatch.core.score_drift import SIGNALS, ScoreDrift
from driftwatch.settings import Settings
from driftwatch.simulate import delayed_labels, generate

LIMITS = {"max_pending": 300, "max_age": 2_000.0, "max_label_age": 50.0}


def watch_for(model: str) -> PredictionWatch:
    drift = ScoreDrift(window=100, block_size=100, reference_size=500)
    return PredictionWatch(model, drift, {
        name: [registry.create("page_hinkley", min_samples=5, delta=0.1, threshold=15.0,
                               direction="up")] for name in SIGNALS})


def records(seed: int) -> list[Prediction | Label]:
    """Two models' predictions and labels (exponential delays, a fifth never labelled),
    with some records delivered twice."""
    rng = random.Random(seed)
    out: list[Prediction | Label] = []
    for model, scenario in (("a", "sudden_auc_drop"), ("b", "stationary")):
        out += delayed_labels(generate(scenario, seed=seed, length=3000), seed=seed,
                              model=model, mean_delay=200.0, unlabelled=0.2,
                              id_prefix=f"{model}-")
    out.sort(key=lambda r: r.ts)
    for i in sorted(rng.sample(range(len(out)), 100), reverse=True):
        out.insert(i + rng.randrange(1, 50), out[i])  # a replayed record, a little later
    return out


def drive(labels: DelayedLabels, rs: list[Prediction | Label]) -> list[Any]:
    out: list[Any] = []
    for r in rs:
        out.append(labels.add_prediction(r) if isinstance(r, Prediction) else labels.add_label(r))
    return out


def test_counts_delays_and_watches() -> None:
    rs = records(1)
    labels = DelayedLabels(Join(**LIMITS), watch_for)
    out = drive(labels, rs)
    joined = [o[0] if isinstance(o, tuple) else o for o in out]
    pairs: list[Joined] = [j for j in joined if j is not None]
    unique_predictions = {r.event_id: r for r in rs if isinstance(r, Prediction)}
    snap = labels.snapshot()
    for model in ("a", "b"):
        ours = [p for p in pairs if p.model == model]
        assert snap.matched[model] == len(ours)
        buckets = [0] * (len(DELAY_BUCKETS) + 1)
        for p in ours:
            buckets[bisect.bisect_left(DELAY_BUCKETS, p.label_ts - p.prediction_ts)] += 1
        assert snap.delay_buckets[model] == tuple(buckets)
        assert snap.delay_sum[model] == pytest.approx(sum(p.delay for p in ours))
        n = sum(1 for p in unique_predictions.values() if p.model == model)
        assert snap.predictions[model] == n
        # The watch saw each prediction once, replays excluded.
        watch = next(w for w in snap.watches if w.model == model)
        assert watch.predictions == n
    assert snap.labels == sum(isinstance(r, Label) for r in rs)
    assert snap.dropped[("prediction", "duplicate")] + snap.dropped[("label", "duplicate")] > 0
    # Every pair is a prediction with its own label.
    truth = {r.event_id: r for r in rs if isinstance(r, Label)}
    assert all(truth[p.event_id].y_true == p.y_true for p in pairs)
    assert all(unique_predictions[p.event_id].y_score == p.y_score for p in pairs)


@pytest.mark.parametrize("cut", [0, 1, 2500, 4999, 9000])
def test_restore_continues_exactly(cut: int) -> None:
    rs = records(2)
    whole = DelayedLabels(Join(**LIMITS), watch_for)
    expected = drive(whole, rs)
    first = DelayedLabels(Join(**LIMITS), watch_for)
    out = drive(first, rs[:cut])
    second = DelayedLabels(Join(**LIMITS), watch_for)
    second.restore(json.loads(json.dumps(first.export_state())), **LIMITS)
    out += drive(second, rs[cut:])
    assert out == expected
    assert second.export_state() == whole.export_state()
    assert _same_snapshot(second, whole)


def _same_snapshot(a: DelayedLabels, b: DelayedLabels) -> bool:
    sa, sb = a.snapshot(), b.snapshot()  # NaN values make == fail; compare the rest
    return all(getattr(sa, f) == getattr(sb, f) for f in sa.__slots__ if f != "watches")


def test_bad_state_is_refused_and_changes_nothing() -> None:
    labels = DelayedLabels(Join(), watch_for)
    drive(labels, records(3)[:500])
    before = labels.export_state()
    with pytest.raises(ValueError, match="version"):
        labels.restore({**before, "version": 2})
    with pytest.raises(ValueError, match="delay buckets"):
        labels.restore({**before, "models": {"a": [1, 1, [0], 0.0]}})
    with pytest.raises(ValueError, match="not finite"):
        labels.restore({**before, "models": {"a": [1, 1, [0] * 13, math.inf]}})
    assert labels.export_state() == before


def test_the_scores_alarm_before_the_labels_can() -> None:
    """A sudden AUC drop with labels an hour late: the default label-free CUSUMs alarm on
    the scores' change long before the labelled monitor has seen a changed label."""
    settings = Settings.model_validate({"join": {"enabled": True, "kind_field": "kind"}})
    delayed = settings.join.delayed_labels(lambda model: 0.5)
    monitor = Monitor("m", settings.monitoring.monitor_config("m"))
    change_at, rate = 20_000, 10.0
    stream = generate("sudden_auc_drop", seed=4, length=40_000, change_at=change_at,
                      drop=0.15, rate=rate)
    first_score_alarm = first_label_alarm = None
    early = []
    for r in delayed_labels(stream, seed=5, model="m", delay="fixed", mean_delay=3600.0):
        if isinstance(r, Prediction):
            joined, alarms = delayed.add_prediction(r)
            if alarms and r.ts < change_at / rate:
                early += alarms
            if alarms and first_score_alarm is None and r.ts >= change_at / rate:
                first_score_alarm = r.ts
        else:
            joined = delayed.add_label(r)
        if joined is not None:
            drift = [a for a in monitor.update(joined.event()) if a.level == "drift"]
            # A labelled alarm is stamped with the time of the label that raised it.
            assert all(a.event_time == joined.label_ts for a in drift)
            if drift and first_label_alarm is None and joined.prediction_ts >= change_at / rate:
                first_label_alarm = drift[0].event_time
    assert not early  # no false alarm on the 20 000 predictions before the change
    assert first_score_alarm is not None and first_label_alarm is not None
    # The scores alarm within two minutes (1200 predictions) of the change; the first label
    # of a changed prediction arrives an hour after it.
    assert first_score_alarm < change_at / rate + 120
    assert first_label_alarm >= change_at / rate + 3600


def test_a_snapshot_recomputes_only_watches_that_saw_predictions() -> None:
    labels = DelayedLabels(Join(), watch_for)
    for i, model in enumerate(["a", "b"] * 700):
        labels.add_prediction(Prediction(f"e{i}", model, (i % 13) / 13, None, float(i)))
    first = {w.model: w for w in labels.snapshot().watches}
    labels.add_prediction(Prediction("new", "a", 0.5, None, 2000.0))
    second = {w.model: w for w in labels.snapshot().watches}
    assert second["b"] is first["b"]
    assert second["a"] is not first["a"] and second["a"].predictions == 701


def test_joins_of_disjoint_records_merge_into_the_picture_of_one_join() -> None:
    """One join per input partition (what the state topic hands over) shows, merged, what
    one join of all the records shows when each model's records stay in one of them and no
    bound depends on the other's clock (unbounded ages here)."""
    unbounded = {"max_pending": 10_000, "max_age": math.inf, "max_label_age": math.inf}
    rs = records(3)
    whole = DelayedLabels(Join(**unbounded), watch_for)
    drive(whole, rs)
    model_of = {r.event_id: r.model for r in rs if isinstance(r, Prediction)}
    shards = {model: DelayedLabels(Join(**unbounded), watch_for) for model in ("a", "b")}
    for r in rs:
        drive(shards[model_of[r.event_id]], [r])
    merged = merge_snapshots([shard.snapshot() for shard in shards.values()])
    expected = whole.snapshot()
    for name in merged.__slots__:
        if name != "watches":
            assert getattr(merged, name) == getattr(expected, name), name
    assert [(w.model, w.predictions, w.blocks) for w in merged.watches] == \
        [(w.model, w.predictions, w.blocks) for w in expected.watches]
    assert merge_snapshots([expected]) is expected
