"""PredictionWatch: block signals reach their detectors, alarms carry them, restore is exact."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from driftwatch.core.detectors import registry
from driftwatch.core.detectors.base import Detector
from driftwatch.core.prediction_watch import SIGNAL_MEASURES, PredictionWatch
from driftwatch.core.score_drift import SIGNALS, ScoreDrift

DRIFT = {"window": 100, "block_size": 100, "reference_size": 1000}


def detectors() -> dict[str, list[Detector]]:
    return {name: [registry.create("page_hinkley", min_samples=5, delta=0.1, threshold=15.0,
                                   direction="up")] for name in SIGNALS}


def stream(seed: int, length: int, shift_at: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.betavariate(2, 5) if i < shift_at else rng.betavariate(3, 4)
            for i in range(length)]


def test_detectors_get_every_block_z_and_alarms_carry_the_block() -> None:
    scores = stream(1, 6000, 4000)
    watch = PredictionWatch("m", ScoreDrift(**DRIFT), detectors())
    plain = ScoreDrift(**DRIFT)
    mirror = detectors()
    expected = []
    for i, score in enumerate(scores):
        signals = plain.update(score)
        for signal in signals or ():
            for d in mirror[signal.name]:
                if d.update(signal.z).value == "drift":
                    expected.append((i, SIGNAL_MEASURES[signal.name], signal.value))
    got = [(i, a.measure, a.value) for i, s in enumerate(scores)
           for a in watch.update(s, None, float(i)) if a.level == "drift"]
    assert got == expected
    assert got and all(i >= 4000 for i, _, _ in got)  # no alarm before the shift
    snap = watch.snapshot()
    assert snap.blocks == (6000 - 1000) // 100 and snap.predictions == 6000
    assert sum(snap.alarms.values()) == len(got)
    assert set(snap.z) == set(SIGNALS) and all(z > 2 for z in snap.z.values())


def test_restore_continues_exactly() -> None:
    scores = stream(2, 5000, 3000)
    whole = PredictionWatch("m", ScoreDrift(**DRIFT), detectors())
    expected = [whole.update(s) for s in scores]
    for cut in (0, 999, 1000, 2550, 4999):
        first = PredictionWatch("m", ScoreDrift(**DRIFT), detectors())
        out = [first.update(s) for s in scores[:cut]]
        second = PredictionWatch("m", ScoreDrift(**DRIFT), detectors())
        second.restore(json.loads(json.dumps(first.export_state())))
        out += [second.update(s) for s in scores[cut:]]
        assert out == expected
        assert second.export_state() == whole.export_state()


def test_restore_with_other_detectors_keeps_them_fresh() -> None:
    watch = PredictionWatch("m", ScoreDrift(**DRIFT), detectors())
    for s in stream(3, 2000, 2000):
        watch.update(s)
    other = PredictionWatch("m", ScoreDrift(**DRIFT),
                            {"ks": [registry.create("adwin")]})
    other.restore(watch.export_state())
    assert other.drift.seen == 2000 and other.snapshot().blocks == 10
    assert other.detectors["ks"][0].export_state() == registry.create("adwin").export_state()


def test_bad_configuration_and_state_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown signals"):
        PredictionWatch("m", ScoreDrift(), {"auc": []})
    watch = PredictionWatch("m", ScoreDrift(**DRIFT), detectors())
    state: dict[str, Any] = watch.export_state()
    with pytest.raises(ValueError, match="version"):
        watch.restore({**state, "version": 7})
    with pytest.raises(ValueError, match="missing keys"):
        watch.restore({k: v for k, v in state.items() if k != "drift"})
    assert math.isnan(watch.snapshot().z["ks"])
