"""The monitor against hand-fed windows and detectors: same samples, same alarms, exact restore."""

from __future__ import annotations

import json
import math
import random

import pytest

from driftwatch.core.detectors import registry
from driftwatch.core.events import Event
from driftwatch.core.monitor import (
    ERROR_STREAM,
    STATE_VERSION,
    DetectorSpec,
    Monitor,
    MonitorConfig,
    Watch,
)
from driftwatch.core.normalization import normalize, threshold
from driftwatch.core.window import PrequentialWindow


def stream(
    seed: int, length: int, drop_at: int | None = None, positives: float = 0.3
) -> list[Event]:
    """Scores separate the classes well, then (after ``drop_at``) barely."""
    rng = random.Random(seed)
    events = []
    for i in range(length):
        y = int(rng.random() < positives)
        shift = 2.0 if drop_at is None or i < drop_at else 0.3
        score = rng.gauss(shift if y else 0.0, 1.0)
        events.append(Event(y, round(score, 2), ts=1000.0 + i))
    return events


WATCHES = (
    Watch("auc", (DetectorSpec("page_hinkley", {"threshold": 1.0}), DetectorSpec("adwin"))),
    Watch("gmean", (DetectorSpec("page_hinkley", {"threshold": 1.0}),), normalized=True, floor=0.9),
    Watch("kappa", (DetectorSpec("ddm"),), normalized=True),
    Watch(ERROR_STREAM, (DetectorSpec("ddm"),)),
)


def config(**changes: object) -> MonitorConfig:
    base: dict[str, object] = {"window_size": 200, "sample_every": 10, "watches": WATCHES}
    base.update(changes)
    return MonitorConfig(**base)  # type: ignore[arg-type]


def test_same_window_and_measures_as_a_plain_window() -> None:
    monitor = Monitor("m", config())
    window = PrequentialWindow(200, 0.5)
    for event in stream(1, 700):
        monitor.update(event)
        window.update(event.y_true, event.y_score, event.y_pred)
    snap = monitor.snapshot()
    assert snap.events == 700
    assert (snap.positives, snap.negatives) == (window.positives, window.negatives)
    expected = window.measures()
    assert snap.values.keys() == expected.keys()
    for name, value in expected.items():
        assert snap.values[name] == value or (math.isnan(value) and math.isnan(snap.values[name]))
    for name, value in snap.normalized.items():
        assert value == normalize(name, window.positives, window.negatives, expected[name])


def test_detectors_see_exactly_the_sampled_values() -> None:
    events = stream(2, 3000, drop_at=1500)
    monitor = Monitor("m", config())
    alarms = [a for e in events for a in monitor.update(e)]

    # The same detectors, fed by hand from a plain window sampled every 10 events.
    window = PrequentialWindow(200, 0.5)
    ph = registry.create("page_hinkley", threshold=1.0, direction="down")
    adwin = registry.create("adwin", direction="down")
    expected, raw_drifts = [], []
    quiet_until = {"page_hinkley": 0, "adwin": 0}
    for i, event in enumerate(events, start=1):
        window.update(event.y_true, event.y_score)
        if i % 10 == 0 and not math.isnan(window.auc):
            for detector in (ph, adwin):
                if detector.update(window.auc).name == "DRIFT":
                    raw_drifts.append((detector.name, i))
                    # One alarm per episode: drifts within a window (200) of the last repeat it.
                    if i >= quiet_until[detector.name]:
                        expected.append((detector.name, i))
                    quiet_until[detector.name] = i + 200
    got = [(a.detector, a.event_count) for a in alarms if a.measure == "auc" and a.level == "drift"]
    assert got == expected
    assert got, "the drop must be detected on AUC"
    assert all(a.model == "m" and a.event_time == 1000.0 + a.event_count - 1 for a in alarms)


def test_a_change_seen_at_several_checks_is_one_alarm() -> None:
    # ADWIN keeps its shrunk window, so while the old concept drains out of the windowed AUC
    # it cuts again at later checks; those repeats are one episode and one alarm.
    watches = (Watch("auc", (DetectorSpec("adwin", {"clock": 1}),)),)
    monitor = Monitor("m", config(sample_every=1, watches=watches))
    adwin = registry.create("adwin", clock=1, direction="down")
    window = PrequentialWindow(200, 0.5)
    raw = []
    for i, event in enumerate(stream(5, 4000, drop_at=2000), start=1):
        window.update(event.y_true, event.y_score)
        if not math.isnan(window.auc) and adwin.update(window.auc).name == "DRIFT":
            raw.append(i)
        monitor.update(event)
    episodes = [b for a, b in zip([-200, *raw], raw, strict=False) if b - a >= 200]
    assert len(raw) > len(episodes) >= 1
    assert monitor.snapshot().alarms == {("auc", "adwin", "drift"): len(episodes)}


