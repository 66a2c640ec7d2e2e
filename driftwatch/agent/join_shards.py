"""The join kept per input partition, so that its pending records can be handed over.

With the state in Kafka (:mod:`driftwatch.state.topic`) an input partition may move to
another replica at any rebalance, and its pending predictions and labels must move with it.
A join over all of a replica's partitions could not be split again, so the agent keeps one
:class:`~driftwatch.core.delayed.DelayedLabels` per *shard*: an input partition, and with
predictions and labels on two topics the pair of partitions with the same number
(``predictions[p]`` and ``labels[p]``), which Kafka's default range assignor gives to the same
member when both topics have the same partition count. Records must then be co-partitioned:
keyed alike so that a prediction and its label land on partitions of the same number, as
Kafka Streams requires of the two sides of a stream join; keyed by model, so that each
model's monitor lives on one partition too (keyed by event id the join stays exact, but
every model is split over the partitions, ``driftwatch_state_split_models``). A pair whose
halves land in different shards is never joined: they expire, counted by reason.

Each shard's state is saved as one record under its first partition, with the offsets it
covers; its pending records, watermarks, recently joined ids and counts depend only on the
shard's own records, so a restore replaying from the saved offsets rebuilds exactly what an
uninterrupted join would hold (paper-free argument in the state topic's module docstring).

The metrics show the shards merged (:func:`~driftwatch.core.delayed.merge_snapshots`).
:class:`PartitionedJoin` is the shards as the pipeline's join hook
(:class:`~driftwatch.pipeline.Join`): a record goes to its shard's join, and after a restore
what the shard's saved state already holds is skipped (see :mod:`driftwatch.state.topic`).
:func:`record_joins` builds the agent's join, sharded or not, from the settings.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from driftwatch.agent.partition_states import PartitionStates
from driftwatch.core.delayed import DelayedLabels, JoinSnapshot, merge_snapshots
from driftwatch.decoding.joinable import JoinFormat
from driftwatch.kafka.source import Record
from driftwatch.pipeline import Join, OneJoin
from driftwatch.settings import Settings
from driftwatch.state.topic import TopicPartition

__all__ = ["JoinShards", "PartitionedJoin", "record_joins"]


class JoinShards:
    """One join per shard of input partitions (module docstring).

    Parameters:
        factory: builds an empty join (with the models' label-free watches).
        predictions_topic, labels_topic: the two topics when predictions and labels come
            apart (then ``labels[p]`` is in the shard of ``predictions[p]``); None when one
            topic carries both (every partition is its own shard).
    """

    def __init__(self, factory: Callable[[], DelayedLabels], predictions_topic: str | None,
                 labels_topic: str | None) -> None:
        self._factory = factory
        self._predictions_topic = predictions_topic
        self._labels_topic = labels_topic
        self.shards: dict[TopicPartition, DelayedLabels] = {}

    def shard_of(self, tp: TopicPartition) -> TopicPartition:
        """The shard of input partition ``tp``: itself, or the predictions' partition of
        the same number for a labels partition."""
        if self._predictions_topic is not None and tp[0] == self._labels_topic:
            return (self._predictions_topic, tp[1])
        return (tp[0], tp[1])

    def partitions_of(self, shard: TopicPartition) -> tuple[TopicPartition, ...]:
        """The input partitions whose records go to ``shard``."""
        if self._predictions_topic is not None and self._labels_topic is not None \
                and shard[0] == self._predictions_topic:
            return (shard, (self._labels_topic, shard[1]))
        return (shard,)

    def apart(self, assigned: Collection[TopicPartition]) -> list[TopicPartition]:
        """The partitions of ``assigned`` whose shard's other partition is not assigned with
        them: their predictions and labels cannot meet in this replica (the topics' partition
        counts differ, so the range assignor did not keep the numbers together)."""
        owned = {(tp[0], tp[1]) for tp in assigned}
        return sorted(tp for tp in owned
                      if not owned.issuperset(self.partitions_of(self.shard_of(tp))))

    def get(self, tp: TopicPartition) -> DelayedLabels:
        """The join that takes ``tp``'s records (created empty on first use)."""
        shard = self.shard_of(tp)
        delayed = self.shards.get(shard)
        if delayed is None:
            delayed = self.shards[shard] = self._factory()
        return delayed

    def snapshot(self) -> JoinSnapshot:
        """The shards' pictures merged into one, for the exporter."""
        return merge_snapshots([delayed.snapshot() for delayed in self.shards.values()])

    def export_state(self) -> dict[TopicPartition, dict[str, Any]]:
        """Each shard's state (:meth:`DelayedLabels.export_state`), by shard."""
        return {shard: delayed.export_state() for shard, delayed in self.shards.items()}

    def restore(self, states: Mapping[TopicPartition, Mapping[str, Any]],
                limits: Mapping[str, Any]) -> None:
        """Take over saved shards, all or none (``ValueError`` naming the problem)."""
        restored = {}
        for shard, state in states.items():
            delayed = self._factory()
            delayed.restore(state, **limits)
            restored[(shard[0], shard[1])] = delayed
        self.shards.update(restored)

    def drop(self, partitions: Collection[TopicPartition]) -> None:
        """Forget the shards of ``partitions`` (they moved to another replica)."""
        for tp in partitions:
            self.shards.pop(self.shard_of(tp), None)


class PartitionedJoin:
    """The pipeline's join (:class:`~driftwatch.pipeline.Join`) with the state topic: each
    record through the join of its shard, skipping what a restored join holds already, and
    each half and pair noted in ``partitioned`` (where a replay after a restore resumes).

    Parameters:
        shards: the joins by shard.
        partitioned: the per-partition bookkeeping of the state topic, built with
            ``shards.shard_of``.
        format: how records are told apart and keyed.
    """

    def __init__(self, shards: JoinShards, partitioned: PartitionStates,
                 format: JoinFormat) -> None:
        self.shards = shards
        self.partitioned = partitioned
        self.format = format

    def delayed(self, where: Record) -> DelayedLabels | None:
        """The join of the record's shard; None after a restore when it holds the record."""
        tp = where.topic_partition
        if not self.partitioned.join_takes(tp, where.offset):
            return None  # a replay after a restore: the join's saved state holds it
        return self.shards.get(tp)

    def pending(self, event_id: str, where: Record) -> None:
        self.partitioned.pending_half(event_id, where.topic_partition, where.offset)

    def pair(self, model: str, event_id: str, where: Record) -> bool:
        tp = where.topic_partition
        shard = self.shards.partitions_of(self.shards.shard_of(tp))
        return self.partitioned.take_pair(model, event_id, tp, where.offset, shard)


def record_joins(settings: Settings, *, state_topic: bool) -> tuple[
        DelayedLabels | None, JoinShards | None, PartitionStates | None, Join[Record] | None]:
    """The join of predictions and labels as separate records (settings ``join``), as the
    agent keeps it: one join (the first), or with the state topic one per input partition
    (the second) to be handed over with it; the state topic's per-partition bookkeeping
    (the third); and the pipeline's hook into whichever join it is (the fourth). Nones when
    records come joined (and without the state topic)."""
    join = settings.join
    if not join.enabled:
        return None, None, PartitionStates() if state_topic else None, None

    def new_join() -> DelayedLabels:
        return join.delayed_labels(
            lambda model: settings.monitoring.monitor_config(model).threshold)

    if not state_topic:
        delayed = new_join()
        return delayed, None, None, OneJoin(delayed, join.join_format())
    shards = JoinShards(new_join, join.predictions_topic, join.labels_topic)
    partitioned = PartitionStates(shards.shard_of)
    return None, shards, partitioned, PartitionedJoin(shards, partitioned, join.join_format())
