"""ADWIN: River's doctest vectors, River cross-checks, the histogram's invariants."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import drift as river_drift
from river._river_rust.drift import AdaptiveWindowing  # River's ADWIN core, without the reset

from driftwatch.core.detectors import ADWIN, DetectorState
from driftwatch.core.detectors.base import Direction


def drifts(detector: ADWIN, stream: Sequence[float]) -> list[int]:
    return [i for i, x in enumerate(stream) if detector.update(x) is DetectorState.DRIFT]


def river_core(params: dict[str, Any]) -> AdaptiveWindowing:
    full = {"delta": 0.002, "clock": 32, "max_buckets": 5, "min_window_length": 5}
    full |= {"grace_period": 10} | params
    return AdaptiveWindowing(**full)


def reference_streams() -> tuple[list[int], list[int]]:
    rng = random.Random(12345)
    rising = rng.choices([0, 1], k=1000) + rng.choices(range(4, 8), k=1000)
    falling = rng.choices(range(4, 8), k=1000) + rng.choices([0, 1], k=1000)
    return rising, falling


def numpy_stream() -> list[int]:
    np.random.seed(0)
    ds = np.random.randint(2, size=2000)
    ds[999:] = np.random.randint(4, 8, size=1001)
    return [int(v) for v in ds]


# --- River's doctest vectors ---------------------------------------------------------------


def test_reference_vector_rivers_doctest() -> None:
    rising, _ = reference_streams()
    assert drifts(ADWIN(direction="both"), rising) == [1023]


def test_reference_vector_window_kept_numpy_stream() -> None:
    """δ = 0.001, window kept, increases flagged: [1023, 1055] (MOA and River's core agree)."""
    stream = numpy_stream()
    assert drifts(ADWIN(delta=0.001, direction="up"), stream) == [1023, 1055]
    assert drifts(ADWIN(delta=0.001, direction="both"), stream) == [1023, 1055]
    assert drifts(ADWIN(delta=0.001, direction="down"), stream) == []
    core = river_core({"delta": 0.001})
    assert [i for i, x in enumerate(stream) if core.update(float(x))] == [1023, 1055]


def test_next_detections_with_window_kept() -> None:
    """After River's doctest drift the kept window gives no further drift on the rising
    stream, and on the continued (falling) stream a second one at 1087; River's core agrees."""
    rising, falling = reference_streams()
    assert drifts(ADWIN(direction="both"), rising) == [1023]
    assert drifts(ADWIN(direction="both"), falling) == [1023, 1087]
    assert drifts(ADWIN(direction="down"), falling) == [1023, 1087]
    assert drifts(ADWIN(direction="up"), falling) == []
    for stream, expected in ((rising, [1023]), (falling, [1023, 1087])):
        core = river_core({})
        assert [i for i, x in enumerate(stream) if core.update(float(x))] == expected


def test_river_resets_after_drift_we_keep_the_window() -> None:
    """Pinned difference: River's ADWIN empties its window on the input after a drift, so its
    second cut on the falling stream never comes; ours keeps the shrunk window."""
    _, falling = reference_streams()
    river, ours = river_drift.ADWIN(), ADWIN(direction="both")
    river_found, widths = [], []
    for i, x in enumerate(falling):
        river.update(x)
        ours.update(x)
        if river.drift_detected:
            river_found.append(i)
        widths.append((river.width, ours.width))
    assert river_found == [1023]
    river_width, our_width = widths[1023]
    assert river_width == our_width < 1024  # the same cut
    assert widths[1024] == (1, our_width + 1)  # River restarts from empty, ours goes on


# --- Cross-checks against River ------------------------------------------------------------


def shifting_stream(seed: int) -> list[float]:
    rng = random.Random(seed)
    stream: list[float] = []
    mean = 0.0
    for _ in range(5):
        stream += [rng.gauss(mean, 1.0) for _ in range(rng.randint(300, 900))]
        mean += rng.choice([-1, 1]) * rng.uniform(0.2, 1.5)
    stream += [float(b) for b in rng.choices([0, 1], weights=[0.8, 0.2], k=800)]
    stream += [float(b) for b in rng.choices([0, 1], weights=[0.5, 0.5], k=800)]
    return stream


PARAMS: list[dict[str, Any]] = [
    {},
    {"delta": 0.05, "clock": 1, "max_buckets": 3, "min_window_length": 3, "grace_period": 5},
    {"delta": 0.01, "clock": 7, "max_buckets": 2, "min_window_length": 10, "grace_period": 40},
    {"delta": 0.3, "clock": 4, "max_buckets": 8, "min_window_length": 1, "grace_period": 0},
]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("params", PARAMS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_same_window_and_cuts_as_river_core(seed: int, params: dict[str, Any]) -> None:
    """Identical cuts, widths and totals at every step (River's core keeps its window too)."""
    stream = shifting_stream(seed)
    ours, core = ADWIN(direction="both", **params), river_core(params)
    for x in stream:
        assert (ours.update(x) is DetectorState.DRIFT) == core.update(x)
        assert ours.width == core.get_width()
        assert ours.estimation * ours.width == pytest.approx(core.get_total(), abs=1e-9)
        # Pinned difference: River's `variance` is the window's sum of squares, W·σ².
        assert ours.variance * ours.width == pytest.approx(core.get_variance(), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("params", PARAMS[:3], ids=["default", "fast", "coarse"])
def test_river_wrapper_is_ours_restarted_after_each_drift(
    seed: int, params: dict[str, Any]
) -> None:
    """River's ADWIN = ours (direction both) thrown away after each drift."""
    stream = shifting_stream(seed)
    river = river_drift.ADWIN(**params)
    ours = ADWIN(direction="both", **params)
    restart = False
    for x in stream:
        if restart:
            ours = ADWIN(direction="both", **params)
        river.update(x)
        restart = ours.update(x) is DetectorState.DRIFT
        assert restart == river.drift_detected
        assert ours.width == river.width


def test_cross_check_streams_do_cut() -> None:
    assert sum(len(drifts(ADWIN(direction="both"), shifting_stream(s))) for s in range(5)) >= 10


@pytest.mark.parametrize("seed", range(5))
def test_direction_filters_reports_not_cuts(seed: int) -> None:
    """A cut in the ignored direction still shrinks the window, but is not reported."""
    stream = shifting_stream(seed)
    runs: dict[str, tuple[list[int], list[int]]] = {}
    for direction in ("up", "down", "both"):
        adwin = ADWIN(direction=direction)
        found, widths = [], []
        for i, x in enumerate(stream):
            if adwin.update(x) is DetectorState.DRIFT:
                found.append(i)
            widths.append(adwin.width)
        runs[direction] = (found, widths)
    assert runs["up"][1] == runs["down"][1] == runs["both"][1]
    assert sorted(set(runs["up"][0]) | set(runs["down"][0])) == runs["both"][0]
    assert runs["up"][0] and runs["down"][0]


def test_up_and_down_mean_newer_part_higher_and_lower() -> None:
    rng = random.Random(3)
    low = [rng.gauss(0.2, 0.05) for _ in range(600)]
    high = [rng.gauss(0.8, 0.05) for _ in range(600)]
    assert drifts(ADWIN(direction="up"), low + high) and not drifts(
        ADWIN(direction="up"), high + low
    )
    assert drifts(ADWIN(direction="down"), high + low) and not drifts(
        ADWIN(direction="down"), low + high
    )


# --- The window and the histogram -----------------------------------------------------------


def buckets_oldest_first(adwin: ADWIN) -> list[tuple[int, float, float]]:
    """(size, total, sum of squares) of every bucket, oldest first, from the exported state."""
    rows = adwin.export_state()["data"]["buckets"]
    return [(1 << r, t, s) for r in range(len(rows) - 1, -1, -1) for t, s in rows[r]]


@settings(max_examples=60, deadline=None)
@given(
    segments=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(1, 200)), min_size=1, max_size=6),
    noise=st.sampled_from([0.0, 0.01, 0.2]),
    seed=st.integers(0, 2**16),
    clock=st.sampled_from([1, 5, 32]),
    max_buckets=st.integers(1, 6),
    min_window_length=st.integers(1, 8),
    direction=st.sampled_from(["up", "down", "both"]),
)
def test_window_is_the_stream_suffix(
    segments: list[tuple[float, int]],
    noise: float,
    seed: int,
    clock: int,
    max_buckets: int,
    min_window_length: int,
    direction: Direction,
) -> None:
    """The window is always the last `width` inputs; buckets summarize them exactly."""
    rng = random.Random(seed)
    stream = [mean + rng.gauss(0, noise) for mean, n in segments for _ in range(n)]
    adwin = ADWIN(
        delta=0.1,
        clock=clock,
        max_buckets=max_buckets,
        min_window_length=min_window_length,
        grace_period=0,
        direction=direction,
    )
    for t, x in enumerate(stream, start=1):
        adwin.update(x)
        adwin._check()
        window = stream[t - adwin.width : t]
        assert 1 <= adwin.width <= t
        assert adwin.estimation == pytest.approx(statistics.fmean(window), abs=1e-9)
        assert adwin.variance == pytest.approx(statistics.pvariance(window), abs=1e-9)
    start = len(stream) - adwin.width
    for size, total, sum_sq in buckets_oldest_first(adwin):
        part = stream[start : start + size]
        assert total == pytest.approx(math.fsum(part), abs=1e-9)
        assert sum_sq == pytest.approx(statistics.pvariance(part) * size, abs=1e-9)
        start += size
    assert start == len(stream)


def test_memory_is_logarithmic() -> None:
    adwin = ADWIN(max_buckets=5)
    for _ in range(2**16):
        adwin.update(0.5)
    assert adwin.width == 2**16  # a constant stream is never cut
    rows = adwin.export_state()["data"]["buckets"]
    assert len(rows) <= math.log2(2**16) + 1
    assert all(len(row) <= 5 for row in rows)
    assert sum(len(row) for row in rows) <= 5 * len(rows)


def test_empty_window() -> None:
    adwin = ADWIN()
    assert adwin.width == 0
    assert math.isnan(adwin.estimation) and math.isnan(adwin.variance)


def test_variance_is_population_variance() -> None:
    adwin = ADWIN()
    for x in [1.0, 2.0, 3.0, 4.0, 5.0]:
        adwin.update(x)
    assert (adwin.width, adwin.estimation, adwin.variance) == (5, 3.0, 2.0)
    core = river_core({})
    for x in [1.0, 2.0, 3.0, 4.0, 5.0]:
        core.update(x)
    assert core.get_variance() == 10.0  # River reports W·σ² under the same name


def test_checks_only_every_clock_inputs() -> None:
    rng = random.Random(11)
    stream = [rng.gauss(0, 1) for _ in range(700)] + [rng.gauss(3, 1) for _ in range(700)]
    for clock in (1, 7, 32):
        found = drifts(ADWIN(clock=clock, direction="both"), stream)
        assert found and all((i + 1) % clock == 0 for i in found)


def test_grace_period() -> None:
    stream = [0.0] * 50 + [1.0] * 60
    found = drifts(ADWIN(clock=1, grace_period=100, min_window_length=1, direction="up"), stream)
    assert found[0] == 100  # the 101st input is the first the window may be tested at


def test_drift_lasts_one_step_and_keeps_the_window() -> None:
    rising, _ = reference_streams()
    adwin = ADWIN(direction="both")
    for x in rising[:1024]:
        adwin.update(x)
    assert adwin.drift_detected
    width, estimate = adwin.width, adwin.estimation
    assert 5 <= width < 1024 and estimate > 4
    assert adwin.update(rising[1024]) is DetectorState.STABLE
    assert adwin.width == width + 1


def test_restore_refuses_a_corrupted_window() -> None:
    adwin = ADWIN()
    for x in range(100):
        adwin.update(float(x % 3))
    state = adwin.export_state()
    state["data"]["width"] += 1
    with pytest.raises(ValueError, match="width"):
        ADWIN.from_state(state)


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("delta", 0.0),
        ("delta", 1.0),
        ("delta", -0.5),
        ("clock", 0),
        ("clock", 3.0),
        ("max_buckets", 0),
        ("min_window_length", 0),
        ("grace_period", -1),
        ("direction", "left"),
    ],
)
def test_invalid_parameters(param: str, value: object) -> None:
    with pytest.raises(ValueError, match=param):
        ADWIN(**{param: value})
