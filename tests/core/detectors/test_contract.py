"""The contract every registered detector keeps, checked for each one registry.available() finds.

A detector plugged in through the ``driftwatch.detectors`` entry-point group is picked up here
as soon as its distribution is installed.
"""

from __future__ import annotations

import doctest
import inspect
import json
import math
import pickle
import random
import sys
import typing
from collections.abc import Callable
from typing import Any, Literal

import pytest

from driftwatch.core.detectors import Detector, DetectorState, registry

DETECTORS = registry.available()
BUILTIN_NAMES = set(registry.BUILTINS)


@pytest.fixture(params=list(DETECTORS.items()), ids=list(DETECTORS))
def entry(request: pytest.FixtureRequest) -> tuple[str, type[Detector]]:
    return request.param


@pytest.fixture
def cls(entry: tuple[str, type[Detector]]) -> type[Detector]:
    return entry[1]


def stream_for(cls: type[Detector], seed: int = 2024) -> list[float]:
    """Noisy level shifts down, up and down again, scaled into the detector's input range."""
    rng = random.Random(seed)
    unit = [
        min(1.0, max(0.0, rng.gauss(m, 0.05))) for m in (0.8, 0.3, 0.95, 0.2) for _ in range(400)
    ]
    if cls.name == "cusum":  # standardized inputs: the same shifts as z-scores around 0
        return [10.0 * (u - 0.55) for u in unit]
    if cls.input_range is None:
        return unit
    low, high = cls.input_range
    return [low + (high - low) * u for u in unit]


def parameter_hints(cls: type[Detector]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls.__init__)
    return {name: hints[name] for name in cls.parameter_names()}


# --- Identity and metadata ------------------------------------------------------------------


def test_name_and_input_range(entry: tuple[str, type[Detector]]) -> None:
    key, cls = entry
    assert cls.name == key and isinstance(key, str) and key
    if cls.input_range is not None:
        low, high = cls.input_range
        assert math.isfinite(low) and math.isfinite(high) and low < high


def test_parameters_are_plain_keywords_with_hints_and_defaults(cls: type[Detector]) -> None:
    """What the settings layer needs to derive a validation model from the signature."""
    signature = inspect.signature(cls.__init__)
    hints = parameter_hints(cls)
    defaults = {}
    for name in cls.parameter_names():
        parameter = signature.parameters[name]
        assert parameter.kind in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        assert parameter.default is not parameter.empty, f"{name} has no default"
        assert hints[name] is not None
        defaults[name] = parameter.default
    detector = cls()
    assert detector.get_params() == defaults
    for name, value in defaults.items():
        assert getattr(detector, name) == value  # public attribute of the same name


def test_repr_shows_every_parameter(cls: type[Detector]) -> None:
    detector = cls()
    params = detector.get_params()
    expected = ", ".join(f"{k}={v!r}" for k, v in params.items())
    assert repr(detector) == f"{cls.__name__}({expected})"
    rebuilt = eval(repr(detector), {cls.__name__: cls})
    assert type(rebuilt) is cls and rebuilt.get_params() == params


def bad_values(hint: Any) -> list[object]:
    if hint is int:
        return [math.nan, math.inf, 1.5, "3", None, True]
    if hint is float:
        return [math.nan, math.inf, -math.inf, "0.5", None, True]
    if typing.get_origin(hint) is Literal:
        return ["no-such-choice", None, 0]
    return []


def test_bad_parameter_values_raise_value_error_naming_them(cls: type[Detector]) -> None:
    checked = 0
    for name, hint in parameter_hints(cls).items():
        for value in bad_values(hint):
            with pytest.raises(ValueError, match=rf"\b{name}\b"):
                cls(**{name: value})
            checked += 1
    if cls.name in BUILTIN_NAMES:
        assert checked >= 3 * len(parameter_hints(cls))


# --- Inputs and states ----------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "0.5", None, [0.5]])
def test_bad_input_raises_value_error_naming_x_and_changes_nothing(
    cls: type[Detector], bad: object
) -> None:
    detector = cls()
    for x in stream_for(cls)[:100]:
        detector.update(x)
    before = detector.export_state()
    with pytest.raises(ValueError, match=r"\bx\b"):
        detector.update(bad)
    assert detector.export_state() == before


def test_input_range_is_enforced(cls: type[Detector]) -> None:
    detector = cls()
    if cls.input_range is None:  # any finite value is an input
        for x in (-1e9, -1.0, 0.0, 1.0, 1e9):
            detector.update(x)
        return
    low, high = cls.input_range
    detector = cls()
    for bad in (low - 1e-9, high + 1e-9, low - 1.0, high + 1.0):
        with pytest.raises(ValueError, match=r"\bx\b"):
            detector.update(bad)
    assert detector.update(low) is DetectorState.STABLE


