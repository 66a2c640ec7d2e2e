"""Blocks and their standardization: DeLong against brute force, variances against
simulation, z-scores that are N(0, 1) while nothing changes."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import statistics
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from driftwatch.core.block_rates import RateStandardizer, beta_binomial_pmf, midp_z
from driftwatch.core.blocks import BLOCK_LIMIT, AUCStandardizer, Block, BlockCollector, delong
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
def test_midp_z_is_the_definition(n: int, data: st.DataObject, a: float, b: float) -> None:
    """midp_z sums the smaller tail by the ratio of successive terms: the mid-p value of the
    definition (every term from the log-gamma pmf), where that one is accurate: its terms
    carry relative errors of about 1e-11 (log-gamma of arguments in the thousands), so its
    upper tail, 1 minus their sum, only to about that much absolute."""
    x = data.draw(st.integers(0, n))
    pmf = beta_binomial_pmf(n, a, b)
    assert beta_binomial_pmf(n, a, b, last=x) == pmf[:x + 1]
    u = math.fsum(pmf[:x]) + 0.5 * pmf[x]  # the mid-p value from the whole pmf
    if 1e-4 < u < 1 - 1e-4:
        assert midp_z(x, n, a, b) == pytest.approx(normal_quantile(u), abs=1e-6)


@pytest.mark.parametrize(("x", "n", "a", "b"), [(0, 1000, 50.0, 50.0), (1000, 1000, 50.0, 50.0),
                                                (3, 100_000, 2.0, 2000.0),
                                                (900, 1000, 10.0, 40.0),
                                                (30_000, 100_000, 300.0, 700.0)])
def test_midp_z_is_accurate_in_the_far_tails(x: int, n: int, a: float, b: float) -> None:
    """Against the beta-binomial's tails summed in log space from scipy's log-pmf: z up to
    about 37 (where the old lower-sum method clamped at 7.9, which the indifference zone
    needs at high traffic)."""
    log_pmf = stats.betabinom(n, a, b).logpmf(np.arange(n + 1))
    below = np.logaddexp.reduce(log_pmf[:x]) if x > 0 else -np.inf
    above = np.logaddexp.reduce(log_pmf[x + 1:]) if x < n else -np.inf
    half = math.log(0.5) + log_pmf[x]
    if x * (a + b) <= n * a:
        expected = -float(stats.norm.isf(np.exp(np.logaddexp(below, half))))
    else:
        expected = float(stats.norm.isf(np.exp(np.logaddexp(above, half))))
    assert midp_z(x, n, a, b) == pytest.approx(expected, abs=1e-6)


# ------------------------------------------------------------------------------------------
# The time rule


def timed(collector: BlockCollector, events: list[tuple[int, float | None]]) -> list[Block]:
    """Feed (label, ts) events (scores from the label); return the closed blocks."""
    out = []
    for i, (y, ts) in enumerate(events):
        block = collector.add(y, float(y) + (i % 7) / 10, False, ts)
        if block is not None:
            out.append(block)
    return out


def alternating(rate: float, seconds: float, start: float = 1000.0) -> list[tuple[int, float]]:
    n = int(rate * seconds)
    return [(i % 2, start + i / rate) for i in range(n)]


def test_blocks_close_on_information_and_on_record_time() -> None:
    # 10 events a second, 1:1: both classes have 20 events after 4 s, so blocks close on
    # time, every 30 s of record time (the first on information: its start is unknown).
    got = timed(BlockCollector(20, 30.0), alternating(10.0, 600.0))
    assert got[0].seconds is None and got[0].events == 40
    spans = [b.seconds for b in got[1:]]
    assert all(s is not None and 30.0 <= s < 30.2 for s in spans), spans
    assert len(got) == 1 + ((600 - 4) // 30)
    # At 1 event a second blocks need 40 s for 20 of each class: information rules.
    got = timed(BlockCollector(20, 30.0), alternating(1.0, 600.0))
    assert [b.events for b in got] == [40] * 15 and got[1].seconds == pytest.approx(40.0)


def test_records_without_time_close_blocks_on_information_only() -> None:
    """As before blocks had a time rule: every 40 events, spans unknown."""
    events = alternating(10.0, 600.0)
    collector = BlockCollector(20, 30.0)
    untimed = timed(collector, [(y, None) for y, _ in events])
    plain = timed(BlockCollector(20, 0.0), events)  # no time rule, time known
    assert len(untimed) == 150 and all(b.seconds is None for b in untimed)
    assert untimed == [dataclasses.replace(b, seconds=None) for b in plain]
    assert collector.now is None


def test_time_going_backwards_moves_no_clock() -> None:
    """Record time is the largest ts seen: older records join the open block but neither
    close it nor shorten the next one's span."""
    events = alternating(10.0, 120.0)
    # Every tenth record is stamped an hour early (a late producer, a replayed batch).
    jittered = [(y, ts - 3600.0 if i % 10 == 5 else ts) for i, (y, ts) in enumerate(events)]
    assert [b.seconds for b in timed(BlockCollector(20, 30.0), jittered)] == \
        [b.seconds for b in timed(BlockCollector(20, 30.0), events)]
    # A whole stretch in the past after the present (a backfill read late) moves no clock
    # either; once its records are the most of their block, blocks close on their own span.
    collector = BlockCollector(20, 30.0)
    timed(collector, alternating(10.0, 60.0))
    assert collector.now == pytest.approx(1059.9)
    old = timed(collector, alternating(10.0, 300.0, start=0.0))
    assert collector.now == pytest.approx(1059.9)
    assert [b.seconds for b in old] == [pytest.approx(30.0)] * 9
    assert old[0].events > 300 + 1  # the open block's present records, outnumbered first
    assert all(b.events == 301 for b in old[1:])


