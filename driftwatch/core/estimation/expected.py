"""Expected measures of a set of scored predictions whose labels are not known yet.

Given each prediction's score sᵢ, crisp prediction ŷᵢ and calibrated probability pᵢ =
P(yᵢ = 1 | sᵢ), the labels are independent Bernoulli(pᵢ) draws, so the measures the labels
will realize are random variables whose distribution follows from the scores alone
(confidence-based performance estimation, CBPE: NannyML's documentation). With qᵢ = 1 − pᵢ:

**Confusion matrix.** E[TP] = Σ_{ŷ=1} pᵢ, E[FP] = Σ_{ŷ=1} qᵢ, E[FN] = Σ_{ŷ=0} pᵢ,
E[TN] = Σ_{ŷ=0} qᵢ. Each count is a Poisson-binomial sum: Var(TP) = Var(FP) = Σ_{ŷ=1} pᵢqᵢ,
Var(FN) = Var(TN) = Σ_{ŷ=0} pᵢqᵢ, and TP, FN are independent (they sum different events).

**Rates**, as ratios of expectations: FNR̂ = E[FN]/(E[FN] + E[TP]) and
FPR̂ = E[FP]/(E[FP] + E[TN]). The realized FN/P varies around it with the delta method's
variance (b²·Var a + a²·Var b)/(a + b)⁴ for a/(a + b), a = E[FN], b = E[TP] (FPR alike).

**AUC.** The realized AUC is U/D, U = Σ_{i≠j} yᵢ(1 − yⱼ)·cᵢⱼ the Mann–Whitney count
(cᵢⱼ = 1 if sᵢ > sⱼ, ½ on a tie, 0 below) and D = P·N = Σ_{i≠j} yᵢ(1 − yⱼ). The estimate is
the ratio of their expectations:

    AUĈ = E[U]/E[D],  E[U] = Σ_{sᵢ>sⱼ} pᵢqⱼ + ½·Σ_{sᵢ=sⱼ, i≠j} pᵢqⱼ,
                      E[D] = Σ_{i≠j} pᵢqⱼ = S(n − S) − Σ pᵢqᵢ,  S = Σ pᵢ.

Pairs are ordered by the scores, not by the calibrated probabilities, ties count ½ and no
prediction pairs with itself. The variance comes from Hoeffding's decomposition of U and D
with DeLong's structural components as expected counts, through the delta method for the
ratio, with its second-order bias (both measured by ``benchmarks/estimate.py``). The
derivation: docs/estimation.md#the-expected-auc-pairs-and-its-variance.

O(n log n) (one sort) in numpy floats: the read-time companion of the exact sums of
:class:`~driftwatch.core.estimation.window.EstimatedWindow`, used per block by the self-check.

References:
    NannyML documentation, "Confidence-based Performance Estimation (CBPE)" (how it works).
    H. B. Mann, D. R. Whitney (1947). On a test of whether one of two random variables is
    stochastically larger than the other. *Ann. Math. Statist.* 18, 50–60.
    E. R. DeLong, D. M. DeLong, D. L. Clarke-Pearson (1988). Comparing the areas under two
    or more correlated ROC curves. *Biometrics* 44, 837–845 (the structural components).
    W. Hoeffding (1948). A class of statistics with asymptotically normal distribution.
    *Ann. Math. Statist.* 19, 293–325.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Estimate:
    """An estimated measure and how far the realized value is expected to fall from it.

    Attributes:
        value: the estimate (a ratio of expectations; NaN when undefined).
        standard_error: the standard deviation of the realized value around ``value`` given
            the scores (delta method), NaN when undefined.
        bias: the delta method's second-order E[realized] − ``value`` (the ratio of
            expectations is not the expected ratio), NaN when undefined.
    """

    value: float
    standard_error: float
    bias: float


NAN_ESTIMATE = Estimate(math.nan, math.nan, math.nan)


@dataclass(frozen=True, slots=True)
class ExpectedConfusion:
    """Expected TP, FP, FN, TN and the variances of the predicted-1 and predicted-0 sums:
    ``var_positive_predictions`` = Var(TP) = Var(FP), ``var_negative_predictions`` =
    Var(FN) = Var(TN)."""

    tp: float
    fp: float
    fn: float
    tn: float
    var_positive_predictions: float
    var_negative_predictions: float

    @property
    def false_negative_rate(self) -> Estimate:
        """FN/P: its ratio of expectations, standard error and bias (module docstring)."""
        return _rate(self.fn, self.var_negative_predictions, self.tp,
                     self.var_positive_predictions)

    @property
    def false_positive_rate(self) -> Estimate:
        """FP/N: its ratio of expectations, standard error and bias (module docstring)."""
        return _rate(self.fp, self.var_positive_predictions, self.tn,
                     self.var_negative_predictions)


def _rate(a: float, var_a: float, b: float, var_b: float) -> Estimate:
    """a/(a + b) for independent sums with these means and variances (delta method)."""
    total = a + b
    if not total > 0.0:
        return NAN_ESTIMATE
    variance = (b * b * var_a + a * a * var_b) / total ** 4
    bias = (a * var_b - b * var_a) / total ** 3
    return Estimate(a / total, math.sqrt(variance), bias)


def _arrays(probabilities: Sequence[float] | FloatArray, n: int) -> FloatArray:
    p = np.asarray(probabilities, dtype=float)
    if p.shape != (n,):
        raise ValueError(f"probabilities must be {n} numbers, got shape {p.shape}")
    if not np.all((p >= 0.0) & (p <= 1.0)):
        raise ValueError("probabilities must lie in [0, 1]")
    return p


def expected_confusion(probabilities: Sequence[float] | FloatArray,
                       predictions: Sequence[int] | npt.NDArray[np.int_]) -> ExpectedConfusion:
    """The expected confusion matrix of predictions with these probabilities. O(n)."""
    predicted = np.asarray(predictions, dtype=bool)
    p = _arrays(probabilities, predicted.size)
    q = 1.0 - p
    v = p * q
    return ExpectedConfusion(
        tp=math.fsum(p[predicted]), fp=math.fsum(q[predicted]),
        fn=math.fsum(p[~predicted]), tn=math.fsum(q[~predicted]),
        var_positive_predictions=math.fsum(v[predicted]),
        var_negative_predictions=math.fsum(v[~predicted]))


def expected_auc(scores: Sequence[float] | FloatArray,
                 probabilities: Sequence[float] | FloatArray) -> Estimate:
    """The expected AUC of scored predictions (ratio of expectations), its standard error
    and bias given the scores (module docstring). O(n log n); NaN when E[P·N] is 0."""
    s = np.asarray(scores, dtype=float)
    p = _arrays(probabilities, s.size)
    order = np.argsort(s, kind="stable")
    s, p = s[order], p[order]
    q = 1.0 - p
    n = s.size
    total_p = float(p.sum())
    expected_d = total_p * (n - total_p) - float(np.dot(p, q))
    if not expected_d > 0.0:
        return NAN_ESTIMATE
    cum_p = np.concatenate(([0.0], np.cumsum(p)))
    cum_q = np.concatenate(([0.0], np.cumsum(q)))
    left = s.searchsorted(s, "left")
    right = s.searchsorted(s, "right")
    q_below = cum_q[left]
    q_tied = cum_q[right] - q_below - q  # ties, k itself excluded
    p_tied = cum_p[right] - cum_p[left] - p
    p_above = total_p - cum_p[right]
    expected_u = float(np.dot(p, q_below + 0.5 * q_tied))
    ratio = expected_u / expected_d
    g = q_below + 0.5 * q_tied - p_above - 0.5 * p_tied
    g_d = (n - 1 - total_p + p) - (total_p - p)
    v = p * q
    sum_v = float(v.sum())
    w = 0.5 * (sum_v * sum_v - float(np.dot(v, v)))
    residual = g - ratio * g_d
    variance = (float(np.dot(v, residual * residual)) + (1.0 - 2.0 * ratio) ** 2 * w) \
        / expected_d ** 2
    var_d = float(np.dot(v, g_d * g_d)) + 4.0 * w
    cov_ud = float(np.dot(v, g * g_d)) + 2.0 * w
    bias = (ratio * var_d - cov_ud) / expected_d ** 2
    return Estimate(ratio, math.sqrt(max(variance, 0.0)), bias)
