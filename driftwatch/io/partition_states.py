"""Which input partition each model belongs to, and what a replay after a restore skips.

The agent's bookkeeping for the state topic (:mod:`driftwatch.io.state_topic`, whose module
docstring gives the record layout and why it is exact): every model has a *home* partition
(where its first event came from) under which its state is saved, and the set of partitions
it took events from, whose offsets its record carries; after a restore, each model skips the
records below the offset its state covers, and the rejection counts those below the
partition's saved offset. A model seen on more than one partition is counted in
:attr:`PartitionStates.split`: it cannot be handed over exactly between replicas.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from driftwatch.io.state_topic import Restored, TopicPartition

__all__ = ["PartitionStates"]


class PartitionStates:
    """The agent's side of the state topic: which model lives where, and what to skip.

    Tracks, per model, its home partition and the partitions it took events from; per
    restored model and partition, the offset below which its records are already in its
    state; per partition, the offset below which rejections are already counted and the
    rejection counts. O(1) per record.
    """

    def __init__(self) -> None:
        self.homes: dict[str, TopicPartition] = {}
        self.seen: dict[str, set[TopicPartition]] = {}
        self._skip_below: dict[tuple[str, TopicPartition], int] = {}
        self._rejected_below: dict[TopicPartition, int] = {}
        self.rejected: dict[TopicPartition, dict[str, int]] = {}
        self.split: set[str] = set()
        """Models seen on more than one partition, or restored elsewhere: not handed over
        exactly (see the module docstring)."""

    def take(self, model: str, tp: TopicPartition, offset: int) -> bool:
        """Note an event of ``model`` at ``tp``/``offset``; False when its state already
        holds it (a replay after a restore) and it must be skipped."""
        below = self._skip_below.get((model, tp))
        if below is not None:
            if offset < below:
                return False
            del self._skip_below[(model, tp)]
        self.homes.setdefault(model, tp)
        seen = self.seen.setdefault(model, set())
        if tp not in seen:
            seen.add(tp)
            if len(seen) > 1:
                self.split.add(model)
        return True

    def reject(self, tp: TopicPartition, offset: int, reason: str) -> bool:
        """Count a rejection at ``tp``/``offset``; False when the restored counts hold it."""
        below = self._rejected_below.get(tp)
        if below is not None and offset < below:
            return False
        counts = self.rejected.setdefault(tp, {})
        counts[reason] = counts.get(reason, 0) + 1
        return True

    def payload(self, monitors: Mapping[str, Any], positions: Mapping[Any, int]
                ) -> dict[str, Any]:
        """A save of ``monitors`` (model → exported state) and the partitions at
        ``positions`` (partition → next offset), for :meth:`StateTopicStore.save`."""
        models = {}
        for model, state in monitors.items():
            home = self.homes.get(model)
            if home is None:
                continue  # admitted but never fed (no event reached it): nothing to keep
            covers = [(tp, positions[tp]) for tp in sorted(self.seen.get(model, {home}))
                      if tp in positions]
            models[model] = {"home": home, "covers": covers, "state": state}
        partitions = [(tuple(tp), {"offset": offset,
                                   "rejected": dict(self.rejected.get(tp, {}))})
                      for tp, offset in sorted(positions.items())]
        return {"models": models, "partitions": partitions}

    def restored(self, restored: Restored) -> None:
        """Take over what :meth:`StateTopicStore.load` returned."""
        for model, covers in restored.covers.items():
            self.homes[model] = restored.homes[model]
            self.seen[model] = set(covers)
            if len(covers) > 1:
                self.split.add(model)
            for tp, offset in covers.items():
                if tp in restored.offsets and offset > restored.offsets[tp]:
                    self._skip_below[(model, tp)] = offset
        for tp, below in restored.rejected_below.items():
            if below > restored.offsets[tp]:
                self._rejected_below[tp] = below
            self.rejected[tp] = dict(restored.rejected.get(tp, {}))
        self.split |= restored.split

    def drop(self, partitions: Collection[TopicPartition]) -> tuple[set[str], dict[str, int]]:
        """Forget ``partitions``: returns the models homed there (to drop from the monitors)
        and the rejection counts they held (to take off the agent's totals)."""
        gone = {model for model, home in self.homes.items() if home in partitions}
        for model in gone:
            del self.homes[model]
            self.seen.pop(model, None)
            self.split.discard(model)
        for key in [key for key in self._skip_below if key[1] in partitions]:
            del self._skip_below[key]
        removed: dict[str, int] = {}
        for tp in partitions:
            self._rejected_below.pop(tp, None)
            for reason, count in self.rejected.pop(tp, {}).items():
                removed[reason] = removed.get(reason, 0) + count
        return gone, removed
