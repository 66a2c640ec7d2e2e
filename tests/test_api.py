"""The embeddable API: the agent's alarms and measures for the same events, the settings' options
and defaults, exact save and resume, and the documentation page's examples (run here)."""

from __future__ import annotations

import doctest
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

import driftwatch
import driftwatch.api
from driftwatch import ModelMonitor, UpdateResult
from driftwatch.core.events import Event
from driftwatch.core.monitor import (
    ERROR_STREAM,
    MEASURES,
    Alarm,
    DetectorSpec,
    Monitor,
    MonitorConfig,
    Watch,
)
from driftwatch.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
API_PAGE = ROOT / "docs" / "api.md"


def stream(seed: int, length: int, drop_at: int, positives: float = 0.3) -> list[Event]:
    """Binormal scores, AUC ≈ 0.9 before ``drop_at`` and ≈ 0.66 after; one event a second."""
    rng = random.Random(seed)
    events = []
    for i in range(length):
        y = int(rng.random() < positives)
        separation = 1.8 if i < drop_at else 0.6
        score = rng.gauss(separation if y else 0.0, 1.0)
        pred = None if i % 7 else int(score > 0.9)  # some events carry their own prediction
        events.append(Event(y, score, pred, 1_717_200_000.0 + i))
    return events


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def alarm_key(alarm: Alarm) -> tuple[Any, ...]:
    """An alarm as a tuple in which NaN equals NaN."""
    return tuple("nan" if isinstance(v, float) and math.isnan(v) else v
                 for v in (alarm.model, alarm.measure, alarm.detector, alarm.level, alarm.value,
                           alarm.normalized, alarm.positives, alarm.negatives,
                           alarm.event_count, alarm.event_time))


SETTINGS_WATCHES: list[dict[str, Any]] = [
    {"measure": "auc", "detectors": [{"name": "page_hinkley", "params": {"threshold": 1.0}},
                                     {"name": "adwin", "params": {"clock": 1}}]},
    {"measure": "gmean", "normalized": True, "floor": 0.85,
     "detectors": [{"name": "adwin", "params": {"delta": 0.002, "clock": 1}}]},
    {"measure": "kappa", "normalized": True, "detectors": [{"name": "ddm"}]},
    {"measure": ERROR_STREAM, "detectors": [{"name": "ddm"}]},
]


@pytest.mark.parametrize(("options", "settings_yaml"), [
    ({}, {}),
    ({"window_size": 300, "sample_every": 10, "threshold": 0.7, "watches": SETTINGS_WATCHES},
     {"window_size": 300, "sample_every": 10, "threshold": 0.7, "watches": SETTINGS_WATCHES}),
])
def test_the_agents_alarms_and_measures_for_the_same_events(
        options: dict[str, Any], settings_yaml: dict[str, Any]) -> None:
    # The agent builds each model's monitor from monitoring.monitor_config(model).
    settings = Settings.model_validate({"monitoring": {"defaults": settings_yaml}})
    agent = Monitor("churn", settings.monitoring.monitor_config("churn"))
    api = ModelMonitor(model="churn", **options)
    assert api.config == agent.config

    api_alarms, agent_alarms = [], []
    for event in stream(seed=11, length=12_000, drop_at=6_000):
        result = api.update(event.y_true, event.y_score, event.y_pred, event.ts)
        expected = agent.update(event)
        assert isinstance(result, UpdateResult)
        assert result.drift_detected == any(a.level == "drift" for a in expected)
        api_alarms += result.alarms
        agent_alarms += expected

    assert [alarm_key(a) for a in api_alarms] == [alarm_key(a) for a in agent_alarms]
    assert any(a.level == "drift" for a in agent_alarms)  # the comparison covers alarms
    assert any(a.event_count > 6_000 for a in agent_alarms)
    snapshot = agent.snapshot()
    assert api.n_events == snapshot.events == 12_000
    assert (api.positives, api.negatives) == (snapshot.positives, snapshot.negatives)
    for name in MEASURES:
        assert same(getattr(api, name), snapshot.values[name]), name
        assert same(api.measures[name], snapshot.values[name]), name
    assert api.normalized.keys() == snapshot.normalized.keys()
    assert all(same(api.normalized[m], v) for m, v in snapshot.normalized.items())
    assert api.thresholds.keys() == snapshot.thresholds.keys()
    assert all(same(api.thresholds[m], v) for m, v in snapshot.thresholds.items())
    assert api.detector_states == snapshot.detector_states
    assert api.alarm_counts == snapshot.alarms


def test_defaults_are_the_agents() -> None:
    assert ModelMonitor().config == Settings().monitoring.monitor_config("default")
    assert ModelMonitor().config == MonitorConfig()
    assert ModelMonitor().model == "default"
    blocks = ModelMonitor(block_min_class=50, block_warmup=3).config
    assert (blocks.block_min_class, blocks.block_warmup) == (50, 3)


