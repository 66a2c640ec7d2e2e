"""McNemar's test and the κ of crisp predictions against statsmodels' McNemar and
scikit-learn's Cohen's κ."""

from __future__ import annotations

import doctest
import importlib
import math

import numpy as np
import pytest
import scipy.stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from driftwatch.core.comparison.mcnemar import crisp_comparison, mcnemar, mcnemar_from_counts


def test_doctests() -> None:
    # By its full name: the package exports functions named like some of its modules.
    module = importlib.import_module("driftwatch.core.comparison.mcnemar")
    assert doctest.testmod(module).failed == 0


@pytest.mark.parametrize(("c", "b"), [(0, 0), (3, 7), (0, 5), (12, 12), (10, 14), (24, 0)])
def test_mcnemar_exact_against_statsmodels(c: int, b: int) -> None:
    result = mcnemar_from_counts(c, b)
    assert result.method == "exact"
    expected = sm_mcnemar([[50, c], [b, 40]], exact=True)
    assert result.statistic == expected.statistic
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-12)
    assert result.p_value == pytest.approx(scipy.stats.binomtest(b, b + c).pvalue if b + c else 1)


@pytest.mark.parametrize(("c", "b"), [(20, 40), (40, 20), (13, 12), (100, 160), (5000, 5230)])
def test_mcnemar_chi2_against_statsmodels(c: int, b: int) -> None:
    result = mcnemar_from_counts(c, b)
    assert result.method == "chi2"
    expected = sm_mcnemar([[50, c], [b, 40]], exact=False, correction=True)
    assert result.statistic == pytest.approx(expected.statistic, rel=1e-12)
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-9)
    assert result.signed == pytest.approx(math.copysign((b - c) ** 2 / (b + c), b - c))


def test_mcnemar_chi2_without_difference_is_not_evidence() -> None:
    # Edwards' correction clipped at 0: statsmodels gives (0 − 1)²/60 here; the p-value is 1.
    result = mcnemar_from_counts(30, 30)
    assert (result.statistic, result.p_value, result.signed) == (0.0, 1.0, 0.0)


@pytest.mark.parametrize("seed", range(6))
def test_crisp_comparison_on_random_predictions(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    y = rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.7, y, 1 - y)
    b = np.where(rng.random(n) < 0.75, y, rng.integers(0, 2, n))
    result = mcnemar(y, a, b)
    acc_a, acc_b = (a == y).mean(), (b == y).mean()
    assert result.events == n
    assert result.champion_accuracy == pytest.approx(acc_a)
    assert result.challenger_accuracy == pytest.approx(acc_b)
    if acc_a < 1:
        assert result.relative_kappa == pytest.approx((acc_b - acc_a) / (1 - acc_a))
    if len(set(a)) > 1 or len(set(b)) > 1:
        assert result.agreement_kappa == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    c_count = int(((a == y) & (b != y)).sum())
    b_count = int(((a != y) & (b == y)).sum())
    assert (result.mcnemar.champion_only, result.mcnemar.challenger_only) == (c_count, b_count)
    table = [[int(((a == y) & (b == y)).sum()), c_count], [b_count, 0]]
    expected = sm_mcnemar(table, exact=b_count + c_count < 25, correction=True)
    if b_count != c_count:
        assert result.mcnemar.p_value == pytest.approx(expected.pvalue, rel=1e-9)


def test_relative_kappa_against_the_majority_classifier_is_kappa_m() -> None:
    """Bifet et al. 2015, Table 5: TP 40, FN 30, FP 5, TN 25. With the majority-class classifier
    (always +, accuracy 0.70) as champion, the challenger's relative κ is κm = −16.67 %."""
    y = [1] * 70 + [0] * 30
    challenger = [1] * 40 + [0] * 30 + [1] * 5 + [0] * 25
    result = mcnemar(y, [1] * 100, challenger)
    assert (result.champion_accuracy, result.challenger_accuracy) == (0.7, 0.65)
    assert result.relative_kappa == pytest.approx(-1 / 6)
    assert math.isnan(result.agreement_kappa) is False
    assert math.isnan(crisp_comparison([0] * 8).relative_kappa)
