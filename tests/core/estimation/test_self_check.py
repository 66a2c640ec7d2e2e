"""The self-check: exact null distributions, N(0, 1) z-scores under calibration, and a
concept change the estimate cannot see."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch.core.detectors import Cusum, DetectorState
from driftwatch.core.estimation.self_check import (
    CHECKED_MEASURES,
    CalibrationCheck,
    SelfStarting,
    count_z,
    poisson_binomial_pmf,
    ratio_z,
)
from driftwatch.core.estimation.window import weight
from driftwatch.core.sequential import normal_quantile

small = st.lists(st.tuples(st.integers(1, 15).map(lambda k: k / 16), st.integers(0, 1)),
                 min_size=1, max_size=7)


def outcomes(p: list[float]):  # type: ignore[no-untyped-def]
    for labels in itertools.product((0, 1), repeat=len(p)):
        weight = Fraction(1)
        for y, pi in zip(labels, p, strict=True):
            weight *= Fraction(pi) if y else 1 - Fraction(pi)
        yield labels, weight


def midp(distribution: list[tuple[Fraction, Fraction]], observed: Fraction) -> float:
    total = sum(w for _, w in distribution)
    below = sum(w for v, w in distribution if v < observed)
    tied = sum(w for v, w in distribution if v == observed)
    u = float((below + tied / 2) / total)
    return normal_quantile(min(max(u, 1e-15), 1 - 1e-15))


@given(small, st.data())
def test_count_and_rate_z_equal_the_enumerated_mid_p(events: list[tuple[float, int]],
                                                     data: st.DataObject) -> None:
    p = [q for q, _ in events]
    predicted = [y for _, y in events]
    labels = data.draw(st.lists(st.integers(0, 1), min_size=len(p), max_size=len(p)))
    positives = sum(labels)
    counts = [(Fraction(sum(y)), w) for y, w in outcomes(p)]
    pmf = poisson_binomial_pmf(np.array(p))
    assert pmf == pytest.approx([float(sum(w for v, w in counts if v == k))
                                 for k in range(len(p) + 1)], abs=1e-15)
    assert count_z(pmf, positives) == pytest.approx(midp(counts, Fraction(positives)))
    # False-negative rate: misses are positives predicted 0, over the vectors with P > 0.
    fn = sum(1 for y, yhat in zip(labels, predicted, strict=True) if y and not yhat)
    rates = [(Fraction(sum(1 for a, b in zip(y, predicted, strict=True) if a and not b),
                       sum(y)), w) for y, w in outcomes(p) if sum(y)]
    missed = np.array([q for q, yhat in zip(p, predicted, strict=True) if not yhat])
    hit = np.array([q for q, yhat in zip(p, predicted, strict=True) if yhat])
    got = ratio_z(poisson_binomial_pmf(missed), poisson_binomial_pmf(hit), fn, positives - fn)
    if positives == 0:
        assert math.isnan(got)
    else:
        assert got == pytest.approx(midp(rates, Fraction(fn, positives)))


def test_blocks_close_on_expected_counts_whatever_the_labels() -> None:
    # Probabilities 0.25: a block expects 2 positives and 2 negatives after 8 predictions
    # (Σp = 2, Σq = 6), whichever labels come.
    for labels in ([0] * 8, [1] * 8, [1, 0] * 4):
        check = CalibrationCheck(min_expected=2)
        closed = [check.update(y, 0.5, 0.25) for y in labels]
        assert [c is not None for c in closed] == [False] * 7 + [True]
        block = closed[-1]
        assert block is not None and block.events == 8 and block.expected_positives == 2.0
        assert block.positives == sum(labels)
    assert len(check) == 0 and check.blocks == 1


def stream_blocks(rng: np.random.Generator, events: int, intercept: float,
                  flip: tuple[float, float] | None = None) -> list[list[float]]:
    """Check blocks of calibrated scores σ(intercept + 1.5·x); with ``flip``, the labels of
    scores in that band are flipped (a concept change the scores do not show)."""
    check = CalibrationCheck()
    x = rng.normal(size=events)
    p = 1.0 / (1.0 + np.exp(-(intercept + 1.5 * x)))
    y = rng.random(events) < p
    if flip is not None:
        band = (p >= flip[0]) & (p < flip[1])
        y[band] = ~y[band]
    blocks = []
    for yi, pi in zip(y.tolist(), p.tolist(), strict=True):
        block = check.update(int(yi), pi, pi)
        if block is not None:
            blocks.append([block.z(name) for name in CHECKED_MEASURES])
    return blocks


@pytest.mark.parametrize("intercept", [-1.4, -3.3])  # about 1:4 and 1:15
def test_z_scores_are_standard_normal_under_calibration(intercept: float) -> None:
    rng = np.random.default_rng(40)
    z = np.array(stream_blocks(rng, 120_000 if intercept < -2 else 40_000, intercept))
    assert len(z) > 250
    for column, name in enumerate(CHECKED_MEASURES):
        values = z[:, column][~np.isnan(z[:, column])]
        assert abs(values.mean()) < 0.15, name
        assert 0.85 < values.std() < 1.12, name
        assert np.mean(np.abs(values) > 1.96) < 0.08, name


def test_a_concept_change_is_caught_by_a_cusum_on_the_auc_z() -> None:
    # Labels flipped for scores in [0.5, 0.8): the scores, and so the estimate, are
    # unchanged; the realized AUC falls below it block after block.
    rng = np.random.default_rng(41)
    before = stream_blocks(rng, 20_000, -1.4)
    after = stream_blocks(rng, 20_000, -1.4, flip=(0.5, 0.8))
    auc = CHECKED_MEASURES.index("auc")
    assert np.mean([b[auc] for b in after]) < -0.7 < np.mean([b[auc] for b in before]) - 0.5
    cusum = Cusum(arl=10_000, direction="down")
    assert all(cusum.update(b[auc]) is not DetectorState.DRIFT for b in before)
    alarms = [i for i, b in enumerate(after) if cusum.update(b[auc]) is DetectorState.DRIFT]
    assert alarms and alarms[0] < 10


def test_bad_arguments_and_state() -> None:
    check = CalibrationCheck(min_expected=3)
    check.update(1, 0.7, 0.7)
    before = check.export_state()
    with pytest.raises(ValueError, match="y_true"):
        check.update(2, 0.5, 0.5)
    with pytest.raises(ValueError, match="probability"):
        check.update(1, 0.5, 1.5)
    assert check.export_state() == before
    restored = CalibrationCheck(min_expected=3)
    restored.restore(before)
    assert restored.export_state() == before and len(restored) == 1
    with pytest.raises(ValueError, match="closed block"):
        restored.restore({**before, "block": [[1, 0.5, 0.5, 1]] * 12})
    with pytest.raises(ValueError, match="min_expected"):
        CalibrationCheck(min_expected=1)


@settings(max_examples=20)
@given(st.lists(st.integers(0, 1), min_size=4, max_size=4))
def test_a_block_without_a_class_has_no_auc_z(labels: list[int]) -> None:
    check = CalibrationCheck(min_expected=2)
    block = None
    for y, score in zip(labels, (0.2, 0.4, 0.6, 0.8), strict=True):
        block = check.update(y, score, 0.5)
    assert block is not None
    assert math.isnan(block.z("auc")) == (sum(labels) in (0, 4))
    with pytest.raises(ValueError, match="name"):
        block.z("kappa")


@pytest.mark.parametrize("offset", [0.0, -0.3, 0.5])
def test_self_starting_residuals_are_standard_normal_whatever_the_offset(offset: float) -> None:
    # z ~ N(offset, 1), as from a calibration fitted with an error: the recursive residuals
    # are independent N(0, 1) (each against the mean of those before it).
    rng = np.random.default_rng(50)
    runs = []
    for _ in range(400):
        starting = SelfStarting(warmup=5)
        residuals = [starting.update(z) for z in rng.normal(offset, 1.0, 30)]
        runs.append([r for r in residuals if r is not None])
    r = np.array(runs)
    assert r.shape == (400, 25)
    assert abs(r.mean()) < 0.03 and abs(r.std() - 1.0) < 0.03
    assert abs(np.corrcoef(r[:, :-1].ravel(), r[:, 1:].ravel())[0, 1]) < 0.03
    assert abs(np.corrcoef(r[:, 0], r[:, -1])[0, 1]) < 0.12


def test_self_starting_skips_nan_restarts_and_restores() -> None:
    starting = SelfStarting(warmup=1)
    assert starting.update(math.nan) is None and starting.update(2.0) is None
    assert starting.update(2.0) == 0.0
    saved = starting.export_state()
    starting.reset()
    assert starting.update(5.0) is None
    starting.restore(saved)
    assert starting.update(2.0) == 0.0
    with pytest.raises(ValueError, match="warmup"):
        SelfStarting(warmup=0)


def test_a_check_of_some_measures_scores_those_as_the_full_check_does() -> None:
    """``measures`` leaves the others out and changes nothing of those it keeps (a monitor
    checks the AUC only)."""
    rng = np.random.default_rng(31)
    full, auc_only = CalibrationCheck(10), CalibrationCheck(10, measures=("auc",))
    rates = CalibrationCheck(10, measures=("false_positive_rate", "prevalence"))
    for _ in range(2_000):
        score = float(rng.random())
        label = int(rng.random() < score)
        blocks = [c.update(label, score, score) for c in (full, auc_only, rates)]
        if blocks[0] is None:
            assert blocks[1] is None and blocks[2] is None
            continue
        everything, auc, some = blocks
        assert auc is not None and some is not None
        assert auc.measures == tuple(m for m in everything.measures if m.name == "auc")
        assert some.measures == tuple(m for m in everything.measures
                                      if m.name in ("prevalence", "false_positive_rate"))
    assert full.blocks == auc_only.blocks > 20
    with pytest.raises(ValueError, match="measures"):
        CalibrationCheck(10, measures=("gmean",))


def test_blocks_span_min_seconds_of_record_time() -> None:
    """With ``min_seconds`` a block closes once it holds the expected counts *and* spans that
    much record time; labels without a time close blocks on information alone; a restored
    check continues the open block's time exactly."""
    rng = np.random.default_rng(32)
    timed, untimed = CalibrationCheck(5, min_seconds=10.0), CalibrationCheck(5, min_seconds=10.0)
    plain = CalibrationCheck(5)
    first_ts = 0.0
    sizes: list[int] = []
    events = []
    for i in range(5_000):
        score = float(rng.random())
        events.append((int(rng.random() < score), score, i * 0.1))
    for index, (label, score, ts) in enumerate(events):
        if len(timed) == 0:
            first_ts = ts
        block = timed.update_valid(label, score, weight(score), None, ts)
        if block is not None:
            assert ts - first_ts >= 10.0 and block.events >= 101
            assert block.expected_positives >= 5 and block.events - block.expected_positives >= 5
            sizes.append(block.events)
        assert (untimed.update_valid(label, score, weight(score), None, None) is None) == \
            (plain.update(label, score, score) is None)
        if index == 2_345:
            resumed = CalibrationCheck(5, min_seconds=10.0)
            resumed.restore(json.loads(json.dumps(timed.export_state())))
            rest = [resumed.update_valid(y, s, weight(s), None, t) for y, s, t in events[2_346:]]
    assert len(sizes) > 30 and untimed.blocks == plain.blocks > 5 * len(sizes)
    closed = [b.events for b in rest if b is not None]
    assert closed == sizes[-len(closed):]


