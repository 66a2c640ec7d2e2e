"""The state topic's handover of input partitions between replicas: restore on assignment,
save and forget on revocation.

With the state topic (``checkpoint.backend`` kafka) saves go to a compacted Kafka topic, one
record per model under the input partition its events come from
(:class:`~driftwatch.state.topic.StateTopicStore`). On assignment the agent restores the
new partitions' models from it and resumes each partition where its records say (each model
skipping the records its state already holds, so a save cut short by a crash is still
exact); on revocation it saves first (not when evicted: another member may own the
partitions already) and drops those models from its monitors and ``/metrics`` at once, so no
frozen series remain.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from driftwatch.agent.saved_state import SavedState, restoring
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.settings import Settings
from driftwatch.state.topic import StateTopicStore

log = logging.getLogger(__name__)

__all__ = ["Handover"]


class Handover:
    """Restores and forgets input partitions' state as they come and go (module docstring).

    Both run on kafka-python's IO thread while the loop waits in poll.

    Parameters:
        store: the state topic.
        state: the agent's saved state (its monitors, counts, positions, joins and
            per-partition bookkeeping, which must be there: ``state.partitioned``).
        settings: the join's limits and the Kafka timeouts.
        publish: publishes a fresh snapshot at once (the partitions' models came or went).
        clock: a monotonic clock (a restore is timed: the rebalance waits for it).
    """

    def __init__(self, store: StateTopicStore, state: SavedState, settings: Settings,
                 publish: Callable[[], None], clock: Callable[[], float]) -> None:
        assert state.partitioned is not None, "the handover needs the per-partition state"
        self.store = store
        self.state = state
        self.partitioned = state.partitioned
        self.settings = settings
        self.publish = publish
        self.clock = clock

    def assigned(self, partitions: set[TopicPartition]) -> None:
        """Restore newly assigned partitions' models from the state topic (timed: a
        rebalance waits for it).

        Raises (re-raised from poll, so the agent stops) :class:`~driftwatch.state.topic.
        StateTopicUnavailable` when the topic cannot be read (exit 1: restart and try again)
        and :class:`~driftwatch.state.checkpoint.CheckpointError` when it holds a state that
        cannot be restored (exit 3).
        """
        state = self.state
        started = self.clock()
        restored = self.store.load(partitions)
        states = {model: saved for model, saved in restored.monitors.items()
                  if model not in state.monitors}
        clashes = restored.monitors.keys() - states.keys()
        with restoring("a monitor state in the state topic"):
            state.monitors.restore(states)
        if state.join_shards is not None:
            apart = state.join_shards.apart(partitions)
            if apart:
                log.warning("join: %s assigned without the partition of the same number of "
                            "the other topic: their predictions and labels cannot be joined "
                            "here; give join.predictions_topic and join.labels_topic the same "
                            "partition count", ", ".join(f"{t}[{p}]" for t, p in apart))
            with restoring("a join state in the state topic"):
                state.join_shards.restore(restored.joins, state.join_limits)
        with restoring("a comparison state in the state topic"):
            state.comparisons.restore(restored.comparisons)
        self.partitioned.restored(restored)
        self.partitioned.split |= clashes
        for counts in restored.rejected.values():
            state.rejections.add_partitions(counts, 0)
        state.rejections.add_partitions({}, sum(restored.skipped.values()))
        resumed = {TopicPartition(*tp): o for tp, o in restored.offsets.items()}
        state.positions.take_over(resumed, restored=bool(restored.offsets))
        # The topic holds them: nothing to save yet.
        state.checkpointer.durable.update(resumed)
        took = self.clock() - started
        log.info("restored %d model(s) of %d partition(s) from state topic %s in %.2f s",
                 len(states), len(restored.offsets), self.store.topic, took)
        kafka = self.settings.kafka
        bound_s = min(kafka.session_timeout_ms, kafka.max_poll_interval_ms) / 1000
        if took > bound_s / 2:
            log.warning("restoring took %.1f s, more than half of kafka.session_timeout_ms / "
                        "kafka.max_poll_interval_ms (%.1f s): the rebalance waits for it, and "
                        "past them the group evicts this member; raise both", took, bound_s)
        if restored.split or clashes:
            log.warning("%d model(s) also have events on partitions of other replicas and "
                        "cannot be handed over exactly: %s", len(restored.split | clashes),
                        ", ".join(sorted(restored.split | clashes)[:10]))
        self.publish()

    def revoked(self, partitions: set[TopicPartition], lost: bool) -> None:
        """Save (unless ``lost``: another member may own them already) and forget the
        partitions' models at once, so no frozen series stay on ``/metrics``. Nothing is
        committed here (the consumer cannot commit from its IO thread; the state topic is the
        resume point anyway)."""
        state = self.state
        checkpointer, positions = state.checkpointer, state.positions
        if not lost and positions.offsets != checkpointer.durable:  # else saved already
            offsets = dict(positions.offsets)
            flushed = state.rejections.flush(self.settings.kafka.request_timeout_seconds)
            if flushed and checkpointer.save(lambda: state.payload(offsets), offsets,
                                                 state.saved):
                log.info("saved the state of %d revoked partition(s)", len(partitions))
        gone, rejected, skipped = self.partitioned.drop(partitions)
        state.monitors.drop(gone)
        state.comparisons.drop(gone)
        if state.join_shards is not None:
            state.join_shards.drop(partitions)
        positions.forget(partitions)
        state.rejections.add_partitions(rejected, skipped, sign=-1)
        log.info("dropped %d model(s) of %d %s partition(s)", len(gone), len(partitions),
                 "lost" if lost else "revoked")
        self.publish()
