"""The bootstrap interval and the fold AUCs against scikit-learn's weighted AUC and DeLong;
and the interval's coverage under a true null."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from driftwatch.core.comparison import resampling
from driftwatch.core.comparison.delong import delong
from driftwatch.core.comparison.resampling import bootstrap_auc_difference, fold_aucs
from driftwatch.core.comparison.wilcoxon import wilcoxon_signed_rank
from tests.core.comparison.samples import null_runs


def test_doctests() -> None:
    assert doctest.testmod(resampling).failed == 0


def test_weighted_auc_equals_sklearn_with_sample_weights() -> None:
    rng = np.random.default_rng(3)
    n = 500
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(size=n) + y, 1)
    w = rng.poisson(1.0, n).astype(float)
    groups, size = resampling._score_groups(s)
    value = resampling._weighted_auc(groups, size, y == 1, w)
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


def test_bootstrap_interval_covers_the_true_difference() -> None:
    """The true difference is 0; a 90 % interval should cover it in 90 % ± 5 % of 300 runs."""
    covered = 0
    for k, (y, a, b) in enumerate(null_runs(300, 600, seed=2)):
        result = bootstrap_auc_difference(y, a, b, replicates=100, confidence=0.9, seed=k)
        covered += result.low <= 0.0 <= result.high
    assert 0.85 <= covered / 300 <= 0.95, covered
