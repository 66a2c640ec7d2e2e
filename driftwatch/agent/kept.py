"""Partitions an eager rebalance revokes and gives straight back: kept in memory, not restored.

Under an eager assignor (``range``, the default, and ``roundrobin``) every rebalance revokes
every partition of every member, and most come straight back to the member that had them.
At 10 000 models a survivor of a SIGKILL spent 6-9 s restoring, from the state topic, the
models it had itself just saved and dropped, and its models were missing from ``/metrics``
meanwhile. So a revoke keeps what it drops (:class:`Kept`: the monitors with their latest
snapshots, the joins' and comparisons' states, the positions and the per-partition
bookkeeping) until the next assignment, which takes the partitions it gives back from
memory at once (:meth:`Kept.given_back`) and forgets the rest; for at most the length of a
rebalance (:attr:`~driftwatch.agent.handover.Handover.kept_for_s`), and under an eager
assignor only: a cooperative revoke names only partitions that move elsewhere.

What is kept is exactly what the restore of a complete save of those partitions, taken at
the revoke, would give back (a :class:`~driftwatch.state.topic.Restored`), and it is taken
over the same way, so the argument for a restore's exactness holds for it word for word;
docs/state.md ("Partitions given back") gives it, and what is not kept.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import TypeVar

from driftwatch.core.monitor import Monitor, Snapshot
from driftwatch.kafka.offsets import TopicPartition as InputPartition
from driftwatch.state.topic import Restored, TopicPartition

__all__ = ["Kept"]


@dataclass(slots=True)
class Kept:
    """What a revoke dropped, kept until the next assignment (module docstring).

    Attributes:
        restored: the revoked partitions as a restore of a complete save at the revoke
            would give them back, monitors aside.
        since: when they were revoked (the handover's clock).
        monitors: the models homed on those partitions, as they were.
        snapshots: their latest snapshots (still current: the monitors took nothing since).
        durable: those partitions' durable offsets (what the state topic holds of them).
        timestamps_ms: the time of each partition's last record (its lag in seconds).
    """

    restored: Restored
    since: float
    monitors: dict[str, Monitor]
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    durable: dict[InputPartition, int] = field(default_factory=dict)
    timestamps_ms: dict[InputPartition, int] = field(default_factory=dict)

    @property
    def partitions(self) -> frozenset[TopicPartition]:
        """The partitions whose state is kept: those with a position."""
        return frozenset(self.restored.offsets)

    def given_back(self, partitions: Collection[TopicPartition]) -> Kept:
        """The part of this that ``partitions`` (assigned again) take over: what a restore
        of them alone would give back. A model homed on a partition not given back whose
        state covers one that is, is *split* there, as a restore names it: its events on
        these partitions go to a new, partial monitor."""
        back = set(partitions) & self.partitions
        restored = self.restored
        homes = {model: home for model, home in restored.homes.items() if home in back}
        offsets = {tp: offset for tp, offset in restored.offsets.items() if tp in back}
        return Kept(
            since=self.since,
            restored=replace(
                restored,
                offsets=offsets,
                homes=homes,
                covers={model: restored.covers[model] for model in homes},
                rejected_below=_of(restored.rejected_below, back),
                rejected=_of(restored.rejected, back),
                skipped=_of(restored.skipped, back),
                split=frozenset(model for model, covers in restored.covers.items()
                                if model not in homes and covers.keys() & back),
                joins={shard: state for shard, state in restored.joins.items()
                       if restored.join_covers[shard].keys() & back},
                join_covers={shard: covers for shard, covers in restored.join_covers.items()
                             if covers.keys() & back},
                comparisons={name: state for name, state in restored.comparisons.items()
                             if state.get("model") in homes}),
            monitors={model: self.monitors[model] for model in homes
                      if model in self.monitors},
            snapshots={model: self.snapshots[model] for model in homes
                       if model in self.snapshots},
            durable=_of(self.durable, back),
            timestamps_ms=_of(self.timestamps_ms, back))


K = TypeVar("K", bound=TopicPartition)
V = TypeVar("V")


def _of(values: Mapping[K, V], partitions: Collection[TopicPartition]) -> dict[K, V]:
    return {tp: value for tp, value in values.items() if tp in partitions}
