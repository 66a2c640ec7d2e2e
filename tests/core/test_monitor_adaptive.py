"""A monitor with an adaptive window: the window ADWIN sizes (Bifet et al. 2015, §6), sampled after
a change, checkpointed, and chosen per model in the settings and the API."""

from __future__ import annotations

import json
import random

from driftwatch.api import ModelMonitor
from driftwatch.core.adaptive_window import AdaptiveWindow
from driftwatch.core.events import Event
from driftwatch.core.monitor import Monitor, MonitorConfig
from driftwatch.settings import Settings


def drifting(seed: int, length: int, change_at: int) -> list[Event]:
    """Error rate 10 % then 40 %; 40 % positives; one event per second."""
    rng = random.Random(seed)
    events = []
    for t in range(length):
        y = int(rng.random() < 0.4)
        wrong = rng.random() < (0.1 if t < change_at else 0.4)
        score = rng.uniform(0.5, 1.0) if (y == 1) != wrong else rng.uniform(0.0, 0.5)
        events.append(Event(y, round(score, 3), ts=1.7e9 + t))
    return events


def same(a: object, b: object) -> bool:
    """Equal states (NaN thresholds included: json writes them alike)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


CONFIG = MonitorConfig(window_size=2000, sample_every=50, adaptive_window=True)


def test_the_window_is_the_adaptive_window_and_is_sampled_after_a_change() -> None:
    monitor = Monitor("m", CONFIG)
    reference = AdaptiveWindow(2000, 0.5)
    sampled_short = 0
    for event in drifting(1, 6000, 5000):
        monitor.update(event)
        reference.update(event.y_true, event.y_score)
        if monitor.sampled and len(monitor.window) < 2000:
            sampled_short += 1
    assert monitor.window.export_state() == reference.export_state()
    assert isinstance(monitor.window, AdaptiveWindow) and monitor.window.cuts > 0
    # After the change the shorter window is what is measured: sampled, not skipped.
    assert sampled_short > 0
    assert monitor.snapshot().values["accuracy"] == reference.measure("accuracy")
    fixed = Monitor("m", MonitorConfig(window_size=2000, sample_every=50))
    for event in drifting(1, 6000, 5000):
        fixed.update(event)
    assert fixed.snapshot().values["accuracy"] > monitor.snapshot().values["accuracy"] + 0.05


def test_restore_continues_identically_and_reconfiguration_keeps_the_events() -> None:
    events = drifting(2, 5000, 2500)
    monitor = Monitor("m", CONFIG)
    for event in events[:3000]:
        monitor.update(event)
    state = json.loads(json.dumps(monitor.export_state()))
    restored = Monitor.restore(state, config=CONFIG)
    for event in events[3000:]:
        monitor.update(event)
        restored.update(event)
    assert same(restored.export_state(), monitor.export_state())
    # A fixed window's state restored into an adaptive configuration (the setting changed).
    fixed = Monitor("m", MonitorConfig(window_size=2000, sample_every=50))
    for event in events[:3000]:
        fixed.update(event)
    switched = Monitor.restore(json.loads(json.dumps(fixed.export_state())), config=CONFIG)
    assert isinstance(switched.window, AdaptiveWindow)
    assert len(switched.window) == min(2000, switched.window.adwin_width)


def test_chosen_per_model_in_the_settings_and_the_api() -> None:
    settings = Settings.model_validate(
        {"monitoring": {"models": {"churn": {"adaptive_window": True}}}}
    )
    assert settings.monitoring.monitor_config("churn").adaptive_window is True
    assert settings.monitoring.monitor_config("other").adaptive_window is False
    api = ModelMonitor(window_size=500, adaptive_window=True)
    assert api.config.adaptive_window is True
    for event in drifting(3, 1500, 750):
        api.update(event.y_true, event.y_score)
    assert api.positives + api.negatives <= 500
