"""Blocks and their standardization: DeLong against brute force, variances against
simulation, z-scores that are N(0, 1) while nothing changes."""

from __future__ import annotations

import math
import random
import statistics
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from driftwatch.core.blocks import (
    BLOCK_LIMIT,
    AUCStandardizer,
    Block,
    BlockCollector,
    RateStandardizer,
    beta_binomial_pmf,
    delong,
    midp_z,
)
from driftwatch.core.sequential import normal_quantile

scores = st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]) | st.floats(-3, 3),
                  min_size=1, max_size=12)


def brute_force(positives: list[float], negatives: list[float]) -> tuple[float, float, float]:
    """Every pair, then DeLong's placements and their sample variances, by definition."""
    def credit(x: float, y: float) -> float:
        return 1.0 if x > y else 0.5 if x == y else 0.0

    v10 = [sum(credit(x, y) for y in negatives) / len(negatives) for x in positives]
    v01 = [sum(credit(x, y) for x in positives) / len(positives) for y in negatives]
    auc = sum(credit(x, y) for x in positives for y in negatives) / (
        len(positives) * len(negatives))
    s10 = statistics.variance(v10) if len(v10) > 1 else 0.0
    s01 = statistics.variance(v01) if len(v01) > 1 else 0.0
    return auc, s10, s01


@given(scores, scores)
def test_delong_equals_brute_force(positives: list[float], negatives: list[float]) -> None:
    got = delong(positives, negatives)
    assert got == pytest.approx(brute_force(positives, negatives), abs=1e-12)


def exact_variance(auc: float, q1: float, q2: float, p: int, n: int) -> float:
    """The Mann–Whitney AUC's exact variance (Hanley and McNeil 1982, eq. 2, with the true
    Q₁ = P(two positives above one negative), Q₂ = P(one positive above two negatives))."""
    return (auc * (1 - auc) + (p - 1) * (q1 - auc**2) + (n - 1) * (q2 - auc**2)) / (p * n)


@pytest.mark.parametrize(("p", "n"), [(20, 20), (20, 300), (300, 20)])
def test_delong_variance_matches_the_simulated_spread(p: int, n: int) -> None:
    # Binormal, μ = 1.8: the block AUC's variance over 3000 blocks (simulation), the exact
    # variance (Q₁, Q₂ by a large Monte Carlo) and DeLong's estimate (mean over the blocks)
    # agree, at balanced and at 1:15 / 15:1 blocks.
    rng = np.random.default_rng(1000 + p + n)
    mu = 1.8
    aucs, estimates = [], []
    for _ in range(3000):
        pos, neg = rng.normal(mu, 1, p), rng.normal(0, 1, n)
        auc, s10, s01 = delong(pos.tolist(), neg.tolist())
        aucs.append(auc)
        estimates.append(s10 / p + s01 / n)
    x1, x2 = rng.normal(mu, 1, (2, 400_000))
    y1, y2 = rng.normal(0, 1, (2, 400_000))
    auc = float(np.mean(x1 > y1))
    q1 = float(np.mean((x1 > y1) & (x2 > y1)))
    q2 = float(np.mean((x1 > y1) & (x1 > y2)))
    simulated = float(np.var(aucs, ddof=1))
    assert simulated == pytest.approx(exact_variance(auc, q1, q2, p, n), rel=0.1)
    assert statistics.mean(estimates) == pytest.approx(simulated, rel=0.1)


def test_collector_closes_on_both_classes_and_counts_errors() -> None:
    collector = BlockCollector(3)
    events = [(0, 0.1, False)] * 5 + [(1, 0.9, False), (1, 0.2, True), (0, 0.7, True)]
    assert [collector.add(*e) for e in events] == [None] * 8
    block = collector.add(1, 0.8, False)
    assert block == Block(9, 3, 6, *delong([0.9, 0.2, 0.8], [0.1] * 5 + [0.7]), 1, 1)
    assert len(collector) == 0 and block.auc == pytest.approx(17 / 18)
    with pytest.raises(ValueError, match="min_class"):
        BlockCollector(1)


def test_a_block_without_a_second_class_is_dropped_at_the_limit() -> None:
    collector = BlockCollector(2)
    collector.add(1, 0.9, False)
    for _ in range(BLOCK_LIMIT - 1):
        assert collector.add(0, 0.1, False) is None
    assert len(collector) == 0  # dropped: memory stays bounded
    assert collector.add(1, 0.8, False) is None and len(collector) == 1


def blocks(seed: int, count: int, p: int, n: int, mu: float) -> list[Block]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        pos, neg = rng.normal(mu, 1, p), rng.normal(0, 1, n)
        out.append(Block(p + n, p, n, *delong(pos.tolist(), neg.tolist()),
                         int(np.sum(pos < 0.5)), int(np.sum(neg >= 0.5))))
    return out


