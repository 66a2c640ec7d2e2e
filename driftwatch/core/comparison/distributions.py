"""The tail probabilities the comparison tests need, from the standard library alone.

The pure core must not depend on scipy, and the tests below need only four distributions,
each of which has a short exact or closed form:

- the standard normal (DeLong's z, the Wilcoxon normal approximation): ``math.erfc`` and
  :class:`statistics.NormalDist` for quantiles;
- χ² with one degree of freedom (McNemar): if Z is standard normal, Z² is χ²₁, so
  P(χ²₁ > x) = P(|Z| > √x) = erfc(√(x/2));
- the symmetric binomial Bin(n, ½) (the sign test, McNemar's exact form): exact, as an integer
  sum of binomial coefficients over 2ⁿ;
- the null distribution of Wilcoxon's signed-rank statistic without ties: exact, by counting
  the subsets of {1, …, n} with each rank sum (a subset-sum table of n(n + 1)/2 + 1 integers).

Each function is checked against scipy.stats in the tests (scipy is a test-only dependency).
"""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist

_STANDARD_NORMAL = NormalDist()


def normal_two_sided_p(z: float) -> float:
    """P(|Z| ≥ |z|) for a standard normal Z: erfc(|z|/√2). NaN stays NaN."""
    if math.isnan(z):
        return math.nan
    return math.erfc(abs(z) / math.sqrt(2.0))


def normal_quantile(p: float) -> float:
    """The standard normal quantile Φ⁻¹(p), for 0 < p < 1."""
    return _STANDARD_NORMAL.inv_cdf(p)


def chi2_1_sf(x: float) -> float:
    """P(χ²₁ > x) = erfc(√(x/2)), the survival function of χ² with one degree of freedom."""
    if math.isnan(x):
        return math.nan
    if x <= 0.0:
        return 1.0
    return math.erfc(math.sqrt(x / 2.0))


def binomial_half_two_sided_p(k: int, n: int) -> float:
    """Two-sided exact p-value of k successes in n trials of Bin(n, ½).

    The distribution is symmetric, so the two-sided p-value is twice the smaller tail,
    2 · Σ_{i ≤ min(k, n − k)} C(n, i) / 2ⁿ, capped at 1 (the doubled tail counts the middle
    term twice when k = n/2). Summed in integers and divided once: exact up to the final
    rounding. O(min(k, n − k)) big-integer operations. This is scipy's
    ``binomtest(k, n, 0.5).pvalue`` and statsmodels' exact McNemar p-value.
    """
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 ≤ k ≤ n, got k={k}, n={n}")
    if n == 0:
        return 1.0
    low = min(k, n - k)
    term, tail = 1, 1  # C(n, 0)
    for i in range(1, low + 1):
        term = term * (n - i + 1) // i
        tail += term
    return min(1.0, float(Fraction(2 * tail, 1 << n)))


def signed_rank_counts(n: int) -> list[int]:
    """counts[t] = number of subsets of {1, …, n} whose sum is t, for t = 0 … n(n + 1)/2.

    Under the null hypothesis with no ties and no zero differences, each of the 2ⁿ sign
    assignments is equally likely, so P(T⁺ = t) = counts[t] / 2ⁿ. O(n³) integer additions
    (n ≤ 50 or so in use: 50 · 1275 cells).
    """
    total = n * (n + 1) // 2
    counts = [0] * (total + 1)
    counts[0] = 1
    reach = 0
    for rank in range(1, n + 1):
        reach += rank
        for t in range(reach, rank - 1, -1):
            counts[t] += counts[t - rank]
    return counts


def signed_rank_exact_p(statistic: int, n: int) -> float:
    """Two-sided exact p-value of the signed-rank statistic T = min(T⁺, T⁻) with n ranks 1…n.

    2 · P(T⁺ ≤ T) under the null (the distribution of T⁺ is symmetric about n(n + 1)/4),
    capped at 1. Valid without ties among the ranks (with ties the ranks are not 1…n).
    """
    counts = signed_rank_counts(n)
    tail = sum(counts[: statistic + 1])
    return min(1.0, float(Fraction(2 * tail, 1 << n)))