def test_one_record_stamped_in_the_future_does_not_stop_the_blocks() -> None:
    """A producer's bad clock stamps one record a year ahead: the clock jumps, but the
    records after it, all "in the past", still close blocks every 30 s of their own time,
    not on size alone (100 000 events: days at this rate)."""
    events = alternating(10.0, 600.0)
    bad = [*events[:1000], (1, events[1000][1] + 365 * 86_400.0), *events[1000:]]
    collector = BlockCollector(20, 30.0)
    got = timed(collector, bad)
    assert collector.now == pytest.approx(events[1000][1] + 365 * 86_400.0)
    after = [b for b in got if b.seconds is not None and b.seconds < 31.0]
    assert len(after) >= len(timed(BlockCollector(20, 30.0), events)) - 3


@pytest.mark.parametrize("seed", range(12))
def test_extend_closes_the_blocks_add_closes(seed: int) -> None:
    """The vectorized path equals the event-by-event one on streams with stragglers, a
    backfill, a future stamp and untimed records, split into random chunks."""
    rng = random.Random(seed)
    stream: list[tuple[int, float, float | None]] = []
    t = 0.0
    for i in range(rng.randrange(2_000, 8_000)):
        t += rng.expovariate(rng.choice([0.5, 5.0, 50.0]))
        ts: float | None = t
        r = rng.random()
        if r < 0.05:
            ts = t - rng.uniform(0.0, 120.0)
        elif r < 0.06:
            ts = None
        elif r < 0.062:
            ts = t + 86_400.0
        if 3000 <= i < 3600:
            ts = t - 7200.0  # a backfill stretch
        stream.append((int(rng.random() < 0.3), rng.random(), ts))
    one = BlockCollector(20, rng.choice([0.0, 10.0, 30.0]))
    many = BlockCollector(one.min_class, one.seconds)
    expected = [(i, b) for i, (y, score, ts) in enumerate(stream)
                if (b := one.add(y, score, (score >= 0.5) != (y == 1), ts)) is not None]
    got: list[tuple[int, Block]] = []
    start = 0
    while start < len(stream):
        stop = min(len(stream), start + rng.randrange(1, 3_000))
        part = stream[start:stop]
        got += [(start + i, b) for i, b in many.extend([y for y, _, _ in part],
                                                       [s for _, s, _ in part],
                                                       [ts for _, _, ts in part], 0.5)]
        start = stop
    assert got == expected
    assert many.export_state() == one.export_state()