def check_columns(seed: int, n: int, rate: float, untimed: float, late: float,
                  tiny: float) -> tuple[list[int], list[float], list[float | None]]:
    """Labels, calibrated scores and times: a share ``untimed`` without a time, ``late``
    stamped a minute early, ``tiny`` of scores below 10⁻⁶ (blocks slow to close)."""
    rng = np.random.default_rng(seed)
    scores = rng.random(n)
    scores[rng.random(n) < tiny] *= 1e-6
    labels = (rng.random(n) < scores).astype(int).tolist()
    draw = rng.random(n)
    times: list[float | None] = [
        None if d < untimed else 1.7e9 + i / rate - (60.0 if d < untimed + late else 0.0)
        for i, d in enumerate(draw.tolist())]
    return labels, scores.tolist(), times


def extend_in_chunks(check: CalibrationCheck, labels: list[int], scores: list[float],
                     times: list[float | None], chunk: int) -> list[tuple[int, object]]:
    found: list[tuple[int, object]] = []
    for first in range(0, len(labels), chunk):
        y, s = labels[first:first + chunk], scores[first:first + chunk]
        w = np.array([weight(x) for x in s], dtype=np.int64)
        preds = [int(x >= check.threshold) for x in s]
        t = np.array([math.nan if x is None else x for x in times[first:first + chunk]])
        start = 0
        while start < len(y):
            start, block = check.extend_valid(y, s, w, preds, t, start)
            if block is not None:
                found.append((first + start - 1, block))
    return found


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rate=st.sampled_from([0.5, 3.0, 100.0]),
       untimed=st.sampled_from([0.0, 0.3, 1.0]), late=st.sampled_from([0.0, 0.2]),
       tiny=st.sampled_from([0.0, 0.9]), chunk=st.integers(1, 700),
       min_seconds=st.sampled_from([0.0, 5.0, 30.0]), min_expected=st.integers(2, 20))
