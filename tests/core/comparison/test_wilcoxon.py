"""Wilcoxon's signed-rank test against Bifet et al.'s (2015) Table 1 and scipy's Wilcoxon test."""

from __future__ import annotations

import doctest
import importlib
import math

import numpy as np
import pytest
import scipy.stats

from driftwatch.core.comparison.wilcoxon import wilcoxon_signed_rank
from tests.core.comparison.samples import TABLE_1_A, TABLE_1_B


def test_doctests() -> None:
    # By its full name: the package exports functions named like some of its modules.
    module = importlib.import_module("driftwatch.core.comparison.wilcoxon")
    assert doctest.testmod(module).failed == 0


def test_paper_002_table_1_wilcoxon() -> None:
    """§4: rank sums 52 (printed 53; 1 + … + 10 = 55) and 3. Wilcoxon's T = 3 is below the
    critical value 8 (p = 10/1024)."""
    wilcoxon = wilcoxon_signed_rank(champion=TABLE_1_B, challenger=TABLE_1_A)
    assert (wilcoxon.challenger_rank_sum, wilcoxon.champion_rank_sum) == (52.0, 3.0)
    assert wilcoxon.statistic == 3.0 < 8
    assert wilcoxon.p_value == pytest.approx(10 / 1024)
    expected = scipy.stats.wilcoxon(TABLE_1_A, TABLE_1_B, method="exact")
    assert wilcoxon.p_value == pytest.approx(expected.pvalue)


@pytest.mark.parametrize("seed", range(10))
def test_wilcoxon_exact_against_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 51))
    a = rng.normal(size=n)
    b = a + rng.normal(0.3, 1.0, size=n)
    result = wilcoxon_signed_rank(a, b)
    assert result.method == "exact"
    expected = scipy.stats.wilcoxon(b, a, method="exact")
    assert result.statistic == expected.statistic
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-10)


@pytest.mark.parametrize("seed", range(10))
def test_wilcoxon_normal_with_ties_and_zeros_against_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 200))
    a = rng.integers(0, 8, n).astype(float)
    b = rng.integers(0, 9, n).astype(float)
    result = wilcoxon_signed_rank(a, b)
    assert result.method == "normal"
    expected = scipy.stats.wilcoxon(b, a, zero_method="wilcox", method="approx", correction=False)
    assert result.statistic == expected.statistic
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-10)
    assert result.zeros == int((a == b).sum())


def test_wilcoxon_leaves_out_undefined_blocks() -> None:
    result = wilcoxon_signed_rank([0.5, math.nan, 0.7, 0.6], [0.6, 0.9, math.nan, 0.6])
    assert (result.n, result.zeros, result.undefined, result.p_value) == (1, 1, 2, 1.0)
