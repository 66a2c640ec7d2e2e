"""Class-ratio normalization against brute-force enumeration of the grid (Brzezinski et al. 2019,
eq. 10).

The reference enumerates all (P+1)(N+1) confusion matrices with crisp.py's scalar functions
(undefined → 0) and counts with ≤, exactly as Brzezinski et al. 2019, eq. 10 defines N(M, P, N, x).
The observed values x are drawn where an off-by-one would show: attainable grid values (ties),
midpoints between neighbouring distinct values, the floats just above and below attainable values,
below the minimum, above the maximum, ±inf and NaN.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch.core import normalization
from driftwatch.core.measures import crisp
from driftwatch.core.measures.registry import CONFUSION_MEASURES, NORMALIZABLE
from driftwatch.core.normalization import count_at_most, normalize, threshold

SMALL = st.integers(min_value=0, max_value=40)
MEASURES = st.sampled_from(NORMALIZABLE)


@functools.cache
def grid(measure: str, positives: int, negatives: int) -> np.ndarray:
    """Every cell's value, by crisp.py's scalar path, undefined → 0, sorted."""
    f = CONFUSION_MEASURES[measure]
    values = []
    for tp in range(positives + 1):
        for fp in range(negatives + 1):
            value = f(tp, fp, positives - tp, negatives - fp)
            values.append(0.0 if math.isnan(value) else value)
    return np.sort(np.array(values, dtype=np.float64))


def grid_by_rows(measure: str, positives: int, negatives: int) -> np.ndarray:
    """The grid as float64 arrays (bit-identical to the scalar path: test_crisp.py), sorted;
    for the cases too large to enumerate in Python."""
    tp, fp = np.meshgrid(np.arange(positives + 1.0), np.arange(negatives + 1.0), indexing="ij")
    values = np.asarray(getattr(crisp, measure)(tp, fp, positives - tp, negatives - fp))
    return np.sort(np.nan_to_num(values, nan=0.0).ravel())


def brute_count(values: np.ndarray, x: float) -> int:
    if math.isnan(x):
        return 0
    return int(np.searchsorted(values, x, side="right"))


def probes(values: np.ndarray) -> Iterator[float]:
    """Every x where a boundary error would show, for a sorted grid."""
    distinct = np.unique(values)
    for v in distinct.tolist():
        yield v
        yield math.nextafter(v, -math.inf)
        yield math.nextafter(v, math.inf)
    yield from ((distinct[:-1] + distinct[1:]) / 2).tolist()
    yield from (distinct[0] - 1.0, distinct[-1] + 1.0, -math.inf, math.inf, 0.0, -0.0, 1.0)


@st.composite
def observed(draw: st.DrawFn, values: np.ndarray) -> float:
    distinct = np.unique(values)
    kind = draw(st.sampled_from(["attainable", "midpoint", "above", "below", "outside"]))
    i = draw(st.integers(0, distinct.size - 1))
    v = float(distinct[i])
    if kind == "attainable":
        return v
    if kind == "midpoint" and i + 1 < distinct.size:
        return (v + float(distinct[i + 1])) / 2
    if kind == "above":
        return math.nextafter(v, math.inf)
    if kind == "below":
        return math.nextafter(v, -math.inf)
    return draw(st.sampled_from([-math.inf, math.inf, float(distinct[0]) - 0.5,
                                 float(distinct[-1]) + 0.5, -2.0, 2.0, 1e300, -1e300]))


# --- the worked numbers ---------------------------------------------------------------------


def test_paper_003_worked_example() -> None:
    assert count_at_most("precision", 150, 10, 0.9) == 506
    assert normalize("precision", 150, 10, 0.9) == 506 / 1661
    assert count_at_most("precision", 10, 150, 0.9) == 1650
    assert normalize("precision", 10, 150, 0.9) == 1650 / 1661


@pytest.mark.parametrize(("positives", "negatives"), [(0, 0), (1, 0), (0, 7), (5, 9), (150, 10)])
def test_precision_at_zero_is_the_tp_zero_row(positives: int, negatives: int) -> None:
    assert normalize("precision", positives, negatives, 0.0) == 1 / (positives + 1)


@pytest.mark.parametrize(("positives", "negatives"), [(1, 0), (10, 5), (7, 40), (100, 3)])
def test_recall_is_uniform(positives: int, negatives: int) -> None:
    # (⌊x·P⌋ + 1)/(P + 1) between attainable values; at an attainable t/P the row t counts
    # too, by crisp.py's rounding: 29/100 is the float 0.29, although 0.29·100 < 29.
    for t in range(positives + 1):
        at = t / positives
        assert normalize("recall", positives, negatives, at) == (t + 1) / (positives + 1)
        if t < positives:
            between = (t + 0.5) / positives
            expected = (math.floor(Fraction(between) * positives) + 1) / (positives + 1)
            assert normalize("recall", positives, negatives, between) == expected


def test_the_reference_formula_for_recall_needs_crisp_rounding() -> None:
    x = 29 / 100  # the float 0.28999999999999998: x·100 floors to 28 but 29/100 == x
    assert math.floor(x * 100) == 28
    assert normalize("recall", 100, 0, x) == 30 / 101


# --- counts equal brute force -----------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(measure=MEASURES, positives=SMALL, negatives=SMALL, data=st.data())
def test_count_equals_brute_force(
    measure: str, positives: int, negatives: int, data: st.DataObject
) -> None:
    values = grid(measure, positives, negatives)
    x = data.draw(observed(values))
    expected = brute_count(values, x)
    assert count_at_most(measure, positives, negatives, x) == expected
    assert normalize(measure, positives, negatives, x) == expected / values.size


@pytest.mark.parametrize("measure", NORMALIZABLE)
@pytest.mark.parametrize(
    ("positives", "negatives"),
    [(0, 0), (0, 1), (1, 0), (0, 9), (9, 0), (1, 1), (2, 1), (7, 3), (3, 7), (13, 13), (1, 30)],
)
def test_count_at_every_probe(measure: str, positives: int, negatives: int) -> None:
    values = grid(measure, positives, negatives)
    for x in probes(values):
        assert count_at_most(measure, positives, negatives, x) == brute_count(values, x), x


@pytest.mark.parametrize("measure", NORMALIZABLE)
@pytest.mark.parametrize(
    ("positives", "negatives"), [(150, 10), (10, 150), (300, 20), (20, 300), (257, 243)]
)
def test_count_on_larger_grids(measure: str, positives: int, negatives: int) -> None:
    values = grid_by_rows(measure, positives, negatives)
    rng = np.random.default_rng(positives * 1000 + negatives)
    xs = list(probes(values))
    for i in rng.choice(len(xs), size=min(150, len(xs)), replace=False):
        x = xs[i]
        assert count_at_most(measure, positives, negatives, x) == brute_count(values, x), x


def test_nan_is_above_nothing_and_normalizes_to_nan() -> None:
    for measure in NORMALIZABLE:
        assert count_at_most(measure, 5, 7, math.nan) == 0
        assert math.isnan(normalize(measure, 5, 7, math.nan))


def test_empty_window_is_one_undefined_cell() -> None:
    for measure in NORMALIZABLE:
        assert count_at_most(measure, 0, 0, 0.0) == 1
        assert count_at_most(measure, 0, 0, -1e-300) == 0
        assert normalize(measure, 0, 0, 0.5) == 1.0
        assert threshold(measure, 0, 0, 0.7) == 0.0


def _garbage(c: np.ndarray, x: float, positives: int, negatives: int) -> np.ndarray:
    rng = np.random.default_rng(len(c))
    junk = rng.uniform(-2.0 * negatives - 5, 2.0 * negatives + 5, size=c.size)
    junk[::5] = np.nan
    junk[1::7] = np.inf
    junk[2::11] = -np.inf
    return junk


@pytest.mark.parametrize("measure", NORMALIZABLE)
def test_counts_stay_exact_when_every_guess_is_wrong(
    measure: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The closed forms only save work: with garbage guesses every line is verified, found
    wrong and bisected, and the counts are unchanged. Small chunks exercise the chunking."""
    plan = normalization._plan
    monkeypatch.setattr(normalization, "_plan",
                        lambda *args: dataclasses.replace(plan(*args), estimate=_garbage))
    monkeypatch.setattr(normalization, "_CHUNK", 3)
    for positives, negatives in [(0, 4), (4, 0), (6, 11), (11, 6), (20, 20)]:
        values = grid(measure, positives, negatives)
        for x in probes(values):
            assert count_at_most(measure, positives, negatives, x) == brute_count(values, x)