def test_a_long_silence_is_spanned_by_the_block_open_across_it() -> None:
    collector = BlockCollector(20, 30.0)
    timed(collector, alternating(10.0, 300.0))
    before = len(collector)
    week = 7 * 86_400.0
    back = timed(collector, alternating(10.0, 300.0, start=1300.0 + week))
    assert back[0].seconds is not None and back[0].seconds > week  # the silence, in one block
    assert back[0].events == before + 1  # closed at its first event after the silence
    assert all(30.0 <= b.seconds < 30.2 for b in back[1:] if b.seconds is not None)


def test_a_full_block_closes_on_size_before_its_time() -> None:
    """At BLOCK_LIMIT events with both classes it closes; its shorter span is what it
    spends of the budget."""
    collector = BlockCollector(20, 30.0)
    timed(collector, [(i % 2, 0.0) for i in range(40)])  # the first block (information)
    rate = 10_000.0
    got = timed(collector, [(i % 2, i / rate) for i in range(BLOCK_LIMIT + 5)])
    assert len(got) == 1 and got[0].events == BLOCK_LIMIT
    assert got[0].seconds == pytest.approx((BLOCK_LIMIT - 1) / rate)


def test_the_clock_round_trips_and_an_old_state_restores_without_it() -> None:
    collector = BlockCollector(20, 30.0)
    timed(collector, alternating(10.0, 75.0))
    state = json.loads(json.dumps(collector.export_state()))
    again = BlockCollector(20, 30.0)
    again.restore(state)
    rest = alternating(10.0, 200.0, start=1075.0)
    assert timed(again, rest) == timed(collector, rest)
    # Saved before the time rule: no "now", no "start". The open block closes on
    # information (its start is unknown), the next ones on time.
    old = {k: v for k, v in state.items() if k not in ("now", "start")}
    legacy = BlockCollector(20, 30.0)
    legacy.restore(old)
    got = timed(legacy, rest)
    assert got[0].seconds is None
    assert all(30.0 <= b.seconds < 30.2 for b in got[1:] if b.seconds is not None)


# ------------------------------------------------------------------------------------------
# Evidence against the indifference zone


def test_an_empty_zone_gives_the_plain_z_score() -> None:
    standardizer = AUCStandardizer(warmup=5)
    for block in blocks(21, 30, 20, 80, 1.8):
        standardizer.add(block)
    block = blocks(22, 1, 20, 80, 1.5)[0]
    scored = standardizer.score(block)
    assert scored is not None
    assert scored.evidence(-1, 0.0) == (-scored.z(), 0.0)
    assert scored.evidence(1, 0.0) == (scored.z(), 0.0)
    rates = RateStandardizer(warmup=5)
    for errors in (3, 5, 4, 6, 2, 5):
        rates.add(errors, 40)
    rated = rates.score(9, 40)
    assert rated is not None and rated.evidence(1, 0.0) == (rated.z(), 0.0)


def test_the_tolerance_is_half_the_effect_or_a_block_short_of_it() -> None:
    """Imprecise blocks (20 + 80 events): half the effect; precise ones (2 000 + 8 000):
    the effect less the block's standard deviation in AUC units."""
    for p, n, expected_half in ((20, 80, True), (2000, 8000, False)):
        standardizer = AUCStandardizer(warmup=5)
        reference = blocks(40 + p, 30, p, n, 1.8)
        for block in reference:
            standardizer.add(block)
        scored = standardizer.score(blocks(41 + p, 1, p, n, 1.8)[0])
        assert scored is not None
        sd = statistics.stdev(b.auc for b in blocks(42 + p, 200, p, n, 1.8))
        got = scored.tolerance(0.02)
        if expected_half:
            assert got == 0.01
        else:
            assert got == pytest.approx(0.02 - sd, rel=0.1) and 0.01 < got < 0.02


@pytest.mark.parametrize(("p", "n", "mu", "effect"),
                         [(20, 300, 1.8, 0.02), (200, 800, 1.8, 0.02), (1000, 4000, 1.19, 0.04)])
