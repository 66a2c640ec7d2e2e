"""ADWIN: an adaptive window that drops its past when the past's mean differs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from driftwatch.core.detectors.base import (
    DIRECTIONS,
    Detector,
    DetectorState,
    Direction,
    check_choice,
    check_float,
    check_int,
)


class ADWIN(Detector):
    """ADaptive WINdowing (ADWIN2): change detection and a mean estimate without a window size.

    ADWIN keeps the longest window of recent inputs that is statistically consistent with
    "the mean did not change inside the window". Every ``clock`` inputs it tests each split of
    the window into an older part W0 and a newer part W1; when the two means differ by more
    than a bound that holds with confidence ``δ``, the oldest bucket is dropped and the test
    runs again, until no split differs. The window that remains is an estimate of the
    *current* distribution, so :attr:`estimation` is a mean that adapts its own memory — the
    reason Bifet et al. 2015 proposes it for prequential evaluation — and a cut is a drift.

    The window is an exponential histogram: row ``i`` holds up to ``max_buckets`` buckets
    that each summarize 2**i consecutive inputs (their total and their sum of squared
    deviations); when a row overflows, its two oldest buckets merge into one of the next row.
    Memory is O(``max_buckets`` · log W) and the time per input is amortized O(1) for the
    insertion plus O(``max_buckets`` · log W) per ``clock`` inputs for the test (and one more
    pass per cut), W being the window's width. Splits are tested only at bucket boundaries,
    oldest to newest, with

        ε = √(2·m·σ²·δ′) + (2/3)·δ′·m,   δ′ = ln(2·ln W / δ),
        m = 1/(n0 − min_window_length + 1) + 1/(n1 − min_window_length + 1),

    σ² the window's variance, and both parts at least ``min_window_length`` long (with the
    default 5, m = 1/(n0 − 4) + 1/(n1 − 4)). A split is a cut when |mean(W0) − mean(W1)| > ε.

    **After a drift the shrunk window is kept**: it is the estimate of the current mean, and
    it is what the algorithm prescribes. Only the one-step ``DRIFT`` state is cleared on the
    next input; the check schedule (every ``clock`` inputs) continues undisturbed. A cut
    drops only as much of the past as the test can tell apart, so after one change the
    window may be cut again at the next few checks, each reported as a drift (see the
    example); the alarm layer, not the detector, decides how to debounce.

    **Direction.** A cut is an increase (``"up"``) when the newer part's mean is higher and a
    decrease (``"down"``) when it is lower. Every cut shrinks the window, whatever its
    direction, because the window must keep tracking the current mean; only cuts in the
    watched direction are reported as drift. A check that makes several cuts reports drift
    when at least one of them is in the watched direction.

    **Input.** Any finite real, typically the monitored measure itself (for AUC, where higher
    is better, the default ``direction="down"`` reports drops) or a 0/1 loss. The additive
    term (2/3)·δ′·m of ε is in input units and assumes inputs spanning about [0, 1]: on a
    measure that varies by only a few hundredths it dominates ε and ADWIN becomes slow to
    react; on inputs with a range much larger than 1 it becomes negligible.

    **Differences from other implementations.** River's ``ADWIN`` reports cuts in both
    directions and, on the input after a drift, throws the whole window away and starts
    empty (so its check schedule restarts too); its ``variance`` is the window's *sum* of
    squared deviations (n·σ²) and its ``estimation`` of an empty window is 0.0. With
    ``direction="both"`` and a fresh detector after each drift, this class reports exactly
    River's drifts. MOA's ``ADWINChangeDetector`` keeps the window like this class but reports
    a drift only when the estimate after the cut exceeds the estimate before the input; here
    the direction of each cut itself decides.

    Parameters
    ----------
    delta
        Confidence δ in (0, 1): the bound on the probability that a check cuts a window whose
        mean did not change. Smaller means fewer false alarms and later detections.
    clock
        Test the window every ``clock`` inputs (1 tests after every input).
    max_buckets
        Buckets kept per row of the histogram before the two oldest merge. More buckets mean
        finer split points (and more memory and time).
    min_window_length
        Minimum length of each side of a tested split.
    grace_period
        No test until the window holds more than this many inputs.
    direction
        ``"down"`` (report decreases of the mean), ``"up"`` (increases) or ``"both"``.

    Examples
    --------
    A 0/1 loss (1 = wrong prediction) whose rate rises from 10 % to 30 % at index 1000:

    >>> import random
    >>> from driftwatch.core.detectors import ADWIN, DetectorState
    >>> rng = random.Random(7)
    >>> errors = [float(rng.random() < 0.1) for _ in range(1000)]
    >>> errors += [float(rng.random() < 0.3) for _ in range(1000)]
    >>> adwin = ADWIN(direction="up")
    >>> [(i, adwin.width) for i, x in enumerate(errors) if adwin.update(x) is DetectorState.DRIFT]
    [(1087, 832), (1119, 352), (1151, 320), (1215, 320)]
    >>> adwin.width, round(adwin.estimation, 3)
    (1104, 0.293)

    The window sheds the old data in steps, and each step that cuts is reported: one change
    can give several drifts at consecutive checks (River, which empties the window, gives one).

    River's documented example (an increase) gives River's index:

    >>> rng = random.Random(12345)
    >>> stream = rng.choices([0, 1], k=1000) + rng.choices(range(4, 8), k=1000)
    >>> adwin = ADWIN(direction="both")
    >>> [i for i, x in enumerate(stream) if adwin.update(x) is DetectorState.DRIFT]
    [1023]

    References
    ----------
    A. Bifet, R. Gavaldà (2007). Learning from time-changing data with adaptive windowing.
    *Proc. SIAM International Conference on Data Mining (SDM)*, 443–448: ADWIN, its bucket
    compression (ADWIN2) and the variance-based bound used in practice.
    A. Bifet, G. de Francisci Morales, J. Read, G. Holmes, B. Pfahringer (2015). Efficient
    online evaluation of big data stream classifiers. *KDD*, §6: ADWIN for
    prequential evaluation, Theorem 3.
    """

    name: ClassVar[str] = "adwin"

    # Row i of the histogram: totals and sums of squared deviations of buckets of 2**i inputs,
    # oldest first. Row 0 always exists; the last row is never empty unless the window is.
    _totals: list[list[float]]
    _sums_sq: list[list[float]]
    _width: int
    _total: float
    _sum_sq: float  # sum of squared deviations from the window's mean (W·σ²)
    _tick: int  # inputs since the last scheduled check, modulo clock

    def __init__(
        self,
        *,
        delta: float = 0.002,
        clock: int = 32,
        max_buckets: int = 5,
        min_window_length: int = 5,
        grace_period: int = 10,
        direction: Direction = "down",
    ) -> None:
        self.delta = check_float("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        self.clock = check_int("clock", clock, 1)
        self.max_buckets = check_int("max_buckets", max_buckets, 1)
        self.min_window_length = check_int("min_window_length", min_window_length, 1)
        self.grace_period = check_int("grace_period", grace_period, 0)
        self.direction: Direction = check_choice("direction", direction, DIRECTIONS)
        self.reset()

    # ----------------------------------------------------------------------------------------
    # Estimates

    @property
    def width(self) -> int:
        """Number of inputs in the window."""
        return self._width

    @property
    def estimation(self) -> float:
        """Mean of the window: the estimate of the current mean (NaN when empty)."""
        return self._total / self._width if self._width else math.nan

    @property
    def variance(self) -> float:
        """Population variance σ² of the window (NaN when empty)."""
        return max(self._sum_sq / self._width, 0.0) if self._width else math.nan

    # ----------------------------------------------------------------------------------------
    # Detector hooks

    def _reset(self) -> None:
        self._totals = [[]]
        self._sums_sq = [[]]
        self._width = 0
        self._total = 0.0
        self._sum_sq = 0.0
        self._tick = 0

    def _after_drift(self) -> None:
        """Keep the shrunk window: it is the estimate of the current distribution."""

    def _update(self, x: float) -> DetectorState:
        self._insert(x)
        self._tick = tick = (self._tick + 1) % self.clock
        if tick or self._width <= self.grace_period:
            return DetectorState.STABLE
        reported = False
        while (gap := self._find_cut()) is not None:
            self._drop_oldest()
            # gap = mean(W0) − mean(W1), W1 the newer part: negative means the mean went up.
            if self.direction == "both" or (gap < 0) == (self.direction == "up"):
                reported = True
        return DetectorState.DRIFT if reported else DetectorState.STABLE

    def _export(self) -> dict[str, Any]:
        return {
            "buckets": [
                [[t, s] for t, s in zip(totals, sums, strict=True)]
                for totals, sums in zip(self._totals, self._sums_sq, strict=True)
            ],
            "width": self._width,
            "total": self._total,
            "sum_sq": self._sum_sq,
            "tick": self._tick,
        }

    def _restore(self, data: Mapping[str, Any]) -> None:
        rows = data["buckets"]
        self._totals = [[float(t) for t, _ in row] for row in rows]
        self._sums_sq = [[float(s) for _, s in row] for row in rows]
        self._width = int(data["width"])
        self._total = float(data["total"])
        self._sum_sq = float(data["sum_sq"])
        self._tick = int(data["tick"])
        self._check()

    # ----------------------------------------------------------------------------------------
    # The exponential histogram

    def _insert(self, x: float) -> None:
        self._width = width = self._width + 1
        if width > 1:
            # Streaming update of the sum of squared deviations (Welford / Babcock et al.).
            gap = x - self._total / (width - 1)
            self._sum_sq += (width - 1) * gap * gap / width
        self._total += x
        totals, sums_sq = self._totals, self._sums_sq
        row, limit = 0, self.max_buckets
        row_totals, row_sums = totals[0], sums_sq[0]
        row_totals.append(x)
        row_sums.append(0.0)
        while len(row_totals) > limit:
            if row + 1 == len(totals):
                totals.append([])
                sums_sq.append([])
            size = 1 << row
            t0, t1 = row_totals[0], row_totals[1]
            s0, s1 = row_sums[0], row_sums[1]
            del row_totals[:2], row_sums[:2]
            mean_gap = t0 / size - t1 / size
            row += 1
            row_totals, row_sums = totals[row], sums_sq[row]
            row_totals.append(t0 + t1)
            # Two equal halves of `size` inputs: n0·n1/(n0 + n1) = size/2.
            row_sums.append(s0 + s1 + size * mean_gap * mean_gap / 2)

    def _drop_oldest(self) -> None:
        row = len(self._totals) - 1
        size = 1 << row
        total = self._totals[row].pop(0)
        sum_sq = self._sums_sq[row].pop(0)
        self._width -= size
        self._total -= total
        # A cut leaves at least min_window_length ≥ 1 inputs, so the width stays positive.
        gap = total / size - self._total / self._width
        self._sum_sq -= sum_sq + size * self._width * gap * gap / (size + self._width)
        while len(self._totals) > 1 and not self._totals[-1]:
            self._totals.pop()
            self._sums_sq.pop()

    def _find_cut(self) -> float | None:
        """mean(W0) − mean(W1) of the first split (oldest first) that is a cut, or None.

        One pass over the buckets, O(``max_buckets`` · log W): about 45 splits at W = 4 000
        with 5 buckets per row. Each split is first compared with ε's additive term
        (2/3)·δ′·m alone, computed exactly as in ε: since ε is that term plus a square root
        ≥ 0 and rounding is monotone, |gap| ≤ the term implies |gap| ≤ ε, so skipping the
        root there changes no outcome, and most splits of a stationary window stop at that
        test. The counts are floats holding integers far below 2**53, so every operation on
        them is exact (the same values as with ints), and cheaper in CPython than mixed
        int/float arithmetic.
        """
        width, shortest = self._width, self.min_window_length
        if width < 2 * shortest:
            return None
        log_term = math.log(2.0 * math.log(width) / self.delta)  # δ′
        window_var = max(self._sum_sq / width, 0.0)  # rounding can leave a tiny negative
        linear = 2.0 / 3.0 * log_term  # ε = √(2·m·σ²·δ′) + linear·m
        least = float(shortest)
        offset = least - 1.0  # n − min_window_length + 1 = n − offset
        totals = self._totals
        n0, n1 = 0.0, float(width)
        u0, u1 = 0.0, self._total
        for row in range(len(totals) - 1, -1, -1):
            size = float(1 << row)
            for total in totals[row]:
                n0 += size
                n1 -= size
                u0 += total
                u1 -= total
                if n1 < least:
                    return None  # W1 only shrinks from here on
                if n0 < least:
                    continue
                gap = u0 / n0 - u1 / n1
                m = 1.0 / (n0 - offset) + 1.0 / (n1 - offset)
                additive = linear * m
                if (gap > additive or -gap > additive) and abs(gap) > (
                    math.sqrt(2.0 * m * window_var * log_term) + additive
                ):
                    return gap
        return None

    def _check(self) -> None:
        """Raise ``ValueError`` if the histogram's invariants do not hold (tests, restore)."""
        rows = self._totals
        if not rows or len(rows) != len(self._sums_sq):
            raise ValueError("adwin: malformed bucket rows")
        for totals, sums in zip(rows, self._sums_sq, strict=False):
            if len(totals) != len(sums) or len(totals) > self.max_buckets:
                raise ValueError("adwin: a bucket row is malformed or over capacity")
        if len(rows) > 1 and not rows[-1]:
            raise ValueError("adwin: the oldest bucket row is empty")
        width = sum(len(totals) << row for row, totals in enumerate(rows))
        if width != self._width:
            raise ValueError(f"adwin: buckets hold {width} inputs, width says {self._width}")
        magnitude = sum(abs(t) for totals in rows for t in totals)
        if abs(sum(t for totals in rows for t in totals) - self._total) > 1e-9 * (magnitude + 1.0):
            raise ValueError("adwin: bucket totals do not add up to the window's total")
        if not 0 <= self._tick < self.clock:
            raise ValueError(f"adwin: tick {self._tick} outside [0, clock)")