# --- the property everything rests on -------------------------------------------------------


@pytest.mark.parametrize("measure", NORMALIZABLE)
def test_lines_are_monotone(measure: str) -> None:
    """With undefined cells as 0, each row falls (weakly) as FP grows and each column rises as
    TP grows, in crisp.py's floats, so the counted cells of a line are a suffix."""
    for positives in range(0, 25, 3):
        for negatives in range(0, 25, 4):
            tp, fp = np.meshgrid(np.arange(positives + 1.0), np.arange(negatives + 1.0),
                                 indexing="ij")
            values = getattr(crisp, measure)(tp, fp, positives - tp, negatives - fp)
            values = np.nan_to_num(np.asarray(values), nan=0.0)
            assert np.all(np.diff(values, axis=1) <= 0), (positives, negatives)
            assert np.all(np.diff(values, axis=0) >= 0), (positives, negatives)


def test_mcc_rows_stay_monotone_in_floats_on_large_windows() -> None:
    """The exact relative step between MCC neighbours is ≥ 2/n (module docstring), far above
    its 2.5-ulp rounding error: rows of a million-event window keep their order."""
    positives, negatives = 300_000, 700_000
    fp = np.arange(negatives + 1.0)
    for tp in (0, 1, 2, 150_000, 299_999, 300_000):
        tps = np.full_like(fp, tp)
        row = crisp.mcc(tps, fp, positives - tps, negatives - fp)
        assert np.all(np.diff(np.nan_to_num(np.asarray(row), nan=0.0)) <= 0), tp