def test_watches_as_core_values_or_settings_mappings_are_the_same() -> None:
    watch = Watch("gmean", (DetectorSpec("adwin", {"delta": 0.01}),), normalized=True,
                  floor=0.8)
    from_core = ModelMonitor(watches=[watch])
    from_mapping = ModelMonitor(watches=[{"measure": "gmean", "normalized": True, "floor": 0.8,
                                          "detectors": [{"name": "adwin",
                                                         "params": {"delta": 0.01}}]}])
    assert from_core.config == from_mapping.config
    assert from_core.config.watches == (watch,)
    assert ModelMonitor(watches=[]).config.watches == ()


@pytest.mark.parametrize(("options", "message"), [
    ({"window_size": 0}, "window_size: Input should be greater than or equal to 1"),
    ({"threshold": math.nan}, "threshold: "),
    ({"watches": [{"measure": "auroc"}]}, "watches.0.measure: "),
    ({"watches": [{"measure": "kappa", "detectors": [{"name": "ddm"}]}]},
     "watches.0.detectors.0: "),
    ({"watches": [{"measure": "auc", "detectors": [{"name": "adwin"}]},
                  {"measure": "auc"}]}, "watches.1.measure: auc is already watched"),
    ({"block_min_class": 1}, "block_min_class: Input should be greater than or equal to 2"),
])
def test_bad_options_name_their_key(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="invalid monitor options") as error:
        ModelMonitor(**options)
    assert message in str(error.value)


def test_bad_events_leave_the_monitor_unchanged() -> None:
    monitor = ModelMonitor(window_size=10, watches=[])
    monitor.update(1, 0.8)
    for bad in [(2, 0.5), (1, math.inf), (1, "0.5"), (0, 0.5, 3)]:
        with pytest.raises(ValueError):
            monitor.update(*bad)  # type: ignore[arg-type]
    assert monitor.n_events == 1 and monitor.positives == 1


def test_measure_properties_are_every_measure() -> None:
    properties = {name for name, value in vars(ModelMonitor).items()
                  if isinstance(value, property)}
    assert set(MEASURES) <= properties


def test_export_and_restore_continue_exactly() -> None:
    events = stream(seed=5, length=9_000, drop_at=4_000)
    whole = ModelMonitor(window_size=500, watches=SETTINGS_WATCHES)
    first = ModelMonitor(window_size=500, watches=SETTINGS_WATCHES)
    for event in events[:3_000]:
        whole.update(event.y_true, event.y_score, event.y_pred, event.ts)
        first.update(event.y_true, event.y_score, event.y_pred, event.ts)
    resumed = ModelMonitor.restore(json.loads(json.dumps(first.export_state())))
    alarms_whole, alarms_resumed = [], []
    for event in events[3_000:]:
        alarms_whole += whole.update(event.y_true, event.y_score, event.y_pred, event.ts).alarms
        alarms_resumed += resumed.update(event.y_true, event.y_score, event.y_pred,
                                         event.ts).alarms
    assert alarms_whole and [alarm_key(a) for a in alarms_resumed] == \
        [alarm_key(a) for a in alarms_whole]
    assert json.dumps(resumed.export_state()) == json.dumps(whole.export_state())  # NaN too
    with pytest.raises(ValueError, match="format version"):
        ModelMonitor.restore({"version": 99})


def test_drift_detected_follows_the_latest_update() -> None:
    monitor = ModelMonitor(window_size=50, sample_every=1,
                           watches=[{"measure": ERROR_STREAM, "detectors": [{"name": "ddm"}]}])
    seen = False
    for i in range(5_000):
        wrong = i >= 1_000  # every prediction wrong from event 1 000 on
        result = monitor.update(1, 0.1 if wrong else 0.9)
        assert monitor.drift_detected == result.drift_detected
        seen = seen or result.drift_detected
    assert seen


def test_package_re_exports_the_api() -> None:
    assert driftwatch.ModelMonitor is driftwatch.api.ModelMonitor
    assert "ModelMonitor" in driftwatch.__all__
    with pytest.raises(AttributeError):
        driftwatch.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018


def test_the_api_page_examples_run() -> None:
    result = doctest.testfile(str(API_PAGE), module_relative=False, report=True,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"
    assert result.attempted >= 25


def test_the_api_module_examples_run() -> None:
    result = doctest.testmod(driftwatch.api, report=True)
    assert result.failed == 0 and result.attempted >= 4


def test_every_monitoring_default_is_an_option() -> None:
    """The options are the settings' monitoring.defaults keys, all of them: a key added to
    the settings without the API would be a setting the embedded monitor cannot have."""
    import inspect

    from driftwatch.settings import MonitorDefaults

    options = set(inspect.signature(ModelMonitor).parameters) - {"model"}
    assert options == set(MonitorDefaults.model_fields)
    monitor = ModelMonitor(block_seconds=0.0, days_per_false_alarm=90.0, min_effect_auc=0.03,
                           min_effect_rate=0.0)
    config = monitor._monitor.config
    assert (config.block_seconds, config.days_per_false_alarm, config.min_effect_auc,
            config.min_effect_rate) == (0.0, 90.0, 0.03, 0.0)
    with pytest.raises(ValueError, match="min_effect_auc"):
        ModelMonitor(min_effect_auc=0.9)
