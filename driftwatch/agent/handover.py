"""The state topic's handover of input partitions between replicas: restore on assignment,
save and forget on revocation.

With the state topic (``checkpoint.backend`` kafka) saves go to a compacted Kafka topic, one
record per model under the input partition its events come from
(:class:`~driftwatch.state.topic.StateTopicStore`). On assignment the agent restores the
new partitions' models from it and resumes each partition where its records say (each model
skipping the records its state already holds, so a save cut short by a crash is still
exact); on revocation it saves first, for at most :data:`REVOKE_SAVE_S` (not when
evicted: another member may own the partitions already), and drops those models from its
monitors and ``/metrics`` at once, so no frozen series remain. What it drops is kept until
the next assignment, which takes the partitions it gives back from memory instead of the
topic (:mod:`driftwatch.agent.kept`: under an eager assignor most come straight back).

**The restore runs in the loop, not in the rebalance.** The rebalance callback only queues
the new partitions (:meth:`Handover.queue`; the source holds them paused). Between polls the
loop gives the restore a slice of at most about :data:`RESTORE_SLICE_S` of work
(:meth:`Handover.step`): reading the state partitions a poll at a time, parsing their records,
then rebuilding the monitors a few at a time, aside. Only when a restore is complete are its
models, joins, counts and positions taken over at once, and the partitions resumed where the
state says; meanwhile the other partitions are read, heartbeats and scrapes go on, and
``/readyz`` names the partitions still restoring. A partition revoked (or lost) before its
restore finished leaves nothing behind: no model on ``/metrics``, no position, nothing saved.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from driftwatch.agent.heap import settle
from driftwatch.agent.kept import Kept
from driftwatch.agent.saved_state import SavedState, restoring
from driftwatch.core.monitor import Monitor, Snapshot
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.settings import Settings
from driftwatch.state.topic import Restored, StateRead, StateTopicStore

log = logging.getLogger(__name__)

__all__ = ["RESTORE_SLICE_S", "REVOKE_SAVE_S", "Handover"]

RESTORE_SLICE_S = 0.1
"""Work per restore slice between two polls. A slice overruns it by at most one unit of work
(a poll of the state partitions of at most 50 ms, one record's parse or one monitor's
rebuild: about 1–3 ms at d = 1 000), so the loop pauses for well under the 0.5 s target,
while restoring 1 250 models at d = 1 000 takes a few dozen slices. After each slice the
heap is settled (:func:`~driftwatch.agent.heap.settle`): otherwise the cyclic collector's
full passes over the growing parsed states, each longer than a slice, would be the loop's
longest pauses."""


REVOKE_SAVE_S = 0.5
"""The longest a revoke's save exports models for. The save runs inside the rebalance
callback, where under an eager assignor the whole group waits for it, and past
``kafka.max_poll_interval_ms`` (the rebalance timeout, 5 s by default) the member misses the
generation (one more rebalance) or is evicted. Exporting takes about 1 ms per model at
d = 1 000, so 5 000 busy models took 5-6 s. Cut short at the loop pause target (0.5 s), a
save writes no joins or metas, and the partitions' next owner resumes from their last
complete save: at most about one save interval (``checkpoint.interval_seconds``, stretched
for large states) of records to replay, which costs less than writing them when a model
took fewer than about 90 events since (11 µs a record against 1 ms a model)."""


@dataclass(slots=True)
class _Restore:
    """One assignment's partitions on their way in: the read, then the monitors rebuilt."""

    partitions: frozenset[TopicPartition]
    reading: StateRead | None
    """None for partitions given back (:mod:`driftwatch.agent.kept`): nothing to read."""
    queued: float
    restored: Restored | None = None
    states: Iterator[tuple[str, dict[str, Any]]] | None = None
    built: dict[str, Monitor] = field(default_factory=dict)
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    kept: Kept | None = None
    """What a revoke kept of partitions given back (their durable offsets and record
    times); None: restored from what was read."""

    def close(self) -> None:
        if self.reading is not None:
            self.reading.close()


