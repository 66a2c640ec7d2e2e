"""Class-ratio normalization: a measure's value as a share of all confusion matrices.

For a window with P positives and N negatives, every confusion matrix it could have produced is
a cell (TP, FP) of the grid 0 ≤ TP ≤ P, 0 ≤ FP ≤ N (FN = P − TP, TN = N − FP), (P+1)(N+1)
cells in all. The normalized value of a measure M at x is the share of cells whose value is at
most x (Brzezinski et al. 2019, eq. 10)::

    N(M, P, N, x) = #{cells with M ≤ x} / ((P+1)(N+1))

Ties count as ≤; a cell whose value is undefined (0/0) counts as 0, as in the authors' code
and their worked example (below); an undefined observed value (x NaN) normalizes to NaN.

How, without enumerating the grid: once undefined cells count as 0, each of the eight
normalizable measures is non-increasing in FP along each row and non-decreasing in TP along
each column, and crisp.py's floats keep that order (the proof, measure by measure, with MCC's
error bound: docs/design.md#class-ratio-normalization-without-enumerating-the-grid). So each
line holds its counted cells as a suffix: the count sums, per line along the smaller class
(:class:`~driftwatch.core.measures.registry.Normalization` says which), its length minus the
first index whose value is ≤ x, a closed-form guess verified on two cells with crisp.py's own
functions and bisected when it fails; every comparison is one brute force makes. Two measure
evaluations per line, O(``_CHUNK``) memory; ``threshold`` caches its last 1024 answers.
Exact for P + N < 2**26, where crisp.py's array and scalar paths agree.

Examples:
    The worked example of Brzezinski et al. 2019 (§III-B): 506 of the 1661 confusion matrices at
    P = 150, N = 10 have precision at most 0.9, and 1650 of 1661 at P = 10, N = 150.

    >>> count_at_most("precision", 150, 10, 0.9)
    506
    >>> normalize("precision", 150, 10, 0.9) == 506 / 1661
    True
    >>> normalize("precision", 10, 150, 0.9) == 1650 / 1661
    True
    >>> threshold("precision", 150, 10, 506 / 1661)
    0.9

References:
    Brzezinski, Stefanowski, Susmaga, Szczęch, "On the Dynamics of Classification Measures for
    Imbalanced and Streaming Data", IEEE TNNLS 2019, §III-B, eq. (10).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from driftwatch.core.measures import registry
from driftwatch.core.measures.estimates import Estimate
from driftwatch.core.measures.registry import NORMALIZABLE, Normalization

__all__ = ["NORMALIZABLE", "count_at_most", "normalize", "threshold"]

FloatArray = npt.NDArray[np.float64]
ArrayMeasure = Callable[[FloatArray, FloatArray, FloatArray, FloatArray], "float | FloatArray"]

_CHUNK = 8192
"""Lines per chunk: bounds memory (a few dozen arrays of _CHUNK floats, ~2 MB) and keeps them in
cache; measured best of 2048–32768 at P = N = 50 000, where a count takes seven chunks."""

_CANDIDATES = 1 << 14
"""``threshold`` sorts the remaining cells directly once at most this many are left (and whole
grids up to this size): 16 384 floats, far cheaper than the counts it saves."""

_SAMPLE_SIDE = 64
"""``threshold`` models the distribution of values with a regular 64 × 64 subgrid."""


@dataclass(frozen=True)
class _Plan:
    """How one (measure, P, N) grid is searched: which lines, how long, how each is guessed.

    A line is indexed by ``c`` in [0, ``lines``); along it ``s`` runs over [0, ``last``] and the
    value is non-increasing in ``s``. Rows: (TP, FP) = (c, s). Columns: (FP, FN) = (c, s).
    Each cell stands for ``weight`` grid cells of the same value (recall: N + 1 equal columns).
    """

    name: str
    measure: ArrayMeasure
    estimate: Estimate
    rows: bool
    positives: int
    negatives: int
    lines: int
    last: int
    weight: int

    @property
    def cells(self) -> int:
        return self.lines * (self.last + 1)


def _normalization(name: str) -> Normalization:
    """The registry's normalization of a measure ``_check`` accepted."""
    normalization = registry.get(name).normalization
    assert normalization is not None
    return normalization


