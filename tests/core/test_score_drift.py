"""Label-free score drift: statistics against scipy, the watch against a from-scratch recount."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from driftwatch.core.score_drift import (
    ScoreDrift,
    gamma_p,
    gamma_q,
    kolmogorov_cdf,
    kolmogorov_sf,
    ks_statistic,
    ks_z,
    psi,
    psi_z,
    quantile_edges,
    rate_z,
)

# Few distinct values make ties, many make them rare: both matter for the KS statistic.
samples = st.one_of(
    st.lists(st.sampled_from([0.0, 0.1, 0.5, 0.5, 0.9, 1.0, -2.0]), min_size=1, max_size=80),
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=300),
)


# Only the statistic is compared: scipy's p-value machinery warns on tiny or tied samples.
@pytest.mark.filterwarnings("ignore:ks_2samp:RuntimeWarning")
@settings(max_examples=300, deadline=None)
@given(a=samples, b=samples)
def test_ks_statistic_is_scipys(a: list[float], b: list[float]) -> None:
    assert ks_statistic(a, b) == pytest.approx(stats.ks_2samp(a, b).statistic, abs=1e-12)


@pytest.mark.parametrize("x", [0.05, 0.3, 0.6, 0.9, 1.17, 1.18, 1.5, 2.0, 3.0, 5.0])
def test_kolmogorov_distribution_is_scipys(x: float) -> None:
    assert kolmogorov_cdf(x) == pytest.approx(stats.kstwobign.cdf(x), rel=1e-12, abs=1e-300)
    assert kolmogorov_sf(x) == pytest.approx(stats.kstwobign.sf(x), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize(("n", "m"), [(60, 97), (100, 400), (100, 1000), (500, 5000),
                                    (30, 2000)])
def test_ks_z_matches_scipys_exact_p_value(n: int, m: int) -> None:
    """Stephens' corrected asymptotic p-value, 1 − Φ(z), against scipy's exact one, within
    5 % of (p + 0.01). (With equal sizes the statistic lives on the coarse lattice k/n and
    a continuous approximation is off by up to half a step: 15 % at n = m = 50.)"""
    rng = np.random.default_rng(n * m)
    for shift in (0.0, 0.1, 0.2, 0.3, 0.5):
        for _ in range(5):
            a, b = rng.normal(shift, 1, n), rng.normal(0, 1, m)
            d = ks_statistic(a, b)
            exact = stats.ks_2samp(a, b, method="exact").pvalue
            ours = 1.0 - stats.norm.cdf(ks_z(d, n, m))
            assert ours == pytest.approx(exact, abs=0.05 * (exact + 0.01))


@pytest.mark.parametrize("a", [0.5, 1.0, 4.5, 9.5, 50.0])
@pytest.mark.parametrize("x", [1e-3, 0.4, 2.0, 5.5, 12.0, 40.0, 150.0])
def test_incomplete_gamma_is_scipys(a: float, x: float) -> None:
    assert gamma_p(a, x) == pytest.approx(special.gammainc(a, x), rel=1e-10, abs=1e-300)
    assert gamma_q(a, x) == pytest.approx(special.gammaincc(a, x), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("value", [0.0, 0.001, 0.01, 0.05, 0.2, 1.0])
def test_psi_z_is_the_chi_square_quantile(value: float) -> None:
    n, m, bins = 500, 5000, 10
    x = value / (1 / n + 1 / m)
    # From the smaller tail, clamped to [1e-15, 1 − 1e-15] as psi_z does (|z| ≤ 7.9).
    cdf, sf = stats.chi2.cdf(x, bins - 1), stats.chi2.sf(x, bins - 1)
    expected = (stats.norm.ppf(max(cdf, 1e-15)) if cdf < sf
                else -stats.norm.ppf(max(sf, 1e-15)))
    assert psi_z(value, n, m, bins) == pytest.approx(expected, abs=1e-8)


@settings(max_examples=200, deadline=None)
@given(a=samples, b=samples, bins=st.integers(2, 12))
def test_psi_equals_a_per_score_count(a: list[float], b: list[float], bins: int) -> None:
    edges = list(quantile_edges(b, bins))
    assert edges == sorted(set(edges))

    def shares(xs: list[float]) -> list[float]:
        counts = [0.5] * (len(edges) + 1)
        for x in xs:
            counts[sum(1 for e in edges if x >= e)] += 1
        return [c / sum(counts) for c in counts]

    sa, sb = shares(a), shares(b)
    expected = math.fsum((x - y) * math.log(x / y) for x, y in zip(sa, sb, strict=True))
    assert psi(a, b, np.array(edges)) == pytest.approx(expected, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(("n", "k", "r"), [(100, 10, 1000), (500, 2, 5000), (50, 25, 50)])
def test_rate_z_is_the_beta_binomial_mid_p(n: int, k: int, r: int) -> None:
    # Tails summed from scipy's pmf: its betabinom.sf computes 1 − cdf and stalls at 1e-11.
    pmf = stats.betabinom(n, k + 0.5, r - k + 0.5).pmf(np.arange(n + 1))
    for x in sorted({0, 1, n // 20, n // 10, n // 2, n - 1, n}):
        below = math.fsum(pmf[:x]) + 0.5 * pmf[x]
        above = math.fsum(pmf[x + 1:]) + 0.5 * pmf[x]
        expected = (stats.norm.ppf(max(below, 1e-15)) if below < above
                    else -stats.norm.ppf(max(above, 1e-15)))
        assert rate_z(x, n, k, r) == pytest.approx(expected, abs=1e-6)


# --- the watch against a recount from the raw stream ---------------------------------------


def recount(stream: list[tuple[float, int | None]], kw: dict[str, Any]) -> tuple[
        list[tuple[int, tuple[float, ...]]], dict[str, float]]:
    """Block z-scores (at the index that closes each block) and the final sliding values,
    from slices of the whole stream."""
    items = [(s, int(s >= 0.5) if p is None else p) for s, p in stream]
    m, r, w = kw["block_size"], kw["reference_size"], kw["window"]
    start = r if kw["reference"] == "frozen" else 0
    blocks = []
    pool = [sum(p for _, p in items[:r]), r]  # frozen: the rate's self-starting reference
    for end in range(start + m, len(items) + 1, m):
        if kw["reference"] == "previous" and end - m - r < 0:
            continue
        block = items[end - m:end]
        ref = items[:r] if kw["reference"] == "frozen" else items[end - m - r:end - m]
        z = (ks_z(stats.ks_2samp([s for s, _ in block], [s for s, _ in ref]).statistic, m, r),
             psi_z(psi([s for s, _ in block], [s for s, _ in ref],
                       quantile_edges([s for s, _ in ref], kw["bins"])), m, r,
                   len(quantile_edges([s for s, _ in ref], kw["bins"])) + 1),
             rate_z(sum(p for _, p in block), m, *(
                 pool if kw["reference"] == "frozen" else (sum(p for _, p in ref), r))))
        pool = [pool[0] + sum(p for _, p in block), pool[1] + m]
        blocks.append((end - 1, z))
    recent = items[start:][-w:]
    values = {"ks": math.nan, "psi": math.nan, "positive_rate": math.nan,
              "reference_positive_rate": math.nan}
    if recent:
        values["positive_rate"] = sum(p for _, p in recent) / len(recent)
    ref = (items[:r] if kw["reference"] == "frozen"
           else items[len(items) - w - r:len(items) - w] if len(items) >= w + r else [])
    if len(recent) == w and len(ref) == r:
        values["ks"] = stats.ks_2samp([s for s, _ in recent], [s for s, _ in ref]).statistic
        values["psi"] = psi([s for s, _ in recent], [s for s, _ in ref],
                            quantile_edges([s for s, _ in ref], kw["bins"]))
        values["reference_positive_rate"] = sum(p for _, p in ref) / r
    return blocks, values


streams = st.lists(st.tuples(st.sampled_from([0.1, 0.3, 0.5, 0.6, 0.8, 0.95]),
                             st.sampled_from([None, None, 0, 1])), max_size=160)
parameters = st.fixed_dictionaries({
    "window": st.integers(2, 30),
    "block_size": st.integers(2, 20),
    "reference": st.sampled_from(["frozen", "previous"]),
    "reference_size": st.integers(2, 40),
    "bins": st.integers(2, 6),
})


def same(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(
        (math.isnan(a[k]) and math.isnan(b[k])) or a[k] == pytest.approx(b[k], abs=1e-12)
        for k in a)


@settings(max_examples=150, deadline=None)
@given(stream=streams, kw=parameters, data=st.data())
def test_watch_equals_a_recount_and_restores_at_any_point(
        stream: list[tuple[float, int | None]], kw: dict[str, Any], data: st.DataObject) -> None:
    expected_blocks, expected_values = recount(stream, kw)
    cut = data.draw(st.integers(0, len(stream)))
    watch = ScoreDrift(**kw)
    out = [watch.update(s, p) for s, p in stream[:cut]]
    watch = ScoreDrift.from_state(json.loads(json.dumps(watch.export_state())), **kw)
    out += [watch.update(s, p) for s, p in stream[cut:]]
    blocks = [(i, z) for i, z in enumerate(out) if z is not None]
    assert [i for i, _ in blocks] == [i for i, _ in expected_blocks]
    for (_, signals), (_, e) in zip(blocks, expected_blocks, strict=True):
        assert tuple(s.z for s in signals) == pytest.approx(e, abs=1e-9)
    assert same(watch.values(), expected_values)
    assert watch.seen == len(stream)


def test_block_z_scores_are_standard_normal_without_change() -> None:
    """Each block against an independent reference: the z-scores' law is N(0, 1) (the
    marginal calibration; the benchmark measures the dependence through a shared reference)."""
    rng = random.Random(7)
    zs: list[tuple[float, ...]] = []
    for _ in range(400):
        watch = ScoreDrift(window=100, block_size=100, reference_size=1000)
        for _ in range(1100):
            z = watch.update(rng.betavariate(2, 5))
        assert z is not None
        zs.append(tuple(s.z for s in z))
    for name, column in zip(("ks", "psi", "positive_rate"), zip(*zs, strict=True),
                            strict=True):
        values = np.array(column)
        assert abs(values.mean()) < 0.15, name
        assert 0.85 < values.std() < 1.15, name
        assert (values > 1.645).mean() == pytest.approx(0.05, abs=0.03), name


def test_shift_raises_every_signal() -> None:
    rng = random.Random(3)
    watch = ScoreDrift(window=500, block_size=500, reference_size=5000)
    for _ in range(5000):
        watch.update(rng.gauss(0.0, 1.0), None)
    shifted = [watch.update(rng.gauss(0.3, 1.0)) for _ in range(500)][-1]
    assert shifted is not None and min(s.z for s in shifted) > 3.0
    ks, index, rate = shifted
    assert (ks.name, index.name, rate.name) == ("ks", "psi", "positive_rate")
    assert ks.value == pytest.approx(watch.values()["ks"])  # the block is the window here
    assert rate.value > rate.reference
    values = watch.values()
    assert values["ks"] > 0.08 and values["psi"] > 0.05
    assert values["positive_rate"] > values["reference_positive_rate"] + 0.05


@pytest.mark.parametrize(("kw", "message"), [
    ({"window": 1}, "window"),
    ({"block_size": True}, "block_size"),
    ({"reference": "earlier"}, "reference"),
    ({"bins": 1}, "bins"),
    ({"threshold": math.nan}, "threshold"),
])
def test_bad_parameters_name_the_argument(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ScoreDrift(**kw)


def test_bad_input_and_state_are_refused() -> None:
    watch = ScoreDrift(reference_size=2, block_size=2)
    with pytest.raises(ValueError, match="y_score"):
        watch.update(math.inf)
    with pytest.raises(ValueError, match="y_pred"):
        watch.update(0.5, 3)
    assert watch.seen == 0
    state = watch.export_state()
    with pytest.raises(ValueError, match="version"):
        ScoreDrift.from_state({**state, "version": 0})
    with pytest.raises(ValueError, match="score"):
        ScoreDrift.from_state({**state, "history": [["x", 1]]})
    with pytest.raises(ValueError, match="1 scores with 3 positives"):
        ScoreDrift.from_state({**state, "reference": {"scores": [0.5], "positives": 3}})
