"""What the agent saves and restores: its checkpoint's payload and the file checkpoint read
back (:class:`SavedState`). The state topic's handover of partitions, which restores and
saves part of the same state, is :mod:`driftwatch.agent.handover`.

The payload holds the monitors' state and the offsets it covers, the rejection and skip
counts, the comparisons and the join's pending records. With the state topic
(``checkpoint.backend`` kafka) it is one record per model under the input partition its
events come from (:class:`~driftwatch.state.topic.StateTopicStore`), and a join per partition
(:class:`~driftwatch.agent.join_shards.JoinShards`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

from driftwatch.agent.checkpointer import Checkpointer
from driftwatch.agent.comparisons import Comparisons
from driftwatch.agent.join_shards import JoinShards
from driftwatch.agent.partition_states import PartitionStates
from driftwatch.agent.positions import Positions
from driftwatch.agent.rejections import Rejections
from driftwatch.core.delayed import DelayedLabels
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.pipeline import Monitors, progress
from driftwatch.state.checkpoint import CheckpointError, encode_offsets

log = logging.getLogger(__name__)

__all__ = ["SavedState", "restoring"]

_RESTORE_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError)
"""What restoring a malformed saved state raises (the states are checked as they load)."""


@contextlib.contextmanager
def restoring(what: str) -> Iterator[None]:
    """Turn a saved state that cannot be restored into a
    :class:`~driftwatch.state.checkpoint.CheckpointError` naming ``what`` (exit 3)."""
    try:
        yield
    except _RESTORE_ERRORS as error:
        raise CheckpointError(f"{what}: {type(error).__name__}: {error}") from error


class SavedState:
    """The agent's state as the checkpoint holds it: built for a save (:meth:`payload`) and
    loaded back at the start (:meth:`restore`).

    Parameters:
        checkpointer: loads the checkpoint (and keeps what is durable).
        monitors, comparisons, rejections, positions: the state saved and restored.
        delayed: the join, when predictions and labels come apart and the state is one file.
        join_shards, partitioned: with the state topic, the join per input partition and the
            per-partition bookkeeping (both None without it).
        join_limits: the join's limits (settings ``join``), applied to a restored join.
    """

    def __init__(self, checkpointer: Checkpointer, monitors: Monitors,
                 comparisons: Comparisons, rejections: Rejections, positions: Positions, *,
                 delayed: DelayedLabels | None, join_shards: JoinShards | None,
                 partitioned: PartitionStates | None, join_limits: Mapping[str, Any]) -> None:
        self.checkpointer = checkpointer
        self.monitors = monitors
        self.comparisons = comparisons
        self.rejections = rejections
        self.positions = positions
        self.delayed = delayed
        self.join_shards = join_shards
        self.partitioned = partitioned
        self.join_limits = join_limits
        self._exported: tuple[str, dict[str, object]] | None = None
        """The epoch and the models (with their progress) the last :meth:`payload` holds."""

    def payload(self, offsets: Mapping[TopicPartition, int]) -> dict[str, Any]:
        """The checkpoint's payload: the monitors' state and the ``offsets`` it covers, the
        rejection and skip counts, the comparisons and the join's pending records (with the
        state topic, one record per model under its input partition, only of the models
        that moved since the last successful save, and a join per partition; :meth:`saved`
        once it is saved)."""
        if self.partitioned is not None:
            changed = self.unsaved()
            self._exported = (self.partitioned.writer, changed)
            return self.partitioned.payload(self._states(changed), offsets, self._joins(),
                                            self.comparisons.export_model)
        plain = {(tp.topic, tp.partition): offset for tp, offset in offsets.items()}
        payload = {"offsets": encode_offsets(plain), "monitors": self.monitors.export_state(),
                   "rejected": dict(self.rejections.rejected),
                   "comparisons": self.comparisons.export_state()}
        if self.rejections.skipped:
            payload["skipped"] = dict(self.rejections.skipped)
        if self.delayed is not None:  # pending predictions and labels, with the same offsets
            payload["join"] = self.delayed.export_state()
        return payload

    def saved(self) -> None:
        """The last :meth:`payload` is saved (with the state topic, the models it left out
        stay out of the next one until they move)."""
        if self.partitioned is not None and self._exported is not None:
            writer, exported = self._exported
            self.partitioned.saved(exported, writer)
        self._exported = None

    def unsaved(self, only: Collection[TopicPartition] | None = None) -> dict[str, object]:
        """With the state topic, the models a save must write, with their progress
        (:meth:`~driftwatch.agent.partition_states.PartitionStates.unsaved`); ``only``:
        of the models homed on these partitions."""
        partitioned = self.partitioned
        assert partitioned is not None
        homes = partitioned.homes
        return partitioned.unsaved({
            model: progress(monitor) for model, monitor in self.monitors.by_model.items()
            if only is None or homes.get(model) in only})

    def snapshot(self, offsets: Mapping[TopicPartition, int],
                 only: Collection[TopicPartition] | None = None) -> dict[str, Any]:
        """With the state topic, a save's snapshot without its models: the joins and the
        partitions' metas at ``offsets``, and its epoch (``writer``). Its models are
        exported in slices (:meth:`export`). ``only``: the save of these partitions alone,
        as a revoke makes it: their joins and metas (the models' covers still name every
        partition at ``offsets``). The other partitions' records stay as their last save
        left them, a consistent state like any save's (docs/state.md, Saves that do not
        stop the loop)."""
        assert self.partitioned is not None
        return self.partitioned.payload({}, offsets, self._joins(only), only=only)

    def export(self, models: Sequence[str], offsets: Mapping[TopicPartition, int]
               ) -> tuple[dict[str, Any], dict[str, object]]:
        """With the state topic, a slice of a save: ``models``' records, each its state and
        the ``offsets`` it covers now (a consistent pair), and their progress now. Models
        gone since (their partitions revoked) are left out."""
        assert self.partitioned is not None
        by_model = self.monitors.by_model
        present = [model for model in models if model in by_model]
        payload = self.partitioned.payload(self._states(present), offsets, None,
                                           self.comparisons.export_model)
        return payload, {model: progress(by_model[model]) for model in present}

    def _states(self, models: Iterable[str]) -> dict[str, Any]:
        """The exported states of ``models`` (each one present)."""
        by_model = self.monitors.by_model
        return {model: by_model[model].export_state() for model in models}

    def _joins(self, only: Collection[TopicPartition] | None = None
               ) -> dict[tuple[str, int], tuple[Sequence[tuple[str, int]], Any]] | None:
        """With the state topic and a join, each shard's partitions and exported state;
        ``only``: of the shards with a partition among these."""
        shards = self.join_shards
        return None if shards is None else {
            shard: (shards.partitions_of(shard), state)
            for shard, state in shards.export_state().items()
            if only is None or any(tp in only for tp in shards.partitions_of(shard))}

    def restore(self) -> None:
        """Load the checkpoint into the monitors, positions and rejection counts (nothing
        when there is none).

        Raises :class:`~driftwatch.state.checkpoint.CheckpointError` when the file, or a
        monitor state inside it, cannot be restored: nothing is half-loaded.
        """
        offsets, states, rejected, comparisons = self.checkpointer.load()
        with restoring("a monitor state in the checkpoint"):
            self.monitors.restore(states)
        with restoring("a comparison state in the checkpoint"):
            self.comparisons.restore(comparisons)
        join_state = self.checkpointer.join_state
        if join_state is not None and self.delayed is not None:
            with restoring("the join state in the checkpoint"):
                self.delayed.restore(join_state, **self.join_limits)
        elif join_state is not None:
            log.warning("the checkpoint holds pending predictions and labels of a join, but "
                        "join is not enabled: they are dropped")
        self.rejections.add(rejected, self.checkpointer.skipped)
        self.positions.take_over(offsets, restored=bool(offsets or states))
