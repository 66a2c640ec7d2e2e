"""Is the challenger better than the champion on the same events, and is the difference real?

Two models scored the same labelled events. Each function here answers one form of the
question, and each result says which direction it measured: **differences are challenger −
champion**, so a positive value means the challenger did better.

- :func:`delong`: the difference of the two AUCs and DeLong's paired test, from the
  structural components of both Mann–Whitney statistics (DeLong, DeLong & Clarke-Pearson
  1988), in O(n log n).
- :func:`crisp_comparison` / :func:`mcnemar`: McNemar's test on the two models' crisp
  predictions, κ of the challenger relative to the champion and Cohen's κ of agreement between
  them (Bifet et al. 2015, §4 and §5).
- :func:`sign_test` and :func:`wilcoxon_signed_rank`: the tests Bifet et al. 2015 (§4) recommends,
  over per-block (or per-fold) values of a measure.
- :func:`bootstrap_auc_difference`: a confidence interval for the AUC difference from the
  paper's bootstrap validation scheme (Bifet et al. 2015, §3: every event gets a Poisson(1) weight
  in each of k replicates), and :func:`fold_aucs` for its k-fold scheme.

Bifet et al. 2015 (§4.1, Tables 2–3) shows why McNemar's test misleads on streams: its unit is the
event, so with enough events it calls two practically equal models (two seeds of one learner)
different, in 42–80 % of the paper's runs. DeLong's test has the same unit. The block tests
count blocks instead, and their smallest p-value is set by the number of blocks; they grow
more sensitive with the stream too, only more slowly (``benchmarks/comparison.py``), so a
verdict should also ask whether the difference is large enough to matter.

Every function validates its input and raises ``ValueError`` naming the argument.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from driftwatch.core.comparison.distributions import (
    binomial_half_two_sided_p,
    chi2_1_sf,
    normal_quantile,
    normal_two_sided_p,
    signed_rank_exact_p,
)
from driftwatch.core.equality import nan_equal

FloatArray = npt.NDArray[np.float64]

MCNEMAR_EXACT_BELOW = 25
"""McNemar's test is exact (binomial) when fewer discordant events than this, else χ²."""

WILCOXON_EXACT_UP_TO = 50
"""Wilcoxon's signed-rank p-value is exact up to this many nonzero differences without ties."""


# ---------------------------------------------------------------------------------------------
# Input checking


def _labels(y_true: object) -> npt.NDArray[np.bool_]:
    array = np.asarray(y_true)
    if array.ndim != 1:
        raise ValueError(f"y_true must be one-dimensional, got shape {array.shape}")
    if array.dtype != np.bool_ and array.size and not np.isin(array, (0, 1)).all():
        raise ValueError("y_true must hold only 0 and 1 (or booleans)")
    return np.asarray(array == 1, dtype=np.bool_)


def _scores(values: object, name: str, length: int) -> FloatArray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be real numbers: {error}") from error
    if array.shape != (length,):
        raise ValueError(f"{name} must have one value per label ({length}), got {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite")
    return array


def _predictions(values: object, name: str, length: int) -> npt.NDArray[np.bool_]:
    array = np.asarray(values)
    if array.shape != (length,):
        raise ValueError(f"{name} must have one value per label ({length}), got {array.shape}")
    if array.dtype != np.bool_ and array.size and not np.isin(array, (0, 1)).all():
        raise ValueError(f"{name} must hold only 0 and 1 (or booleans)")
    return np.asarray(array == 1, dtype=np.bool_)


