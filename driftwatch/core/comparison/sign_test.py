"""The sign test over paired per-block (or per-fold) values of a measure, one of the two tests
Bifet et al. 2015 (§4) recommends: on how many blocks each model did better, and the exact two-sided
p-value. Differences are challenger − champion.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from driftwatch.core.comparison.distributions import (
    binomial_half_two_sided_p,
)
from driftwatch.core.comparison.inputs import (
    check_paired_values,
)


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
    d = check_paired_values(champion, challenger)
    undefined = int(np.isnan(d).sum())
    d = d[~np.isnan(d)]
    wins_b = int((d > 0).sum())
    wins_a = int((d < 0).sum())
    ties = int(d.size) - wins_a - wins_b
    return SignTestResult(
        wins_b, wins_a, ties, undefined, binomial_half_two_sided_p(wins_b, wins_a + wins_b)
    )
