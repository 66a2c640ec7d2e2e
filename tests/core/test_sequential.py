"""CUSUM run lengths: the integral equation against an independent Markov-chain computation,
Siegmund's approximation and published values; the threshold as its inverse."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch.core.detectors import Cusum
from driftwatch.core.sequential import (
    cusum_arl,
    cusum_threshold,
    normal_cdf,
    normal_quantile,
    siegmund_arl,
)


def markov_chain_arl(h: float, k: float, shift: float, states: int = 200) -> float:
    """Brook and Evans (1972): the CUSUM on a grid of ``states`` cells of [0, h], state 0 the
    reset, each cell's value its midpoint; ARL = first entry of (I − Q)⁻¹·1."""
    w = 2.0 * h / (2 * states - 1)  # cell width: state i covers ((i − ½)w, (i + ½)w]
    centres = np.arange(states) * w
    upper = (np.arange(states) + 0.5) * w
    lower = (np.arange(states) - 0.5) * w
    cdf = np.vectorize(normal_cdf)
    # From state i: S' = max(0, c_i + X − k); P(S' in cell j).
    move = centres[:, None] - k + shift
    q = cdf(upper[None, :] - move) - cdf(lower[None, :] - move)
    q[:, 0] = cdf(0.5 * w - move[:, 0])
    return float(np.linalg.solve(np.eye(states) - q, np.ones(states))[0])


@pytest.mark.parametrize(("h", "k", "shift"), [(4.0, 0.5, 0.0), (5.0, 0.5, 0.0),
                                                (8.0, 0.5, 0.0), (5.0, 0.25, 1.0),
                                                (3.0, 1.0, 0.5)])
def test_integral_equation_agrees_with_the_markov_chain(h: float, k: float, shift: float) -> None:
    assert cusum_arl(h, k, shift) == pytest.approx(markov_chain_arl(h, k, shift), rel=1e-3)


def test_published_values_and_siegmund() -> None:
    # The textbook one-sided k = 0.5 values, twice the familiar two-sided 168 and 465.
    assert cusum_arl(4.0, 0.5) == pytest.approx(336, abs=1)
    assert cusum_arl(5.0, 0.5) == pytest.approx(930, abs=2)
    for h in (3.0, 6.0, 10.0):
        assert cusum_arl(h, 0.5) == pytest.approx(siegmund_arl(h, 0.5), rel=0.02)
        assert cusum_arl(h, 0.5, 1.5) == pytest.approx(siegmund_arl(h, 0.5, 1.5), rel=0.05)


def test_simulated_run_length() -> None:
    rng = np.random.default_rng(20260401)
    h, k = 3.0, 0.5
    lengths = []
    for _ in range(3000):
        s, n = 0.0, 0
        while s <= h:
            s = max(0.0, s + rng.normal() - k)
            n += 1
        lengths.append(n)
    mean, se = statistics.mean(lengths), statistics.stdev(lengths) / math.sqrt(len(lengths))
    assert abs(mean - cusum_arl(h, k)) < 4 * se


@settings(max_examples=25, deadline=None)
@given(st.floats(20.0, 1e7), st.sampled_from([0.25, 0.5, 1.0]))
def test_threshold_inverts_the_run_length(arl: float, k: float) -> None:
    h = cusum_threshold(arl, k)
    assert cusum_arl(h, k) == pytest.approx(arl, rel=1e-6)


def test_detector_threshold_follows_its_target() -> None:
    assert Cusum(arl=1e5).h == cusum_threshold(1e5, 0.5)
    assert Cusum(arl=1e5, direction="both").h == cusum_threshold(2e5, 0.5)
    assert Cusum(arl=1e6).h > Cusum(arl=1e5).h
    with pytest.raises(ValueError, match="arl"):
        Cusum(arl=1.0)
    with pytest.raises(ValueError, match="k"):
        Cusum(k=-0.1)


@given(st.floats(1e-12, 1 - 1e-12))
def test_normal_quantile(p: float) -> None:
    assert normal_quantile(p) == pytest.approx(statistics.NormalDist().inv_cdf(p), abs=1e-9)
