"""SnapshotPublisher on its own: when a round is due, its slices and pace, and the models'
last-processed times."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from driftwatch.agent.loop import Agent
from driftwatch.agent.publish import (
    PUBLISH_SHARE,
    PUBLISH_SLICE_S,
    SnapshotPublisher,
    lag_seconds,
)
from driftwatch.core.events import Event
from driftwatch.core.monitor import Monitor, MonitorConfig
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.sinks.snapshot import AgentSnapshot, Operations


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_snapshot_is_due_once_per_interval_or_when_forced() -> None:
    clock = Clock(100.0)
    publisher = SnapshotPublisher(1_700_000_000.0, 1.0, clock, lambda: 0.0)
    assert publisher.due()  # the first one
    clock.now = 100.5
    assert not publisher.due()
    assert publisher.due(force=True)  # and a forced one starts the next interval
    clock.now = 101.4
    assert not publisher.due()
    clock.now = 101.5
    assert publisher.due()


def test_a_model_is_last_processed_when_its_events_grew() -> None:
    wall = Clock(1000.0)
    publisher = SnapshotPublisher(900.0, 0.0, lambda: 0.0, wall)
    monitor = Monitor("m", MonitorConfig(window_size=10))
    parts = {"rejected": {}, "skipped": {}, "consumer_lag": {}, "ready": True,
             "operations": Operations(), "join": None}
    monitor.update(Event(1, 0.9))
    first = publisher.publish((monitor.snapshot(),), **parts)
    assert first.last_processed == {"m": 1000.0} and first.started_time == 900.0
    wall.now = 1010.0
    assert publisher.publish((monitor.snapshot(),), **parts).last_processed == {"m": 1000.0}
    monitor.update(Event(0, 0.1))
    wall.now = 1020.0
    assert publisher.publish((monitor.snapshot(),), **parts).last_processed == {"m": 1020.0}
    assert publisher.snapshot.ready


def test_lag_seconds_is_the_age_of_the_last_processed_record() -> None:
    lag = {("t", 0): 0, ("t", 1): 5, ("t", 2): 3}
    assert lag_seconds(lag, {("t", 1): 1_000_000, ("t", 0): 1}, now=1_010.0) == {
        ("t", 0): 0.0, ("t", 1): 10.0}


def _refresh_one_at_a_time(seen: list[str]) -> Any:
    """A refresh (``Monitors.refresh``'s signature) that notes each model and asks ``more``
    after every one, as the real one does after each snapshot it takes."""
    def refresh(models: Iterator[str], more: Callable[[], bool]) -> bool:
        for model in models:
            seen.append(model)
            if not more():
                return False
        return True
    return refresh


class Ticking(Clock):
    """A clock that moves ``step`` seconds each time it is read: every snapshot costs
    time, as a real one does."""

    def __init__(self, now: float, step: float) -> None:
        super().__init__(now)
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_round_gives_each_slice_its_budget_and_goes_on_where_it_stopped() -> None:
    clock = Ticking(0.0, 0.01)
    publisher = SnapshotPublisher(0.0, 1.0, clock, lambda: 0.0)
    assert publisher.due()
    refreshing = publisher.start(iter([f"m{k}" for k in range(100)]))
    seen: list[str] = []
    steps = 0
    while not refreshing.step(_refresh_one_at_a_time(seen)):
        steps += 1
        assert 0 < len(seen) < 100
    # Every model once, in order, a slice of about PUBLISH_SLICE_S (0.1 s: 10 reads of a
    # clock ticking 0.01 s) at a time.
    assert seen == [f"m{k}" for k in range(100)]
    assert steps == refreshing.slices - 1 >= 100 * 0.01 / PUBLISH_SLICE_S - 1
    assert math.isclose(refreshing.work, clock.now - refreshing.started, rel_tol=0.2)


def test_a_round_of_several_slices_holds_the_next_one_back_to_keep_its_share() -> None:
    clock = Clock(0.0)
    publisher = SnapshotPublisher(0.0, 1.0, clock, lambda: 0.0)
    assert publisher.due()
    round_ = publisher.start(iter(()))
    round_.work, round_.slices = 2.0, 20  # two seconds of snapshots in 20 slices
    clock.now = 5.0
    publisher.finish()
    assert publisher.round is None and publisher.refresh_seconds == 5.0
    clock.now = 2.0 / PUBLISH_SHARE - 0.01
    assert not publisher.due()  # refreshing takes at most PUBLISH_SHARE of the loop
    clock.now = 2.0 / PUBLISH_SHARE
    assert publisher.due()
    # A round done in one slice keeps the plain interval.
    round_ = publisher.start(iter(()))
    round_.work, round_.slices = 0.05, 1
    publisher.finish()
    clock.now += 1.0
    assert publisher.due()


def test_the_agent_publishes_a_round_once_every_model_was_looked_at(tmp_path: Path) -> None:
    """At many busy models the loop's publish spans several slices, each bounded, and
    publishes only when its round is complete; a publish because readiness changed shows at
    once what it has; a forced one refreshes everything."""
    clock = Ticking(0.0, 0.004)  # every read of the clock costs 4 ms: a slice is ~25 reads
    agent = Agent(Settings(checkpoint={"backend": "file", "directory": str(tmp_path)},
                           metrics={"per_model": "standard", "per_model_overrides": {"m1": "all"}},
                           limits={"max_models": 200}),
                  snapshot_interval_s=1.0, clock=clock)
    values = [json.dumps({"model": f"m{k}", "label": j % 3 == 0, "score": (j * k % 7) / 7,
                          "ts": j}).encode() for j in range(12) for k in range(120)]
    agent.process_batch([Record("events", 0, i, None, v, 0) for i, v in enumerate(values)])
    calls = 1
    agent._publish_snapshot()
    while agent.publisher.round is not None:
        assert agent.snapshot.monitors == ()  # nothing half refreshed is published
        if calls == 2:
            agent._publish_latest()  # readiness changed mid-round: what it has, at once
            assert 0 < len(agent.snapshot.monitors) < 120
            agent.publisher.snapshot = AgentSnapshot.empty(0.0)
        calls += 1
        agent._publish_snapshot()
    assert calls >= 4
    published = agent.snapshot.monitors
    assert [s.model for s in published] == [f"m{k}" for k in range(120)]
    # Level standard normalizes the watched measures: of the window's measures the defaults
    # watch AUC alone, which has no normalization; m1 exports all of them.
    assert [len(s.normalized) for s in published] == [0, 8] + [0] * 118
    assert [repr(s) for s in published] == [
        repr(m.snapshot(None if m.model == "m1" else ()))
        for m in agent.monitors.by_model.values()]
    assert agent.publisher.refresh_seconds is not None
    assert not agent.publisher.due()  # paced: more than one slice of work
    agent.publish_now()
    assert len(agent.snapshot.monitors) == 120
