"""settle(): the young generations collected, then everything alive frozen."""

from __future__ import annotations

import gc
import weakref

from driftwatch.agent.heap import settle


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