def test_auc_evidence_is_standard_normal_at_the_tolerance(p: int, n: int, mu: float,
                                                          effect: float) -> None:
    """Blocks whose AUC is the reference's minus the tolerance: u ~ N(0, 1) (over
    references: its variance includes the reference's own error), at the small blocks of
    low traffic (tolerance half the effect) and the large ones of high traffic (one block
    standard deviation short of it), where room grows with the block."""
    reference_auc = statistics.NormalDist().cdf(mu / math.sqrt(2))
    got = []
    for repeat in range(20):
        standardizer = AUCStandardizer(warmup=5)
        for block in blocks(1000 * repeat + p, 100, p, n, mu):
            standardizer.add(block)
        probe = standardizer.score(blocks(1000 * repeat + p + 2, 1, p, n, mu)[0])
        assert probe is not None
        tolerated = probe.tolerance(effect)
        shifted = math.sqrt(2) * statistics.NormalDist().inv_cdf(reference_auc - tolerated)
        for block in blocks(1000 * repeat + p + 1, 100, p, n, shifted):
            scored = standardizer.score(block)
            assert scored is not None
            got.append((scored.evidence(-1, effect), tolerated))
    us = [u for (u, _), _ in got]
    assert abs(statistics.mean(us)) < 0.1
    assert 0.9 < statistics.stdev(us) < 1.1
    # room: from the tolerance to the effect, in the block's standard deviations
    sd = statistics.stdev(b.auc for b in blocks(7 + p, 300, p, n, mu))
    assert statistics.mean(r for (_, r), _ in got) == pytest.approx(
        statistics.mean((effect - t) / sd for _, t in got), rel=0.15)


@pytest.mark.parametrize(("rate", "trials", "effect"),
                         [(0.1, 20, 0.05), (0.3, 300, 0.05), (0.1, 20_000, 0.05)])
def test_rate_evidence_is_standard_normal_at_the_tolerance(rate: float, trials: int,
                                                           effect: float) -> None:
    """Error counts at the reference's rate plus the tolerance: u close to N(0, 1) over
    references (discrete counts of a few errors a block: slightly narrower, as mid-p is),
    with the tolerance half the effect at 20 trials and nearly all of it at 20 000."""
    rng = np.random.default_rng(int(rate * 1000) + trials)
    us, tolerances = [], []
    for _ in range(20):
        standardizer = RateStandardizer(warmup=5)
        for errors in rng.binomial(trials, rate, 100):
            standardizer.add(int(errors), trials)
        probe = standardizer.score(0, trials)
        assert probe is not None
        tolerated = probe.tolerance(effect)
        tolerances.append(tolerated)
        for errors in rng.binomial(trials, standardizer.reference + tolerated, 150):
            scored = standardizer.score(int(errors), trials)
            assert scored is not None
            us.append(scored.evidence(1, effect)[0])
    assert abs(statistics.mean(us)) < 0.1
    assert 0.85 < statistics.stdev(us) < 1.1
    if trials == 20:
        assert set(tolerances) == {effect / 2}
    if trials == 20_000:
        assert min(tolerances) > 0.045


def test_a_large_rise_of_a_rate_at_high_traffic_is_not_clamped() -> None:
    """100 000 trials, the rate 0.10 → 0.20: u is about 32 (the shifted predictive
    distribution, wide enough for its normal approximation), far past the allowance
    (about 1); the mid-p of earlier versions stopped at 7.9."""
    standardizer = RateStandardizer(warmup=1)
    standardizer.add(10_000, 100_000)
    scored = standardizer.score(20_000, 100_000)
    assert scored is not None
    base = 10_000.5 / 100_001
    sd0 = math.sqrt(base * (1 - base) * (1 / 100_000 + 1 / 100_002))
    tolerated = 0.05 - sd0
    assert scored.tolerance(0.05) == pytest.approx(tolerated, rel=1e-3)
    u, room = scored.evidence(1, 0.05)
    sd = math.sqrt((base + tolerated) * (1 - base - tolerated) * (1 / 100_000 + 1 / 100_002))
    assert u == pytest.approx((0.2 - base - tolerated) / sd, rel=0.01)
    assert u > 30
    assert room == pytest.approx(sd0 / sd, rel=0.01)
