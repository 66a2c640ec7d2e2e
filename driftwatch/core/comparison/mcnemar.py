"""McNemar's test on two models' crisp predictions of the same events, with κ of the challenger
relative to the champion and Cohen's κ of agreement between them (Bifet et al. 2015, §4 and §5).

Differences are challenger − champion. The test is exact (binomial) below
:data:`MCNEMAR_EXACT_BELOW` discordant events, else χ² with one degree of freedom. Its unit is
the event, which misleads on streams (Bifet et al. 2015, §4.1, Tables 2–3:
:mod:`driftwatch.core.comparison`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from driftwatch.core.comparison.distributions import (
    binomial_half_two_sided_p,
    chi2_1_sf,
)
from driftwatch.core.comparison.inputs import (
    check_labels,
    check_predictions,
)
from driftwatch.core.equality import nan_equal

MCNEMAR_EXACT_BELOW = 25
"""McNemar's test is exact (binomial) when fewer discordant events than this, else χ²."""

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
    y = check_labels(y_true)
    a = check_predictions(champion_pred, "champion_pred", y.size)
    b = check_predictions(challenger_pred, "challenger_pred", y.size)
    index = 4 * y.astype(np.int64) + 2 * a.astype(np.int64) + b.astype(np.int64)
    return crisp_comparison(np.bincount(index, minlength=8).tolist())
