"""The agent: Kafka records in, per-model monitors, Prometheus metrics and alarms out.

The loop is the whole program and reads in a few lines (:meth:`Agent.run`): poll a batch,
take each record through the one processing step :mod:`driftwatch.replay` shares
(:class:`~driftwatch.pipeline.Pipeline`: decode, route to its model's monitor, alarms), note
the record's offset, then maybe checkpoint (and commit). Every concern lives in its own
object: the source (:class:`~driftwatch.kafka.source.KafkaSource` by default: group membership,
offsets, backoff; any :class:`~driftwatch.sources.protocol.Source`, such as a
:class:`~driftwatch.sources.memory.MemorySource`, when injected),
:class:`~driftwatch.pipeline.Monitors` (one pure :class:`~driftwatch.core.monitor.Monitor`
per model, bounded), :class:`~driftwatch.agent.checkpointer.Checkpointer` (state + offsets on
disk, when, and what is durable), :class:`~driftwatch.agent.readiness.Readiness` (``/readyz``
without flapping), :class:`~driftwatch.sinks.alarms.AlarmLog`, and the exporter, which only ever
reads the immutable :class:`~driftwatch.sinks.prometheus.collector.AgentSnapshot` the loop publishes
(:mod:`driftwatch.agent.publish`). What the agent opens at start is
:mod:`driftwatch.agent.start`; where each partition resumes,
:mod:`driftwatch.agent.positions`; what it saves and restores,
:mod:`driftwatch.agent.saved_state`, and the state topic's handover,
:mod:`driftwatch.agent.handover`.

The invariants the loop keeps (each case, word for word:
docs/running.md#lifecycle-and-failure-behaviour-case-by-case): the saved state (file or
state topic) is the only resume point, and offsets are committed only right after a save
succeeds and only those it covers, so a committed offset never passes durable state and every
record enters its monitor exactly once across crashes and handovers; a failing save is
retried, counted, makes ``/readyz`` 503 and is never followed by a commit; nothing is saved
unless records were processed since the last save; at a stop the agent flushes the
dead-letter producer, saves, then commits (a crash between them re-delivers, never loses),
and :class:`NeverReady` names the problem of an agent stopped before it was ever ready. Bad
records and models beyond ``limits.max_models`` are counted, dead-lettered (with a topic), skipped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from driftwatch.agent.checkpointer import Checkpointer, checkpoint_store
from driftwatch.agent.comparisons import Comparisons
from driftwatch.agent.handover import RESTORE_SLICE_S, Handover
from driftwatch.agent.heap import release, settle
from driftwatch.agent.join_shards import record_joins
from driftwatch.agent.positions import BEYOND_LOG_END, Positions
from driftwatch.agent.publish import SnapshotPublisher, lag_seconds
from driftwatch.agent.readiness import Readiness
from driftwatch.agent.rejections import Rejections
from driftwatch.agent.saved_state import SavedState
from driftwatch.agent.start import SourceFactory, start
from driftwatch.core.monitor import Alarm, Monitor
from driftwatch.decoding.decoder import REJECTION_REASONS, Decoded, Rejected
from driftwatch.decoding.joinable import JOIN_REJECTION_REASONS, RecordKind
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.producers import AlarmPublisher
from driftwatch.kafka.source import KafkaSource, Record
from driftwatch.pipeline import (
    TOO_MANY_MODELS,
    UNWATCHED_MODEL,
    DeadLetterSink,
    Hooks,
    Monitors,
    Pipeline,
)
from driftwatch.settings import Settings
from driftwatch.sinks.alarms import AlarmLog
from driftwatch.sinks.prometheus.families import normalized_shown
from driftwatch.sinks.prometheus.server import MetricsServer
from driftwatch.sinks.snapshot import (
    LOOP_PAUSE_SECONDS_BUCKETS,
    AgentSnapshot,
    LatencyHistogram,
    Operations,
)
from driftwatch.sources import Source
from driftwatch.state.checkpoint import CheckpointSaveError
from driftwatch.state.topic import StateTopicStore

log = logging.getLogger(__name__)

__all__ = ["BEYOND_LOG_END", "TOO_MANY_MODELS", "UNWATCHED_MODEL", "Agent", "Monitors",
           "SourceFactory"]


SNAPSHOT_INTERVAL_S = 1.0
"""How often the loop publishes a fresh snapshot for scrapes. Prometheus scrapes every 15 s
or so; a snapshot costs one normalization per measure and changed model (tens of µs each)."""

LONG_PAUSE_S = 0.5
"""A loop pause (the time between two polls) longer than this, issue 25's target, is logged
with where its time went and how much of it the loop's thread ran, so that a pause the
histogram ``driftwatch_loop_pause_seconds`` shows can be traced to its part, or to a machine
that gave the loop no core (a pause of little CPU)."""

FINAL_SAVE_ATTEMPTS = 3
FINAL_SAVE_RETRY_S = 0.5
"""On the way out a failed save is tried again after 0.5 s and 1 s: a passing hiccup (an
NFS server failing over) does not cost a replay, and the stop stays within seconds."""


class NeverReady(Exception):
    """The agent was stopped before it was ever ready, while its source named a problem (the
    brokers unreachable, a topic missing): ``str()`` is that problem. Nothing was consumed,
    saved or committed in this run, so nothing is lost; ``driftwatch run`` exits 1."""


class Agent:
    """Wires a source, the monitors, the exporter and the checkpoints; see the module doc.

    Parameters:
        settings: what to consume, monitor and serve.
        on_alarm: called with each alarm after it is logged (and published), on the loop's
            thread, so it must be quick; an exception it raises is logged, never raised into
            the loop. For an embedding program (the demo prints alarms as they fire).
        snapshot_interval_s: how often the loop publishes :attr:`snapshot`. An embedding
            program that shows live values next to live alarms may want it shorter.
        source: builds the record source (:data:`SourceFactory`); None: the
            :class:`~driftwatch.kafka.source.KafkaSource` the ``kafka`` settings describe. A
            :class:`~driftwatch.sources.memory.MemorySource` runs the loop without a broker.
        dead_letter: where rejected records go; None: the ``kafka.dead_letter_topic``
            producer when that is set, else nowhere.
        wall_clock, clock: Unix time and a monotonic clock, replaceable in tests.

    What it composes, each owning its state: :attr:`positions` (offsets per partition),
    :attr:`rejections` (counts, dead letters), :attr:`checkpointer` (when to save, what is
    durable) and :attr:`saved_state` (what a save holds), :attr:`handover` (the state
    topic's partitions coming and going; None with a file), :attr:`readiness`,
    :attr:`publisher` (the snapshot ``/metrics`` shows) and :attr:`pipeline` (the record
    path shared with replay).

    Raises:
        CheckpointDirectoryError: checkpointing is enabled and its directory cannot be
            written (found here, before anything is consumed).
    """

    def __init__(self, settings: Settings, *, on_alarm: Callable[[Alarm], None] | None = None,
                 snapshot_interval_s: float = SNAPSHOT_INTERVAL_S,
                 wall_clock: Callable[[], float] = time.time,
                 clock: Callable[[], float] = time.monotonic,
                 source: SourceFactory | None = None,
                 dead_letter: DeadLetterSink | None = None) -> None:
        self.settings = settings
        self.on_alarm = on_alarm
        self._clock = clock
        self._wall_clock = wall_clock
        self._injected = (source, dead_letter)
        fmt = settings.events.event_format()
        self.monitors = Monitors(
            settings.monitoring.monitor_config, settings.limits.max_models,
            normalized_shown(settings.metrics.per_model, settings.metrics.per_model_overrides))
        self.comparisons = Comparisons(settings.comparison_configs(), fmt)
        store = checkpoint_store(settings)
        self.checkpointer = Checkpointer(store, settings.checkpoint.interval_seconds, clock,
                                         wall_clock=wall_clock)
        self.readiness = Readiness(settings.readiness.not_ready_after_seconds,
                                   settings.readiness.ready_after_seconds, clock)
        self.publisher = SnapshotPublisher(wall_clock(), snapshot_interval_s, clock, wall_clock)
        self.positions = Positions()
        self._batch_seconds = LatencyHistogram()
        self._loop_pauses = LatencyHistogram(LOOP_PAUSE_SECONDS_BUCKETS)
        self._ready = False
        # Predictions and labels as separate records (settings ``join``): one join, or with
        # the state topic one per input partition (to be handed over with it); None when
        # records come joined.
        join = settings.join
        self.delayed, self.join_shards, self.partitioned, joins = record_joins(
            settings, state_topic=isinstance(store, StateTopicStore))
        self._kinds: dict[str, RecordKind] = {}
        if join.enabled and join.predictions_topic is not None and \
                join.labels_topic is not None:
            self._kinds = {join.predictions_topic: "prediction", join.labels_topic: "label"}
        self.rejections = Rejections(
            (*REJECTION_REASONS, TOO_MANY_MODELS, *(JOIN_REJECTION_REASONS if join.enabled
                                                   else ())),
            skips=bool(settings.events.only_models), partitioned=self.partitioned,
            clock=clock)
        self.saved_state = SavedState(
            self.checkpointer, self.monitors, self.comparisons, self.rejections,
            self.positions, delayed=self.delayed, join_shards=self.join_shards,
            partitioned=self.partitioned, join_limits=join.limits())
        self.handover = None if not isinstance(store, StateTopicStore) else Handover(
            store, self.saved_state, settings, self._publish_latest, clock)
        self.source: Source[Record] | None = None
        self.alarm_publisher: AlarmPublisher | None = None
        self.alarms = AlarmLog(logging.getLogger("driftwatch.alarms"))
        self.metrics_server: MetricsServer | None = None
        # The one processing step (decode, route, monitor, alarms), shared with replay.
        hooks: Hooks[Record] = Hooks(
            self._emit, self._rejected_by, on_event=self._compare,
            observe_all=bool(self.comparisons), on_skip=self._skip,
            accept=None if self.partitioned is None or self.join_shards is not None
            else self._take)
        self.pipeline: Pipeline[Record] = Pipeline(
            fmt, self.monitors, hooks, only_models=settings.events.only_models,
            join=joins)

    @property
    def dead_letter(self) -> DeadLetterSink | None:
        """Where rejected records go (known once the agent starts)."""
        return self.rejections.dead_letter

    @dead_letter.setter
    def dead_letter(self, sink: DeadLetterSink | None) -> None:
        self.rejections.dead_letter = sink

    # -- the loop ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Consume until ``stop`` is set; then checkpoint, commit and close everything.

        Raises:
            CheckpointSaveError: the checkpoint could not be saved on the way out; nothing
                was committed (everything is closed all the same).
            NeverReady: stopped before it was ever ready, while the source named a problem.
            BrokerRefused: the brokers refuse the agent's settings (TLS, SASL, an ACL).
        """
        with ExitStack() as resources:
            resources.callback(release)  # last: what the run froze may be collected again
            source = self._start(resources)
            while not stop.is_set():
                records = source.poll()
                polled, polled_cpu = self._clock(), time.thread_time()
                processed = polled
                if records:
                    self.process_batch(records)
                    processed = self._clock()
                    self._batch_seconds.observe(processed - polled)
                self._restore_slice()
                restored = self._clock()
                self._update_readiness()
                self._publish_snapshot()
                published = self._clock()
                if self.checkpointer.due() or self.checkpointer.sliced is not None:
                    self.checkpoint(whole=False)
                ended = self._clock()
                self._loop_pauses.observe(ended - polled)
                if ended - polled > LONG_PAUSE_S:
                    log.info("the loop paused %.2f s between two polls: %d record(s) %.2f s, "
                             "restore %.2f s, publish %.2f s, save %.2f s; its thread ran "
                             "%.2f s of it (the rest it waited: for a core, the GIL or I/O)",
                             ended - polled, len(records), processed - polled,
                             restored - processed, published - restored, ended - published,
                             time.thread_time() - polled_cpu)
            log.info("stopping: %s", "nothing consumed since the last save, so nothing to save"
                     if self.positions.offsets == self.checkpointer.durable else
                     "saving a checkpoint and committing the offsets it covers")
            saved = self._final_checkpoint(source)
            problem = None if self.readiness.ever_ready else source.problem
            # Leaving the ExitStack closes the source (without committing), the producers
            # and the metrics server, in reverse order of their start.
        if not saved:
            raise CheckpointSaveError(
                f"the final checkpoint could not be saved ({self.checkpointer.last_error}); "
                "no offset was committed, so the records since the last saved checkpoint "
                "will be read again at the next start"
            )
        if problem is not None:
            raise NeverReady(problem)
        log.info("stopped")

    def process(self, record: Record) -> None:
        """Decode one record and give its event to its model's monitor (or count a rejection)."""
        self.process_batch((record,))

    def process_batch(self, records: Sequence[Record]) -> None:
        """Process a batch as :meth:`process` does each record: the record through the
        pipeline (decode, route, monitor, alarms), then its offset noted. The loop's hot
        path: one partition tuple per run of records of the same partition, not per record."""
        positions, timestamps = self.positions.offsets, self.positions.timestamps_ms
        pipeline = self.pipeline
        joined = pipeline.join is not None
        tp = TopicPartition("", -1)
        for record in records:
            if record.partition != tp.partition or record.topic != tp.topic:
                tp = TopicPartition(record.topic, record.partition)
            offset = record.offset
            expected = positions.get(tp)
            if expected is not None and offset < expected:
                self.positions.reset_seen(record, expected)
                if self.partitioned is not None:
                    self.partitioned.reset(tp)
            if joined:
                self._joinable(record)
            else:
                pipeline.record(record.value, record.key, record)
            positions[tp] = offset + 1
            timestamps[tp] = record.timestamp_ms

    def checkpoint(self, *, whole: bool = True) -> bool:
        """Save a checkpoint of everything processed so far, then commit exactly its offsets.

        The order is what keeps the promises: dead letters of the processed records are
        flushed first (a checkpoint never passes a record whose dead letter may be lost), the
        state is saved, and only a save that succeeded is followed by a commit. Nothing
        processed since the last save (or the restore): no save, the offsets it covers are
        committed. Returns True when the checkpoint was saved or nothing needed saving (the
        commit is best effort: a failed one is counted, and the next save's commit carries
        newer offsets).

        With the state topic and not ``whole`` (the loop's saves), the save is sliced
        (:mod:`driftwatch.agent.sliced_save`): the first call takes its snapshot, each call
        moves it on by a slice, and the call that finds it done commits its snapshot's
        offsets (True also while it is under way, and when a rebalance made it void: the
        next call begins another). ``whole`` (the last save, a test) saves
        at once, dropping a sliced save under way.
        """
        checkpointer = self.checkpointer
        if checkpointer.sliced is not None and not whole:
            return self._advance_sliced()
        offsets = dict(self.positions.offsets)
        if self._saved_all:
            checkpointer.nothing_to_save()  # the module docstring: nothing consumed
            if self.source is not None:
                self.source.commit(offsets)
            return True
        timeout_s = self.settings.kafka.request_timeout_seconds
        if not self.rejections.flush(timeout_s):
            log.warning("dead letters not delivered within %.0f s: checkpoint and commit "
                        "postponed", timeout_s)
            checkpointer.postpone(checkpointer.interval_s)
            return False
        partitioned = self.partitioned
        if not whole and partitioned is not None and self._saves_sliced:
            models = list(self.saved_state.unsaved())
            if not checkpointer.begin(lambda: self.saved_state.snapshot(offsets), offsets,
                                      models, partitioned.writer):
                self._update_readiness()
                return False
            return self._advance_sliced()
        saved = checkpointer.save(lambda: self._payload(offsets), offsets,
                                  self.saved_state.saved)
        self._update_readiness()
        if not saved:
            return False
        if self.source is not None:
            self.source.commit(self.checkpointer.durable)
        return True

    @property
    def _saved_all(self) -> bool:
        """Whether the last durable save holds everything processed: no record since, no
        save under way or failing."""
        checkpointer = self.checkpointer
        return checkpointer.sliced is None and not checkpointer.failing \
            and self.positions.offsets == checkpointer.durable

    def _advance_sliced(self) -> bool:
        """Move the sliced save on by a slice; commit its offsets once it is done."""
        checkpointer, partitioned = self.checkpointer, self.partitioned
        sliced = checkpointer.sliced
        assert sliced is not None and partitioned is not None
        done = checkpointer.advance(
            lambda models: self.saved_state.export(models, self.positions.offsets),
            partitioned.writer)
        if done is None:
            return True
        self._update_readiness()
        if not done:
            return False
        partitioned.saved(sliced.exported, sliced.writer)
        if self.source is not None:
            self.source.commit(checkpointer.durable)
        return True

    @property
    def snapshot(self) -> AgentSnapshot:
        """The latest snapshot, the one ``/metrics`` shows: immutable, so any thread may read
        it. The loop replaces it about every ``snapshot_interval_s`` seconds (less often
        at thousands of busy models: :mod:`driftwatch.agent.publish`)."""
        return self.publisher.snapshot

    @property
    def ready(self) -> bool:
        """What ``/readyz`` answers: the broker side is ready (with the hysteresis of
        :class:`Readiness`) and the last checkpoint save, if any failed, was retried
        successfully. Any thread may read it. Read from the published snapshot, as
        ``driftwatch_ready`` and the reasons of a 503 are, so the three never disagree (the
        loop publishes a readiness change at once)."""
        return self.publisher.snapshot.ready

    # -- parts ------------------------------------------------------------------------------

    def _payload(self, offsets: Mapping[TopicPartition, int]) -> dict[str, Any]:
        return self.saved_state.payload(offsets)

    def _joinable(self, record: Record) -> None:
        """A prediction or label record through the join: its kind from its topic (or its
        kind field), its time from the record when its value has none. With the state topic
        there is a join per input partition (:class:`~driftwatch.agent.join_shards.
        PartitionedJoin`)."""
        kind = self._kinds.get(record.topic)
        assert self.pipeline.join is not None
        if kind is None and self.pipeline.join.format.kind_field is None:
            self.rejections.reject(record, Rejected(
                "bad_kind", f"topic {record.topic!r} is neither join.predictions_topic nor "
                "join.labels_topic"))
            return
        self.pipeline.joinable(record.value, record.key, record, kind,
                               record.timestamp_ms / 1000.0)

    def _emit(self, alarms: list[Alarm], record: Record) -> None:
        for alarm in alarms:
            self.alarms.emit(alarm)
            if self.on_alarm is not None:
                self._notify(alarm)

    def _rejected_by(self, rejected: Rejected, value: bytes | None, record: Record) -> None:
        self.rejections.reject(record, rejected)

    def _compare(self, monitor: Monitor, decoded: Decoded, value: bytes | None,
                 key: bytes | None, record: Record) -> None:
        self.comparisons.feed(value, key, decoded)

    def _take(self, model: str, record: Record) -> bool:
        """Whether the model's monitor takes the record's event: not when the model's state,
        restored from the state topic, already holds it (a replay after a restore)."""
        assert self.partitioned is not None
        return self.partitioned.take(model, TopicPartition(record.topic, record.partition),
                                     record.offset)

    def _skip(self, model: str, record: Record) -> None:
        self.rejections.skip(record)

    @property
    def _saves_sliced(self) -> bool:
        """Whether saves go to the state topic in slices (:meth:`checkpoint`)."""
        return self.partitioned is not None and isinstance(self.checkpointer.store,
                                                           StateTopicStore)

    def _final_checkpoint(self, source: Source[Record]) -> bool:
        if self._saves_sliced and isinstance(source, KafkaSource) and source.holds_assigned:
            return self._final_sliced(source)
        for attempt in range(FINAL_SAVE_ATTEMPTS):
            if attempt:
                time.sleep(FINAL_SAVE_RETRY_S * attempt)
            if self.checkpoint():
                return True
        return self._final_failed()

    def _final_sliced(self, source: KafkaSource) -> bool:
        """The last save to the state topic: in slices, as the loop's, with the source
        polled between them and every partition held, so nothing more is read while the
        member stays in its group. Saved at once, 2 468 busy models at d = 1 000 took 8.4 s,
        past ``kafka.max_poll_interval_ms``: the group evicted the member meanwhile and
        refused its commit, and a rolling restart paid a rebalance more.

        A rebalance meanwhile runs as in the loop (a revoke saves what leaves, for at most
        :data:`~driftwatch.agent.handover.REVOKE_SAVE_S`; new partitions stay held,
        unrestored) and makes the round under way void: the next round saves what is left.
        Failed rounds are retried like the whole save's (:data:`FINAL_SAVE_ATTEMPTS`).
        Records a poll still returns are left unread: the offsets committed are the save's.
        """
        source.hold_all()
        failed, retry_at = 0, 0.0
        while True:
            if self._saved_all:
                return self.checkpoint()  # commits the offsets the save covers
            # A round a rebalance made void is no failure: the next call begins another.
            if self._clock() >= retry_at and not self.checkpoint(whole=False):
                failed += 1
                if failed == FINAL_SAVE_ATTEMPTS:
                    return self._final_failed()
                retry_at = self._clock() + FINAL_SAVE_RETRY_S * failed
            source.poll()

    def _final_failed(self) -> bool:
        log.error("the final checkpoint could not be saved (%s): no offset committed; the "
                  "records since the last saved checkpoint will be read again at the next "
                  "start", self.checkpointer.last_error or "dead letters not delivered")
        if self.checkpointer.last_error is None:
            self.checkpointer.last_error = "dead letters not delivered"
        return False

    def _notify(self, alarm: Alarm) -> None:
        assert self.on_alarm is not None
        try:
            self.on_alarm(alarm)
        except Exception:
            log.exception("the on_alarm callback failed for an alarm of model %s", alarm.model)

    def restore(self) -> None:
        """Load the checkpoint into the monitors, positions and rejection counts (nothing
        when there is none).

        Raises :class:`~driftwatch.state.checkpoint.CheckpointError` when the file, or a monitor
        state inside it, cannot be restored: nothing is half-loaded.
        """
        self.saved_state.restore()

    def _start(self, resources: ExitStack) -> Source[Record]:
        """Restore the checkpoint, then start the state store, the producers, the metrics
        server and the source (:func:`~driftwatch.agent.start.start`), each entered into
        ``resources`` (which closes them in reverse order: the source first, without
        committing); returns the started source."""
        self.restore()
        source, dead_letter = self._injected
        opened = start(self.settings, resources, store=self.checkpointer.store,
                       publisher=self.publisher, comparisons=bool(self.comparisons),
                       on_assigned=self._on_assigned,
                       on_revoked=None if self.handover is None else self._on_revoked,
                       source=source, dead_letter=dead_letter)
        if opened.dead_letter is not None:
            self.dead_letter = opened.dead_letter
        if opened.alarms is not None:
            self.alarm_publisher, self.alarms = opened.alarm_publisher, opened.alarms
        self.metrics_server = opened.metrics_server
        self.source = opened.source
        if self.handover is not None:  # a restore not complete at the stop is dropped
            resources.callback(self.handover.close)
        return resources.enter_context(opened.source)

    def _on_assigned(self, partitions: set[TopicPartition]) -> dict[TopicPartition, int]:
        """Where each newly assigned partition resumes: the checkpoint's offset (restored
        first from the state topic when that is the store). A Kafka source holding new
        partitions gets nothing here: they are queued, restored between polls
        (:meth:`_restore_slice`) and released then."""
        if self.handover is not None and isinstance(self.source, KafkaSource) \
                and self.source.holds_assigned:
            self.handover.queue(partitions)
            return {}
        self._restore_partitions(partitions)
        return self.positions.resume(partitions, self.settings.kafka.auto_offset_reset)

    def _restore_slice(self) -> None:
        """A slice of the queued restores (:data:`~driftwatch.agent.handover.
        RESTORE_SLICE_S`); partitions whose restore is complete are resumed where their
        state says."""
        if self.handover is None:
            return
        self.handover.forget_stale()
        if not self.handover.restoring:
            return
        done = self.handover.step(RESTORE_SLICE_S)
        if done and isinstance(self.source, KafkaSource):
            resume = self.positions.resume(set(done), self.settings.kafka.auto_offset_reset)
            self.source.release({tp: resume.get(tp) for tp in done})

    def _restore_partitions(self, partitions: set[TopicPartition]) -> None:
        if self.handover is not None:
            self.handover.assigned(partitions)

    def _on_revoked(self, partitions: set[TopicPartition], lost: bool) -> None:
        assert self.handover is not None
        self.handover.revoked(partitions, lost)

    def _update_readiness(self) -> None:
        source = self.source
        if source is None:
            broker_ready = self.readiness.update(False)
        elif not source.reachable:  # the outage began with the first failed request
            broker_ready = self.readiness.update(False, source.reachability_changed_at)
        else:
            broker_ready = self.readiness.update(source.ready)
        ready = broker_ready and not self.checkpointer.failing and not (
            self.handover is not None and self.handover.restoring)
        if ready != self._ready:
            self._ready = ready
            self._publish_latest()  # driftwatch_ready agrees with /readyz
            if ready:
                log.info("ready: /readyz answers 200")
            else:
                log.info("not ready: /readyz answers 503 (%s)",
                         ", ".join(sorted(self.publisher.snapshot.operations.not_ready)))

    def publish_now(self) -> None:
        """Refresh every model's snapshot and publish at once, however long it takes, a
        round under way included: what tests and tools call that must see on ``/metrics``
        every record processed so far (the loop publishes in rounds:
        :meth:`_publish_snapshot`). Call it on the loop's thread, or with the loop stopped."""
        publisher = self.publisher
        publisher.round = None
        started = self._clock()
        self.monitors.snapshots()
        self._publish_latest()
        publisher.refresh_seconds = self._clock() - started

    def _publish_snapshot(self) -> None:
        """The loop's publish: when a round is due, refresh the models' snapshots a slice at
        a time and publish once every model was looked at (:mod:`driftwatch.agent.publish`)."""
        publisher = self.publisher
        if publisher.round is None:
            if not publisher.due():
                return
            publisher.start(iter(list(self.monitors.by_model)))
        assert publisher.round is not None
        if publisher.round.step(self.monitors.refresh):
            publisher.finish()
            self._publish_latest(probe=True)
            settle()  # the monitors and their snapshots are long-lived: see agent/heap.py

    def _publish_latest(self, *, probe: bool = False) -> None:
        """Publish at once the latest snapshot of each model, fresh or not (readiness
        changed, partitions came or went: the models restored come with theirs). Only with
        ``probe`` may the consumer lag be refreshed: a publish because readiness changed
        must not wait for a probe of a dead broker."""
        source = self.source
        monitors = self.monitors.latest()
        comparisons = self.comparisons.snapshots()
        lag = source.lag(refresh=probe) if source is not None else {}
        self.publisher.publish(
            monitors, rejected=self.rejections.rejected, skipped=self.rejections.skipped,
            consumer_lag=lag, comparisons=comparisons,
            ready=self._ready, operations=self._operations(lag),
            join=self.join_shards.snapshot() if self.join_shards is not None else
            None if self.delayed is None else self.delayed.snapshot())

    def _operations(self, lag: Mapping[tuple[str, int], int]) -> Operations:
        """The agent's view of itself for the snapshot: readiness and why not, saves,
        commits, producers, offset resets, batch times."""
        source, checkpointer = self.source, self.checkpointer
        why: dict[str, str] = {}
        if not self.readiness.ready:
            problem = source.problem if source is not None else "the source is not started"
            why["kafka"] = problem or "the brokers answer again; ready once they have for " \
                "readiness.ready_after_seconds"
        if checkpointer.failing:
            why["checkpoint"] = (f"the last save failed ({checkpointer.last_error}); nothing "
                                 "is committed until a save succeeds")
        restoring = self.handover.restoring if self.handover is not None else frozenset()
        if restoring:
            why["restoring"] = (f"restoring the state of {len(restoring)} partition(s) from "
                                "the state topic: " + ", ".join(
                                    f"{t}[{p}]" for t, p in sorted(restoring)))
        return Operations(
            consumer_group=self.settings.kafka.group_id,
            lag_seconds=lag_seconds(lag, self.positions.timestamps_ms, self._wall_clock()),
            not_ready=frozenset(why),
            not_ready_why=why,
            checkpoint_saves=checkpointer.saves,
            checkpoint_save_failures=checkpointer.failures,
            checkpoint_last_success_time=checkpointer.last_success_time,
            checkpoint_save_seconds=checkpointer.last_save_seconds,
            commits=source.commits if source is not None else 0,
            commit_failures=source.commit_failures if source is not None else 0,
            dead_letter_failures=self.rejections.dead_letter_failures,
            alarm_publish_failures=self.alarm_publisher.failed if self.alarm_publisher else 0,
            broker_reconnects=source.reconnects if source is not None else 0,
            offset_resets=self.positions.resets,
            batch_seconds=self._batch_seconds.value(),
            loop_pause_seconds=self._loop_pauses.value(),
            state_split_models=None if self.partitioned is None else len(
                self.partitioned.split),
            state_partitions_restoring=None if self.handover is None else len(restoring),
            state_restore_seconds_per_partition=None if self.handover is None
            else self.handover.last_restore_seconds_per_partition,
            snapshot_refresh_seconds=self.publisher.refresh_seconds,
        )
