"""The comparison statistics against independent implementations and the papers' numbers.

References: a brute-force DeLong from its definition (all P·N pairs, numpy's covariance), the
midrank form of the structural components (Sun & Xu 2014, scipy's rankdata), scikit-learn's
AUC and Cohen's κ, statsmodels' McNemar, scipy's binomial and Wilcoxon tests.
"""

from __future__ import annotations

import doctest
import itertools
import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score, roc_auc_score
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from driftwatch.core.comparison import distributions, statistics
from driftwatch.core.comparison.statistics import (
    bootstrap_auc_difference,
    crisp_comparison,
    delong,
    fold_aucs,
    mcnemar,
    mcnemar_from_counts,
    sign_test,
    wilcoxon_signed_rank,
)

# Bifet et al. 2015, Table 1: ten folds, classifier A and classifier B (accuracy in %).
TABLE_1_A = [77.98, 72.26, 76.95, 77.94, 72.23, 76.90, 77.93, 72.37, 76.93, 77.97]
TABLE_1_B = [77.91, 72.27, 76.97, 76.57, 71.63, 75.48, 75.75, 71.33, 74.54, 77.94]


def test_doctests() -> None:
    for module in (statistics, distributions):
        assert doctest.testmod(module).failed == 0


# ---------------------------------------------------------------------------------------------
# DeLong


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


# ---------------------------------------------------------------------------------------------
# McNemar and κ


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


# ---------------------------------------------------------------------------------------------
# Sign and Wilcoxon tests (Bifet et al. 2015, §4)


def test_paper_002_table_1() -> None:
    """§4: A beats B on 8 of 10 folds; rank sums 52 (printed 53; 1 + … + 10 = 55) and 3.

    The paper rejects with the sign test (w_α = 8 at α = .05), but the exact two-sided p of 8
    wins in 10 is 112/1024 = 0.109 (one-sided 0.055): 8 is the critical value for 9 folds in
    the usual table, 9 for 10. Wilcoxon's T = 3 is below the critical value 8 (p = 10/1024).
    """
    sign = sign_test(champion=TABLE_1_B, challenger=TABLE_1_A)
    assert (sign.challenger_wins, sign.champion_wins, sign.ties) == (8, 2, 0)
    assert sign.p_value == pytest.approx(112 / 1024)
    wilcoxon = wilcoxon_signed_rank(champion=TABLE_1_B, challenger=TABLE_1_A)
    assert (wilcoxon.challenger_rank_sum, wilcoxon.champion_rank_sum) == (52.0, 3.0)
    assert wilcoxon.statistic == 3.0 < 8
    assert wilcoxon.p_value == pytest.approx(10 / 1024)
    expected = scipy.stats.wilcoxon(TABLE_1_A, TABLE_1_B, method="exact")
    assert wilcoxon.p_value == pytest.approx(expected.pvalue)


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


def test_block_tests_leave_out_undefined_blocks() -> None:
    result = wilcoxon_signed_rank([0.5, math.nan, 0.7, 0.6], [0.6, 0.9, math.nan, 0.6])
    assert (result.n, result.zeros, result.undefined, result.p_value) == (1, 1, 2, 1.0)
    assert sign_test([0.5, math.nan], [0.6, 0.1]).undefined == 1
    with pytest.raises(ValueError, match="equally long"):
        sign_test([0.5], [0.6, 0.1])


# ---------------------------------------------------------------------------------------------
# Distributions


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


# ---------------------------------------------------------------------------------------------
# Bootstrap and folds (Bifet et al. 2015, §3)


def test_weighted_auc_equals_sklearn_with_sample_weights() -> None:
    rng = np.random.default_rng(3)
    n = 500
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(size=n) + y, 1)
    w = rng.poisson(1.0, n).astype(float)
    groups, size = statistics._score_groups(s)
    value = statistics._weighted_auc(groups, size, y == 1, w)
    assert value == pytest.approx(roc_auc_score(y, s, sample_weight=w), abs=1e-12)