def test_extend_closes_the_blocks_update_valid_closes(seed: int, rate: float, untimed: float,
                                                      late: float, tiny: float, chunk: int,
                                                      min_seconds: float,
                                                      min_expected: int) -> None:
    """The bulk path (the agent's whole events): the same blocks at the same events and the
    same open block, over random streams with and without times, late times and blocks slow
    to close, cut into random chunks."""
    labels, scores, times = check_columns(seed, 2_000, rate, untimed, late, tiny)
    one = CalibrationCheck(min_expected, min_seconds=min_seconds)
    bulk = CalibrationCheck(min_expected, min_seconds=min_seconds)
    expected = [(i, block) for i, (y, s, t) in enumerate(zip(labels, scores, times, strict=True))
                if (block := one.update_valid(y, s, weight(s), None, t)) is not None]
    # repr: a block without a class has NaN measures, which == never matches
    assert repr(extend_in_chunks(bulk, labels, scores, times, chunk)) == repr(expected)
    assert json.dumps(bulk.export_state()) == json.dumps(one.export_state())
    assert bulk.blocks == one.blocks


def test_extend_drops_a_block_at_the_size_limit_as_update_valid_does() -> None:
    """Probabilities near 0: no block gathers 20 expected positives before the size limit
    (100 000 predictions), and both paths drop it at the same event, then close the same
    blocks."""
    labels, scores, times = check_columns(5, 230_000, 100.0, 0.0, 0.0, 1.0)
    scores[150_000:150_400] = [0.5] * 400
    # The AUC alone, as the agent checks: the error rates' exact check of a block of 50 000
    # is O(n₀·n₁) in memory.
    one, bulk = (CalibrationCheck(measures=("auc",)) for _ in range(2))
    expected = [(i, block) for i, (y, s, t) in enumerate(zip(labels, scores, times, strict=True))
                if (block := one.update_valid(y, s, weight(s), None, t)) is not None]
    # 400 predictions at ½ close ten blocks; the first holds what followed the drop.
    assert len(expected) == 10 and expected[0][1].events == 150_040 - 100_000
    assert repr(extend_in_chunks(bulk, labels, scores, times, 70_000)) == repr(expected)
    assert json.dumps(bulk.export_state()) == json.dumps(one.export_state())
