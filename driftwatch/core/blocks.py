"""Independent blocks of events and their standardized statistics: the detectors' inputs.

A block closes once it holds ``min_class`` positives *and* ``min_class`` negatives *and*
spans ``seconds`` of record time (:class:`BlockCollector`); blocks share no event, so their
statistics are independent while the stream is stationary, and each block's span is what it
spends of the false-alarm budget (:mod:`driftwatch.core.budget`). Each block's statistic is
standardized by its own sampling error and the reference's (:class:`AUCStandardizer`,
:class:`~driftwatch.core.block_rates.RateStandardizer`) into a z-score that is close to
N(0, 1) while nothing changes, at any class ratio, so a CUSUM on it keeps its promised run
length (:mod:`driftwatch.core.sequential`). Why not the window's overlapping values:
docs/detection.md#why-blocks-not-the-sliding-window.

The reference is *self-starting* (Hawkins 1987): it is the running level of every block since
the last restart (the start, or an alarm), so after an alarm the test re-learns the new level
from post-change data, and no alarm, false or real, can hide a later change.

**Record time** is the events' ``ts``, never the clock, and the largest ``ts`` seen: an older
record joins the open block but moves no clock; a block mostly of old records closes once they
span the block's time; events without ``ts``, and the first block after a start or restore,
close on information alone (:attr:`Block.seconds` None). Each case: docs/detection.md#record-time.

**Evidence against an indifference zone** (:mod:`driftwatch.core.zone`): each scored block
also gives, for a side (a fall or a rise of the measure), its z-score against the reference
moved by a tolerance towards that side, and its standard deviation in the measure's units.

**AUC.** A block's AUC is the Mann–Whitney statistic of its scores (ties count ½), its
variance DeLong's, Var(AUC) = s₁₀²/P + s₀₁²/N (DeLong, DeLong and Clarke-Pearson 1988), with
the component variances pooled over the reference blocks; its z-score is the recursive
residual against the reference blocks' mean weighted by their information PᵢNᵢ/(Pᵢ + Nᵢ). The
formulas and why those weights: docs/detection.md#the-auc-of-a-block-variance-and-z-score.

**Per-class error rates**: :mod:`driftwatch.core.block_rates`.

References:
    E. R. DeLong, D. M. DeLong, D. L. Clarke-Pearson (1988). Comparing the areas under two or
    more correlated ROC curves: a nonparametric approach. *Biometrics* 44, 837–845.
    D. M. Hawkins (1987). Self-starting CUSUM charts for location and scale.
    *The Statistician* 36, 299–316.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from driftwatch.core.zone import tolerance

BLOCK_LIMIT = 100_000
"""The most events a block holds: one with enough of both classes closes at this size before
its time is up (at over 3 300 events a second with 30-second blocks; its shorter span is
what it spends of the budget), and one lacking a class is dropped unclosed (a block with
too few of a class says nothing about ratio-free measures). Bounds memory: about 3 MB of
scores per model."""


@dataclass(frozen=True, slots=True)
class Block:
    """The statistics of one closed block."""

    events: int
    positives: int
    negatives: int
    auc: float
    s10: float  # sample variance of the positives' placement values (DeLong's S₁₀)
    s01: float  # sample variance of the negatives' placement values (DeLong's S₀₁)
    false_negatives: int
    false_positives: int
    seconds: float | None = None  # record time spanned; None: unknown (no time, first block)


def delong(positives: Sequence[float], negatives: Sequence[float]) -> tuple[float, float, float]:
    """AUC and DeLong's component variances (S₁₀, S₀₁) of two score samples.

    Exact counts (ties count ½), O((P + N) log(P + N)) with numpy's sort and binary
    searches. Each sample needs at least two scores for its component variance (ddof 1);
    with one score the component is 0. The placement values are integers once doubled, so
    each result is one correctly rounded division of integers: the float nearest the exact
    value.

    The arrays' own ``sort`` and ``searchsorted`` methods, not the ``np.`` functions: the
    same computations, without the functions' dispatch, which on a block's few dozen scores
    cost more than the work (a block closes every few dozen events).
    """
    p, n = len(positives), len(negatives)
    if p == 0 or n == 0:
        raise ValueError("delong needs at least one positive and one negative score")
    pos = np.array(positives, dtype=float)  # copies: sorted in place below
    neg = np.array(negatives, dtype=float)
    pos.sort()
    neg.sort()
    # Twice the placement counts, integers: below + below-or-equal.
    v10 = neg.searchsorted(pos, "left") + neg.searchsorted(pos, "right")
    v01 = 2 * p - pos.searchsorted(neg, "left") - pos.searchsorted(neg, "right")
    # The placement values are v10/(2N) and v01/(2P), so with integer sums and sums of
    # squares (below 2⁶³ for blocks of up to BLOCK_LIMIT events) AUC = Σv10/(2PN) and
    # S10 = (P·Σv10² − (Σv10)²)/(4N²·P(P − 1)), S01 alike: one division of Python integers
    # each, correctly rounded.
    sum10, squares10 = int(v10.sum()), int((v10 * v10).sum())
    sum01, squares01 = int(v01.sum()), int((v01 * v01).sum())
    auc = sum10 / (2 * p * n)
    s10 = (p * squares10 - sum10 * sum10) / (4 * n * n * p * (p - 1)) if p > 1 else 0.0
    s01 = (n * squares01 - sum01 * sum01) / (4 * p * p * n * (n - 1)) if n > 1 else 0.0
    return auc, s10, s01


class BlockCollector:
    """Collects events into non-overlapping blocks of at least ``min_class`` events per class
    spanning at least ``seconds`` of record time (0: information only).

    :meth:`add` returns the closed :class:`Block` at the event that completes it, else None.
    A block closes at the first event at which it holds ``min_class`` of each class and the
    record time (the largest ``ts`` seen) has reached the previous block's close plus
    ``seconds``, or at :data:`BLOCK_LIMIT` events. Per event: one comparison for the record
    time, the appends and the counts.
    Memory: the scores of the open block (at most :data:`BLOCK_LIMIT` events).
    """

    __slots__ = ("_due", "_fn", "_fp", "_negatives", "_now", "_past", "_past_high",
                 "_past_low", "_past_span", "_positives", "_present", "_start", "min_class",
                 "seconds")

    def __init__(self, min_class: int, seconds: float = 0.0) -> None:
        if isinstance(min_class, bool) or not isinstance(min_class, int) or min_class < 2:
            raise ValueError(f"min_class must be an integer ≥ 2, got {min_class!r}")
        if not 0.0 <= seconds < math.inf:
            raise ValueError(f"seconds must be a finite number ≥ 0, got {seconds!r}")
        self.min_class = min_class
        self.seconds = float(seconds)
        self._positives: list[float] = []
        self._negatives: list[float] = []
        self._fn = 0
        self._fp = 0
        self._now = -math.inf  # record time: the largest ts seen
        self._start = -math.inf  # record time the open block started (the last close)
        self._due = -math.inf  # record time the open block may close at
        self._past_low, self._past_high = math.inf, -math.inf
        self._past = self._present = 0
        self._past_span = False
        self._clear_times()

    def __len__(self) -> int:
        return len(self._positives) + len(self._negatives)

    @property
    def now(self) -> float | None:
        """The record time: the largest ``ts`` seen (None before any)."""
        return None if self._now == -math.inf else self._now

    def add(self, y_true: int, y_score: float, wrong: bool, ts: float | None = None
            ) -> Block | None:
        """Add one event (``wrong``: its crisp prediction differs from its label; ``ts``: its
        record time, if it has one)."""
        if ts is not None:
            if ts >= self._start:
                if ts > self._now:
                    self._now = ts
                self._present += 1
                if self._past_span and self._present >= self._past:
                    self._past_span = False
            else:
                self._add_past(ts)
        if y_true:
            scores = self._positives
            if wrong:
                self._fn += 1
        else:
            scores = self._negatives
            if wrong:
                self._fp += 1
        scores.append(y_score)
        # The time first: while it is not up (most events of a busy model) only the size
        # limit can close or drop the block.
        if self._now >= self._due or self._past_span:
            m = self.min_class
            p, n = len(self._positives), len(self._negatives)
            if p >= m and n >= m:
                return self._close()
            if p + n >= BLOCK_LIMIT:
                self._clear()
        elif len(self._positives) + len(self._negatives) >= BLOCK_LIMIT:
            m = self.min_class
            if len(self._positives) >= m and len(self._negatives) >= m:
                return self._close()
            self._clear()
        return None

    def extend(self, labels: Sequence[int], scores: Sequence[float],
               times: Sequence[float | None], threshold: float) -> list[tuple[int, Block]]:
        """:meth:`add` of each event in turn, in one call, predictions derived from the
        scores at ``threshold``; returns (index, block) of every block closed, in order.
        The same blocks at the same events: the closing event is found by vectorized running
        counts and the running maximum of the record time over a stretch of the events (a
        few hundred, four times more until the block closes), so a busy model's events cost
        a few numpy operations a stretch instead of a call each."""
        count = len(labels)
        if count == 0:
            return []
        y = np.fromiter(labels, dtype=np.int64, count=count)
        score_array = np.fromiter(scores, dtype=float, count=count)
        wrong = (score_array >= threshold) != (y == 1)
        # numpy reads None as NaN, which no valid time is: those events move no clock.
        raw = np.fromiter(times, dtype=float, count=count)
        stamps = raw.copy()
        stamps[np.isnan(stamps)] = -math.inf
        now = np.maximum(np.maximum.accumulate(stamps), self._now)  # record time after each
        timed = self.seconds > 0.0
        m = self.min_class
        closes: list[tuple[int, Block]] = []
        start = 0
        while start < count:
            p0, n0 = len(self._positives), len(self._negatives)
            found, stretch = -1, 256
            while found < 0:
                end = min(count, start + stretch)
                taken = y[start:end]
                p = p0 + np.cumsum(taken)
                n = n0 + np.arange(1, end - start + 1) - (p - p0)
                informed = (p >= m) & (n >= m)
                due = now[start:end] >= self._due
                if timed:  # or the block's own records' span
                    due |= self._past_span_after(raw[start:end])
                act = (informed & due) | (p + n >= BLOCK_LIMIT)
                hits = np.flatnonzero(act)
                if hits.size:
                    found = start + int(hits[0])
                elif end == count:
                    break
                stretch *= 4
            stop = count if found < 0 else found + 1
            self._take(y[start:stop], score_array[start:stop], wrong[start:stop])
            self._now = float(now[stop - 1])
            self._carry_times(raw[start:stop])
            if found >= 0:
                if len(self._positives) >= m and len(self._negatives) >= m:
                    closes.append((found, self._close()))
                else:  # the size limit without a second class: dropped, as add drops it
                    self._clear()
            start = stop
        return closes

    def _take(self, y: np.ndarray, scores: np.ndarray, wrong: np.ndarray) -> None:
        """Append a stretch of events to the open block (scores by class, error counts)."""
        positive = y == 1
        self._positives.extend(scores[positive].tolist())
        self._negatives.extend(scores[~positive].tolist())
        self._fn += int(np.count_nonzero(wrong & positive))
        self._fp += int(np.count_nonzero(wrong & ~positive))

    # -- records stamped before the open block's start ------------------------------------
    # The record time is the largest ts seen, so one record stamped far in the future (a
    # producer's bad clock) would leave every later record "in the past", and blocks would
    # then close on size alone, days apart; so would a backfill read after newer records.
    # A block most of whose timed records are stamped before its start therefore also
    # closes once those records span ``seconds`` among themselves, and spends that span.
    # Out-of-order stragglers in in-order traffic are a minority of their block: they never
    # close it early.

    def _clear_times(self) -> None:
        self._past_low, self._past_high = math.inf, -math.inf
        self._past = self._present = 0  # timed records before / at or after the start
        self._past_span = False  # the past ones are the most and span ``seconds``

    def _add_past(self, ts: float) -> None:
        self._past += 1
        if ts < self._past_low:
            self._past_low = ts
        if ts > self._past_high:
            self._past_high = ts
        self._past_span = (self.seconds > 0.0 and self._past > self._present
                           and self._past_high - self._past_low >= self.seconds)

    def _past_span_after(self, stamps: np.ndarray) -> np.ndarray:
        """After each of these events (NaN: no time), :meth:`add`'s past-span rule."""
        past = stamps < self._start  # NaN compares false: no time, no part
        present = self._present + np.cumsum(stamps >= self._start)
        before = self._past + np.cumsum(past)
        low = np.minimum(np.minimum.accumulate(np.where(past, stamps, np.inf)), self._past_low)
        high = np.maximum(np.maximum.accumulate(np.where(past, stamps, -np.inf)),
                          self._past_high)
        reached: np.ndarray = (before > present) & (high - low >= self.seconds)
        return reached

    def _carry_times(self, stamps: np.ndarray) -> None:
        """Record what :meth:`add` records of these events' times (the clock apart)."""
        past = stamps[stamps < self._start]
        self._present += int(np.count_nonzero(stamps >= self._start))
        if past.size:
            self._past += past.size - 1
            self._past_low = min(self._past_low, float(past.min()))
            self._add_past(float(past.max()))
        else:
            self._past_span = self._past_span and self._past > self._present

    def _close(self) -> Block:
        auc, s10, s01 = delong(self._positives, self._negatives)
        now, start = self._now, self._start
        if self._past_span and now < self._due:  # its own records' span
            seconds: float | None = self._past_high - self._past_low
        else:
            seconds = now - start if start != -math.inf else None
        block = Block(len(self), len(self._positives), len(self._negatives), auc, s10, s01,
                      self._fn, self._fp, seconds)
        self._clear()
        self._start = now
        self._due = now + self.seconds if self.seconds > 0.0 else -math.inf
        return block

    def _clear(self) -> None:
        self._positives, self._negatives = [], []
        self._fn = self._fp = 0
        self._clear_times()

    def export_state(self) -> dict[str, Any]:
        return {"positives": list(self._positives), "negatives": list(self._negatives),
                "fn": self._fn, "fp": self._fp, "now": _finite(self._now),
                "start": _finite(self._start), "present": self._present, "past": self._past,
                "past_span": [self._past_low, self._past_high] if self._past else None}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Load :meth:`export_state`; a state saved before blocks had a time rule (no
        ``now``) restores with its record time unknown: its open block closes on
        information, and the next ones on time."""
        self._positives = [float(x) for x in state["positives"]]
        self._negatives = [float(x) for x in state["negatives"]]
        self._fn, self._fp = int(state["fn"]), int(state["fp"])
        now, start = state.get("now"), state.get("start")
        self._now = -math.inf if now is None else float(now)
        self._start = -math.inf if start is None else float(start)
        known = self._start != -math.inf and self.seconds > 0.0
        self._due = self._start + self.seconds if known else -math.inf
        self._clear_times()
        self._present = int(state.get("present", 0))
        if state.get("past_span") is not None:
            self._past = int(state["past"]) - 1
            self._past_low = float(state["past_span"][0])
            self._add_past(float(state["past_span"][1]))


def _finite(value: float) -> float | None:
    """-inf (unknown) as None, for JSON."""
    return None if value == -math.inf else value


class AUCScore:
    """A block's AUC against its reference, on the arcsine scale: the block's x = asin(√AUC),
    the reference's information-weighted mean and the residual's standard deviation (the
    block's sampling error and the reference's own)."""

    __slots__ = ("mean", "sd", "x")

    def __init__(self, x: float, mean: float, sd: float) -> None:
        self.x, self.mean, self.sd = x, mean, sd

    def z(self) -> float:
        """The recursive residual (x − x̄)/sd: N(0, 1) while the AUC holds."""
        return (self.x - self.mean) / self.sd

    def tolerance(self, effect: float) -> float:
        """The zone's tolerance for this block (:func:`~driftwatch.core.zone.tolerance`):
        its residual standard deviation carried to AUC units at the reference level (the
        arcsine's derivative there: d sin²x/dx = sin 2x)."""
        return tolerance(effect, self.sd * math.sin(2.0 * self.mean))

    def evidence(self, side: int, effect: float) -> tuple[float, float]:
        """(u, room) for a fall (``side`` −1) or rise (+1) of the AUC against the zone of
        minimum ``effect``: u is the residual against the reference moved by the tolerance
        (:meth:`tolerance`, AUC units) towards that side, positive when the block is worse
        than that; room is the distance from the tolerance to ``effect``, both in residual
        standard deviations. The AUC units are carried to the arcsine scale at the
        reference level exactly (not by the derivative)."""
        if effect == 0.0:
            return side * (self.x - self.mean) / self.sd, 0.0
        level = math.sin(self.mean) ** 2
        shifted = _arcsine(level + side * self.tolerance(effect))
        boundary = _arcsine(level + side * effect)
        return side * (self.x - shifted) / self.sd, side * (boundary - shifted) / self.sd


def _arcsine(auc: float) -> float:
    return math.asin(math.sqrt(min(max(auc, 0.0), 1.0)))


class AUCStandardizer:
    """Self-starting z-scores of block AUCs (see the module docstring).

    The first ``warmup`` blocks after a :meth:`reset` only build the reference (level and
    DeLong components); from then on :meth:`score` compares a block with the reference and
    :meth:`add` takes it into the reference (:meth:`update` does both and returns the
    z-score).

    The residual is taken on the arcsine-square-root scale, x = asin(√AUC), with the delta
    method's variance v/(4·A(1 − A)) at the reference level A = sin²(x̄): a block AUC near 1
    is skewed towards low values (skewness −0.85 for 20 + 20 events at AUC 0.95), which a
    downward test would take for drops, and this transform makes it symmetric (skewness
    0.1, normal tails; measured in ``benchmarks/detection.py``'s calibration table).
    """

    __slots__ = ("_blocks", "_df01", "_df10", "_info", "_raw", "_spread_n", "_spread_p",
                 "_ss01", "_ss10", "_sum", "warmup")

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self.reset()

    def reset(self) -> None:
        self._blocks = 0
        self._info = 0.0  # H = Σ hᵢ, hᵢ = PᵢNᵢ/(Pᵢ + Nᵢ)
        self._sum = 0.0  # Σ hᵢ·xᵢ (arcsine scale)
        self._raw = 0.0  # Σ hᵢ·AUCᵢ: the reference on the AUC scale
        self._spread_p = self._spread_n = 0.0  # Σ hᵢ²/Pᵢ, Σ hᵢ²/Nᵢ: the mean's variance
        self._ss10 = self._ss01 = 0.0  # pooled sums of squares of the placement values
        self._df10 = self._df01 = 0  # and their degrees of freedom

    @property
    def reference(self) -> float:
        """The reference AUC level: the blocks' weighted mean AUC (NaN before any block)."""
        if self._info <= 0.0:
            return math.nan
        return self._raw / self._info

    def variance(self, positives: int, negatives: int) -> float:
        """A block's AUC variance at P = ``positives``, N = ``negatives`` from the pooled
        components (NaN before any block)."""
        if self._df10 == 0 or self._df01 == 0:
            return math.nan
        return self._ss10 / self._df10 / positives + self._ss01 / self._df01 / negatives

    def score(self, block: Block) -> AUCScore | None:
        """The block against the reference, or None while the reference is warming up (or
        its variance is undefined: every block so far perfectly separated)."""
        if self._blocks < self.warmup or self._df10 == 0 or self._df01 == 0:
            return None
        mean = self._sum / self._info
        level = math.sin(mean) ** 2
        spread = 4.0 * level * (1.0 - level)
        s10, s01 = self._ss10 / self._df10, self._ss01 / self._df01
        v = (s10 / block.positives + s01 / block.negatives) / spread if spread > 0.0 else 0.0
        if not v > 0.0:
            return None
        reference = (s10 * self._spread_p + s01 * self._spread_n) / (
            spread * self._info * self._info)
        return AUCScore(math.asin(math.sqrt(block.auc)), mean, math.sqrt(v + reference))

    def add(self, block: Block) -> None:
        """Take the block into the reference: its weighted AUC and its components."""
        p, n = block.positives, block.negatives
        self._ss10 += block.s10 * (p - 1)
        self._df10 += p - 1
        self._ss01 += block.s01 * (n - 1)
        self._df01 += n - 1
        h = p * n / (p + n)
        self._info += h
        self._sum += h * math.asin(math.sqrt(block.auc))
        self._raw += h * block.auc
        self._spread_p += h * h / p
        self._spread_n += h * h / n
        self._blocks += 1

    def update(self, block: Block) -> float | None:
        """:meth:`score` then :meth:`add`: the block's z-score (None while warming up)."""
        scored = self.score(block)
        self.add(block)
        return None if scored is None else scored.z()

    def export_state(self) -> list[float]:
        return [self._blocks, self._info, self._sum, self._raw, self._spread_p,
                self._spread_n, self._ss10, self._df10, self._ss01, self._df01]

    def restore(self, state: Sequence[float]) -> None:
        (blocks, self._info, self._sum, self._raw, self._spread_p, self._spread_n,
         self._ss10, df10, self._ss01, df01) = state
        self._blocks, self._df10, self._df01 = int(blocks), int(df10), int(df01)
