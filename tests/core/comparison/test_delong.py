"""DeLong's paired test against a brute-force DeLong from its definition (all P·N pairs,
numpy's covariance), the midrank form of the structural components (Sun & Xu 2014, scipy's
rankdata) and scikit-learn's AUC; and its calibration under a true null."""

from __future__ import annotations

import doctest
import importlib
import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from driftwatch.core.comparison.delong import delong
from tests.core.comparison.samples import null_runs


def test_doctests() -> None:
    # By its full name: the package exports functions named like some of its modules.
    module = importlib.import_module("driftwatch.core.comparison.delong")
    assert doctest.testmod(module).failed == 0


def brute_delong(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """AUC_a, AUC_b and Var(AUC_b − AUC_a) straight from DeLong et al. (1988), O(P·N)."""
    pos, neg = y == 1, y == 0
    m, n = pos.sum(), neg.sum()
    components = []
    for s in (a, b):
        x, z = s[pos][:, None], s[neg][None, :]
        psi = (x > z) + 0.5 * (x == z)
        components.append((psi.mean(axis=1), psi.mean(axis=0)))
    s10 = np.cov(np.vstack([components[0][0], components[1][0]]))
    s01 = np.cov(np.vstack([components[0][1], components[1][1]]))
    s = s10 / m + s01 / n
    variance = s[0, 0] + s[1, 1] - 2 * s[0, 1]
    return components[0][0].mean(), components[1][0].mean(), variance


def midrank_variance(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """The same variance from midranks (Sun & Xu 2014): V10 = (R_all − R_pos)/N, etc."""
    pos, neg = y == 1, y == 0
    m, n = pos.sum(), neg.sum()
    v10, v01 = [], []
    for s in (a, b):
        r_all = scipy.stats.rankdata(s)
        r_pos = scipy.stats.rankdata(s[pos])
        r_neg = scipy.stats.rankdata(s[neg])
        v10.append((r_all[pos] - r_pos) / n)
        v01.append(1.0 - (r_all[neg] - r_neg) / m)
    d10, d01 = v10[1] - v10[0], v01[1] - v01[0]
    return d10.var(ddof=1) / m + d01.var(ddof=1) / n


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 6), st.integers(0, 6)), min_size=4, max_size=40
    )
)
def test_delong_equals_brute_force_with_ties(events: list[tuple[int, int, int]]) -> None:
    y = np.array([e[0] for e in events])
    a = np.array([e[1] / 6 for e in events])
    b = np.array([e[2] / 6 for e in events])
    result = delong(y, a, b)
    if y.sum() < 2 or (1 - y).sum() < 2:
        assert math.isnan(result.p_value)
        return
    auc_a, auc_b, variance = brute_delong(y, a, b)
    assert result.champion_auc == pytest.approx(auc_a, abs=1e-12)
    assert result.challenger_auc == pytest.approx(auc_b, abs=1e-12)
    assert result.difference == pytest.approx(auc_b - auc_a, abs=1e-12)
    assert result.variance == pytest.approx(variance, abs=1e-12)
    if variance > 1e-15:
        z = (auc_b - auc_a) / math.sqrt(variance)
        assert result.p_value == pytest.approx(2 * scipy.stats.norm.sf(abs(z)), abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_delong_on_random_data_against_midranks_and_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 3000
    y = (rng.random(n) < 0.3).astype(int)
    a = y * 0.8 + rng.normal(size=n)
    b = y * 1.0 + rng.normal(size=n) + 0.3 * (a - y * 0.8)  # correlated with a
    b = np.round(b, 2)  # some ties
    result = delong(y, a, b)
    assert result.champion_auc == pytest.approx(roc_auc_score(y, a), abs=1e-12)
    assert result.challenger_auc == pytest.approx(roc_auc_score(y, b), abs=1e-12)
    assert result.variance == pytest.approx(midrank_variance(y, a, b), rel=1e-9)
    low, high = result.confidence_interval(0.95)
    half = 1.959963984540054 * math.sqrt(result.variance)
    assert (low, high) == pytest.approx((result.difference - half, result.difference + half))


def test_delong_degenerate_cases() -> None:
    same = delong([1, 1, 0, 0], [0.9, 0.8, 0.2, 0.1], [0.9, 0.8, 0.2, 0.1])
    assert (same.difference, same.z, same.p_value) == (0.0, 0.0, 1.0)
    opposite = delong([1, 1, 0, 0], [0.9, 0.8, 0.2, 0.1], [0.1, 0.2, 0.8, 0.9])
    assert (opposite.difference, opposite.z, opposite.p_value) == (-1.0, -math.inf, 0.0)
    one_class = delong([1, 1, 1], [0.1, 0.2, 0.3], [0.3, 0.2, 0.1])
    assert math.isnan(one_class.champion_auc) and math.isnan(one_class.p_value)
    one_negative = delong([1, 1, 0], [0.9, 0.2, 0.5], [0.9, 0.8, 0.5])
    assert (one_negative.champion_auc, one_negative.challenger_auc) == (0.5, 1.0)
    assert math.isnan(one_negative.variance) and math.isnan(one_negative.p_value)


def test_delong_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="y_true"):
        delong([0, 2], [0.1, 0.2], [0.1, 0.2])
    with pytest.raises(ValueError, match="challenger"):
        delong([0, 1], [0.1, 0.2], [0.1])
    with pytest.raises(ValueError, match="champion must be finite"):
        delong([0, 1], [0.1, math.nan], [0.1, 0.2])


def test_delong_rejects_a_true_null_at_the_nominal_rate() -> None:
    """Over 1 000 runs the share of p < 0.05 is 0.05 ± 0.02 (about 3 binomial SDs)."""
    p_values = [delong(y, a, b).p_value for y, a, b in null_runs(1000, 600, seed=1)]
    rate = float(np.mean(np.array(p_values) < 0.05))
    assert 0.03 <= rate <= 0.07, rate
    # And the p-values are uniform, not just right at 0.05.
    assert scipy.stats.kstest(p_values, "uniform").pvalue > 0.01
