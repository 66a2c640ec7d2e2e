"""The agent's comparisons: records with two scores into a paired window, counted and
checkpointed (their Prometheus families: tests/sinks/prometheus/test_comparison_collector.py)."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace

import pytest

from driftwatch.agent.comparisons import Comparisons
from driftwatch.core.comparison.window import STATISTICS, ComparisonConfig, PairedWindow
from driftwatch.decoding.decoder import Decoded, EventFormat, decode

FMT = EventFormat()
CONFIG = ComparisonConfig(
    name="v2",
    model="churn",
    challenger_score_field="challenger_score",
    challenger_prediction_field=None,
    window_size=50,
    threshold=0.5,
    challenger_threshold=0.4,
    block_size=20,
    blocks=5,
)


def records(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        y = int(rng.random() < 0.4)
        record = {
            "label": y,
            "score": round(rng.random(), 2),
            "model": "churn",
            "challenger_score": round(min(1.0, 0.3 * y + rng.random()), 2),
        }
        out.append(json.dumps(record).encode())
    return out


def feed(comparisons: Comparisons, values: list[bytes]) -> None:
    for value in values:
        decoded = decode(value, None, FMT)
        assert isinstance(decoded, Decoded)
        comparisons.feed(value, None, decoded)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_feeds_a_paired_window_with_both_scores() -> None:
    comparisons = Comparisons([CONFIG], FMT)
    values = records(1, 300)
    other = json.dumps({"label": 1, "score": 0.5, "model": "other"}).encode()
    lacking = json.dumps({"label": 1, "score": 0.5, "model": "churn"}).encode()
    feed(comparisons, [*values[:100], other, lacking, *values[100:]])
    reference = PairedWindow(50, 0.5, 0.4, block_size=20, blocks=5)
    for value in values:
        record = json.loads(value)
        reference.update(record["label"], record["score"], record["challenger_score"])
    (snapshot,) = comparisons.snapshots()
    assert (snapshot.name, snapshot.model, snapshot.events) == ("v2", "churn", 300)
    assert snapshot.unpaired == {"missing_field": 1}  # the other model's record is not counted
    expected = reference.statistics()
    assert list(snapshot.statistics) == list(STATISTICS)
    assert all(same(snapshot.statistics[k], expected[k]) for k in STATISTICS)
    assert comparisons.snapshots()[0] is snapshot  # no new event: the same snapshot


def test_checkpoint_round_trip_and_changed_settings() -> None:
    comparisons = Comparisons([CONFIG], FMT)
    feed(comparisons, records(2, 120))
    state = json.loads(json.dumps(comparisons.export_state(), allow_nan=False))
    restored = Comparisons([CONFIG], FMT)
    restored.restore(state)
    assert restored.export_state() == comparisons.export_state()
    more = records(3, 80)
    feed(comparisons, more)
    feed(restored, more)
    mine, theirs = restored.snapshots()[0].statistics, comparisons.snapshots()[0].statistics
    assert all(same(mine[k], theirs[k]) for k in STATISTICS)
    assert restored.export_state() == comparisons.export_state()
    # A different window size: the comparison starts afresh instead of measuring another d.
    changed = Comparisons([replace(CONFIG, window_size=60)], FMT)
    changed.restore(state)
    assert changed.snapshots()[0].events == 0
    with pytest.raises(ValueError, match="state"):
        Comparisons([CONFIG], FMT).restore({"v2": {**state["v2"], "window": {"version": 9}}})
    with pytest.raises(ValueError, match="events must be a count"):
        Comparisons([CONFIG], FMT).restore({"v2": {**state["v2"], "events": -1}})
