"""Monitors on their own: one per model, and their snapshots refreshed whole or in slices."""

from __future__ import annotations

import random

from driftwatch.core.events import Event
from driftwatch.core.monitor import Monitor, MonitorConfig
from driftwatch.pipeline import Monitors


def fed(models: int, seed: int = 25) -> Monitors:
    monitors = Monitors(lambda model: MonitorConfig(window_size=40), 1_000)
    rng = random.Random(seed)
    for k in range(models):
        monitor = monitors.get(f"m{k}")
        assert monitor is not None
        feed(monitor, rng, 60)
    return monitors


def feed(monitor: Monitor, rng: random.Random, events: int) -> None:
    for _ in range(events):
        label = int(rng.random() < 0.3)
        monitor.update(Event(label, rng.gauss(label, 1.0)))


def fresh(monitors: Monitors) -> list[str]:
    """Each monitor's snapshot taken now, as text (NaN equals NaN)."""
    return [repr(monitor.snapshot()) for monitor in monitors.by_model.values()]


class Budget:
    """``more`` for a refresh: go on until ``size`` snapshots were taken in this slice."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.taken = 0
        self.left = size

    def __call__(self) -> bool:
        self.taken += 1
        self.left -= 1
        return self.left > 0

    def next_slice(self) -> None:
        self.left = self.size


def test_a_refresh_in_slices_leaves_every_model_as_a_whole_refresh_does() -> None:
    monitors = fed(30)
    models = iter(list(monitors.by_model))
    budget = Budget(4)
    slices = 1
    while not monitors.refresh(models, budget):
        budget.next_slice()
        slices += 1
    assert slices == 8 and budget.taken == 30  # ceil(30 / 4) slices, each model once
    assert [repr(s) for s in monitors.latest()] == fresh(monitors)
    assert [repr(s) for s in monitors.snapshots()] == fresh(monitors)


def test_a_refresh_takes_only_the_models_that_moved_and_passes_over_the_dropped() -> None:
    monitors = fed(10)
    monitors.snapshots()
    rng = random.Random(1)
    for model in ("m2", "m5", "m7"):
        feed(monitors.by_model[model], rng, 3)
    models = iter(list(monitors.by_model))
    monitors.drop(["m5"])
    budget = Budget(100)
    assert monitors.refresh(models, budget)
    assert budget.taken == 2  # m2 and m7; m5 is gone
    assert [s.model for s in monitors.latest()] == [f"m{k}" for k in range(10) if k != 5]
    assert [repr(s) for s in monitors.latest()] == fresh(monitors)


def test_a_model_not_snapshotted_yet_is_left_out_until_a_refresh_reaches_it() -> None:
    monitors = fed(3)
    models = iter(list(monitors.by_model))
    assert not monitors.refresh(models, lambda: False)  # one snapshot, then stop
    assert [s.model for s in monitors.latest()] == ["m0"]
    newcomer = monitors.get("late")
    assert newcomer is not None
    newcomer.update(Event(1, 0.5))
    assert monitors.refresh(models, lambda: True)
    assert [s.model for s in monitors.latest()] == ["m0", "m1", "m2"]  # not in this round
    assert [s.model for s in monitors.snapshots()] == ["m0", "m1", "m2", "late"]


def test_snapshots_normalize_what_the_collection_is_told_to() -> None:
    chosen = {"m0": frozenset({"recall"}), "m1": frozenset()}
    monitors = Monitors(lambda model: MonitorConfig(window_size=40), 10,
                        lambda monitor: chosen.get(monitor.model))
    rng = random.Random(3)
    for model in ("m0", "m1", "m2"):
        monitor = monitors.get(model)
        assert monitor is not None
        feed(monitor, rng, 50)
    assert [set(s.normalized) for s in monitors.snapshots()] == [
        {"recall"}, set(), set(monitors.by_model["m2"].snapshot().normalized)]