def _check_level(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return confidence


# ---------------------------------------------------------------------------------------------
# DeLong


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
        half = normal_quantile(0.5 + _check_level(confidence) / 2) * self.standard_error
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
    positive = _labels(y_true)
    n = positive.size
    a = _scores(champion, "champion", n)
    b = _scores(challenger, "challenger", n)
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


# ---------------------------------------------------------------------------------------------
# McNemar and κ on crisp predictions


@nan_equal  # NaN fields compare equal on every Python (driftwatch.core.equality)
@dataclass(frozen=True, slots=True, eq=False)
class McNemarResult:
    """McNemar's test on the events exactly one of the two models gets right.

    ``method`` says which form was used: ``"exact"`` (two-sided binomial test of
    ``challenger_only`` out of the discordant events, p = ½; ``statistic`` is the smaller of
    the two counts, as statsmodels reports it) when there are fewer than
    :data:`MCNEMAR_EXACT_BELOW` discordant events, else ``"chi2"`` (Edwards' continuity
    correction, (max(|b − c| − 1, 0))² / (b + c) on χ²₁). ``signed`` is Bifet et al.'s (2015)
    M = sign(b − c)·(b − c)²/(b + c) with b = ``challenger_only`` (no continuity correction;
    positive when the challenger is right more often; 0 without discordant events).
    """

    champion_only: int
    challenger_only: int
    statistic: float
    p_value: float
    method: Literal["exact", "chi2"]
    signed: float


def mcnemar_from_counts(
    champion_only: int, challenger_only: int, *, exact_below: int = MCNEMAR_EXACT_BELOW
) -> McNemarResult:
    """McNemar's test from the two discordant counts.

    Parameters:
        champion_only: events the champion predicts correctly and the challenger does not (c).
        challenger_only: events the challenger predicts correctly and the champion does not (b).
        exact_below: use the exact binomial test when b + c is below this (25 by default, the
            usual rule: χ² is a fair approximation from about 25 discordant events on).

    Example (Bifet et al. 2015, §4's M and the χ² form):
        >>> result = mcnemar_from_counts(20, 40)
        >>> result.method, result.signed, round(result.statistic, 4), round(result.p_value, 4)
        ('chi2', 6.666666666666667, 6.0167, 0.0142)
    """
    c, b = int(champion_only), int(challenger_only)
    if c < 0 or b < 0:
        raise ValueError(f"counts must be ≥ 0, got champion_only={c}, challenger_only={b}")
    discordant = b + c
    signed = math.copysign((b - c) ** 2 / discordant, b - c) if discordant else 0.0
    if discordant < exact_below:
        return McNemarResult(
            c, b, float(min(b, c)), binomial_half_two_sided_p(b, discordant), "exact", signed
        )
    statistic = max(abs(b - c) - 1, 0) ** 2 / discordant
    return McNemarResult(c, b, statistic, chi2_1_sf(statistic), "chi2", signed)


@nan_equal  # NaN fields compare equal on every Python (driftwatch.core.equality)
@dataclass(frozen=True, slots=True, eq=False)
class CrispComparison:
    """The two models' crisp predictions compared on the same events.

    ``relative_kappa`` is Bifet et al.'s (2015) κ form with the champion as the baseline,
    (p_challenger − p_champion)/(1 − p_champion): the share of the champion's errors the
    challenger removes (1: all of them, 0: as accurate, negative: worse), as κm (§5.3) is
    relative to the majority-class classifier; NaN when the champion makes no error.
    ``agreement_kappa`` is Cohen's κ of the two models' predictions with each other (how
    much more they agree than their prediction rates alone imply); NaN when chance
    agreement is 1 (both predict one class throughout).
    """

    events: int
    champion_accuracy: float
    challenger_accuracy: float
    relative_kappa: float
    agreement_kappa: float
    mcnemar: McNemarResult


def cell(y_true: int, champion_pred: int, challenger_pred: int) -> int:
    """Index of an event in the 8 counts :func:`crisp_comparison` takes: 4·y + 2·a + b."""
    return 4 * y_true + 2 * champion_pred + challenger_pred


def crisp_comparison(counts: Sequence[int]) -> CrispComparison:
    """McNemar, relative κ and agreement κ from the 8 counts of (label, champion, challenger).

    ``counts[cell(y, a, b)]`` is the number of events with label y, champion prediction a and
    challenger prediction b. O(1), so a window can keep the counts and ask at any time.
    """
    if len(counts) != 8 or any(int(k) < 0 for k in counts):
        raise ValueError("counts must be 8 non-negative integers, indexed 4·y + 2·a + b")
    k = [int(x) for x in counts]
    n = sum(k)
    # Correct: a == y. Champion only right: a == y != b.
    champion_right = k[cell(0, 0, 0)] + k[cell(0, 0, 1)] + k[cell(1, 1, 0)] + k[cell(1, 1, 1)]
    challenger_right = k[cell(0, 0, 0)] + k[cell(0, 1, 0)] + k[cell(1, 0, 1)] + k[cell(1, 1, 1)]
    champion_only = k[cell(0, 0, 1)] + k[cell(1, 1, 0)]
    challenger_only = k[cell(0, 1, 0)] + k[cell(1, 0, 1)]
    nan = math.nan
    acc_a = champion_right / n if n else nan
    acc_b = challenger_right / n if n else nan
    relative = (
        (challenger_right - champion_right) / (n - champion_right) if n > champion_right else nan
    )
    # Agreement between the two prediction columns, labels ignored.
    both1 = k[cell(0, 1, 1)] + k[cell(1, 1, 1)]
    both0 = k[cell(0, 0, 0)] + k[cell(1, 0, 0)]
    a1 = k[cell(0, 1, 0)] + k[cell(0, 1, 1)] + k[cell(1, 1, 0)] + k[cell(1, 1, 1)]
    b1 = k[cell(0, 0, 1)] + k[cell(0, 1, 1)] + k[cell(1, 0, 1)] + k[cell(1, 1, 1)]
    agreement = nan
    if n:
        # κ = (po − pe)/(1 − pe) with po = agree/n, pe = (a1·b1 + a0·b0)/n², in integers.
        chance = a1 * b1 + (n - a1) * (n - b1)
        if chance != n * n:
            agreement = (n * (both1 + both0) - chance) / (n * n - chance)
    return CrispComparison(
        n, acc_a, acc_b, relative, agreement, mcnemar_from_counts(champion_only, challenger_only)
    )


def mcnemar(y_true: object, champion_pred: object, challenger_pred: object) -> CrispComparison:
    """:func:`crisp_comparison` of two prediction vectors over the same labels."""
    y = _labels(y_true)
    a = _predictions(champion_pred, "champion_pred", y.size)
    b = _predictions(challenger_pred, "challenger_pred", y.size)
    index = 4 * y.astype(np.int64) + 2 * a.astype(np.int64) + b.astype(np.int64)
    return crisp_comparison(np.bincount(index, minlength=8).tolist())


# ---------------------------------------------------------------------------------------------
# Tests over blocks or folds (Bifet et al. 2015, §4)


def _paired_values(champion: Sequence[float], challenger: Sequence[float]) -> FloatArray:
    a = np.asarray(champion, dtype=np.float64)
    b = np.asarray(challenger, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(
            f"champion and challenger must be equally long lists, got {a.shape} and {b.shape}"
        )
    if np.isinf(a).any() or np.isinf(b).any():
        raise ValueError("champion and challenger values must not be infinite")
    return np.asarray(b - a, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class SignTestResult:
    """Sign test: on how many blocks each model did better, and the exact two-sided p-value.

    Ties and blocks where either value is NaN (e.g. a block AUC without both classes) are left
    out of the test and counted in ``ties`` and ``undefined``.
    """

    challenger_wins: int
    champion_wins: int
    ties: int
    undefined: int
    p_value: float


def sign_test(champion: Sequence[float], challenger: Sequence[float]) -> SignTestResult:
    """The sign test of Bifet et al. 2015, §4 over paired per-block (or per-fold) values.

    Under the null hypothesis each block is a fair coin: challenger wins ~ Bin(n, ½) over the
    n blocks without a tie. The p-value is the exact two-sided binomial tail.

    Example (Bifet et al. 2015, Table 1: classifier A wins 8 of 10 folds):
        >>> a = [77.98, 72.26, 76.95, 77.94, 72.23, 76.90, 77.93, 72.37, 76.93, 77.97]
        >>> b = [77.91, 72.27, 76.97, 76.57, 71.63, 75.48, 75.75, 71.33, 74.54, 77.94]
        >>> result = sign_test(champion=b, challenger=a)
        >>> result.challenger_wins, result.champion_wins, round(result.p_value, 4)
        (8, 2, 0.1094)
    """
    d = _paired_values(champion, challenger)
    undefined = int(np.isnan(d).sum())
    d = d[~np.isnan(d)]
    wins_b = int((d > 0).sum())
    wins_a = int((d < 0).sum())
    ties = int(d.size) - wins_a - wins_b
    return SignTestResult(
        wins_b, wins_a, ties, undefined, binomial_half_two_sided_p(wins_b, wins_a + wins_b)
    )


@dataclass(frozen=True, slots=True)
class WilcoxonResult:
    """Wilcoxon's signed-rank test over paired per-block (or per-fold) values.

    ``challenger_rank_sum`` (T⁺) sums the ranks of |difference| where the challenger is
    higher, ``champion_rank_sum`` (T⁻) where the champion is; ``statistic`` = min(T⁺, T⁻)
    as in Bifet et al. 2015, §4. Zero differences are dropped before ranking (Wilcoxon's own rule)
    and counted in ``zeros``; NaN pairs are dropped and counted in ``undefined``. Tied |differences|
    get their average rank. ``method`` is ``"exact"`` (the null distribution counted exactly)
    with at most :data:`WILCOXON_EXACT_UP_TO` nonzero differences and no ties, otherwise
    ``"normal"`` (the normal approximation with the tie correction of the variance, no
    continuity correction: scipy's ``method="approx"``). With no nonzero difference the
    p-value is 1.
    """

    challenger_rank_sum: float
    champion_rank_sum: float
    statistic: float
    n: int
    zeros: int
    undefined: int
    z: float
    p_value: float
    method: Literal["exact", "normal"]


def _average_ranks(values: FloatArray) -> tuple[FloatArray, list[int]]:
    """Ranks 1…n of ``values`` with ties given their average rank; and the tie group sizes."""
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    ranks = np.empty(values.size, dtype=np.float64)
    groups: list[int] = []
    start = 0
    n = values.size
    while start < n:
        end = start + 1
        while end < n and sorted_values[end] == sorted_values[start]:
            end += 1
        ranks[order[start:end]] = (start + 1 + end) / 2.0
        if end - start > 1:
            groups.append(end - start)
        start = end
    return ranks, groups


def wilcoxon_signed_rank(champion: Sequence[float], challenger: Sequence[float]) -> WilcoxonResult:
    """Wilcoxon's signed-rank test (Bifet et al. 2015, §4), the paper's recommended test.

    Example (Bifet et al. 2015, Table 1; the paper prints the positive rank sum as 53, but the ranks
    1…10 sum to 55 and the negative sum is 3, so it is 52):
        >>> a = [77.98, 72.26, 76.95, 77.94, 72.23, 76.90, 77.93, 72.37, 76.93, 77.97]
        >>> b = [77.91, 72.27, 76.97, 76.57, 71.63, 75.48, 75.75, 71.33, 74.54, 77.94]
        >>> result = wilcoxon_signed_rank(champion=b, challenger=a)
        >>> result.challenger_rank_sum, result.champion_rank_sum, result.method
        (52.0, 3.0, 'exact')
        >>> round(result.p_value, 5)  # T = 3 < the critical value 8 at α = 0.05
        0.00977
    """
    d = _paired_values(champion, challenger)
    undefined = int(np.isnan(d).sum())
    d = d[~np.isnan(d)]
    zeros = int((d == 0).sum())
    d = d[d != 0]
    n = int(d.size)
    if n == 0:
        return WilcoxonResult(0.0, 0.0, 0.0, 0, zeros, undefined, 0.0, 1.0, "exact")
    ranks, groups = _average_ranks(np.abs(d))
    t_plus = float(ranks[d > 0].sum())
    t_minus = float(ranks[d < 0].sum())
    statistic = min(t_plus, t_minus)
    mean = n * (n + 1) / 4.0
    variance = n * (n + 1) * (2 * n + 1) / 24.0 - sum(t**3 - t for t in groups) / 48.0
    z = (statistic - mean) / math.sqrt(variance) if variance > 0 else 0.0
    if n <= WILCOXON_EXACT_UP_TO and not groups:
        p_value = signed_rank_exact_p(int(statistic), n)
        method: Literal["exact", "normal"] = "exact"
    else:
        p_value = normal_two_sided_p(z) if variance > 0 else 1.0
        method = "normal"
    return WilcoxonResult(t_plus, t_minus, statistic, n, zeros, undefined, z, p_value, method)


# ---------------------------------------------------------------------------------------------
# Bootstrap and folds (Bifet et al. 2015, §3)


def _score_groups(scores: FloatArray) -> tuple[npt.NDArray[np.intp], int]:
    """Each event's index among the distinct scores, ascending, and the number of them."""
    distinct, inverse = np.unique(scores, return_inverse=True)
    return inverse.reshape(-1), int(distinct.size)


def _weighted_auc(
    groups: npt.NDArray[np.intp], size: int, positive: npt.NDArray[np.bool_], weights: FloatArray
) -> float:
    """AUC with every event counted ``weights`` times (ties ½); NaN without both classes.

    Per distinct score g, wp[g] and wn[g] are the weights of the positives and negatives
    scored g; the pairs a positive at g wins are the negatives below g plus half those at g.
    """
    wp = np.bincount(groups, weights=np.where(positive, weights, 0.0), minlength=size)
    wn = np.bincount(groups, weights=np.where(positive, 0.0, weights), minlength=size)
    total_p, total_n = float(wp.sum()), float(wn.sum())
    if total_p == 0.0 or total_n == 0.0:
        return math.nan
    below = np.cumsum(wn) - wn
    return float(np.dot(wp, below + wn / 2.0)) / (total_p * total_n)


@dataclass(frozen=True, slots=True)
class BootstrapResult:
    """A percentile bootstrap interval for the AUC difference (challenger − champion).

    ``difference`` is the difference on the events themselves; ``low``/``high`` the
    (1 − confidence)/2 and (1 + confidence)/2 quantiles of the replicates' differences
    (linear interpolation between order statistics); ``standard_error`` their standard
    deviation. ``replicates`` holds each replicate's difference (NaN for a replicate whose
    weights left out a class entirely; those are left out of the interval and counted in
    ``undefined``).
    """

    difference: float
    low: float
    high: float
    standard_error: float
    confidence: float
    replicates: tuple[float, ...]
    undefined: int


def bootstrap_auc_difference(
    y_true: object,
    champion: object,
    challenger: object,
    *,
    replicates: int = 200,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Bootstrap confidence interval for the AUC difference, Bifet et al.'s (2015) bootstrap scheme.

    Bifet et al. 2015 (§3) recommends *k-fold distributed bootstrap validation*: each event enters
    each of k replicates with a Poisson(1) weight (Oza and Russell's online bagging), which
    simulates sampling the stream with replacement one event at a time, without storing it.
    driftwatch scores deployed models, so there is nothing to train: each replicate *tests*
    both models on the same weighted events, and the spread of the replicates' AUC
    differences is the difference's sampling distribution. Both models share each
    replicate's weights, which keeps the pairing (the correlation of the two AUCs) that
    DeLong's variance also accounts for. O(n log n) to group the scores once, then O(n) per
    replicate.

    Parameters:
        y_true, champion, challenger: as for :func:`delong`.
        replicates: k, the number of bootstrap replicates (≥ 2).
        confidence: the interval's coverage, in (0, 1).
        seed: seeds numpy's generator; the same seed gives the same interval.
    """
    positive = _labels(y_true)
    n = positive.size
    a = _scores(champion, "champion", n)
    b = _scores(challenger, "challenger", n)
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 2:
        raise ValueError(f"replicates must be an integer ≥ 2, got {replicates!r}")
    _check_level(confidence)
    groups_a, size_a = _score_groups(a)
    groups_b, size_b = _score_groups(b)
    ones = np.ones(n, dtype=np.float64)
    difference = _weighted_auc(groups_b, size_b, positive, ones) - _weighted_auc(
        groups_a, size_a, positive, ones
    )
    rng = np.random.default_rng(seed)
    values = np.empty(replicates, dtype=np.float64)
    for r in range(replicates):
        weights = rng.poisson(1.0, n).astype(np.float64)
        values[r] = _weighted_auc(groups_b, size_b, positive, weights) - _weighted_auc(
            groups_a, size_a, positive, weights
        )
    defined = values[~np.isnan(values)]
    undefined = replicates - int(defined.size)
    if defined.size < 2:
        low = high = se = math.nan
    else:
        tail = (1.0 - confidence) / 2.0
        low, high = (float(x) for x in np.quantile(defined, [tail, 1.0 - tail]))
        se = float(defined.std(ddof=1))
    return BootstrapResult(
        difference, low, high, se, confidence, tuple(float(v) for v in values), undefined
    )


@dataclass(frozen=True, slots=True)
class FoldAUCs:
    """Each fold's AUC for both models, for :func:`sign_test` / :func:`wilcoxon_signed_rank`."""

    champion: tuple[float, ...]
    challenger: tuple[float, ...]


def fold_aucs(
    y_true: object, champion: object, challenger: object, *, folds: int = 10, seed: int = 0
) -> FoldAUCs:
    """Both models' AUC on each of k random folds: Bifet et al.'s (2015) k-fold cross-validation
    scheme.

    Bifet et al. 2015 (§3) assigns each event to one of k classifier instances, chosen at random, to
    be tested on. Here each event is tested in one fold chosen uniformly at random, and each
    fold's AUC is computed for both models on the same events: k paired values, the unit
    the paper's sign and Wilcoxon tests count (§4). A fold without both classes gets NaN,
    which both tests leave out.
    """
    positive = _labels(y_true)
    n = positive.size
    a = _scores(champion, "champion", n)
    b = _scores(challenger, "challenger", n)
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise ValueError(f"folds must be an integer ≥ 2, got {folds!r}")
    assignment = np.random.default_rng(seed).integers(0, folds, n)
    groups_a, size_a = _score_groups(a)
    groups_b, size_b = _score_groups(b)
    champion_values, challenger_values = [], []
    for fold in range(folds):
        weights = (assignment == fold).astype(np.float64)
        champion_values.append(_weighted_auc(groups_a, size_a, positive, weights))
        challenger_values.append(_weighted_auc(groups_b, size_b, positive, weights))
    return FoldAUCs(tuple(champion_values), tuple(challenger_values))