def test_returned_state_matches_properties(cls: type[Detector]) -> None:
    detector = cls()
    assert detector.state is DetectorState.STABLE
    seen = set()
    for x in stream_for(cls):
        state = detector.update(x)
        seen.add(state)
        assert detector.state is state
        assert detector.drift_detected == (state is DetectorState.DRIFT)
        assert detector.warning_detected == (state is DetectorState.WARNING)
    if cls.name in BUILTIN_NAMES:
        assert DetectorState.DRIFT in seen or DetectorState.WARNING in seen  # not vacuous


def test_update_valid_is_update_on_valid_inputs(cls: type[Detector]) -> None:
    """The monitor's unchecked path gives update's states and state, input for input (its
    inputs are valid by construction, so only the check is skipped)."""
    checked, unchecked = cls(), cls()
    stream = stream_for(cls)
    states = [checked.update(x) for x in stream]
    assert [unchecked.update_valid(x) for x in stream] == states
    assert json.dumps(unchecked.export_state()) == json.dumps(checked.export_state())


def constants_for(cls: type[Detector]) -> list[float]:
    if cls.name == "cusum":  # z-scores: a constant within ±k is no shift, one beyond it is
        return [0.0, 0.1, -0.5, 0.5]
    if cls.input_range is None:
        return [0.0, 0.1, 1.0, -7.25, 123456.789]
    low, high = cls.input_range
    return [low, high, low + (high - low) * 0.1, (low + high) / 2]


def test_constant_stream_never_alarms(cls: type[Detector]) -> None:
    for value in constants_for(cls):
        detector = cls()
        assert all(detector.update(value) is DetectorState.STABLE for _ in range(3000)), value


def test_reset_returns_to_the_initial_state(cls: type[Detector]) -> None:
    fresh = cls().export_state()
    detector = cls()
    for x in stream_for(cls):
        detector.update(x)
    assert detector.export_state() != fresh
    detector.reset()
    assert detector.state is DetectorState.STABLE
    assert detector.export_state() == fresh


# --- Checkpoints ----------------------------------------------------------------------------


def via_pickle(detector: Detector) -> Detector:
    return pickle.loads(pickle.dumps(detector))


def via_json(detector: Detector) -> Detector:
    text = json.dumps(detector.export_state(), allow_nan=False)  # strict JSON only
    return type(detector).from_state(json.loads(text))


@pytest.mark.parametrize("copy", [via_pickle, via_json], ids=["pickle", "export_state"])
def test_restored_copy_continues_identically(
    cls: type[Detector], copy: Callable[[Detector], Detector]
) -> None:
    stream = stream_for(cls)
    reference = cls()
    states = [reference.update(x) for x in stream]
    final = reference.export_state()

    # Snapshot at regular points and at, and right after, every alarm (the restart matters).
    alarms = [i for i, s in enumerate(states) if s is not DetectorState.STABLE]
    points = sorted({0, *range(1, len(stream), 173), *alarms[:8], *(i + 1 for i in alarms[:8])})

    live = cls()
    done = 0
    for point in points:
        for x in stream[done:point]:
            live.update(x)
        done = point
        restored = copy(live)
        assert type(restored) is cls
        assert restored.export_state() == live.export_state()
        assert [restored.update(x) for x in stream[point:]] == states[point:]
        assert restored.export_state() == final


def test_export_state_is_plain_json(cls: type[Detector]) -> None:
    detector = cls()
    for x in stream_for(cls):
        detector.update(x)
        state = detector.export_state()
    assert json.loads(json.dumps(state, allow_nan=False)) == state
    assert state["name"] == cls.name and state["params"] == detector.get_params()


def test_from_state_refuses_another_detectors_state(cls: type[Detector]) -> None:
    state = cls().export_state()
    with pytest.raises(ValueError, match="not"):
        cls.from_state({**state, "name": "someone_else"})
    with pytest.raises(ValueError, match="format"):
        cls.from_state({**state, "format": 999})
    with pytest.raises(ValueError, match="malformed"):
        cls.from_state({k: v for k, v in state.items() if k != "data"})


# --- Documentation ----------------------------------------------------------------------------


def test_docstring_examples_run(cls: type[Detector]) -> None:
    module = sys.modules[cls.__module__]
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if cls.name in BUILTIN_NAMES:
        assert result.attempted > 0
        for section in ("Parameters", "Examples", "References"):
            assert section in (cls.__doc__ or "")
