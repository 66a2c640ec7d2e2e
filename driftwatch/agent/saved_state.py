"""What the agent saves and restores: its checkpoint's payload, the file checkpoint read back,
and the state topic's glue (restore on assignment, save and forget on revocation, the join
kept per input partition).

With the state topic (``checkpoint.backend`` kafka) saves go to a compacted Kafka topic, one
record per model under the input partition its events come from
(:class:`~driftwatch.state.topic.StateTopicStore`). On assignment the agent restores the
new partitions' models from it and resumes each partition where its records say (each model
skipping the records its state already holds, so a save cut short by a crash is still
exact); on revocation it saves first (not when evicted: another member may own the
partitions already) and drops those models from its monitors and ``/metrics`` at once, so no
frozen series remain.

Functions of the :class:`~driftwatch.agent.loop.Agent` they serve, which calls them from its
methods of the same concern; they read and update its state as its methods would.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from driftwatch.core.join import Prediction
from driftwatch.decoding.decoder import Decoded, Rejected
from driftwatch.decoding.joinable import RecordKind, decode_joinable
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.source import Record
from driftwatch.pipeline import UNWATCHED_MODEL
from driftwatch.state.checkpoint import CheckpointError, encode_offsets
from driftwatch.state.topic import StateTopicStore

if TYPE_CHECKING:
    from driftwatch.agent.loop import Agent

log = logging.getLogger(__name__)

__all__ = ["join_by_partition", "payload", "restore_checkpoint", "restore_partitions",
           "revoke_partitions"]

_RESTORE_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError)
"""What restoring a malformed saved state raises (the states are checked as they load)."""


@contextlib.contextmanager
def _restoring(what: str) -> Iterator[None]:
    """Turn a saved state that cannot be restored into a
    :class:`~driftwatch.state.checkpoint.CheckpointError` naming ``what`` (exit 3)."""
    try:
        yield
    except _RESTORE_ERRORS as error:
        raise CheckpointError(f"{what}: {type(error).__name__}: {error}") from error


def payload(agent: Agent, offsets: Mapping[TopicPartition, int]) -> dict[str, Any]:
    """The checkpoint's payload: the monitors' state and the ``offsets`` it covers, the
    rejection and skip counts, the comparisons and the join's pending records (with the state
    topic, one record per model under its input partition, and a join per partition)."""
    if agent.partitioned is not None:
        shards = agent.join_shards
        joins = None if shards is None else {
            shard: (shards.partitions_of(shard), state)
            for shard, state in shards.export_state().items()}
        return agent.partitioned.payload(agent.monitors.export_state(), offsets, joins,
                                         agent.comparisons.export_model)
    plain = {(tp.topic, tp.partition): offset for tp, offset in offsets.items()}
    payload = {"offsets": encode_offsets(plain), "monitors": agent.monitors.export_state(),
               "rejected": dict(agent._rejected),
               "comparisons": agent.comparisons.export_state()}
    if agent._skipped:
        payload["skipped"] = dict(agent._skipped)
    if agent.delayed is not None:  # pending predictions and labels, with the same offsets
        payload["join"] = agent.delayed.export_state()
    return payload


def restore_checkpoint(agent: Agent) -> None:
    """Load the checkpoint into the monitors, positions and rejection counts (nothing
    when there is none).

    Raises :class:`~driftwatch.state.checkpoint.CheckpointError` when the file, or a monitor
    state inside it, cannot be restored: nothing is half-loaded.
    """
    offsets, states, rejected, comparisons = agent.checkpointer.load()
    with _restoring("a monitor state in the checkpoint"):
        agent.monitors.restore(states)
    with _restoring("a comparison state in the checkpoint"):
        agent.comparisons.restore(comparisons)
    join_state = agent.checkpointer.join_state
    if join_state is not None and agent.delayed is not None:
        with _restoring("the join state in the checkpoint"):
            agent.delayed.restore(join_state, **agent.settings.join.limits())
    elif join_state is not None:
        log.warning("the checkpoint holds pending predictions and labels of a join, but "
                    "join is not enabled: they are dropped")
    agent._positions.update(offsets)
    for reason, count in rejected.items():
        agent._rejected[reason] = agent._rejected.get(reason, 0) + count
    for reason, count in agent.checkpointer.skipped.items():
        agent._skipped[reason] = agent._skipped.get(reason, 0) + count
    agent._restored = bool(offsets or states)


def join_by_partition(agent: Agent, record: Record, kind: RecordKind | None) -> None:
    """A prediction or label record through the join of its input partition (with the state
    topic there is one per partition, handed over with it); after a restore a record the
    saved state already holds is skipped (see :mod:`driftwatch.state.topic`)."""
    shards, partitioned = agent.join_shards, agent.partitioned
    assert shards is not None and partitioned is not None
    result = decode_joinable(record.value, record.key, agent._format, agent._join_format,
                             kind, record.timestamp_ms / 1000.0)
    if isinstance(result, Rejected):
        agent._reject(record, result)
        return
    tp = record.topic_partition
    if not partitioned.join_takes(tp, record.offset):
        return  # a replay after a restore: the join's saved state holds it
    delayed = shards.get(tp)
    if isinstance(result, Prediction):
        # Admit the model before its prediction enters the join: pending predictions and
        # label-free watches are bounded by limits.max_models like the monitors.
        monitor = agent.pipeline.admit(result.model, record)
        if monitor is None:
            return
        joined, alarms = delayed.add_prediction(result, monitor.estimate)
        agent._emit(alarms, record)
    else:
        joined = delayed.add_label(result)
    if joined is None:
        partitioned.pending_half(result.event_id, tp, record.offset)
        return
    shard = shards.partitions_of(shards.shard_of(tp))
    if partitioned.take_pair(joined.model, joined.event_id, tp, record.offset, shard):
        agent.pipeline.event(Decoded(joined.model, joined.event()), record.value,
                             record.key, record)


def restore_partitions(agent: Agent, partitions: set[TopicPartition]) -> None:
    """Restore newly assigned partitions' models from the state topic (on kafka-python's
    IO thread, while the loop waits in poll; a rebalance waits for it, so it is timed).

    Raises (re-raised from poll, so the agent stops) :class:`~driftwatch.state.topic.
    StateTopicUnavailable` when the topic cannot be read (exit 1: restart and try again)
    and :class:`~driftwatch.state.checkpoint.CheckpointError` when it holds a state that
    cannot be restored (exit 3).
    """
    assert isinstance(agent.checkpointer.store, StateTopicStore)
    assert agent.partitioned is not None
    started = agent._clock()
    restored = agent.checkpointer.store.load(partitions)
    states = {model: state for model, state in restored.monitors.items()
              if model not in agent.monitors}
    clashes = restored.monitors.keys() - states.keys()
    with _restoring("a monitor state in the state topic"):
        agent.monitors.restore(states)
    if agent.join_shards is not None:
        apart = agent.join_shards.apart(partitions)
        if apart:
            log.warning("join: %s assigned without the partition of the same number of "
                        "the other topic: their predictions and labels cannot be joined "
                        "here; give join.predictions_topic and join.labels_topic the same "
                        "partition count", ", ".join(f"{t}[{p}]" for t, p in apart))
        with _restoring("a join state in the state topic"):
            agent.join_shards.restore(restored.joins, agent.settings.join.limits())
    with _restoring("a comparison state in the state topic"):
        agent.comparisons.restore(restored.comparisons)
    agent.partitioned.restored(restored)
    agent.partitioned.split |= clashes
    for counts in restored.rejected.values():
        for reason, count in counts.items():
            agent._rejected[reason] = agent._rejected.get(reason, 0) + count
    if agent._skipped:
        agent._skipped[UNWATCHED_MODEL] += sum(restored.skipped.values())
    resumed = {TopicPartition(*tp): o for tp, o in restored.offsets.items()}
    agent._positions.update(resumed)
    agent.checkpointer.durable.update(resumed)  # the topic holds them: nothing to save yet
    agent._restored = agent._restored or bool(restored.offsets)
    took = agent._clock() - started
    log.info("restored %d model(s) of %d partition(s) from state topic %s in %.2f s",
             len(states), len(restored.offsets), agent.checkpointer.store.topic, took)
    kafka = agent.settings.kafka
    bound_s = min(kafka.session_timeout_ms, kafka.max_poll_interval_ms) / 1000
    if took > bound_s / 2:
        log.warning("restoring took %.1f s, more than half of kafka.session_timeout_ms / "
                    "kafka.max_poll_interval_ms (%.1f s): the rebalance waits for it, and "
                    "past them the group evicts this member; raise both", took, bound_s)
    if restored.split or clashes:
        log.warning("%d model(s) also have events on partitions of other replicas and "
                    "cannot be handed over exactly: %s", len(restored.split | clashes),
                    ", ".join(sorted(restored.split | clashes)[:10]))
    agent._publish_snapshot(force=True)


def revoke_partitions(agent: Agent, partitions: set[TopicPartition], lost: bool) -> None:
    """Save (unless ``lost``: another member may own them already) and forget the
    partitions' models at once, so no frozen series stay on ``/metrics``. On
    kafka-python's IO thread, while the loop waits in poll; nothing is committed here
    (the consumer cannot commit from its IO thread; the state topic is the resume
    point anyway)."""
    assert agent.partitioned is not None
    if not lost and agent._positions != agent.checkpointer.durable:  # else saved already
        offsets = dict(agent._positions)
        timeout_s = agent.settings.kafka.request_timeout_seconds
        flushed = agent.dead_letter is None or agent.dead_letter.flush(timeout_s)
        if flushed and agent.checkpointer.save(lambda: payload(agent, offsets), offsets):
            log.info("saved the state of %d revoked partition(s)", len(partitions))
    gone, rejected, skipped = agent.partitioned.drop(partitions)
    agent.monitors.drop(gone)
    agent.comparisons.drop(gone)
    if agent.join_shards is not None:
        agent.join_shards.drop(partitions)
    for tp in partitions:
        agent._positions.pop(tp, None)
        agent._last_timestamp_ms.pop(tp, None)
    for reason, count in rejected.items():
        agent._rejected[reason] = agent._rejected.get(reason, 0) - count
    if agent._skipped:
        agent._skipped[UNWATCHED_MODEL] -= skipped
    log.info("dropped %d model(s) of %d %s partition(s)", len(gone), len(partitions),
             "lost" if lost else "revoked")
    agent._publish_snapshot(force=True)