def test_bootstrap_interval_agrees_with_delong() -> None:
    """Two methods, one question: the bootstrap's spread matches DeLong's standard error."""
    rng = np.random.default_rng(11)
    n = 3000
    y = (rng.random(n) < 0.4).astype(int)
    a = y * 1.0 + rng.normal(size=n)
    b = y * 1.2 + rng.normal(size=n)
    result = bootstrap_auc_difference(y, a, b, replicates=400, seed=5)
    reference = delong(y, a, b)
    assert result.difference == pytest.approx(reference.difference, abs=1e-12)
    assert result.standard_error == pytest.approx(reference.standard_error, rel=0.15)
    assert result.low < result.difference < result.high
    low, high = reference.confidence_interval(0.95)
    assert result.low == pytest.approx(low, abs=0.3 * (high - low))
    assert result.high == pytest.approx(high, abs=0.3 * (high - low))
    assert result.undefined == 0 and len(result.replicates) == 400
    again = bootstrap_auc_difference(y, a, b, replicates=400, seed=5)
    assert again == result


def test_bootstrap_input_checks() -> None:
    with pytest.raises(ValueError, match="replicates"):
        bootstrap_auc_difference([0, 1], [0.1, 0.2], [0.1, 0.2], replicates=1)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_auc_difference([0, 1], [0.1, 0.2], [0.1, 0.2], confidence=1.0)


def test_fold_aucs_are_each_folds_auc() -> None:
    rng = np.random.default_rng(2)
    n = 1000
    y = rng.integers(0, 2, n)
    a = rng.normal(size=n) + y
    b = rng.normal(size=n) + 1.5 * y
    result = fold_aucs(y, a, b, folds=5, seed=9)
    assignment = np.random.default_rng(9).integers(0, 5, n)
    for fold in range(5):
        mask = assignment == fold
        assert result.champion[fold] == pytest.approx(roc_auc_score(y[mask], a[mask]))
        assert result.challenger[fold] == pytest.approx(roc_auc_score(y[mask], b[mask]))
    assert wilcoxon_signed_rank(result.champion, result.challenger).challenger_rank_sum == 15


# ---------------------------------------------------------------------------------------------
# Calibration under the null hypothesis (seeded: deterministic, not flaky)


def null_runs(runs: int, n: int, seed: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Two different models of the same true AUC (Φ(1/√2) ≈ 0.76), correlated noise."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(runs):
        y = (rng.random(n) < 0.3).astype(int)
        shared = rng.normal(size=n)
        a = y + 0.8 * shared + 0.6 * rng.normal(size=n)
        b = y + 0.8 * shared + 0.6 * rng.normal(size=n)
        out.append((y, a, b))
    return out


def test_delong_rejects_a_true_null_at_the_nominal_rate() -> None:
    """Over 1 000 runs the share of p < 0.05 is 0.05 ± 0.02 (about 3 binomial SDs)."""
    p_values = [delong(y, a, b).p_value for y, a, b in null_runs(1000, 600, seed=1)]
    rate = float(np.mean(np.array(p_values) < 0.05))
    assert 0.03 <= rate <= 0.07, rate
    # And the p-values are uniform, not just right at 0.05.
    assert scipy.stats.kstest(p_values, "uniform").pvalue > 0.01


def test_bootstrap_interval_covers_the_true_difference() -> None:
    """The true difference is 0; a 90 % interval should cover it in 90 % ± 5 % of 300 runs."""
    covered = 0
    for k, (y, a, b) in enumerate(null_runs(300, 600, seed=2)):
        result = bootstrap_auc_difference(y, a, b, replicates=100, confidence=0.9, seed=k)
        covered += result.low <= 0.0 <= result.high
    assert 0.85 <= covered / 300 <= 0.95, covered


def test_the_package_computes_without_scipy() -> None:
    """scipy is a test-only reference: the core's comparison imports and runs without it."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("scipy", "statsmodels", "sklearn"):
                    raise ImportError("imported " + name)
        sys.meta_path.insert(0, Block())
        from driftwatch.core.comparison import delong, wilcoxon_signed_rank, mcnemar
        from driftwatch.core.comparison.window import PairedWindow
        from driftwatch.core.adaptive_window import AdaptiveWindow
        print(delong([1, 0, 1, 0], [0.9, 0.1, 0.4, 0.5], [0.8, 0.2, 0.6, 0.3]).p_value)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert 0.0 <= float(result.stdout) <= 1.0