def _plan(name: str, positives: int, negatives: int) -> _Plan:
    spec = registry.get(name)
    measure: ArrayMeasure = spec.counts  # type: ignore[assignment]  # array-capable formula
    how = spec.normalization
    assert how is not None
    if how.symmetric and positives > negatives:
        positives, negatives = negatives, positives  # same cells, same floats, shorter lines
    if how.identical_columns:
        assert how.columns is not None
        return _Plan(name, measure, how.columns, False, positives, negatives, 1, positives,
                     negatives + 1)
    if how.columns is not None and positives > negatives:
        return _Plan(name, measure, how.columns, False, positives, negatives,
                     negatives + 1, positives, 1)
    assert how.rows is not None
    return _Plan(name, measure, how.rows, True, positives, negatives,
                 positives + 1, negatives, 1)


def _values(plan: _Plan, c: FloatArray, s: FloatArray) -> FloatArray:
    """crisp.py's value of each cell (c, s), undefined counted as 0."""
    p, n_ = float(plan.positives), float(plan.negatives)
    tp, fp, fn, tn = (c, s, p - c, n_ - s) if plan.rows else (p - s, c, s, n_ - c)
    value = np.asarray(plan.measure(tp, fp, fn, tn), dtype=np.float64)
    value[np.isnan(value)] = 0.0
    return value


def _chunks(plan: _Plan) -> Iterator[FloatArray]:
    for start in range(0, plan.lines, _CHUNK):
        yield np.arange(start, min(start + _CHUNK, plan.lines), dtype=np.float64)


@dataclass
class _Boundaries:
    """Per line: ``first`` = the first s whose value is ≤ x (``last`` + 1 if none); with
    values, ``at`` = the value there (−inf if none) and ``before`` = the value at first − 1
    (+inf if first = 0): the line's largest value ≤ x and smallest value > x."""

    first: FloatArray
    at: FloatArray | None = None
    before: FloatArray | None = None


def _boundaries(plan: _Plan, x: float, c: FloatArray, values: bool = False) -> _Boundaries:
    """The boundary of each line ``c`` at x: a verified closed-form guess, else bisection."""
    last = float(plan.last)
    with np.errstate(all="ignore"):
        guess = plan.estimate(c, x, plan.positives, plan.negatives)
    # fmax/fmin send NaN (a degenerate guess) to the other operand; ufuncs, not np.clip or
    # np.nan_to_num, whose Python wrappers cost more than the arithmetic at P + N = 1000.
    k = np.rint(np.fmin(np.fmax(guess, 0.0, out=guess), last + 1.0, out=guess), out=guess)
    # Verify the guess k on two cells: k itself, then k − 1 where k is at most x (the boundary
    # is k if k − 1 is above x) or k + 1 where k is above x (the boundary is k + 1 if k + 1 is
    # at most x). Index −1 stands for a cell above every x, last + 1 for one below every x.
    v_k = _values(plan, c, np.minimum(k, last))
    above_k = v_k > x
    above_k[k > last] = False
    step = np.where(above_k, 1.0, -1.0)
    j = k + step
    v_j = _values(plan, c, np.minimum(np.maximum(j, 0.0), last))
    above_j = v_j > x
    above_j[j < 0.0] = True
    above_j[j > last] = False
    verified = above_k != above_j
    first = np.where(above_k, j, k)
    result = _Boundaries(first)
    if values:
        result.at = np.where(above_k, v_j, v_k)
        result.before = np.where(above_k, v_k, v_j)
    failed = np.flatnonzero(~verified)
    if failed.size:
        # The guess is wrong, but it tells the side: where k is above x the boundary lies past
        # k + 1, else at or before k − 1.
        up = above_k[failed]
        lo = np.where(up, k[failed] + 1.0, -1.0)
        hi = np.where(up, last + 1.0, k[failed] - 1.0)
        _bisect(plan, x, c[failed], lo, hi)
        first[failed] = hi
        if values:
            assert result.at is not None and result.before is not None
            both = _values(plan, np.concatenate((c[failed], c[failed])),
                           np.minimum(np.maximum(np.concatenate((hi, hi - 1.0)), 0.0), last))
            result.at[failed] = both[:failed.size]
            result.before[failed] = both[failed.size:]
    if values:
        assert result.at is not None and result.before is not None
        result.at[first > last] = -np.inf
        result.before[first < 1.0] = np.inf
    return result