def test_huge_grids_are_never_enumerated() -> None:
    """10^12 cells: enumeration would take hours. Checked against exact arithmetic."""
    p = n_ = 10**6
    assert normalize("precision", p, n_, 0.0) == 1 / (p + 1)
    assert normalize("precision", p, n_, 1.0) == 1.0
    # accuracy ≤ 1/2 ⇔ FP ≥ TP + N − n/2 (0.5 is a float, rounding is monotone)
    tp = np.arange(p + 1, dtype=np.int64)
    per_row = np.clip(n_ + 1 - np.maximum(tp + n_ - (p + n_) // 2, 0), 0, n_ + 1)
    assert count_at_most("accuracy", p, n_, 0.5) == int(per_row.sum())
    x = 0.123456789
    surely = int(x * p) - 3  # rows 0..surely have t/P < x whatever the rounding
    rows = surely + 1 + sum(1 for t in range(surely + 1, surely + 7) if t / p <= x)
    assert count_at_most("recall", p, n_, x) == rows * (n_ + 1)


# --- threshold, the inverse ---------------------------------------------------------------


def rank_for(u: float, total: int) -> int:
    """The least count c ≥ 1 whose share c / total, as normalize computes it, reaches u."""
    lo, hi = 0, total  # c / total ≥ u fails at lo (or lo = 0), holds at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if mid / total >= u else (mid, hi)
    return hi


@st.composite
def shares(draw: st.DrawFn, total: int) -> float:
    kind = draw(st.sampled_from(["any", "exact", "near", "ends"]))
    if kind == "any":
        return draw(st.floats(0.0, 1.0))
    c = draw(st.integers(0, total))
    if kind == "exact":
        return c / total
    if kind == "near":
        return min(max(math.nextafter(c / total, draw(st.sampled_from([-1.0, 2.0]))), 0.0), 1.0)
    return draw(st.sampled_from([0.0, 1.0, 5e-324, math.nextafter(1.0, 0.0)]))


def check_threshold(measure: str, positives: int, negatives: int, u: float) -> None:
    values = grid(measure, positives, negatives)
    v = threshold(measure, positives, negatives, u)
    assert v == values[rank_for(u, values.size) - 1]  # the k-th smallest cell value
    assert normalize(measure, positives, negatives, v) >= u
    smaller = values[values < v]
    if smaller.size:
        assert normalize(measure, positives, negatives, float(smaller[-1])) < u


@settings(max_examples=300, deadline=None)
@given(measure=MEASURES, positives=SMALL, negatives=SMALL, data=st.data())
def test_threshold_is_the_least_value_reaching_u(
    measure: str, positives: int, negatives: int, data: st.DataObject
) -> None:
    u = data.draw(shares((positives + 1) * (negatives + 1)))
    check_threshold(measure, positives, negatives, u)


@settings(max_examples=300, deadline=None)
@given(measure=MEASURES, positives=SMALL, negatives=SMALL, data=st.data())
def test_threshold_and_normalize_agree_on_every_value(
    measure: str, positives: int, negatives: int, data: st.DataObject
) -> None:
    """What a monitor relies on: x < threshold(u) exactly when normalize(x) < u (for u > 0;
    u = 0 gives the minimum, which values below every cell undercut), and
    threshold(normalize(x)) is the largest attainable value ≤ x (x itself if attainable)."""
    values = grid(measure, positives, negatives)
    total = values.size
    x = data.draw(observed(values))
    u = data.draw(shares(total))
    if u > 0 or x >= values[0]:
        assert (x < threshold(measure, positives, negatives, u)) == (
            normalize(measure, positives, negatives, x) < u
        )
    at_most = values[values <= x]
    back = threshold(measure, positives, negatives, normalize(measure, positives, negatives, x))
    assert back == (at_most[-1] if at_most.size else values[0])


@pytest.mark.parametrize("measure", NORMALIZABLE)
def test_threshold_selection_on_small_grids(
    measure: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count-driven selection, forced onto grids small enough to enumerate: few
    candidates left at the end (or ties wider than them, as accuracy's) and a coarse model."""
    monkeypatch.setattr(normalization, "_CANDIDATES", 4)
    monkeypatch.setattr(normalization, "_SAMPLE_SIDE", 5)
    normalization._kth_smallest.cache_clear()
    rng = np.random.default_rng(7)
    try:
        for positives, negatives in [(3, 30), (30, 3), (17, 17), (40, 25), (1, 40)]:
            total = (positives + 1) * (negatives + 1)
            us = [0.0, 1.0, *rng.uniform(size=12).tolist(),
                  *(rng.integers(0, total + 1, size=6) / total).tolist()]
            for u in us:
                check_threshold(measure, positives, negatives, u)
    finally:
        normalization._kth_smallest.cache_clear()


@pytest.mark.parametrize("measure", NORMALIZABLE)
@pytest.mark.parametrize(("positives", "negatives"), [(1200, 900), (60, 2000), (2000, 60)])
def test_threshold_on_large_grids(measure: str, positives: int, negatives: int) -> None:
    """Grids past the direct-sort size: the answer is where the exact count crosses k."""
    total = (positives + 1) * (negatives + 1)
    for u in (0.0, 0.001, 0.3, 0.5, 0.95, 0.9999, 1.0):
        k = rank_for(u, total)
        v = threshold(measure, positives, negatives, u)
        assert count_at_most(measure, positives, negatives, v) >= k
        assert count_at_most(measure, positives, negatives, math.nextafter(v, -math.inf)) < k


def test_threshold_is_cached() -> None:
    normalization._kth_smallest.cache_clear()
    first = threshold("kappa", 900, 300, 0.8)
    assert threshold("kappa", 900, 300, 0.8) == first
    assert normalization._kth_smallest.cache_info().hits == 1
    assert normalization._kth_smallest.cache_info().maxsize == 1024


# --- arguments ------------------------------------------------------------------------------

CALLS: list[Callable[..., object]] = [count_at_most, normalize, threshold]


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("measure", ["error", "auc", "Precision", ""])
def test_unknown_measure(call: Callable[..., object], measure: str) -> None:
    with pytest.raises(ValueError, match=r"measure must be one of accuracy, .*mcc"):
        call(measure, 3, 4, 0.5)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("bad", [-1, 2.0, True, "3", None])
def test_bad_counts(call: Callable[..., object], bad: object) -> None:
    with pytest.raises(ValueError, match="positives"):
        call("f1", bad, 4, 0.5)
    with pytest.raises(ValueError, match="negatives"):
        call("f1", 4, bad, 0.5)


def test_numpy_integer_counts_are_counts() -> None:
    assert count_at_most("precision", np.int64(150), np.int32(10), 0.9) == 506  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["0.5", None, 1j])
def test_bad_value(bad: object) -> None:
    with pytest.raises(ValueError, match="value"):
        normalize("f1", 3, 4, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="value"):
        count_at_most("f1", 3, 4, bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-0.01, 1.01, math.nan, math.inf, "0.5", None])
def test_bad_u(bad: object) -> None:
    with pytest.raises(ValueError, match="u must"):
        threshold("f1", 3, 4, bad)  # type: ignore[arg-type]
