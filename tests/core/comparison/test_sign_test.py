"""The sign test against Bifet et al.'s (2015) Table 1 and scipy's binomial test."""

from __future__ import annotations

import doctest
import importlib
import math

import numpy as np
import pytest
import scipy.stats

from driftwatch.core.comparison.sign_test import sign_test
from tests.core.comparison.samples import TABLE_1_A, TABLE_1_B


def test_doctests() -> None:
    # By its full name: the package exports functions named like some of its modules.
    module = importlib.import_module("driftwatch.core.comparison.sign_test")
    assert doctest.testmod(module).failed == 0


def test_paper_002_table_1_sign_test() -> None:
    """§4: A beats B on 8 of 10 folds.

    The paper rejects with the sign test (w_α = 8 at α = .05), but the exact two-sided p of 8
    wins in 10 is 112/1024 = 0.109 (one-sided 0.055): 8 is the critical value for 9 folds in
    the usual table, 9 for 10.
    """
    sign = sign_test(champion=TABLE_1_B, challenger=TABLE_1_A)
    assert (sign.challenger_wins, sign.champion_wins, sign.ties) == (8, 2, 0)
    assert sign.p_value == pytest.approx(112 / 1024)


@pytest.mark.parametrize("seed", range(10))
def test_sign_test_against_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    a = rng.integers(0, 5, n).astype(float)
    b = rng.integers(0, 5, n).astype(float)
    result = sign_test(a, b)
    wins, losses = int((b > a).sum()), int((b < a).sum())
    assert (result.challenger_wins, result.champion_wins) == (wins, losses)
    expected = scipy.stats.binomtest(wins, wins + losses).pvalue if wins + losses else 1.0
    assert result.p_value == pytest.approx(expected, rel=1e-10)


def test_sign_test_leaves_out_undefined_blocks() -> None:
    assert sign_test([0.5, math.nan], [0.6, 0.1]).undefined == 1
    with pytest.raises(ValueError, match="equally long"):
        sign_test([0.5], [0.6, 0.1])