def _bisect(plan: _Plan, x: float, c: FloatArray, lo: FloatArray, hi: FloatArray) -> None:
    """Narrow lo < first ≤ hi (lo above x or −1, hi at most x or last + 1) to hi = first, in
    place, bisecting only the lines still open."""
    open_ = np.flatnonzero(hi - lo > 1.0)
    while open_.size:
        mid = np.floor((lo[open_] + hi[open_]) / 2.0)
        above = _values(plan, c[open_], mid) > x
        lo[open_[above]] = mid[above]
        hi[open_[~above]] = mid[~above]
        open_ = open_[hi[open_] - lo[open_] > 1.0]


def _check(measure: str, positives: int, negatives: int) -> tuple[str, int, int]:
    spec = registry.find(measure) if isinstance(measure, str) else None
    if spec is None or not spec.normalizable:
        names = ", ".join(m.name for m in registry.measures() if m.normalizable)
        raise ValueError(f"measure must be one of {names}; got {measure!r}")
    counts = []
    for name, count in (("positives", positives), ("negatives", negatives)):
        if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 0:
            raise ValueError(f"{name} must be a non-negative int, got {count!r}")
        counts.append(int(count))
    return measure, counts[0], counts[1]


def _real(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    return float(value)


def count_at_most(measure: str, positives: int, negatives: int, value: float) -> int:
    """The number of confusion matrices at P, N whose ``measure`` is at most ``value``.

    Cells whose measure is undefined count as 0; ties count. A NaN ``value`` is above nothing,
    so the count is 0 (``normalize`` reports NaN instead). Equal to brute-force enumeration of
    the (P+1)(N+1) cells with crisp.py's functions, for every ``value``.

    Parameters:
        measure: one of ``NORMALIZABLE``.
        positives: P, the window's positives (an int ≥ 0).
        negatives: N, the window's negatives (an int ≥ 0).
        value: x, any float (±inf included).

    Cost: O(min(P, N) + 1) vectorized (recall: O(1)); see the module docstring.

    >>> count_at_most("recall", 4, 2, 0.5)  # TP ≤ 2: three of five rows, three cells each
    9
    """
    name, p, n_ = _check(measure, positives, negatives)
    return _count(name, p, n_, _real("value", value))


def _count(name: str, p: int, n_: int, x: float) -> int:
    total = (p + 1) * (n_ + 1)
    if math.isnan(x):
        return 0
    how = _normalization(name)
    if how.all_zero(p, n_):
        return total if x >= 0.0 else 0
    if how.bounds is not None:  # every value lies in the bounds as a float too
        low, high = how.bounds
        if x >= high:
            return total
        if x < low:
            return 0
    x = min(max(x, -2.0), 2.0)  # every value lies in [−1, 1] (MCC within a few ulp)
    plan = _plan(name, p, n_)
    counted = 0
    for c in _chunks(plan):
        first = _boundaries(plan, x, c).first
        counted += int(np.sum(plan.last + 1.0 - first))
    return counted * plan.weight


def normalize(measure: str, positives: int, negatives: int, value: float) -> float:
    """The share of confusion matrices at P, N whose ``measure`` is at most ``value``.

    Brzezinski et al. 2019, eq. (10): ``count_at_most(...) / ((P+1)(N+1))``, in [1/((P+1)(N+1)), 1]
    for a value the window can take; NaN for a NaN ``value``. The same value reads alike at every
    class ratio: 0.8 means "at least as good as 80 % of all confusion matrices at this P:N".

    Parameters:
        measure: one of ``NORMALIZABLE``.
        positives: P, the window's positives (an int ≥ 0).
        negatives: N, the window's negatives (an int ≥ 0).
        value: the measure's raw value x on the window.

    Cost: that of ``count_at_most`` (≤ 100 µs at P + N = 1000, see the benchmark).

    >>> normalize("precision", 150, 10, 0.9)  # 506 / 1661
    0.304635761589404
    >>> normalize("recall", 10, 5, 0.55)  # (⌊0.55·10⌋ + 1) / 11
    0.5454545454545454
    """
    name, p, n_ = _check(measure, positives, negatives)
    x = _real("value", value)
    if math.isnan(x):
        return math.nan
    return _count(name, p, n_, x) / ((p + 1) * (n_ + 1))


def threshold(measure: str, positives: int, negatives: int, u: float) -> float:
    """The smallest value the window can take whose normalized value is at least ``u``.

    The inverse of ``normalize`` for floors: for u > 0 a raw value x (not NaN) satisfies
    ``x < threshold(M, P, N, u)`` exactly when ``normalize(M, P, N, x) < u``, so a monitor can
    compare raw values with the threshold of a normalized floor; and
    ``threshold(M, P, N, normalize(M, P, N, x))`` is the largest attainable value ≤ x (x itself
    when attainable). The result is a grid value (undefined counted as 0): the k-th smallest,
    k the least count ≥ 1 whose share, rounded as ``normalize`` rounds it, reaches u — so u = 0
    gives the grid's minimum, and a share that rounds up to u counts as reaching it.

    Parameters:
        measure: one of ``NORMALIZABLE``.
        positives: P (an int ≥ 0).
        negatives: N (an int ≥ 0).
        u: the normalized floor, in [0, 1].

    Cost: a few counts (each one ``count_at_most``; 2–8 in the benchmark) bracketing the k-th
    smallest value, pivots read off a sorted 64 × 64 subgrid and then interpolated, then one
    pass that sorts the at most 16 384 cells left between the brackets; grids of at most
    16 384 cells are sorted outright. Memory O(``_CHUNK``) as for counts. The last 1024 answers
    are cached (keyed on measure, P, N and k), since a monitor asks again at the same P:N.

    At P = 150, N = 10 precision 0.9 beats 30.5 % of the grid, and no smaller precision
    reaches 30 %; at P = 10, N = 150 the same floor needs far less:

    >>> threshold("precision", 150, 10, 0.3)
    0.9
    >>> threshold("precision", 10, 150, 0.3)
    0.03571428571428571
    """
    name, p, n_ = _check(measure, positives, negatives)
    share = _real("u", u)
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"u must be in [0, 1], got {u!r}")
    total = (p + 1) * (n_ + 1)
    rank = max(1, math.ceil(Fraction(share) * total))
    # normalize reports count / total rounded to a float; one count less may round up to u.
    while rank > 1 and (rank - 1) / total >= share:
        rank -= 1
    return _kth_smallest(name, p, n_, rank)