class Handover:
    """Restores and forgets input partitions' state as they come and go (module docstring).

    :meth:`queue` and :meth:`revoked` run on kafka-python's IO thread while the loop waits in
    poll; :meth:`step` on the loop's thread between polls, so they never overlap.

    Parameters:
        store: the state topic.
        state: the agent's saved state (its monitors, counts, positions, joins and
            per-partition bookkeeping, which must be there: ``state.partitioned``).
        settings: the join's limits and the Kafka timeouts.
        publish: publishes the latest snapshots at once (the partitions' models came or
            went).
        clock: a monotonic clock (a restore is timed).
        revoke_save_s: the longest a revoke's save exports models for
            (:data:`REVOKE_SAVE_S`).
    """

    def __init__(self, store: StateTopicStore, state: SavedState, settings: Settings,
                 publish: Callable[[], None], clock: Callable[[], float], *,
                 revoke_save_s: float = REVOKE_SAVE_S) -> None:
        assert state.partitioned is not None, "the handover needs the per-partition state"
        self.store = store
        self.state = state
        self.partitioned = state.partitioned
        self.settings = settings
        self.publish = publish
        self.clock = clock
        self.revoke_save_s = revoke_save_s
        self._queue: list[_Restore] = []
        self._kept: Kept | None = None
        """What the last revoke dropped, until the next assignment (:meth:`queue`)."""
        kafka = settings.kafka
        self.keeps = kafka.assignment_strategy != "cooperative-sticky"
        """Whether a revoke keeps what it drops: under an eager assignor only (a
        cooperative revoke names only partitions that move to another member)."""
        self.kept_for_s = (kafka.max_poll_interval_ms + kafka.session_timeout_ms) / 1000
        """How long a revoke's partitions are kept: the longest an eager rebalance this
        member takes part in can last (the JoinGroup waits up to the rebalance timeout,
        ``max_poll_interval_ms``, for the other members; a member slower than a session
        timeout besides was left out of it, and its partitions may have been read far
        past its positions since)."""
        self.last_restore_seconds_per_partition: float | None = None
        """From assignment to resumption, per partition, of the last restore completed."""

    @property
    def restoring(self) -> frozenset[TopicPartition]:
        """The partitions assigned whose restore is not complete."""
        return frozenset(tp for job in self._queue for tp in job.partitions)

    def queue(self, partitions: set[TopicPartition]) -> None:
        """Queue newly assigned partitions for :meth:`step` (cheap: no I/O). Those the last
        revoke kept are given back from memory (:mod:`driftwatch.agent.kept`); what it kept
        of the others is forgotten (so is all it kept, by :meth:`forget_stale`, when no
        assignment comes within :attr:`kept_for_s`). The rest
        are restored together, as one :meth:`~driftwatch.state.topic.StateTopicStore.load`
        would: a model whose events come from several of them is restored whole, and each
        partition resumes below every model's covers (docs/state.md)."""
        self.forget_stale()
        kept, self._kept = self._kept, None
        if kept is not None and partitions & kept.partitions:
            back = kept.given_back(partitions)
            given = frozenset(tp for tp in partitions if tp in back.partitions)
            partitions = partitions - given
            self._queue.append(_Restore(
                given, None, self.clock(), restored=back.restored,
                states=iter(()), built=back.monitors, snapshots=back.snapshots,
                kept=back))
        if partitions:
            self._queue.append(_Restore(frozenset(partitions),
                                        self.store.restoring(partitions), self.clock()))

    def step(self, budget_s: float) -> frozenset[TopicPartition] | None:
        """About ``budget_s`` seconds of the first queued restore. When it completes, its
        state is taken over (positions included: where each partition resumes) and its
        partitions are returned; None until then.

        Raises :class:`~driftwatch.state.topic.StateTopicUnavailable` when the topic cannot be
        read (exit 1: restart and try again) and :class:`~driftwatch.state.checkpoint.
        CheckpointError` when it holds a state that cannot be restored (exit 3).
        """
        if not self._queue:
            return None
        try:
            return self._step(budget_s)
        finally:
            # The parsed states and the monitors built from them are long-lived: frozen,
            # the collector's full passes (0.1-0.5 s each over 1 250 models' windows) skip
            # them.
            settle()

    def _step(self, budget_s: float) -> frozenset[TopicPartition] | None:
        job = self._queue[0]
        deadline = time.monotonic() + budget_s
        if job.restored is None:
            assert job.reading is not None
            if not job.reading.step(budget_s):
                return None
            job.restored = job.reading.result
            assert job.restored is not None
            job.states = iter(job.restored.monitors.items())
        assert job.states is not None
        monitors = self.state.monitors
        with restoring("a monitor state in the state topic"):
            for model, saved in job.states:
                monitor = job.built[model] = monitors.built({model: saved})[model]
                # The publish at the end shows it.
                job.snapshots[model] = monitors.snapshot_of(monitor)
                if time.monotonic() >= deadline:
                    return None
        self._queue.pop(0)
        self._take_over(job)
        took = self.clock() - job.queued
        self.last_restore_seconds_per_partition = took / len(job.partitions)
        if job.reading is None:
            log.info("kept %d model(s) of %d partition(s) assigned back in %.2f s: taken "
                     "over from memory, not restored", len(job.built), len(job.partitions),
                     took)
        else:
            log.info("restored %d model(s) of %d partition(s) from state topic %s in %.2f s",
                     len(job.built), len(job.restored.offsets), self.store.topic, took)
        return job.partitions

    def forget_stale(self) -> None:
        """Forget what a revoke kept once no assignment gave it back within
        :attr:`kept_for_s` (cheap: for every loop pass)."""
        if self._kept is not None and self.clock() - self._kept.since > self.kept_for_s:
            log.info("forgot the %d model(s) kept of %d revoked partition(s): not assigned "
                     "back within %.0f s", len(self._kept.monitors),
                     len(self._kept.partitions), self.kept_for_s)
            self._kept = None

    def assigned(self, partitions: set[TopicPartition]) -> None:
        """Restore ``partitions`` at once, in one go (a source that cannot hold partitions
        while they restore: the in-memory and file sources, tests)."""
        self.queue(partitions)
        while self.step(math.inf) is None and self._queue:
            pass

    def _keep(self, partitions: set[TopicPartition], positions: dict[TopicPartition, int]
              ) -> Kept | None:
        """Take what a revoke of ``partitions`` drops out of the live state, for the next
        assignment to give back (:mod:`driftwatch.agent.kept`); None when it cannot be kept
        exactly: a join while a restore's replay is under way on them."""
        state, partitioned, shards = self.state, self.partitioned, self.state.join_shards
        if shards is not None and partitioned.replaying(partitions):
            return None
        joins = {} if shards is None else {
            shard: shards.partitions_of(shard) for shard in shards.shards
            if any(tp in partitions for tp in shards.partitions_of(shard))}
        restored = partitioned.kept(partitions, positions, joins)
        comparisons: dict[str, Any] = {}
        for model in restored.homes:
            comparisons.update(state.comparisons.export_model(model))
        restored = replace(restored, comparisons=comparisons, joins={} if shards is None else {
            shard: shards.shards[shard].export_state() for shard in restored.join_covers
            if shard in shards.shards})
        monitors, snapshots = state.monitors.take(restored.homes)
        durable = state.checkpointer.durable
        return Kept(restored, self.clock(), monitors, snapshots,
                    {tp: durable[tp] for tp in restored.offsets if tp in durable},
                    {tp: stamp for tp, stamp in state.positions.timestamps_ms.items()
                     if tp in restored.offsets})

    def _save_leaving(self, partitions: set[TopicPartition],
                      everywhere: dict[TopicPartition, int],
                      offsets: dict[TopicPartition, int]) -> None:
        """Save the leaving ``partitions`` (at ``offsets``) within :attr:`revoke_save_s`
        (:meth:`~driftwatch.agent.checkpointer.Checkpointer.save_some`)."""
        state = self.state
        models = list(state.unsaved(partitions))
        started = self.clock()
        saved = state.checkpointer.save_some(
            lambda: state.snapshot(everywhere, partitions), offsets, models,
            lambda names: state.export(names, everywhere), budget_s=self.revoke_save_s)
        took = self.clock() - started
        if saved:
            log.info("saved the state of %d revoked partition(s) in %.2f s: %d model(s)",
                     len(partitions), took, len(models))
        elif saved is None:
            log.info("saved the state of %d revoked partition(s) cut short after %.2f s "
                     "(%d moved model(s) to write, more than fit in %.2g s): their next "
                     "owner resumes from their last complete save and replays from there",
                     len(partitions), took, len(models), self.revoke_save_s)

    def close(self) -> None:
        """Drop the restores not complete and what a revoke kept (the agent stops): nothing
        of them was taken over."""
        for job in self._queue:
            job.close()
        self._queue.clear()
        self._kept = None

    def _take_over(self, job: _Restore) -> None:
        """Adopt a complete restore at once: models, joins, comparisons, counts, positions."""
        partitions, restored, built = job.partitions, job.restored, job.built
        assert restored is not None
        state = self.state
        states = {model: monitor for model, monitor in built.items()
                  if model not in state.monitors}
        clashes = built.keys() - states.keys()
        state.monitors.add(states, job.snapshots)
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
        # What the topic holds of them: read, or as the last complete save left it.
        if job.kept is None:
            state.checkpointer.durable.update(resumed)
        else:
            state.positions.timestamps_ms.update(job.kept.timestamps_ms)
            state.checkpointer.durable.update(job.kept.durable)
        if restored.split or clashes:
            log.warning("%d model(s) also have events on partitions of other replicas and "
                        "cannot be handed over exactly: %s", len(restored.split | clashes),
                        ", ".join(sorted(restored.split | clashes)[:10]))
        self.publish()

    def revoked(self, partitions: set[TopicPartition], lost: bool) -> None:
        """Save (unless ``lost``: another member may own them already) and forget the
        partitions' models at once, so no frozen series stay on ``/metrics``; unless lost,
        what is forgotten is kept for the next assignment to give back
        (:mod:`driftwatch.agent.kept`). Nothing is committed here (the consumer cannot
        commit from its IO thread; the state topic is the resume point anyway). A restore
        of any of them not complete is dropped (nothing of it was taken over, so nothing is
        saved, kept or left on ``/metrics``); its other partitions are queued again, to be
        read afresh."""
        for job in [job for job in self._queue if job.partitions & partitions]:
            self._queue.remove(job)
            job.close()
            log.info("restore of %s dropped: %s %s before it was complete",
                     sorted(job.partitions), sorted(job.partitions & partitions),
                     "lost" if lost else "revoked")
            self.queue(set(job.partitions - partitions))
        state = self.state
        positions = state.positions
        everywhere = dict(positions.offsets)  # a model's covers name all its partitions
        offsets = {tp: offset for tp, offset in everywhere.items() if tp in partitions}
        durable = state.checkpointer.durable
        # Only the leaving partitions: under cooperative rebalancing the others stay, and
        # their records on the topic are a consistent state as they are.
        if not lost and any(durable.get(tp) != offset for tp, offset in offsets.items()) \
                and state.rejections.flush(self.settings.kafka.request_timeout_seconds):
            self._save_leaving(partitions, everywhere, offsets)
        self._kept = None if lost or not self.keeps else self._keep(partitions, everywhere)
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
