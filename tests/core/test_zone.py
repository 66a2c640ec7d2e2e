"""The indifference zone's CUSUM: its allowance grid, its exact run length at the tolerance,
and that with an empty zone it is the plain CUSUM."""

from __future__ import annotations

import math
import random
import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from driftwatch.core.detectors import Cusum, DetectorState
from driftwatch.core.sequential import cusum_arl, cusum_threshold, normal_cdf
from driftwatch.core.zone import allowance, step


@given(st.floats(0.0, 2.0), st.floats(0.0, 500.0))
def test_the_allowance_is_k_or_the_room_rounded_up(k: float, room: float) -> None:
    got = allowance(k, room)
    if room <= k:
        assert got == k
    else:
        assert room * (1 - 1e-12) <= got < room * 2 ** (1 / 8) * (1 + 1e-12)
        exponent = 8 * math.log2(got / 0.5)
        assert exponent == pytest.approx(round(exponent), abs=1e-9)


def test_h_is_zero_when_one_input_above_k_is_already_rare_enough() -> None:
    # ARL(h → 0) = 1/Φ(−k) exactly: an alarm is one input above k.
    assert cusum_threshold(1e4, 4.0) == 0.0  # 1/Φ(−4) = 31 574 ≥ 10 000
    assert cusum_threshold(1e5, 4.0) > 0.0  # not enough: a positive threshold
    assert cusum_arl(cusum_threshold(1e5, 4.0), 4.0) == pytest.approx(1e5, rel=1e-6)
    assert cusum_threshold(1e12, 30.0) == 0.0  # no numerics at all far out


@pytest.mark.parametrize("direction", ["down", "up", "both"])
def test_an_empty_zone_is_the_plain_cusum_in_nats(direction: str) -> None:
    """update_block with room 0 and a fixed run length gives the alarms of update on the
    same z-scores, its sums scaled by 2k."""
    rng = random.Random(5)
    zs = [rng.gauss(-0.3 if i > 600 else 0.0, 1.0) for i in range(1500)]
    plain = Cusum(k=0.7, arl=300.0, direction=direction)  # type: ignore[arg-type]
    blocks = Cusum(k=0.7, arl=300.0, direction=direction)  # type: ignore[arg-type]
    for z in zs:
        a = plain.update(z)
        b = blocks.update_block(lambda side, z=z: (side * z, 0.0), 300.0)
        assert a == b
        assert blocks.statistic == pytest.approx(1.4 * plain.statistic, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(("room", "arl"), [(0.3, 200.0), (1.7, 300.0), (3.0, 2000.0)])
def test_the_run_length_at_the_tolerance_is_the_budget_s(room: float, arl: float) -> None:
    """Evidence exactly N(0, 1) (the measure sits at its tolerance): the mean run length of
    step() is cusum_arl at the block's allowance, at least the target (the allowance only
    rounds up); and 4 standard errors of 3000 runs contain it."""
    k = allowance(0.5, room)
    h = cusum_threshold(arl, k)
    rng = np.random.default_rng(int(room * 100))
    runs = []
    for _ in range(3000):
        total, n = 0.0, 0
        crossed = False
        while not crossed:
            n += 1
            total, crossed = step(total, float(rng.normal()), k, arl)
        runs.append(n)
    mean = statistics.fmean(runs)
    se = statistics.stdev(runs) / math.sqrt(len(runs))
    expected = 1.0 / normal_cdf(-k) if h == 0.0 else cusum_arl(h, k)
    assert expected >= arl * (1 - 1e-6)
    assert abs(mean - expected) < 4 * se, (mean, expected, se)


def test_below_the_boundary_at_high_traffic_there_is_no_alarm_above_it_at_once() -> None:
    """Room 20 (a block standard deviation of a twentieth of the distance from the
    tolerance to the effect): a change just below the effect (u = 19: 0.95 of the way) never
    crosses, one just above (u = 21) crosses at the first block."""
    cusum = Cusum(k=0.5, direction="down")
    for _ in range(10_000):
        assert cusum.update_block(lambda side: (19.0, 20.0), 262_144.0) is DetectorState.STABLE
    assert cusum.statistic == 0.0
    assert cusum.update_block(lambda side: (21.0, 20.0), 262_144.0) is DetectorState.DRIFT