def test_threshold_floor_is_the_inverse_normalization_and_alarms_once_per_crossing() -> None:
    events = stream(3, 3000, drop_at=1500)
    monitor = Monitor("m", config())
    window = PrequentialWindow(200, 0.5)
    crossings = []
    below = False
    alarms = []
    for i, event in enumerate(events, start=1):
        alarms += monitor.update(event)
        window.update(event.y_true, event.y_score)
        if i % 10 == 0:
            raw = threshold("gmean", window.positives, window.negatives, 0.9)
            value = window.measure("gmean")
            now_below = value < raw
            # Below the raw threshold exactly when below the floor on the normalized scale.
            assert now_below == (
                normalize("gmean", window.positives, window.negatives, value) < 0.9
            )
            if now_below and not below:
                crossings.append(i)
            below = now_below
    got = [a.event_count for a in alarms if a.level == "threshold"]
    assert got == crossings and got
    assert monitor.snapshot().thresholds["gmean"] == threshold(
        "gmean", window.positives, window.negatives, 0.9
    )


def test_undefined_values_are_not_fed_and_show_as_nan() -> None:
    monitor = Monitor("m", config(sample_every=1, watches=WATCHES[:3]))
    for i in range(100):
        assert monitor.update(Event(0, i / 100)) == []  # one class only: AUC is NaN
    snap = monitor.snapshot()
    assert math.isnan(snap.values["auc"]) and math.isnan(snap.values["gmean"])
    assert all(state == "stable" for state in snap.detector_states.values())


@pytest.mark.parametrize("split", [1, 137, 1499, 1500, 2222])
def test_restore_continues_exactly(split: int) -> None:
    events = stream(4, 3000, drop_at=1500)
    original = Monitor("m", config())
    for event in events[:split]:
        original.update(event)
    state = json.loads(json.dumps(original.export_state()))  # what a checkpoint stores
    restored = Monitor.restore(state)
    for event in events[split:]:
        assert restored.update(event) == original.update(event)
    a, b = original.snapshot(), restored.snapshot()
    assert json.dumps(original.export_state()) == json.dumps(restored.export_state())
    assert a.alarms == b.alarms and a.events == b.events


def test_restore_refuses_another_version() -> None:
    state = Monitor("m", config()).export_state()
    state["version"] = STATE_VERSION + 1
    with pytest.raises(ValueError, match="version"):
        Monitor.restore(state)


def test_bad_configurations_name_the_problem() -> None:
    with pytest.raises(ValueError, match=r"ddm.*leave"):
        Watch("kappa", (DetectorSpec("ddm"),))
    with pytest.raises(ValueError, match="normalized"):
        Watch("auc", normalized=True)
    with pytest.raises(ValueError, match="floor"):
        Watch("gmean", floor=1.5)
    with pytest.raises(ValueError, match="measure"):
        Watch("aucc")
    with pytest.raises(ValueError, match="sample_every"):
        MonitorConfig(sample_every=0)
    with pytest.raises(ValueError, match="window_size"):
        MonitorConfig(window_size=0)


def test_restore_with_changed_settings_keeps_the_window_and_counters() -> None:
    events = stream(6, 1500, drop_at=700)
    original = Monitor("m", config())
    for event in events:
        original.update(event)
    new_config = config(window_size=150, sample_every=5)
    restored = Monitor.restore(original.export_state(), config=new_config)
    assert restored.config == new_config
    assert restored.events == original.events
    assert restored.snapshot().alarms == original.snapshot().alarms
    # The new, smaller window holds exactly the last 150 events.
    fresh = PrequentialWindow(150, 0.5)
    for event in events[-150:]:
        fresh.update(event.y_true, event.y_score)
    assert restored.window.auc == fresh.auc and restored.window.confusion == fresh.confusion
    assert (
        Monitor.restore(original.export_state(), config=config()).export_state()
        == original.export_state()
    )
