"""The ``monitoring.defaults.estimation`` settings: off by default, each bad value named, a
reference file read with the events' format and fitted once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from driftwatch.core.estimation.calibration import IsotonicCalibration
from driftwatch.core.estimation.reliability import calibration_report
from driftwatch.settings import Settings


def settings(estimation: dict[str, Any], **sections: Any) -> Settings:
    return Settings.model_validate(
        {"monitoring": {"defaults": {"estimation": estimation}}, **sections})


def problems(estimation: dict[str, Any], **sections: Any) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as info:
        settings(estimation, **sections)
    return [(".".join(map(str, e["loc"])), e["msg"]) for e in info.value.errors()]


KEY = "monitoring.defaults.estimation."


def test_off_by_default() -> None:
    assert Settings().monitoring.monitor_config("m").estimation is None


@pytest.mark.parametrize(("estimation", "key", "words"), [
    ({"calibration": "guess"}, "calibration", "assume"),
    ({"first_n": 1}, "first_n", "greater than or equal to 2"),
    ({"check_arl": 5}, "check_arl", "10"),
    ({"calibration": "reference"}, "reference_file", "required"),
    ({"calibration": "first_n", "reference_file": "x.jsonl"}, "reference_file",
     "only with calibration: reference"),
    ({"enabled": True, "calibration": "reference", "reference_file": "/nonexistent.jsonl"},
     "reference_file", "No such file"),
])
def test_bad_values_name_the_key_and_reason(estimation: dict[str, Any], key: str,
                                            words: str) -> None:
    found = problems(estimation)
    assert any(loc == KEY + key and words in msg for loc, msg in found), found


def test_a_bad_reference_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "reference.jsonl"
    path.write_text('{"label": 1, "score": 0.9}\n{"label": 0, "score": "high"}\n')
    found = problems({"enabled": True, "calibration": "reference", "reference_file": str(path)})
    assert any(loc == KEY + "reference_file" and "line 2" in msg for loc, msg in found), found
    path.write_text('{"label": 1, "score": 0.9}\n{"label": 1, "score": 0.3}\n')
    found = problems({"enabled": True, "calibration": "reference", "reference_file": str(path)})
    assert any("both classes" in msg for _, msg in found), found


def test_the_reference_is_read_with_the_events_format_and_fitted(tmp_path: Path) -> None:
    labels = [1, 0, 1, 0, 0, 1, 0, 0]
    scores = [0.9, 0.2, 0.6, 0.7, 0.1, 0.8, 0.4, 0.5]
    path = tmp_path / "reference.jsonl"
    path.write_text("".join(json.dumps({"y": "yes" if y else "no", "p": s}) + "\n"
                            for y, s in zip(labels, scores, strict=True)))
    loaded = settings({"enabled": True, "calibration": "reference", "reference_file": str(path)},
                      events={"label_field": "y", "score_field": "p", "positive_label": "yes",
                              "negative_label": "no"})
    config = loaded.monitoring.monitor_config("any").estimation
    assert config is not None and config.calibration == "reference"
    assert config.reference == IsotonicCalibration.fit(labels, scores).export_state()
    assert config.reference_report == calibration_report(labels, scores)


def test_enabled_settings_reach_every_models_monitor() -> None:
    loaded = settings({"enabled": True, "calibration": "first_n", "first_n": 300,
                       "check_arl": 500})
    config = loaded.monitoring.monitor_config("m")
    assert config.estimation is not None
    assert (config.estimation.calibration, config.estimation.first_n,
            config.estimation.check_arl) == ("first_n", 300, 500.0)
