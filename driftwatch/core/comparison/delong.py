"""DeLong's paired test: the difference of two correlated AUCs over the same events.

Differences are challenger − champion, so a positive value means the challenger did better.
The variance comes from the structural components of both Mann–Whitney statistics (DeLong,
DeLong & Clarke-Pearson 1988, "Comparing the areas under two or more correlated receiver
operating characteristic curves"), in O(n log n). Its unit is the event: with enough events
it calls practically equal models different (Bifet et al. 2015, §4.1;
:mod:`driftwatch.core.comparison`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from driftwatch.core.comparison.distributions import (
    normal_quantile,
    normal_two_sided_p,
)
from driftwatch.core.comparison.inputs import (
    FloatArray,
    check_labels,
    check_level,
    check_scores,
)


@dataclass(frozen=True, slots=True)
class DeLongResult:
    """Two correlated AUCs over the same events and DeLong's test of their difference.

    ``variance`` is the estimated variance of ``difference`` (challenger − champion) from the
    structural components; ``z`` = difference / √variance and ``p_value`` its two-sided
    normal tail. With fewer than two positives or two negatives the variance is undefined and
    ``variance``, ``z`` and ``p_value`` are NaN (the AUCs are NaN without both classes).
    A zero variance (the two models' components differ by a constant, e.g. identical scores)
    gives z = 0 and p = 1 when the difference is 0, and z = ±∞, p = 0 otherwise.
    """

    champion_auc: float
    challenger_auc: float
    difference: float
    variance: float
    z: float
    p_value: float
    positives: int
    negatives: int

    @property
    def standard_error(self) -> float:
        """√variance of the difference."""
        return math.sqrt(self.variance) if self.variance >= 0 else math.nan

    def confidence_interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Normal (Wald) interval for the difference: difference ± z_{(1+c)/2} · SE."""
        half = normal_quantile(0.5 + check_level(confidence) / 2) * self.standard_error
        return (self.difference - half, self.difference + half)


def _components(
    scores: FloatArray, positive: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Half-credit structural components of one model: V10·2N per positive, V01·2P per negative.

    A positive's V10 is the share of negatives it outranks (ties count ½); a negative's V01 is
    the share of positives that outrank it. Both come from one sort of all the scores: with
    the scores grouped by value, a positive in group g earns 2·(negatives below g) +
    (negatives in g) half-credits, which is (negatives before g) + (negatives through g);
    symmetrically for a negative against the positives above it. Integers, so exact.
    """
    n = scores.size
    order = np.argsort(scores)
    ordered = scores[order]
    is_positive = positive[order]
    starts_group = np.empty(n, dtype=np.bool_)
    starts_group[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts_group[1:])
    group = np.cumsum(starts_group) - 1
    starts = np.flatnonzero(starts_group)
    ends = np.append(starts[1:], n) - 1
    negatives = np.cumsum(~is_positive, dtype=np.int64)
    positives = np.cumsum(is_positive, dtype=np.int64)
    neg_credit = negatives[ends] + negatives[starts] - (~is_positive[starts])
    pos_credit = positives[ends] + positives[starts] - is_positive[starts]
    total_positive = positives[-1]
    credit = np.where(
        is_positive, neg_credit[group], 2 * total_positive - pos_credit[group]
    ).astype(np.int64)
    values = np.empty(n, dtype=np.int64)
    values[order] = credit
    return values[positive], values[~positive]


def delong(y_true: object, champion: object, challenger: object) -> DeLongResult:
    """DeLong's paired test for the difference of two AUCs measured on the same events.

    With P positives and N negatives, model r's AUC is the mean of its structural components
    V10ʳ(xᵢ) (per positive) and equally of V01ʳ(yⱼ) (per negative). DeLong et al. estimate
    the covariance of the two AUCs as S = S10/P + S01/N, S10 and S01 the sample covariances
    (denominator P − 1, N − 1) of the components; the difference's variance is
    S₁₁ + S₂₂ − 2·S₁₂, which equals Var(V10ᶜ − V10ᵃ)/P + Var(V01ᶜ − V01ᵃ)/N. Each component
    is one binary search in the other class's sorted scores: O(n log n) for n events. The
    AUCs are exact (an integer half-credit count over 2·P·N, ties ½).

    Parameters:
        y_true: labels, 0/1 or booleans.
        champion: the champion's scores, one per label.
        challenger: the challenger's scores, one per label.

    Example:
        >>> result = delong([1, 1, 1, 0, 0, 0], [0.9, 0.4, 0.7, 0.5, 0.3, 0.8],
        ...                 [0.9, 0.8, 0.7, 0.5, 0.3, 0.6])
        >>> result.champion_auc, result.challenger_auc, round(result.p_value, 4)
        (0.6666666666666666, 1.0, 0.2207)

    Reference:
        E. R. DeLong, D. M. DeLong, D. L. Clarke-Pearson (1988). Comparing the areas under two
        or more correlated receiver operating characteristic curves: a nonparametric approach.
        *Biometrics* 44(3), 837–845.
    """
    positive = check_labels(y_true)
    n = positive.size
    a = check_scores(champion, "champion", n)
    b = check_scores(challenger, "challenger", n)
    p = int(positive.sum())
    q = n - p
    if p == 0 or q == 0:
        nan = math.nan
        return DeLongResult(nan, nan, nan, nan, nan, nan, p, q)
    v10a, v01a = _components(a, positive)
    v10b, v01b = _components(b, positive)
    pairs = 2 * p * q
    auc_a = int(v10a.sum()) / pairs
    auc_b = int(v10b.sum()) / pairs
    difference = auc_b - auc_a
    if p < 2 or q < 2:
        nan = math.nan
        return DeLongResult(auc_a, auc_b, difference, nan, nan, nan, p, q)
    # Components in half-credits: V10 = v10 / (2N), V01 = v01 / (2P).
    d10 = (v10b - v10a) / (2.0 * q)
    d01 = (v01b - v01a) / (2.0 * p)
    variance = float(d10.var(ddof=1)) / p + float(d01.var(ddof=1)) / q
    if variance > 0.0:
        z = difference / math.sqrt(variance)
        p_value = normal_two_sided_p(z)
    elif difference == 0.0:
        z, p_value = 0.0, 1.0
    else:
        z, p_value = math.copysign(math.inf, difference), 0.0
    return DeLongResult(auc_a, auc_b, difference, variance, z, p_value, p, q)
