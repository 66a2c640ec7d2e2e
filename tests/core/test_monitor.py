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


class Episodes:
    """The monitor's rule for one window detector, restated: a drift is a new alarm unless it
    comes less than a window after the previous alarm, or the detector (ADWIN) still holds
    inputs from before its previous alarm, less one window's ramp. Only alarms move these
    marks, so drifts that are not alarmed cannot chain into a long suppression."""

    def __init__(self, window: int, ramp: int) -> None:
        self.window, self.ramp = window, ramp
        self.fed, self.quiet_until, self.fed_at_alarm = 0, 0, None

    def drift(self, event: int, width: int | None) -> bool:
        repeated = event < self.quiet_until or (
            self.fed_at_alarm is not None
            and width is not None
            and width > self.fed - self.fed_at_alarm + self.ramp
        )
        if not repeated:
            self.quiet_until, self.fed_at_alarm = event + self.window, self.fed
        return not repeated


def test_detectors_see_exactly_the_sampled_values() -> None:
    events = stream(2, 3000, drop_at=1500)
    monitor = Monitor("m", config())
    alarms = [a for e in events for a in monitor.update(e)]

    # The same detectors, fed by hand from a plain window sampled every 10 events.
    window = PrequentialWindow(200, 0.5)
    detectors = {
        "page_hinkley": registry.create("page_hinkley", threshold=1.0, direction="down"),
        "adwin": registry.create("adwin", direction="down"),
    }
    rules = {name: Episodes(200, 200 // 10) for name in detectors}
    expected, raw_drifts = [], []
    for i, event in enumerate(events, start=1):
        window.update(event.y_true, event.y_score)
        if i % 10 == 0 and len(window) == 200 and not math.isnan(window.auc):
            for name, detector in detectors.items():
                rules[name].fed += 1
                if detector.update(window.auc).name == "DRIFT":
                    raw_drifts.append((name, i))
                    if rules[name].drift(i, getattr(detector, "width", None)):
                        expected.append((name, i))
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
    rule = Episodes(200, 200)
    raw, episodes = [], []
    for i, event in enumerate(stream(5, 4000, drop_at=2000), start=1):
        window.update(event.y_true, event.y_score)
        if len(window) == 200:
            rule.fed += 1
            if adwin.update(window.auc).name == "DRIFT":
                raw.append(i)
                if rule.drift(i, adwin.width):
                    episodes.append(i)
        monitor.update(event)
    assert len(raw) > len(episodes) >= 1
    assert [i for i in episodes if i > 2000][:1], "the drop itself is an alarm"
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
        if i % 10 == 0 and len(window) == 200:
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
    monitor = Monitor("m", config(window_size=50, sample_every=1, watches=WATCHES[:3]))
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


def test_nothing_reaches_detectors_or_floors_before_the_window_is_full() -> None:
    # A floor of 1.0 is crossed by any imperfect window: the first full window alarms, and no
    # filling window before it does (AUC and G-mean over a few events are too noisy).
    watches = (Watch("gmean", floor=1.0), Watch("auc", (DetectorSpec("adwin", {"clock": 1}),)))
    monitor = Monitor("m", config(window_size=200, sample_every=1, watches=watches))
    alarms = [a for e in stream(7, 400) for a in monitor.update(e)]
    assert [(a.measure, a.level, a.event_count) for a in alarms][:1] == [
        ("gmean", "threshold", 200)
    ]
    adwin = Monitor.restore(monitor.export_state())._sampled_watches[1].detectors[0]
    assert adwin.width == 201  # samples from events 200..400 only
