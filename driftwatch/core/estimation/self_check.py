"""The estimate checks itself: realized minus estimated, per block of labelled predictions.

An estimate from scores is only as good as the calibration p(s) it assumes. A *concept*
change, where the scores stay as they were but the labels they stand for change (P(y | s)
moves), is invisible to it: the estimated AUC stays put while the realized one falls. Once
the labels of estimated predictions arrive, the two can be compared, and
:class:`CalibrationCheck` turns that comparison into independent z-scores a CUSUM can watch
(:class:`~driftwatch.core.detectors.cusum.Cusum`, whose threshold follows from a target
in-control run length).

**Blocks close on expected information**: once the expected positives Σp and negatives
Σ(1 − p) both reach ``min_expected`` (and, with ``min_seconds``, span that much record time),
never on the labels, so given a block's scores its labels are independent Bernoulli(pᵢ) draws
and :mod:`~driftwatch.core.estimation.expected` holds exactly for it. **Per block**, each
measure of :data:`CHECKED_MEASURES` gets a z-score of its realized value against its
distribution given the scores: ``prevalence``, ``false_negative_rate`` and
``false_positive_rate`` from exact Poisson-binomial pmfs (:func:`poisson_binomial_pmf`) by
the mid-p transform (Lancaster 1961); ``auc`` on the arcsine-square-root scale, less the
estimate's bias, over its standard error. Why each choice:
docs/estimation.md#how-the-self-check-scores-a-block.

Signs are "realized minus estimated": a negative AUC z, or a positive error-rate z, means the
model does worse than its scores promise. Under calibration the z-scores are close to
N(0, 1) (``benchmarks/estimate.py`` measures their moments and a CUSUM's false alarms on
them); a z is NaN when the block's realized value is undefined (a block without a positive
or without a negative label, rare once ``min_expected`` is 20).

The reference is the estimate itself, not earlier blocks: nothing has to be learned before
the first block is scored, and the check does not adapt to a change (a drifted calibration
keeps giving large z-scores until it is refitted).

References:
    D. M. Hawkins (1987). Self-starting CUSUM charts for location and scale.
    *The Statistician* 36, 299–316 (:class:`SelfStarting`).
    H. O. Lancaster (1961). Significance tests in discrete distributions. *JASA* 56,
    223–234 (the mid-p value).
    Y. Hong (2013). On computing the distribution function for the Poisson binomial
    distribution. *Computational Statistics & Data Analysis* 59, 41–51 (the DFT of the
    characteristic function).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from driftwatch.core.blocks import BLOCK_LIMIT, delong
from driftwatch.core.estimation.expected import (
    Estimate,
    FloatArray,
    expected_auc,
    expected_confusion,
)
from driftwatch.core.estimation.window import SCALE, weight
from driftwatch.core.events import check_label, check_score
from driftwatch.core.sequential import normal_quantile
from driftwatch.core.state import check_state

CHECKED_MEASURES: tuple[str, ...] = ("prevalence", "auc", "false_negative_rate",
                                     "false_positive_rate")
"""The measures :class:`CalibrationCheck` scores per block, in its order."""

DEFAULT_MIN_EXPECTED = 20
"""A check block closes once it expects 20 positives and 20 negatives: the labelled block
watches' ``block_min_class``, so the two see blocks of the same information."""

STATE_VERSION = 1
_STATE_KEYS = frozenset({"version", "block", "blocks"})
_P_LIMIT = 1e-15  # mid-p values are clamped to [1e-15, 1 − 1e-15]: |z| ≤ 7.9


@dataclass(frozen=True, slots=True)
class CheckedMeasure:
    """One measure of one check block: what the labels gave, what the scores promised."""

    name: str
    realized: float
    estimate: Estimate
    z: float


@dataclass(frozen=True, slots=True)
class CheckBlock:
    """A closed check block: its size, realized and expected positives, and the measures."""

    events: int
    positives: int
    expected_positives: float
    measures: tuple[CheckedMeasure, ...]

    def z(self, name: str) -> float:
        """The z-score of a measure of :data:`CHECKED_MEASURES`."""
        for measure in self.measures:
            if measure.name == name:
                return measure.z
        raise ValueError(f"name must be one of {', '.join(CHECKED_MEASURES)}; got {name!r}")