@functools.lru_cache(maxsize=1024)
def _kth_smallest(name: str, positives: int, negatives: int, rank: int) -> float:
    """The rank-th smallest cell value (1-based) of the grid."""
    if _normalization(name).all_zero(positives, negatives):
        return 0.0
    plan = _plan(name, positives, negatives)
    rank = -(-rank // plan.weight)  # rank among the plan's cells, each weight grid cells
    if plan.cells <= _CANDIDATES:
        c = np.repeat(np.arange(plan.lines, dtype=np.float64), plan.last + 1)
        s = np.tile(np.arange(plan.last + 1, dtype=np.float64), plan.lines)
        return float(np.partition(_values(plan, c, s), rank - 1)[rank - 1])
    return _Selection(plan, rank).run()


class _Selection:
    """The rank-th smallest value of a large grid, from counts alone.

    Invariant: the answer lies in [``floor``, ``ceiling``]; ``below`` cells lie under
    ``floor`` (all ≤ ``below_x``; None while no count fell under the answer) and ``at_most``
    cells are ≤ ``ceiling`` (all ≤ ``at_most_x``). A count at a pivot in [floor, ceiling)
    moves one side to a grid value next to the pivot, so every count removes at least one
    distinct value and the search ends — exactly, on heavy ties too.

    Pivots come from a model of the values' distribution: a regular 64 × 64 subgrid, sorted,
    whose points between the sides stand for the ``at_most − below`` cells there; once fewer
    than 8 points remain between them, linear interpolation. When the same side moves twice
    running the model is biased, so the pivot aims past the rank by a share of the bracket
    that doubles each time; from the fourth time the pivot is the midpoint, which halves the
    bracket whichever side moves.
    """

    def __init__(self, plan: _Plan, rank: int) -> None:
        self.plan = plan
        self.rank = rank
        # Bounds on every value: the answer lies between them before any count.
        # Without exact bounds (MCC) values stray a few ulp outside [−1, 1] at most.
        self.floor, self.ceiling = (_normalization(plan.name).bounds
                                    or (-1.0 - 2.0**-30, 1.0 + 2.0**-30))
        self.below: int = 0
        self.below_x: float | None = None
        self.at_most: int = plan.cells
        self.at_most_x: float | None = None
        self.counts = 0

    def count(self, x: float) -> bool:
        """Count at x (floor ≤ x < ceiling), move the side it falls on; True if the ceiling."""
        counted, largest, smallest = 0, -math.inf, math.inf
        for c in _chunks(self.plan):
            bounds = _boundaries(self.plan, x, c, values=True)
            assert bounds.at is not None and bounds.before is not None
            counted += int(np.sum(self.plan.last + 1.0 - bounds.first))
            largest = max(largest, float(np.max(bounds.at)))
            smallest = min(smallest, float(np.min(bounds.before)))
        self.counts += 1
        if counted >= self.rank:
            self.at_most, self.at_most_x, self.ceiling = counted, x, largest
            return True
        self.below, self.below_x, self.floor = counted, x, smallest
        return False

    def run(self) -> float:
        plan = self.plan
        side = _SAMPLE_SIDE
        lines = np.unique(np.floor((np.arange(side) + 0.5) * plan.lines / side))
        steps = np.unique(np.floor((np.arange(side) + 0.5) * (plan.last + 1) / side))
        sample = np.sort(_values(plan, np.repeat(lines, steps.size), np.tile(steps, lines.size)))
        target = self.rank - 0.5
        streak = 0  # +k: the ceiling moved the last k times; −k: the floor
        while self.floor < self.ceiling and self.at_most - self.below > _CANDIDATES:
            width = self.at_most - self.below
            if abs(streak) >= 4:
                x = self.floor + (self.ceiling - self.floor) / 2.0
            else:
                aim = target
                if abs(streak) >= 2:
                    aim -= math.copysign(width * 2.0 ** (abs(streak) - 12), streak)
                share = (min(max(aim, self.below + 0.5), self.at_most - 0.5) - self.below) / width
                x = self._model(sample, share)
            if not x < self.ceiling:
                x = math.nextafter(self.ceiling, -math.inf)
            if self.count(max(x, self.floor)):
                streak = streak + 1 if streak > 0 else 1
            else:
                streak = streak - 1 if streak < 0 else -1
        if self.floor >= self.ceiling:
            return self.ceiling
        return self.finish()

    def _model(self, sample: FloatArray, share: float) -> float:
        """The value below which ``share`` of the cells between the sides lie, as modelled."""
        lo = int(np.searchsorted(sample, self.floor, "left"))
        hi = int(np.searchsorted(sample, self.ceiling, "right"))
        if hi - lo < 8:
            return self.floor + (self.ceiling - self.floor) * share
        at = lo + share * (hi - lo) - 0.5
        i = min(max(math.floor(at), lo), hi - 1)
        j = min(i + 1, hi - 1)
        return float(sample[i] + (sample[j] - sample[i]) * min(max(at - i, 0.0), 1.0))

    def finish(self) -> float:
        """Sort the cells between the sides (at most _CANDIDATES) and pick the rank-th."""
        plan = self.plan
        parts: list[FloatArray] = []
        for c in _chunks(plan):
            if self.at_most_x is None:
                start = np.zeros_like(c)
            else:
                start = _boundaries(plan, self.at_most_x, c).first
            if self.below_x is None:
                stop = np.full_like(c, plan.last + 1.0)
            else:
                stop = _boundaries(plan, self.below_x, c).first
            lengths = (stop - start).astype(np.int64)
            if not lengths.sum():
                continue
            offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            parts.append(_values(plan, np.repeat(c, lengths),
                                 np.repeat(start, lengths) + offsets))
        cells = np.concatenate(parts)
        assert cells.size == self.at_most - self.below
        at = self.rank - self.below - 1
        return float(np.partition(cells, at)[at])
