"""The tail probabilities against scipy, and the signed-rank counts against enumeration."""

from __future__ import annotations

import doctest
import itertools

import pytest
import scipy.stats

from driftwatch.core.comparison import distributions


def test_doctests() -> None:
    assert doctest.testmod(distributions).failed == 0


@pytest.mark.parametrize("x", [0.0, 1e-9, 0.3, 1.0, 3.84, 10.0, 50.0])
def test_chi2_1_sf(x: float) -> None:
    assert distributions.chi2_1_sf(x) == pytest.approx(scipy.stats.chi2.sf(x, 1), rel=1e-12)


def test_binomial_and_signed_rank_distributions() -> None:
    for n in range(0, 60, 7):
        for k in range(n + 1):
            expected = scipy.stats.binomtest(k, n).pvalue if n else 1.0
            assert distributions.binomial_half_two_sided_p(k, n) == pytest.approx(expected)
    for n in range(0, 11):
        counts = distributions.signed_rank_counts(n)
        brute = [0] * len(counts)
        for subset in itertools.product((0, 1), repeat=n):
            brute[sum(r for r, s in zip(range(1, n + 1), subset, strict=True) if s)] += 1
        assert counts == brute
