"""The false-alarm budget: run lengths per block from record time, exactly, and their sum."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from driftwatch.core.budget import (
    MAX_ARL,
    MAX_BLOCK_SECONDS,
    MIN_ARL,
    MIN_BLOCK_SECONDS,
    block_arl,
    counted_seconds,
    expected_false_alarms,
    quantized_arl,
)

STEP = 2.0 ** 0.25


@given(st.floats(MIN_ARL, MAX_ARL / STEP))
def test_a_run_length_is_rounded_up_to_the_next_grid_point(arl: float) -> None:
    q = quantized_arl(arl)
    assert arl * (1 - 1e-12) <= q < arl * STEP * (1 + 1e-12)
    exponent = 4 * math.log2(q)
    assert exponent == pytest.approx(round(exponent), abs=1e-9)  # on the grid 2^(j/4)


def test_the_grid_has_bounds_and_refuses_nonsense() -> None:
    assert quantized_arl(2.0) == MIN_ARL
    assert quantized_arl(1e15) == MAX_ARL
    assert quantized_arl(1024.0) == 1024.0  # grid points stay
    with pytest.raises(ValueError, match="arl"):
        quantized_arl(0.0)
    with pytest.raises(ValueError, match="detectors"):
        block_arl(30.0, 0, 30.0)


def test_a_block_counts_its_own_record_time_clamped() -> None:
    assert counted_seconds(42.5, 30.0) == 42.5
    assert counted_seconds(0.0, 30.0) == MIN_BLOCK_SECONDS  # a timestamp that does not move
    assert counted_seconds(7 * 86_400.0, 30.0) == MAX_BLOCK_SECONDS  # a week of silence
    assert counted_seconds(None, 30.0) == 30.0  # no record time: block_seconds
    assert counted_seconds(None, 0.0) == MIN_BLOCK_SECONDS


def test_worked_numbers() -> None:
    # Three detectors, one false alarm per 30 days, blocks of 30 s: each detector gets
    # 3 · 30 · 86 400 / 30 = 259 200 blocks, rounded up to 2^18 = 262 144.
    assert block_arl(30.0, 3, 30.0) == 2.0 ** 18
    # Then 30 days hold 86 400 blocks, and the three expect 3 · 86 400 / 262 144 = 0.989.
    assert expected_false_alarms([2.0 ** 18] * 3, 30.0) == pytest.approx(3 * 86_400 / 2 ** 18)
    # A fixed run length of 200 000 blocks on 30-second blocks: 0.43 per 30 days; on the
    # 10-second blocks of 10 000 events a second (BLOCK_LIMIT), three times that.
    assert expected_false_alarms([200_000.0], 30.0) == pytest.approx(0.432)
    assert expected_false_alarms([200_000.0], 10.0) == pytest.approx(1.296)


@given(st.lists(st.floats(0.0, 20_000.0), min_size=1, max_size=200),
       st.floats(0.5, 365.0), st.integers(1, 6))
def test_the_hazard_of_a_stretch_of_blocks_is_the_record_time_it_covers(
        spans: list[float], days: float, detectors: int) -> None:
    """Σ 1/ARL over any blocks (any lengths: steady, bursts, a backlog's) is their counted
    record time over n·D days, less at most the grid's rounding (a factor 2^(−1/4)): the
    expected false alarms per day do not depend on how the time was cut into blocks."""
    counted = [counted_seconds(s, 30.0) for s in spans]
    hazard = math.fsum(1.0 / block_arl(days, detectors, c) for c in counted)
    exact = math.fsum(counted) / (detectors * days * 86_400.0)
    # The run length is clamped to [10, 1e12] blocks; only the floor can add hazard, and it
    # binds only for budgets shorter than ~an hour's worth of blocks (never with these).
    assert exact / STEP * (1 - 1e-9) <= hazard <= exact * (1 + 1e-9)
