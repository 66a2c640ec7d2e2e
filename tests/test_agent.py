"""The agent's restore step, without Kafka: all or nothing, and a clear refusal."""

from pathlib import Path

import pytest

from driftwatch.agent import Agent
from driftwatch.core.events import Event
from driftwatch.core.monitor import Monitor, MonitorConfig
from driftwatch.io.checkpoint import CheckpointError, CheckpointStore
from driftwatch.settings import Settings


def settings(directory: Path) -> Settings:
    return Settings(checkpoint={"directory": str(directory)})


def saved_monitor(model: str) -> dict:
    monitor = Monitor(model, MonitorConfig())
    for i in range(50):
        monitor.update(Event(i % 2, i / 50, ts=float(i)))
    return monitor.export_state()


def test_restore_loads_monitors_and_positions(tmp_path: Path) -> None:
    CheckpointStore(tmp_path).save(
        {"offsets": {"events:0": 50}, "monitors": {"a": saved_monitor("a")}}
    )
    agent = Agent(settings(tmp_path))
    agent.restore()
    assert agent.monitors.get("a").events == 50
    assert agent._positions == {("events", 0): 50}


def test_an_unreadable_monitor_state_is_refused_and_nothing_is_loaded(tmp_path: Path) -> None:
    bad = saved_monitor("b") | {"version": 99}
    CheckpointStore(tmp_path).save(
        {"offsets": {"events:0": 50}, "monitors": {"a": saved_monitor("a"), "b": bad}}
    )
    agent = Agent(settings(tmp_path))
    with pytest.raises(CheckpointError, match="version 99"):
        agent.restore()
    assert len(agent.monitors) == 0 and agent._positions == {}


def test_last_processed_time_moves_only_with_a_model_s_events(tmp_path: Path) -> None:
    now = [1000.0]
    agent = Agent(settings(tmp_path), snapshot_interval_s=0.0, wall_clock=lambda: now[0])
    CheckpointStore(tmp_path).save({"offsets": {}, "monitors": {"a": saved_monitor("a")}})
    agent.restore()
    agent._publish_snapshot()
    # Restored and silent: the time the agent first published it (its start).
    assert dict(agent.snapshot.last_processed) == {"a": 1000.0}
    now[0] = 1100.0
    agent.monitors.get("b").update(Event(1, 0.9, ts=1.0))
    agent._publish_snapshot()
    assert dict(agent.snapshot.last_processed) == {"a": 1000.0, "b": 1100.0}
    now[0] = 1200.0
    agent.monitors.get("a").update(Event(0, 0.1, ts=2.0))
    agent._publish_snapshot()
    assert dict(agent.snapshot.last_processed) == {"a": 1200.0, "b": 1100.0}
