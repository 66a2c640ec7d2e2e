"""Page-Hinkley: River's doctest vectors, River cross-checks, the rule from first principles."""

from __future__ import annotations

import random
from collections.abc import Sequence
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from river import drift as river_drift

from driftwatch.core.detectors import DetectorState, PageHinkley
from driftwatch.core.detectors.base import Direction


def drifts(detector: PageHinkley, stream: Sequence[float]) -> list[int]:
    return [i for i, x in enumerate(stream) if detector.update(x) is DetectorState.DRIFT]


def river_drifts(detector: river_drift.PageHinkley, stream: Sequence[float]) -> list[int]:
    found = []
    for i, x in enumerate(stream):
        detector.update(x)
        if detector.drift_detected:
            found.append(i)
    return found


def reference_streams() -> tuple[list[int], list[int]]:
    """River's doctest stream (an increase) and the same generator continued (a decrease)."""
    rng = random.Random(12345)
    rising = rng.choices([0, 1], k=1000) + rng.choices(range(4, 8), k=1000)
    falling = rng.choices(range(4, 8), k=1000) + rng.choices([0, 1], k=1000)
    return rising, falling


# --- River's doctest vectors ---------------------------------------------------------------


def test_reference_vector_increase_both() -> None:
    rising, _ = reference_streams()
    assert drifts(PageHinkley(direction="both"), rising) == [1006]


@pytest.mark.parametrize(
    ("direction", "expected"), [("both", [1006]), ("up", []), ("down", [1006])]
)
def test_reference_vector_decrease(direction: Direction, expected: list[int]) -> None:
    _, falling = reference_streams()
    assert drifts(PageHinkley(direction=direction), falling) == expected


def test_default_direction_is_down() -> None:
    """driftwatch watches measures where higher is better: a rise is not a drift by default."""
    rising, falling = reference_streams()
    assert PageHinkley().direction == "down"
    assert drifts(PageHinkley(), rising) == []
    assert drifts(PageHinkley(), falling) == [1006]


def test_river_default_mode_is_both_ours_is_down() -> None:
    """Pinned difference: River's default flags the increase, ours does not."""
    rising, _ = reference_streams()
    assert river_drifts(river_drift.PageHinkley(), rising) == [1006]
    assert drifts(PageHinkley(), rising) == []
    assert drifts(PageHinkley(direction="both"), rising) == [1006]


# --- Cross-checks against River ------------------------------------------------------------


def shifting_stream(seed: int) -> list[float]:
    """Gaussian segments with random mean shifts up and down, plus a binary and a uniform part."""
    rng = random.Random(seed)
    stream: list[float] = []
    mean = 0.0
    for _ in range(6):
        stream += [rng.gauss(mean, 1.0) for _ in range(rng.randint(200, 600))]
        mean += rng.choice([-1, 1]) * rng.uniform(0.3, 2.0)
    stream += [float(b) for b in rng.choices([0, 1], weights=[0.7, 0.3], k=500)]
    stream += [rng.uniform(-3, 3) for _ in range(500)]
    return stream