@pytest.mark.parametrize(("p", "n", "mu"), [(20, 20, 2.33), (20, 300, 1.8), (300, 20, 0.74)])
def test_auc_z_scores_are_standard_normal_while_stationary(p: int, n: int, mu: float) -> None:
    # AUC 0.95, 0.90 and 0.70; at 0.95 the raw block AUC is strongly skewed, the arcsine
    # scale is not.
    standardizer = AUCStandardizer(warmup=5)
    zs = [z for b in blocks(7 + p, 4000, p, n, mu) if (z := standardizer.update(b)) is not None]
    assert len(zs) == 4000 - 5
    assert abs(statistics.mean(zs)) < 0.06
    assert 0.9 < statistics.variance(zs) < 1.1
    low_tail = sum(z < -2.5 for z in zs) / len(zs)  # N(0, 1): 0.0062
    assert low_tail < 0.012
    # What a downward CUSUM with k = 0.5 needs for its normal run length: E[exp(−z − k)] ≤ 1
    # (= 1 for N(0, 1); larger would mean a heavier low tail and more false alarms).
    assert statistics.mean(math.exp(-z - 0.5) for z in zs) < 1.08
    assert standardizer.reference == pytest.approx(
        statistics.NormalDist().cdf(mu / math.sqrt(2)), abs=0.005)


def test_auc_z_scores_see_a_drop() -> None:
    standardizer = AUCStandardizer(warmup=5)
    for block in blocks(3, 50, 20, 80, 1.8):  # AUC 0.90
        standardizer.update(block)
    zs = [standardizer.update(b) for b in blocks(4, 20, 20, 80, 1.19)]  # AUC 0.80
    assert statistics.mean(z for z in zs if z is not None) < -1.2


@pytest.mark.parametrize(("rate", "trials"), [(0.02, 20), (0.1, 20), (0.3, 300)])
def test_rate_z_scores_are_never_heavier_tailed_than_normal(rate: float, trials: int) -> None:
    rng = random.Random(int(rate * 1000) + trials)
    standardizer = RateStandardizer(warmup=5)
    zs = []
    for _ in range(4000):
        errors = sum(rng.random() < rate for _ in range(trials))
        z = standardizer.update(errors, trials)
        if z is not None:
            zs.append(z)
    # Discrete counts: mid-p z-scores are not exactly N(0, 1) (the mean drifts up to ~0.07
    # with under one error per block) but never heavier-tailed, which is what the upward
    # CUSUM's run length needs: E[exp(z − k)] ≤ 1 at k = 0.5 (= 1 for N(0, 1)).
    assert abs(statistics.mean(zs)) < 0.1
    assert statistics.variance(zs) < 1.05
    assert sum(z > 2.5 for z in zs) / len(zs) < 0.01  # N(0, 1): 0.0062
    assert statistics.mean(math.exp(z - 0.5) for z in zs) < 1.03
    assert standardizer.reference == pytest.approx(rate, rel=0.1)


def exact_delong(positives: list[float], negatives: list[float]) -> tuple[float, float, float]:
    """DeLong's AUC and component variances in rational arithmetic, rounded once."""
    def credit(x: float, y: float) -> int:
        return 2 if x > y else 1 if x == y else 0

    p, n = len(positives), len(negatives)
    v10 = [Fraction(sum(credit(x, y) for y in negatives), 2 * n) for x in positives]
    v01 = [Fraction(sum(credit(x, y) for x in positives), 2 * p) for y in negatives]

    def variance(values: list[Fraction]) -> float:
        if len(values) < 2:
            return 0.0
        mean = sum(values, Fraction(0)) / len(values)
        return float(sum(((v - mean) ** 2 for v in values), Fraction(0)) / (len(values) - 1))

    return float(sum(v10, Fraction(0)) / p), variance(v10), variance(v01)


@given(scores, scores)
def test_delong_is_exact_to_the_last_bit(positives: list[float], negatives: list[float]) -> None:
    """The doubled placement counts are integers, so every result is one correctly rounded
    division: the float nearest the exact rational value, ties and all."""
    assert delong(positives, negatives) == exact_delong(positives, negatives)


@given(st.integers(0, 40), st.floats(0.5, 50), st.floats(0.5, 50))
def test_beta_binomial_is_a_distribution(n: int, a: float, b: float) -> None:
    pmf = beta_binomial_pmf(n, a, b)
    assert math.fsum(pmf) == pytest.approx(1.0, abs=1e-9)
    assert math.fsum(x * q for x, q in enumerate(pmf)) == pytest.approx(n * a / (a + b),
                                                                          rel=1e-9, abs=1e-9)
    zs = [midp_z(x, n, a, b) for x in range(n + 1)]
    assert zs == sorted(zs)  # more errors, larger z


@given(st.integers(0, 400), st.data(), st.floats(0.5, 5000), st.floats(0.5, 5000))
def test_midp_z_needs_only_the_terms_up_to_x(n: int, data: st.DataObject, a: float,
                                              b: float) -> None:
    """midp_z computes the pmf only up to x: exactly the value from the whole pmf."""
    x = data.draw(st.integers(0, n))
    pmf = beta_binomial_pmf(n, a, b)
    assert beta_binomial_pmf(n, a, b, last=x) == pmf[:x + 1]
    u = math.fsum(pmf[:x]) + 0.5 * pmf[x]  # the mid-p value from the whole pmf
    assert midp_z(x, n, a, b) == normal_quantile(min(max(u, 1e-15), 1.0 - 1e-15))
