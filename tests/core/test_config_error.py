"""The core locates what it refuses: each problem has a path of keys and a message."""

from __future__ import annotations

import pickle

import pytest

from driftwatch.core.config_error import ConfigError, Problem
from driftwatch.core.detectors import registry
from driftwatch.core.monitor import DetectorSpec, Monitor, MonitorConfig, Watch


def problems(error: pytest.ExceptionInfo[ConfigError]) -> list[tuple[object, ...]]:
    return [(*problem.path, problem.message) for problem in error.value.problems]


def test_an_error_is_a_value_error_and_moves_into_its_container() -> None:
    error = ConfigError(("delta",), "must be positive")
    assert isinstance(error, ValueError)
    assert str(error) == "delta: must be positive"
    inner = error.within("watches", 2, "params")
    assert inner.path == ("watches", 2, "params", "delta")
    assert inner.message == "must be positive"
    both = ConfigError.of([Problem(("a",), "x"), Problem((), "y")])
    assert str(both) == "a: x; y"
    with pytest.raises(ValueError, match="at least one"):
        ConfigError.of([])
    copied = pickle.loads(pickle.dumps(both))
    assert type(copied) is ConfigError and copied.problems == both.problems


def test_registry_locates_detector_problems_as_in_a_detector_entry() -> None:
    with pytest.raises(ConfigError) as error:
        registry.create("shewhart")
    assert error.value.path == ("name",)
    assert "unknown detector 'shewhart'" in error.value.message
    with pytest.raises(ConfigError) as error:
        registry.create("adwin", min_samples=3)
    assert error.value.path == ("params", "min_samples")
    with pytest.raises(ConfigError) as error:
        registry.create("adwin", delta=2)
    assert problems(error) == [("params", "delta",
                                "must be a finite number in (0, 1), got 2")]
    with pytest.raises(ConfigError) as error:  # a rule between two parameters
        registry.create("ddm", warning_level=3.0, drift_level=2.0)
    assert problems(error) == [("params", "drift_level",
                                "must be ≥ warning_level (3.0), got 2.0")]


@pytest.mark.parametrize(("watch", "path"), [
    ({"measure": "kappa_per", "floor": 0.8}, ("floor",)),
    ({"measure": "kappa_per", "normalized": True}, ("normalized",)),
    ({"measure": "gmean", "floor": 1.5}, ("floor",)),
    ({"measure": "gmean", "direction": "sideways"}, ("direction",)),
    ({"measure": "false_negative_rate"}, ("feed",)),
    ({"measure": "gmean", "feed": "blocks"}, ("feed",)),
    ({"measure": "auc", "feed": "blocks", "floor": 0.5}, ("floor",)),
    ({"measure": "auc", "feed": "blocks", "detectors": (DetectorSpec("ddm"),)},
     ("detectors", 0)),
    ({"measure": "kappa", "detectors": (DetectorSpec("adwin"), DetectorSpec("ddm"))},
     ("detectors", 1)),
    ({"measure": "auc", "detectors": (DetectorSpec("shewhart"),)}, ("detectors", 0, "name")),
])
def test_watch_problems_are_located(watch: dict[str, object], path: tuple[object, ...]) -> None:
    with pytest.raises(ConfigError) as error:
        Watch(**watch)  # type: ignore[arg-type]
    assert error.value.path == path
    assert not error.value.message.startswith(str(path[0]))  # the path is not repeated


def test_two_detectors_of_one_kind_on_one_measure_are_refused() -> None:
    # Their states and alarms would be exported under the same (measure, detector) labels.
    with pytest.raises(ConfigError) as error:
        Watch("auc", (DetectorSpec("page_hinkley"), DetectorSpec("page_hinkley",
                                                                 {"delta": 0.01})))
    assert error.value.path == ("detectors", 1, "name")
    assert "page_hinkley already watches auc (detectors.0)" in error.value.message


def test_monitor_config_reports_every_problem_at_its_key() -> None:
    with pytest.raises(ConfigError) as error:
        MonitorConfig(
            window_size=0,
            threshold=float("nan"),
            watches=(
                Watch("gmean", (DetectorSpec("adwin", {"delta": 2}),
                                DetectorSpec("page_hinkley", {"threshold": -1}))),
                Watch("gmean", normalized=True),
            ),
        )
    assert [problem.path for problem in error.value.problems] == [
        ("window_size",),
        ("threshold",),
        ("watches", 0, "detectors", 0, "params", "delta"),
        ("watches", 0, "detectors", 1, "params", "threshold"),
        ("watches", 1, "measure"),
    ]


def test_a_detector_is_checked_with_the_direction_it_inherits() -> None:
    # page_hinkley takes the watch's direction; an explicit one wins and is checked itself.
    config = MonitorConfig(watches=(Watch("error", (DetectorSpec("page_hinkley"),)),))
    assert Monitor("m", config).config is config
    with pytest.raises(ConfigError) as error:
        MonitorConfig(watches=(Watch("error", (DetectorSpec("page_hinkley",
                                                             {"direction": "left"}),)),))
    assert error.value.path == ("watches", 0, "detectors", 0, "params", "direction")