PARAMS = [
    {},
    {"threshold": 5.0, "delta": 0.05},
    {"threshold": 10.0, "delta": 0.0, "alpha": 0.99, "min_samples": 10},
    {"threshold": 2.5, "delta": 0.1, "alpha": 1.0, "min_samples": 1},
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("params", PARAMS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
@pytest.mark.parametrize("direction", ["up", "down", "both"])
def test_same_drifts_as_river(seed: int, params: dict[str, float], direction: Direction) -> None:
    stream = shifting_stream(seed)
    river_params = {("min_instances" if k == "min_samples" else k): v for k, v in params.items()}
    ours = drifts(PageHinkley(direction=direction, **params), stream)
    theirs = river_drifts(river_drift.PageHinkley(mode=direction, **river_params), stream)
    assert ours == theirs


def test_cross_check_streams_do_alarm() -> None:
    """The cross-check above is not vacuous: the streams make both detectors fire."""
    total = sum(
        len(drifts(PageHinkley(direction="both", threshold=5.0), shifting_stream(s)))
        for s in range(6)
    )
    assert total >= 12


# --- The rule, step by step ------------------------------------------------------------------


def test_no_alarm_before_min_samples() -> None:
    ph = PageHinkley(min_samples=10, threshold=1.0, delta=0.0, direction="up")
    states = [ph.update(x) for x in [0.0] * 3 + [100.0] * 20]
    # The statistic passes λ at the 4th input already; the alarm waits for the 10th.
    assert states.index(DetectorState.DRIFT) == 9
    assert all(s is DetectorState.STABLE for s in states[:9])


def test_drift_lasts_one_step_then_starts_over() -> None:
    stream = [0.0] * 40 + [10.0] * 40
    ph = PageHinkley(min_samples=5, threshold=20.0, direction="up")
    states = [ph.update(x) for x in stream]
    first = states.index(DetectorState.DRIFT)
    # The next input is the first of a new run: exactly as if fed to a fresh detector.
    fresh = PageHinkley(min_samples=5, threshold=20.0, direction="up")
    replay = PageHinkley(min_samples=5, threshold=20.0, direction="up")
    for x in stream[: first + 1]:
        replay.update(x)
    assert replay.drift_detected
    assert replay.update(stream[first + 1]) is fresh.update(stream[first + 1])
    assert replay.export_state() == fresh.export_state()
    assert not replay.drift_detected


def test_warning_is_never_raised() -> None:
    ph = PageHinkley(direction="both", threshold=5.0)
    assert all(ph.update(x) is not DetectorState.WARNING for x in shifting_stream(1))


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("min_samples", 0),
        ("min_samples", 2.5),
        ("min_samples", True),
        ("delta", -0.001),
        ("delta", float("nan")),
        ("threshold", 0.0),
        ("threshold", -1.0),
        ("threshold", float("inf")),
        ("alpha", 0.0),
        ("alpha", 1.0001),
        ("direction", "sideways"),
        ("direction", None),
    ],
)
def test_invalid_parameters(param: str, value: object) -> None:
    with pytest.raises(ValueError, match=param):
        PageHinkley(**{param: value})


# An exact re-derivation of the rule with rationals: the mean x̄ includes x,
# S⁺ ← αS⁺ + (x − x̄ − δ) and S⁻ ← αS⁻ + (x − x̄ + δ), extremes over every input since the last
# reset, alarm from min_samples on, full reset on the input after an alarm. alpha = 1 keeps it
# exact.


def reference_ph(
    stream: Sequence[int], min_samples: int, delta: Fraction, threshold: Fraction, direction: str
) -> list[bool] | None:
    out: list[bool] = []
    xs: list[int] = []
    s_up = s_down = Fraction(0)
    min_up = max_down = None
    fired = False
    for x in stream:
        if fired:
            xs, s_up, s_down, min_up, max_down = [], Fraction(0), Fraction(0), None, None
        xs.append(x)
        mean = Fraction(sum(xs), len(xs))
        s_up += x - mean - delta
        s_down += x - mean + delta
        min_up = s_up if min_up is None else min(min_up, s_up)
        max_down = s_down if max_down is None else max(max_down, s_down)
        rise, fall = s_up - min_up, max_down - s_down
        for stat in (rise, fall):
            if abs(stat - threshold) < Fraction(1, 10**6):
                return None  # too close to call in floating point
        fired = len(xs) >= min_samples and (
            (direction != "down" and rise > threshold) or (direction != "up" and fall > threshold)
        )
        out.append(fired)
    return out


@settings(max_examples=150, deadline=None)
@given(
    stream=st.lists(st.integers(-5, 5), max_size=120),
    min_samples=st.integers(1, 12),
    delta=st.sampled_from(["0", "1/20", "1/4"]),
    threshold=st.sampled_from(["3/2", "4", "41/4"]),
    direction=st.sampled_from(["up", "down", "both"]),
)
def test_rule_matches_exact_reference(
    stream: list[int], min_samples: int, delta: str, threshold: str, direction: Direction
) -> None:
    expected = reference_ph(stream, min_samples, Fraction(delta), Fraction(threshold), direction)
    assume(expected is not None)
    ph = PageHinkley(
        min_samples=min_samples,
        delta=float(Fraction(delta)),
        threshold=float(Fraction(threshold)),
        alpha=1.0,
        direction=direction,
    )
    assert [ph.update(x) is DetectorState.DRIFT for x in stream] == expected
