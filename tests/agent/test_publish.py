"""SnapshotPublisher on its own: when a snapshot is due, and the models' last-processed times."""

from __future__ import annotations

from driftwatch.agent.publish import SnapshotPublisher, lag_seconds
from driftwatch.core.events import Event
from driftwatch.core.monitor import Monitor, MonitorConfig
from driftwatch.sinks.snapshot import Operations


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
