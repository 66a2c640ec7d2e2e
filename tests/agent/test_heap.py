"""settle(): the young generations collected, then everything alive frozen; and unfrozen when
the agent stops."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from driftwatch.agent.heap import settle
from driftwatch.core.monitor import Monitor
from tests.agent.test_loop import Run, records, settings, stream_values


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_settle_collects_young_cycles_then_freezes_what_is_alive() -> None:
    dead, alive = Node(), Node()
    dead.other, alive.other = Node(), Node()
    dead.other.other, alive.other.other = dead, alive  # two cycles
    collected = weakref.ref(dead)
    del dead
    frozen = gc.get_freeze_count()
    try:
        settle()
        assert collected() is None, "the dead cycle was collected before the freeze"
        assert gc.get_freeze_count() > frozen  # the living one is in the permanent generation
        assert not any(obj is alive for obj in gc.get_objects())  # full passes skip it
    finally:
        gc.unfreeze()


def test_a_stopped_agent_is_freed(tmp_path: Path) -> None:
    """An agent's run settles the heap (freezes it) after each publish; once it stops,
    what it froze can be collected again: an agent dropped by a process that goes on (the
    Python API, a tool or a test building several) is freed, its monitors with it, where
    frozen it would stay for the life of the process."""
    run = Run(settings(tmp_path), records(stream_values("freed-model", length=300)))()
    assert run.error is None
    assert list(run.agent.monitors.by_model) == ["freed-model"]
    assert gc.get_freeze_count() == 0, "the stopped agent left objects frozen"
    agent = weakref.ref(run.agent)
    del run
    gc.collect()
    assert agent() is None
    assert not any(isinstance(each, Monitor) and each.model == "freed-model"
                   for each in gc.get_objects())