def _z(realized: float, estimate: Estimate) -> float:
    """(realized − expected)/SE on the arcsine-square-root scale (module docstring)."""
    expected = estimate.value + estimate.bias
    spread = expected * (1.0 - expected)
    if not estimate.standard_error > 0.0 or not spread > 0.0 or math.isnan(realized):
        return math.nan
    scale = 2.0 * math.sqrt(spread) / estimate.standard_error
    return (math.asin(math.sqrt(realized)) - math.asin(math.sqrt(expected))) * scale


def poisson_binomial_pmf(probabilities: FloatArray) -> FloatArray:
    """P(X = x) for x = 0..n, X the number of successes of n independent Bernoulli trials
    with these probabilities, by the discrete Fourier transform of its characteristic
    function (Hong 2013): the pmf's DFT at frequency l is Πᵢ (1 − pᵢ + pᵢ·e^(−2πil/(n+1))),
    one product over an n × (n/2 + 1) array, and an inverse real FFT gives the pmf.
    O(n²) arithmetic in a handful of numpy calls, which for the few hundred predictions of
    a check block costs less than n calls of the one-trial-at-a-time recursion; rounding
    leaves errors near 10⁻¹⁶, far below the mid-p values' clamp."""
    n = probabilities.size
    size = n + 1
    phases = np.exp(-2j * np.pi * np.arange(size // 2 + 1) / size)
    spectrum = (1.0 - probabilities[:, None] + probabilities[:, None] * phases).prod(axis=0)
    return np.clip(np.fft.irfft(spectrum, n=size), 0.0, None)


def _probit(u: float) -> float:
    return normal_quantile(min(max(u, _P_LIMIT), 1.0 - _P_LIMIT))


def count_z(pmf: FloatArray, count: int) -> float:
    """The mid-p z of an observed ``count`` under ``pmf``: Φ⁻¹(P(X < count) +
    ½·P(X = count)), close to N(0, 1) for discrete counts and never heavier-tailed."""
    return _probit(float(pmf[:count].sum()) + 0.5 * float(pmf[count]))


def ratio_z(missed: FloatArray, hit: FloatArray, misses: int, hits: int) -> float:
    """The mid-p z of the realized rate misses/(misses + hits), where the misses and the
    hits are independent counts with these pmfs (FN and TP, both Poisson-binomial over the
    predictions of each side, for the false-negative rate). Exact: every (misses, hits)
    outcome is weighed, rates compared by cross-multiplied integers, the outcome with no
    event of the class left out (the rate is undefined there). O(n₀·n₁)."""
    total = misses + hits
    if total == 0:
        return math.nan
    a = np.arange(missed.size)[:, None]
    b = np.arange(hit.size)[None, :]
    joint = np.outer(missed, hit)
    joint[0, 0] = 0.0
    lhs, rhs = a * total, misses * (a + b)  # rate < realized ⇔ a·total < misses·(a + b)
    defined = float(joint.sum())
    if not defined > 0.0:
        return math.nan
    below = float(joint[lhs < rhs].sum())
    tied = float(joint[lhs == rhs].sum())
    return _probit((below + 0.5 * tied) / defined)


def check_block(y_true: list[int], y_score: list[float], probabilities: list[float],
                y_pred: list[int], measures: tuple[str, ...] = CHECKED_MEASURES) -> CheckBlock:
    """Score one block of labelled predictions (module docstring): the ``measures`` asked
    for, in :data:`CHECKED_MEASURES`' order. O(n log n) for the AUC, O(n²) arithmetic in few
    numpy calls for the counts' exact distributions and O(n₀·n₁) for the rates'."""
    n = len(y_true)
    # fromiter and an integer array: the cheapest conversions of a block's lists (a block of
    # thousands closes every 30 s in the agent)
    labels = np.array(y_true, dtype=np.int64) != 0
    p = np.fromiter(probabilities, float, n)
    positives = int(labels.sum())
    negatives = n - positives
    expected_positives = float(p.sum())
    checked: list[CheckedMeasure] = []
    if "auc" in measures:
        scores = np.fromiter(y_score, float, n)
        auc = expected_auc(scores, p)
        realized_auc = (delong(scores[labels].tolist(), scores[~labels].tolist())[0]
                        if positives and negatives else math.nan)
        checked.append(CheckedMeasure("auc", realized_auc, auc, _z(realized_auc, auc)))
    if measures != ("auc",):
        checked = _count_measures(labels, p, np.array(y_pred, dtype=bool), checked)
    order = {name: index for index, name in enumerate(CHECKED_MEASURES)}
    kept = sorted((m for m in checked if m.name in measures), key=lambda m: order[m.name])
    return CheckBlock(n, positives, expected_positives, tuple(kept))


def _count_measures(labels: npt.NDArray[Any], p: FloatArray,
                    predicted: npt.NDArray[Any],
                    checked: list[CheckedMeasure]) -> list[CheckedMeasure]:
    """``checked`` and the count measures (prevalence and the two error rates)."""
    n = labels.size
    positives = int(labels.sum())
    negatives = n - positives
    fn = int((labels & ~predicted).sum())
    fp = int((~labels & predicted).sum())
    confusion = expected_confusion(p, predicted)
    # The positives among the predicted-0 (FN) and the predicted-1 (TP); the negatives
    # among them (TN, FP) are the same counts read backwards.
    false_negatives = poisson_binomial_pmf(p[~predicted])
    true_positives = poisson_binomial_pmf(p[predicted])
    return [
        CheckedMeasure("prevalence", positives / n,
                       Estimate(float(p.sum()) / n,
                                math.sqrt(float((p * (1.0 - p)).sum())) / n, 0.0),
                       count_z(np.convolve(false_negatives, true_positives), positives)),
        *checked,
        CheckedMeasure("false_negative_rate", fn / positives if positives else math.nan,
                       confusion.false_negative_rate,
                       ratio_z(false_negatives, true_positives, fn, positives - fn)),
        CheckedMeasure("false_positive_rate", fp / negatives if negatives else math.nan,
                       confusion.false_positive_rate,
                       ratio_z(true_positives[::-1], false_negatives[::-1], fp, negatives - fp)),
    ]


class CalibrationCheck:
    """Collects labelled predictions into check blocks and scores each (module docstring).

    Parameters:
        min_expected: a block closes once Σp and Σ(1 − p) both reach it (≥ 2).
        threshold: the crisp prediction of a prediction without one is
            ``y_score >= threshold``.

    Cost: O(1) per labelled prediction, plus O(b log b) when a block of b closes. Memory:
    the open block (at most :data:`~driftwatch.core.blocks.BLOCK_LIMIT` predictions; a
    block that reaches it without closing, because the probabilities are all near 0 or all
    near 1, is dropped).
    """

    __slots__ = ("_block", "_blocks", "_expected", "_start", "measures", "min_expected",
                 "min_seconds", "threshold")

    def __init__(self, min_expected: int = DEFAULT_MIN_EXPECTED, threshold: float = 0.5,
                 measures: tuple[str, ...] = CHECKED_MEASURES,
                 min_seconds: float = 0.0) -> None:
        if isinstance(min_expected, bool) or not isinstance(min_expected, int) \
                or min_expected < 2:
            raise ValueError(f"min_expected must be an integer ≥ 2, got {min_expected!r}")
        self.min_expected = min_expected
        self.threshold = check_score(threshold, "threshold")
        if not measures or not set(measures) <= set(CHECKED_MEASURES):
            raise ValueError(f"measures must be some of {', '.join(CHECKED_MEASURES)}, "
                             f"got {measures!r}")
        self.measures = tuple(measures)
        if isinstance(min_seconds, bool) or not isinstance(min_seconds, int | float) \
                or not 0.0 <= min_seconds <= 86_400.0:
            raise ValueError(f"min_seconds must be a number in [0, 86400], got {min_seconds!r}")
        self.min_seconds = float(min_seconds)
        # The open block in columns: labels, scores, probabilities, crisp predictions.
        self._block: tuple[list[int], list[float], list[float], list[int]] = ([], [], [], [])
        self._expected = [0, 0]  # Σw and Σ(SCALE − w) of the open block, exact
        self._start: float | None = None  # the open block's first time
        self._blocks = 0

    @property
    def blocks(self) -> int:
        """Check blocks closed so far."""
        return self._blocks

    def __len__(self) -> int:
        return len(self._block[0])

    def update(self, y_true: int, y_score: float, probability: float,
               y_pred: int | None = None) -> CheckBlock | None:
        """Add one labelled prediction (``probability``: its calibrated probability, as
        estimated); the closed block at the prediction that completes one, else None. A bad
        argument is a ``ValueError`` naming it, and nothing changes."""
        label = y_true if type(y_true) is int and 0 <= y_true <= 1 \
            else check_label(y_true, "y_true")
        score = y_score if type(y_score) is float and y_score - y_score == 0.0 \
            else check_score(y_score, "y_score")
        w = weight(probability)
        pred = None if y_pred is None else check_label(y_pred, "y_pred")
        return self.update_valid(label, score, w, pred)

    def update_valid(self, y_true: int, y_score: float, w: int, y_pred: int | None = None,
                     ts: float | None = None) -> CheckBlock | None:
        """:meth:`update` of checked values (a 0/1 label and prediction or None, a finite
        float score and time or None) and the probability's fixed-point weight w, not checked
        again. With ``min_seconds``, a block also spans that much time (``ts`` since the
        block's first time; events without a time close blocks on information alone): at
        high traffic blocks then hold more predictions and close less often, as the
        labelled block watches' do (a time is independent of the labels given the scores,
        so the null distributions still hold)."""
        pred = (1 if y_score >= self.threshold else 0) if y_pred is None else y_pred
        labels, scores, probabilities, preds = self._block
        labels.append(y_true)
        scores.append(y_score)
        probabilities.append(w / SCALE)
        preds.append(pred)
        if self._start is None:
            self._start = ts
        expected = self._expected
        expected[0] += w
        expected[1] += SCALE - w
        goal = self.min_expected * SCALE
        if expected[0] >= goal and expected[1] >= goal and (
                ts is None or self._start is None or ts - self._start >= self.min_seconds):
            self._clear()
            self._blocks += 1
            return check_block(labels, scores, probabilities, preds, self.measures)
        if len(labels) >= BLOCK_LIMIT:
            self._clear()
        return None

    def cannot_close(self) -> tuple[int, float | None]:
        """Which of the next labelled predictions cannot close a block, for a caller that
        queues those (:class:`~driftwatch.core.estimation.watch.EstimateWatch`): (k, start).
        None of the next k can (each adds at most 1 to Σp and to Σ(1 − p), and both must
        reach ``min_expected``). When ``start`` is not None the expected counts are met,
        and a prediction with a time t, t − start < ``min_seconds``, cannot close the open
        block by the time rule. Neither can a block begun after a drop at the size limit
        meanwhile: it needs 2·``min_expected`` > k predictions, and starts later."""
        goal = self.min_expected * SCALE
        short = max(goal - self._expected[0], goal - self._expected[1])
        if short > 0:
            return -(-short // SCALE) - 1, None
        return 0, self._start

    def extend_valid(self, labels: Sequence[int], scores: Sequence[float],
                     weights: npt.NDArray[np.int64], preds: Sequence[int],
                     times: npt.NDArray[np.float64], start: int = 0
                     ) -> tuple[int, CheckBlock | None]:
        """:meth:`update_valid` of events ``start``, ``start + 1``, … in turn, up to the
        first that closes a block: (the index after the last event taken, that block or
        None when every event was taken without closing one). ``weights`` are the
        fixed-point weights, ``preds`` the crisp predictions, ``times`` the times with NaN
        for none. The same blocks at the same events and the same open block as one call
        each: the closing event is found by exact running integer sums of w and
        SCALE − w and the time rule, vectorized over stretches of a few hundred events
        (four times longer until one closes), so a busy model's labelled predictions cost
        a few numpy operations a stretch instead of a call each."""
        count = len(labels)
        goal = self.min_expected * SCALE
        stretch = 256
        first = start
        while first < count:
            end = min(count, first + stretch)
            w = weights[first:end]
            positive = self._expected[0] + np.cumsum(w)
            negative = self._expected[1] + np.cumsum(SCALE - w)
            informed = (positive >= goal) & (negative >= goal)
            t = times[first:end]
            untimed = np.isnan(t)
            if self._start is None:  # the block's first time is the first one it gets
                timed = np.flatnonzero(~untimed)
                begin = float(t[timed[0]]) if timed.size else math.nan
                no_start = np.arange(end - first) < (timed[0] if timed.size else end - first)
            else:
                begin, no_start = self._start, np.zeros(end - first, dtype=bool)
            due = untimed | no_start | (t - begin >= self.min_seconds)
            full = len(self) + np.arange(1, end - first + 1) >= BLOCK_LIMIT
            hits = np.flatnonzero((informed & due) | full)
            stop = end if not hits.size else first + int(hits[0]) + 1
            self._take(labels, scores, weights, preds, times, first, stop)
            if hits.size:
                if informed[hits[0]] and due[hits[0]]:
                    y, s, p, d = self._block
                    self._clear()
                    self._blocks += 1
                    return stop, check_block(y, s, p, d, self.measures)
                self._clear()  # the size limit without closing: dropped, as update_valid
            first = stop
            stretch *= 4
        return count, None

    def _take(self, labels: Sequence[int], scores: Sequence[float],
              weights: npt.NDArray[np.int64], preds: Sequence[int],
              times: npt.NDArray[np.float64], first: int, stop: int) -> None:
        """Events ``first`` to ``stop`` into the open block (none of them closing it)."""
        w = weights[first:stop]
        block = self._block
        block[0].extend(labels[first:stop])
        block[1].extend(scores[first:stop])
        block[2].extend((w / SCALE).tolist())
        block[3].extend(preds[first:stop])
        total = int(w.sum())
        self._expected[0] += total
        self._expected[1] += (stop - first) * SCALE - total
        if self._start is None:
            timed = np.flatnonzero(~np.isnan(times[first:stop]))
            if timed.size:
                self._start = float(times[first + int(timed[0])])

    def _clear(self) -> None:
        self._block = ([], [], [], [])
        self._expected = [0, 0]
        self._start = None

    def export_state(self) -> dict[str, Any]:
        return {"version": STATE_VERSION,
                "block": [list(e) for e in zip(*self._block, strict=True)],
                "blocks": self._blocks, "start": self._start}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`export_state` (this check's parameters kept); a state this
        version cannot read is a ``ValueError`` naming the problem, and nothing changes."""
        state = check_state(state, _STATE_KEYS, STATE_VERSION)
        try:
            block = [(check_label(label), check_score(score), weight(probability),
                      check_label(pred)) for label, score, probability, pred in state["block"]]
            blocks = int(state["blocks"])
            start = state.get("start")  # absent from states saved before the time rule
            start = None if start is None else check_score(start, "start")
        except (TypeError, ValueError) as error:
            raise ValueError(f"state {error}") from error
        if len(block) >= BLOCK_LIMIT:
            raise ValueError("state block is longer than a block may be")
        total = sum(w for _, _, w, _ in block)
        goal = self.min_expected * SCALE
        if total >= goal and len(block) * SCALE - total >= goal and (
                self.min_seconds == 0.0 or start is None):
            raise ValueError("state block holds a closed block")
        self._block = ([y for y, _, _, _ in block], [s for _, s, _, _ in block],
                       [w / SCALE for _, _, w, _ in block], [p for _, _, _, p in block])
        self._expected = [total, len(block) * SCALE - total]
        self._start, self._blocks = start, blocks


class SelfStarting:
    """Recursive residuals of a stream of z-scores: each one against the mean of those
    before it, for a check whose estimate may be off by a constant.

    A calibration fitted on N labels is off by its own sampling error, the same for every
    later block, so the check's z-scores are N(δ, 1) with an unknown δ and a CUSUM on them
    alarms too often (``benchmarks/estimate.py``: up to 5× its target with 2 000 fitting
    labels at 1:15). For z₁, z₂, … independent N(δ, 1), the recursive residuals
    rₙ = (zₙ − z̄ₙ₋₁)/√(1 + 1/(n − 1)) are independent N(0, 1) whatever δ is (Hawkins 1987),
    so a CUSUM on them keeps its target; they answer "has the calibration *changed* since
    these blocks?", where the z-scores answer "is it right?", and they need ``warmup``
    blocks first (no residual before). :meth:`reset` starts over, as after an alarm.

    >>> starting = SelfStarting(warmup=2)
    >>> [starting.update(z) for z in (1.0, 1.2)]  # learning the level, 1.1
    [None, None]
    >>> round(starting.update(0.8), 4)  # (0.8 − 1.1)/√(1 + 1/2)
    -0.2449
    """

    __slots__ = ("_count", "_sum", "warmup")

    def __init__(self, warmup: int = 5) -> None:
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 1:
            raise ValueError(f"warmup must be an integer ≥ 1, got {warmup!r}")
        self.warmup = warmup
        self.reset()

    def reset(self) -> None:
        self._count = 0
        self._sum = 0.0

    def update(self, z: float) -> float | None:
        """The residual of ``z`` (None during the warm-up, or for a NaN z, which is
        skipped)."""
        if math.isnan(z):
            return None
        residual = None
        if self._count >= self.warmup:
            n = self._count
            residual = (z - self._sum / n) / math.sqrt(1.0 + 1.0 / n)
        self._count += 1
        self._sum += z
        return residual

    def export_state(self) -> list[float]:
        return [self._count, self._sum]

    def restore(self, state: Sequence[float]) -> None:
        count, total = state
        self._count, self._sum = int(count), float(total)
