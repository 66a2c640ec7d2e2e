"""Independent blocks of events and their standardized statistics: the detectors' inputs.

Measures over an overlapping window are strongly autocorrelated (sampled every 25 events, two
samples of a 1000-event window share 97.5 % of their events), and their sampling error
depends on the window's positives P and negatives N, so no detector threshold means the
same false-alarm rate at every class ratio. Block watches avoid both problems:

- **Non-overlapping blocks that close on information, not on length.** A block closes once
  it holds at least ``min_class`` positives *and* ``min_class`` negatives
  (:class:`BlockCollector`). Successive blocks share no event, so their statistics are
  independent while the stream is stationary; at 1:15 a block is longer in events than at
  1:1 but its minority class, which limits every ratio-free measure, is as large.
- **Standardized by their own sampling error** (:class:`AUCStandardizer`,
  :class:`RateStandardizer`): each block's statistic becomes a z-score against the level of
  the blocks before it, with the sampling error of both the block and that reference level
  folded into the variance. While nothing changes these z-scores are (close to) independent
  N(0, 1), so a CUSUM on them has the in-control run length its threshold promises
  (:mod:`driftwatch.core.sequential`), at any class ratio.

The reference is *self-starting* (Hawkins 1987): it is the running level of every block since
the last restart (the start, or an alarm), so after an alarm the test re-learns the new level
from post-change data, and no alarm, false or real, can hide a later change.

**AUC.** A block's AUC is the Mann–Whitney statistic of its scores (ties count ½). Its
variance is DeLong's: with the placement values V₁₀(xᵢ) = share of negatives scored below
positive i (ties ½) and V₀₁(yⱼ) = share of positives scored above negative j,
Var(AUC) = s₁₀²/P + s₀₁²/N (DeLong, DeLong and Clarke-Pearson 1988). The component
variances s₁₀² and s₀₁² depend on the score distributions only, not on the class ratio, so
they are pooled over the reference blocks and applied to each new block's own P and N. The
z-score of block n is the recursive residual (xₙ − x̄)/√(vₙ + 1/W), x̄ the inverse-variance
weighted mean of the reference blocks and W the sum of their weights: the block's sampling
error plus the reference's own.

**Per-class error rates.** The false-negative rate FN/P on positives and the false-positive
rate FP/N on negatives (the rates of the Linear Four Rates test, Wang and Abraham 2015): the
class ratio cannot move them, unlike the overall error, which mixes them in the proportion of
the classes. A block's error count is compared with its predictive distribution given the
reference blocks, the beta-binomial with Jeffreys' prior (so the reference's sampling error
is folded in), and turned into a z-score by the mid-p probability integral transform
z = Φ⁻¹(P(X < x) + ½·P(X = x)), which is close to N(0, 1) and never heavier-tailed for
discrete counts, even when errors are rare.

References:
    E. R. DeLong, D. M. DeLong, D. L. Clarke-Pearson (1988). Comparing the areas under two or
    more correlated ROC curves: a nonparametric approach. *Biometrics* 44, 837–845.
    D. M. Hawkins (1987). Self-starting CUSUM charts for location and scale.
    *The Statistician* 36, 299–316.
    H. Wang, Z. Abraham (2015). Concept drift detection for streaming data. *IJCNN 2015*
    (the Linear Four Rates test: per-class rates instead of one error).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from driftwatch.core.sequential import normal_quantile

BLOCK_LIMIT = 100_000
"""Events a block may hold before it is dropped unclosed: bounds memory when one class stops
arriving (a block with too few of a class says nothing about ratio-free measures)."""

_Z_LIMIT = 1e-15  # mid-p values are clamped to [1e-15, 1 − 1e-15]: |z| ≤ 7.9


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
    """Collects events into non-overlapping blocks of at least ``min_class`` events per class.

    :meth:`add` returns the closed :class:`Block` at the event that completes it, else None.
    Memory: the scores of the open block (at most :data:`BLOCK_LIMIT` events).
    """

    __slots__ = ("_fn", "_fp", "_negatives", "_positives", "min_class")

    def __init__(self, min_class: int) -> None:
        if isinstance(min_class, bool) or not isinstance(min_class, int) or min_class < 2:
            raise ValueError(f"min_class must be an integer ≥ 2, got {min_class!r}")
        self.min_class = min_class
        self._positives: list[float] = []
        self._negatives: list[float] = []
        self._fn = 0
        self._fp = 0

    def __len__(self) -> int:
        return len(self._positives) + len(self._negatives)

    def add(self, y_true: int, y_score: float, wrong: bool) -> Block | None:
        """Add one event (``wrong``: its crisp prediction differs from its label)."""
        positives, negatives = self._positives, self._negatives
        if y_true:
            positives.append(y_score)
            self._fn += wrong
        else:
            negatives.append(y_score)
            self._fp += wrong
        m = self.min_class
        p, n = len(positives), len(negatives)
        if p >= m and n >= m:
            return self._close()
        if p + n >= BLOCK_LIMIT:
            self._clear()
        return None

    def _close(self) -> Block:
        auc, s10, s01 = delong(self._positives, self._negatives)
        block = Block(len(self), len(self._positives), len(self._negatives), auc, s10, s01,
                      self._fn, self._fp)
        self._clear()
        return block

    def _clear(self) -> None:
        self._positives, self._negatives = [], []
        self._fn = self._fp = 0

    def export_state(self) -> dict[str, Any]:
        return {"positives": list(self._positives), "negatives": list(self._negatives),
                "fn": self._fn, "fp": self._fp}

    def restore(self, state: Mapping[str, Any]) -> None:
        self._positives = [float(x) for x in state["positives"]]
        self._negatives = [float(x) for x in state["negatives"]]
        self._fn, self._fp = int(state["fn"]), int(state["fp"])


class AUCStandardizer:
    """Self-starting z-scores of block AUCs (see the module docstring).

    The first ``warmup`` blocks after a :meth:`reset` only build the reference (level and
    DeLong components); from then on :meth:`update` returns the block's recursive residual
    and adds the block to the reference.

    The residual is taken on the arcsine-square-root scale, x = asin(√AUC), with the delta
    method's variance v/(4·A(1 − A)) at the reference level A = sin²(x̄): a block AUC near 1
    is skewed towards low values (skewness −0.85 for 20 + 20 events at AUC 0.95), which a
    downward test would take for drops, and this transform makes it symmetric (skewness
    0.1, normal tails; measured in ``benchmarks/detection.py``'s calibration table).
    """

    __slots__ = ("_blocks", "_df01", "_df10", "_raw", "_ss01", "_ss10", "_sum", "_weight",
                 "warmup")

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self.reset()

    def reset(self) -> None:
        self._blocks = 0
        self._weight = 0.0  # W = Σ 1/vᵢ (transformed scale)
        self._sum = 0.0  # Σ xᵢ/vᵢ
        self._raw = 0.0  # Σ AUCᵢ/vᵢ: the reference on the AUC scale
        self._ss10 = self._ss01 = 0.0  # pooled sums of squares of the placement values
        self._df10 = self._df01 = 0  # and their degrees of freedom

    @property
    def reference(self) -> float:
        """The reference AUC level: the blocks' weighted mean AUC (NaN before any block)."""
        if self._weight <= 0.0:
            return math.nan
        return self._raw / self._weight

    def variance(self, positives: int, negatives: int) -> float:
        """A block's AUC variance at P = ``positives``, N = ``negatives`` from the pooled
        components (NaN before any block)."""
        if self._df10 == 0 or self._df01 == 0:
            return math.nan
        return self._ss10 / self._df10 / positives + self._ss01 / self._df01 / negatives

    def update(self, block: Block) -> float | None:
        z = None
        x = math.asin(math.sqrt(block.auc))
        if self._blocks >= self.warmup:
            v = self._scaled(self.variance(block.positives, block.negatives), self._level())
            if v > 0.0:
                z = (x - self._sum / self._weight) / math.sqrt(v + 1.0 / self._weight)
        # Pool this block's components, then weigh it with the pooled variance.
        self._ss10 += block.s10 * (block.positives - 1)
        self._df10 += block.positives - 1
        self._ss01 += block.s01 * (block.negatives - 1)
        self._df01 += block.negatives - 1
        level = self._level() if self._weight > 0.0 else block.auc
        v = self._scaled(self.variance(block.positives, block.negatives), level)
        if v > 0.0:
            self._weight += 1.0 / v
            self._sum += x / v
            self._raw += block.auc / v
            self._blocks += 1
        return z

    def _level(self) -> float:
        """The reference on the arcsine scale, back-transformed: where the delta method
        takes its derivative (the scale the residuals live on)."""
        return math.sin(self._sum / self._weight) ** 2

    @staticmethod
    def _scaled(variance: float, auc: float) -> float:
        """The variance of asin(√AUC) by the delta method (0 when it is undefined)."""
        spread = 4.0 * auc * (1.0 - auc)
        if not variance > 0.0 or not spread > 0.0:
            return 0.0
        return variance / spread

    def export_state(self) -> list[float]:
        return [self._blocks, self._weight, self._sum, self._raw, self._ss10, self._df10,
                self._ss01, self._df01]

    def restore(self, state: Sequence[float]) -> None:
        blocks, self._weight, self._sum, self._raw, self._ss10, df10, self._ss01, df01 = state
        self._blocks, self._df10, self._df01 = int(blocks), int(df10), int(df01)


class RateStandardizer:
    """Self-starting z-scores of a per-class error rate (errors out of trials per block).

    The first ``warmup`` blocks after a :meth:`reset` only count; from then on a block's
    error count is scored against the beta-binomial predictive distribution given the
    reference counts, by the mid-p transform (module docstring).
    """

    __slots__ = ("_blocks", "_errors", "_trials", "warmup")

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self.reset()

    def reset(self) -> None:
        self._blocks = 0
        self._errors = 0
        self._trials = 0

    @property
    def reference(self) -> float:
        """The reference rate (NaN before any block)."""
        return self._errors / self._trials if self._trials else math.nan

    def update(self, errors: int, trials: int) -> float | None:
        z = None
        if self._blocks >= self.warmup:
            z = midp_z(errors, trials, self._errors + 0.5, self._trials - self._errors + 0.5)
        self._blocks += 1
        self._errors += errors
        self._trials += trials
        return z

    def export_state(self) -> list[int]:
        return [self._blocks, self._errors, self._trials]

    def restore(self, state: Sequence[int]) -> None:
        self._blocks, self._errors, self._trials = (int(x) for x in state)


def beta_binomial_pmf(n: int, a: float, b: float, last: int | None = None) -> list[float]:
    """P(X = x) for x = 0..``last`` (default n), X ~ BetaBinomial(n, a, b)."""
    base = math.lgamma(n + 1) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) \
        - math.lgamma(n + a + b)
    return [
        math.exp(base - math.lgamma(x + 1) - math.lgamma(n - x + 1)
                 + math.lgamma(x + a) + math.lgamma(n - x + b))
        for x in range(n + 1 if last is None else last + 1)
    ]


def midp_z(x: int, n: int, a: float, b: float) -> float:
    """Φ⁻¹ of the mid-p value P(X < x) + ½·P(X = x) of ``x`` under BetaBinomial(n, a, b):
    large when ``x`` errors are many for the predictive distribution."""
    pmf = beta_binomial_pmf(n, a, b, last=x)  # the terms above x do not count
    u = math.fsum(pmf[:x]) + 0.5 * pmf[x]
    return normal_quantile(min(max(u, _Z_LIMIT), 1.0 - _Z_LIMIT))
