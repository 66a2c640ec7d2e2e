"""DDM: River's doctest vector, River cross-checks, the never-failing stream, input range."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import pytest
from river import drift as river_drift

from driftwatch.core.detectors import DDM, DetectorState


def states(detector: DDM, stream: Sequence[float]) -> list[DetectorState]:
    return [detector.update(x) for x in stream]


def river_states(detector: river_drift.binary.DDM, stream: Sequence[float]) -> list[DetectorState]:
    out = []
    for x in stream:
        detector.update(x)
        if detector.drift_detected:
            out.append(DetectorState.DRIFT)
        elif detector.warning_detected:
            out.append(DetectorState.WARNING)
        else:
            out.append(DetectorState.STABLE)
    return out


def reference_stream() -> list[int]:
    """River's doctest construction: one rng.choices(...)[0] per input."""
    rng = random.Random(42)
    stream = [rng.choices([0, 1])[0] for _ in range(1000)]
    stream += [rng.choices([0, 1], weights=[0.3, 0.7])[0] for _ in range(1000)]
    return stream


def test_reference_vector() -> None:
    found = states(DDM(), reference_stream())
    warnings = [i for i, s in enumerate(found) if s is DetectorState.WARNING]
    drifts = [i for i, s in enumerate(found) if s is DetectorState.DRIFT]
    assert warnings[0] == 1084
    assert drifts == [1334]
    assert next(i for i in warnings if i > 1334) == 1492


def test_reference_stream_equals_rivers_doctest_stream() -> None:
    rng = random.Random(42)
    batch = rng.choices([0, 1], k=1000) + rng.choices([0, 1], k=1000, weights=[0.3, 0.7])
    assert batch == reference_stream()


# --- Cross-checks against River ------------------------------------------------------------


def error_stream(seed: int, binary: bool) -> list[float]:
    """Error rates that drift up and down between segments; 0/1 draws or rates in [0, 1]."""
    rng = random.Random(seed)
    stream: list[float] = []
    for _ in range(6):
        rate, n = rng.uniform(0.02, 0.6), rng.randint(200, 800)
        if binary:
            stream += [float(rng.random() < rate) for _ in range(n)]
        else:
            stream += [min(1.0, max(0.0, rng.gauss(rate, 0.1))) for _ in range(n)]
    return stream


PARAMS: list[dict[str, Any]] = [
    {},
    {"min_samples": 10, "warning_level": 1.5, "drift_level": 2.5},
    {"min_samples": 100, "warning_level": 3.0, "drift_level": 3.0},
]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("binary", [True, False], ids=["bits", "rates"])
@pytest.mark.parametrize("params", PARAMS, ids=["default", "eager", "late"])
def test_same_states_as_river(seed: int, binary: bool, params: dict[str, Any]) -> None:
    stream = error_stream(seed, binary)
    renamed = {"min_samples": "warm_start", "warning_level": "warning_threshold"}
    renamed |= {"drift_level": "drift_threshold"}
    river = river_drift.binary.DDM(**{renamed[k]: v for k, v in params.items()})
    assert states(DDM(**params), stream) == river_states(river, stream)


def test_cross_check_streams_warn_and_drift() -> None:
    found = [s for seed in range(8) for s in states(DDM(), error_stream(seed, True))]
    assert found.count(DetectorState.DRIFT) >= 8
    assert found.count(DetectorState.WARNING) >= 50


# --- Documented behaviour -----------------------------------------------------------------


def test_never_failing_stream_first_error_is_a_drift() -> None:
    """After 31 zeros (more than min_samples) p_min = s_min = 0: the first 1 is a drift."""
    for zeros in (31, 100):
        ddm = DDM()
        assert all(s is DetectorState.STABLE for s in states(ddm, [0] * zeros))
        assert ddm.update(1) is DetectorState.DRIFT
    river = river_drift.binary.DDM()
    assert river_states(river, [0] * 31 + [1])[-1] is DetectorState.DRIFT


def test_never_failing_stream_exactly_min_samples_zeros() -> None:
    """With exactly 30 zeros the 1 is the first tracked input: it sets the minimum."""
    ddm = DDM()
    assert states(ddm, [0] * 30 + [1])[-1] is DetectorState.STABLE
    river = river_drift.binary.DDM()
    assert river_states(river, [0] * 30 + [1])[-1] is DetectorState.STABLE


def test_nothing_before_min_samples() -> None:
    ddm = DDM(min_samples=30)
    assert all(s is DetectorState.STABLE for s in states(ddm, [0] * 10 + [1] * 20))
    # The first tracked input sets the minimum, so it cannot alarm either.
    assert ddm.update(1) is DetectorState.STABLE


def test_resets_on_the_input_after_a_drift() -> None:
    ddm = DDM()
    found = states(ddm, [0] * 40 + [1])
    assert found[-1] is DetectorState.DRIFT
    assert ddm.error_rate == pytest.approx(1 / 41)
    ddm.update(0.25)
    assert ddm.error_rate == 0.25  # a fresh start: the only input since the reset
    assert ddm.export_state()["data"] == {"n": 1, "p": 0.25, "p_min": None, "s_min": None}


def test_input_range() -> None:
    assert DDM.input_range == (0.0, 1.0)
    ddm = DDM()
    for x in (0, 1, 0.5, True, False):
        ddm.update(x)
    before = ddm.export_state()
    for bad in (-0.01, 1.01, 2, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"\bx\b"):
            ddm.update(bad)
    assert ddm.export_state() == before


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("min_samples", 0),
        ("min_samples", 30.0),
        ("warning_level", 0.0),
        ("warning_level", -2.0),
        ("drift_level", 1.0),  # below warning_level
        ("drift_level", math.inf),
    ],
)
def test_invalid_parameters(param: str, value: object) -> None:
    with pytest.raises(ValueError, match=param):
        DDM(**{param: value})


def test_equal_levels_allowed() -> None:
    assert DDM(warning_level=3.0, drift_level=3.0).drift_level == 3.0
