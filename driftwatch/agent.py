"""The agent: Kafka records in, per-model monitors, Prometheus metrics and alarms out.

The loop is the whole program and reads in a few lines (:meth:`Agent.run`): poll a batch,
take each record through the one processing step :mod:`driftwatch.replay` shares
(:class:`~driftwatch.pipeline.Pipeline`: decode, route to its model's monitor, alarms), note
the record's offset, then maybe checkpoint (and commit). Every concern lives in its own
object: the source (:class:`~driftwatch.io.source.KafkaSource` by default: group membership,
offsets, backoff; any :class:`~driftwatch.pipeline.Source`, such as a
:class:`~driftwatch.pipeline.MemorySource`, when injected),
:class:`Monitors` (one pure :class:`~driftwatch.core.monitor.Monitor` per model, bounded),
:class:`Checkpointer` (state + offsets on disk, when, and what is durable),
:class:`Readiness` (``/readyz`` without flapping), :class:`~driftwatch.io.alarms.AlarmLog`,
and the exporter, which only ever reads the immutable :class:`AgentSnapshot` the loop
publishes.

Lifecycle and failure behaviour:

- **Exactly once into the monitors, across crashes.** The checkpoint holds the monitors'
  state, the rejection counts *and* the offsets they cover, written atomically. It is the
  only resume point: on start every partition resumes at the checkpoint's offset, and a
  partition it does not cover starts where ``kafka.auto_offset_reset`` says (the monitors are
  rebuilt from the log), never at the group's commit, whose monitor state would be lost.
  Commits follow saves: right after a save succeeds the agent commits exactly the offsets
  it covers, so a committed offset never passes what the disk holds (a crash between the
  save and the commit only leaves the commit behind). After a kill the records since the
  last save are read again into monitors that have not seen them.
- **State topic and handover** (``checkpoint.backend`` kafka, the default with Kafka): the
  same promise across replicas. Saves go to a compacted Kafka topic, one record per model
  under the input partition its events come from
  (:class:`~driftwatch.io.state_topic.StateTopicStore`); on assignment the agent restores
  the new partitions' models from it and resumes each partition where its records say
  (each model skipping the records its state already holds, so a save cut short by a crash
  is still exact); on revocation it saves first (not when evicted: another member may own
  the partitions already) and drops those models from its monitors and ``/metrics`` at
  once, so no frozen series remain.
- **A failing save** is retried with backoff, counted, makes ``/readyz`` answer 503, and is
  never followed by a commit; if the final save at a stop fails, :meth:`Agent.run` raises
  :class:`~driftwatch.io.checkpoint.CheckpointSaveError` after closing everything, having
  committed nothing. An unwritable checkpoint directory is refused at construction.
- **Stop.** ``stop`` (set by SIGTERM/SIGINT in the CLI) ends the loop after the current
  batch; the agent then flushes the dead-letter producer, saves a checkpoint and commits its
  offsets (in that order: a crash between them re-delivers, never loses), and returns.
  Every step is bounded (``kafka.request_timeout_seconds``).
- **Broker loss.** The source retries with backoff; the loop keeps running, ``/readyz``
  answers 503 once failures last ``readiness.not_ready_after_seconds`` and 200 again after
  ``readiness.ready_after_seconds`` of answers; metrics stay scrapable.
- **A log that no longer reaches the agent's offset** (topic recreated or truncated): the
  source restarts the partition at ``auto_offset_reset``; the agent sees the offset go back,
  logs an error and counts ``driftwatch_offset_resets_total{reason="beyond_log_end"}``. It
  takes the records as new events (right for a recreated topic; after a truncation the
  records before the new end are counted again: the agent cannot tell the two apart).
- **Predictions and labels as separate records** (settings ``join``): each record is
  decoded as a prediction or a label (by its topic or its kind field); a prediction's model
  is admitted (``limits.max_models``) before it enters the join and its model's label-free
  watch; a joined pair is the event its monitor gets, when its second half arrives. The
  join's pending records are saved with the monitors and the offsets they cover (in the
  state topic one join per input partition, :class:`~driftwatch.io.join_shards.JoinShards`,
  handed over with the partition), so a restart or a handover neither loses a pending
  prediction nor joins a label twice.
- **Other models' records** (settings ``events.only_models``) are skipped: counted as
  ``driftwatch_events_skipped_total{reason="unwatched_model"}``, neither rejected nor
  dead-lettered, and their offsets advance like any other record's.
- **Whole stream** (``kafka.assignment: all_partitions``, the sidecars of a replicated
  model): the source assigns itself every partition, so each replica reads every record;
  there is no group and nothing is committed. The state topic (or the file) is the only
  resume point: every replica saves every partition under the same keys and restores them
  all at its start, so a replica replaced with an empty disk continues from its siblings'
  saves (a partition the state does not cover starts at ``auto_offset_reset``).
- **Bad records** are counted by reason, logged at a bounded rate, dead-lettered when a topic
  is configured, and skipped; **models beyond** ``limits.max_models`` are rejected the same
  way (reason ``too_many_models``) so memory and metric cardinality stay bounded.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector

from driftwatch.core.delayed import DelayedLabels
from driftwatch.core.join import Prediction
from driftwatch.core.monitor import Alarm, Monitor
from driftwatch.io.alarms import AlarmLog
from driftwatch.io.checkpoint import (
    CheckpointError,
    CheckpointSaveError,
    CheckpointStore,
    decode_offsets,
    encode_offsets,
)
from driftwatch.io.collector import SnapshotCollector
from driftwatch.io.comparisons import ComparisonCollector, Comparisons, ComparisonSnapshot
from driftwatch.io.decode import REJECTION_REASONS, Decoded, EventFormat, Rejected
from driftwatch.io.decode_join import JOIN_REJECTION_REASONS, RecordKind, decode_joinable
from driftwatch.io.join_metrics import JoinCollector
from driftwatch.io.join_shards import JoinShards
from driftwatch.io.offsets import OnAssigned, TopicPartition
from driftwatch.io.partition_states import PartitionStates
from driftwatch.io.producers import AlarmPublisher, DeadLetter
from driftwatch.io.server import MetricsServer
from driftwatch.io.snapshot import AgentSnapshot, LatencyHistogram, Operations
from driftwatch.io.source import KafkaSource, Record
from driftwatch.io.state_topic import StateSaveError, StateTopicStore
from driftwatch.pipeline import (
    TOO_MANY_MODELS,
    DeadLetterSink,
    Monitors,
    Pipeline,
    Source,
)
from driftwatch.settings import Settings

log = logging.getLogger("driftwatch.agent")

__all__ = ["TOO_MANY_MODELS", "UNWATCHED_MODEL", "Agent", "Checkpointer", "Monitors",
           "Readiness", "SourceFactory", "producer_config"]

SourceFactory = Callable[[OnAssigned], Source[Record]]
"""Builds the agent's source, given the hook to call with newly assigned partitions (which
answers where each resumes: the checkpoint's offsets)."""

UNWATCHED_MODEL = "unwatched_model"
"""The ``reason`` of ``driftwatch_events_skipped_total``: the record's model is not in
``events.only_models``. A skip, not an error: the record is fine, just someone else's."""

SNAPSHOT_INTERVAL_S = 1.0
"""How often the loop publishes a fresh snapshot for scrapes. Prometheus scrapes every 15 s
or so; a snapshot costs one normalization per measure and changed model (tens of µs each)."""

FINAL_SAVE_ATTEMPTS = 3
FINAL_SAVE_RETRY_S = 0.5
"""On the way out a failed save is tried again after 0.5 s and 1 s: a passing hiccup (an
NFS server failing over) does not cost a replay, and the stop stays within seconds."""

BEYOND_LOG_END = "beyond_log_end"
"""The ``reason`` of ``driftwatch_offset_resets_total`` when a partition's log no longer
reaches the agent's offset (recreated or truncated topic)."""

REJECTION_LOG_INTERVAL_S = 10.0
"""At most one log line per rejection reason in this many seconds: a producer sending only
garbage must not turn the agent's log into a copy of the topic."""


class Checkpointer:
    """When and how the agent saves its checkpoint, and what the last durable one covers.

    A save writes the payload atomically (:class:`~driftwatch.io.checkpoint.CheckpointStore`)
    and, only when that succeeded, records the payload's offsets as :attr:`durable`: the
    offsets the agent may commit. A failed save (any ``OSError``: disk full, permission
    denied, too many open files) is logged, counted in :attr:`failures`, leaves
    :attr:`durable` as it was, makes :attr:`failing` true until a save succeeds, and is
    retried with backoff (``retry_initial_s`` doubling up to ``retry_max_s``).

    Saves are due every ``interval_s``, stretched to ``1 / MAX_SAVE_SHARE`` times the last
    save's duration when that is longer, so that saving a large state never takes more than
    that share of the loop's time.

    With ``store=None`` (checkpointing disabled) nothing is written, but :meth:`save` still
    returns True on the same schedule and :attr:`durable` follows the offsets given, so the
    agent commits processed offsets (for the group's lag) at the same pace.
    """

    MAX_SAVE_SHARE = 0.1
    """Most of the loop's time spent saving; see the class docstring."""

    def __init__(self, store: CheckpointStore | StateTopicStore | None, interval_s: float,
                 clock: Callable[[], float] = time.monotonic, *,
                 retry_initial_s: float = 1.0, retry_max_s: float = 60.0,
                 wall_clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.interval_s = interval_s
        self.retry_initial_s = retry_initial_s
        self.retry_max_s = retry_max_s
        self._clock = clock
        self._wall_clock = wall_clock
        self._due_at = clock() + interval_s
        self.durable: dict[TopicPartition, int] = {}
        """The offsets the last successful save covers (or the restored checkpoint's)."""
        self.join_state: dict[str, Any] | None = None
        """The join's pending state in the checkpoint :meth:`load` read (None: none)."""
        self.skipped: dict[str, int] = {}
        """The skip counts in the checkpoint :meth:`load` read (none before they existed)."""
        self.saves = 0
        self.failures = 0
        self.consecutive_failures = 0
        self.last_error: str | None = None
        self.last_success_time: float | None = None
        self.last_save_seconds: float | None = None

    @property
    def failing(self) -> bool:
        """True from a failed save until the next successful one."""
        return self.consecutive_failures > 0

    def due(self) -> bool:
        return self._clock() >= self._due_at

    def postpone(self, delay_s: float) -> None:
        """Try again in ``delay_s`` (e.g. dead letters could not be flushed first)."""
        self._due_at = self._clock() + delay_s

    def save(self, payload: Callable[[], Mapping[str, Any]],
             offsets: Mapping[TopicPartition, int]) -> bool:
        """Save ``payload()`` (which holds ``offsets``); True when it is on disk (or when
        there is no store). ``payload`` is called only when there is a store to save it in."""
        started = self._clock()
        if self.store is not None:
            try:
                with _gc_paused():
                    self.store.save(payload())
            except OSError as error:
                self.failures += 1
                self.consecutive_failures += 1
                self.last_error = f"{type(error).__name__}: {error}"
                delay = min(self.retry_initial_s * 2.0 ** (self.consecutive_failures - 1),
                            self.retry_max_s)
                self._due_at = self._clock() + delay
                log.error("checkpoint save failed (%s); offsets are not committed until a save "
                          "succeeds; retrying in %.0f s (failure %d in a row)",
                          self.last_error, delay, self.consecutive_failures)
                return False
        took = self._clock() - started
        if self.failing:
            log.info("checkpoint saved again after %d failed attempt(s)",
                     self.consecutive_failures)
        self.consecutive_failures = 0
        self.last_error = None
        self.durable = dict(offsets)
        if self.store is not None:
            self.saves += 1
            self.last_save_seconds = took
            self.last_success_time = self._wall_clock()
            log.debug("checkpoint saved in %.3f s: %d partitions", took, len(offsets))
        self._due_at = self._clock() + max(self.interval_s, took / self.MAX_SAVE_SHARE)
        return True

    def load(self) -> tuple[dict[TopicPartition, int], dict[str, Any], dict[str, int],
                            dict[str, Any]]:
        """Offsets, monitor states, rejection counts and comparison states from the last
        checkpoint (empty when there is none; one written before comparisons existed has
        none).

        Raises :class:`~driftwatch.io.checkpoint.CheckpointError` for an unreadable or
        incompatible checkpoint, or one whose payload is not what the agent writes: the
        agent refuses to start rather than half-load it.
        """
        if not isinstance(self.store, CheckpointStore):  # the state topic restores per partition
            return {}, {}, {}, {}
        checkpoint = self.store.read()
        if checkpoint is None:
            return {}, {}, {}, {}
        payload = checkpoint.payload
        where = f"checkpoint {checkpoint.path}"
        parts: dict[str, dict[str, Any]] = {}
        for key in ("offsets", "monitors", "rejected", "comparisons", "skipped"):
            part = payload.get(key, {} if key in ("rejected", "comparisons", "skipped") else None)
            if not isinstance(part, dict):
                raise CheckpointError(f"{where}: the payload's {key!r} must be an object, got "
                                      f"{_kind(part)}")
            parts[key] = part
        offsets_part, monitors, rejected = parts["offsets"], parts["monitors"], parts["rejected"]
        for model, state in monitors.items():
            if not isinstance(state, dict):
                raise CheckpointError(f"{where}: monitor {model!r} must be an object, got "
                                      f"{_kind(state)}")
        for name in ("rejected", "skipped"):
            for reason, count in parts[name].items():
                if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                    raise CheckpointError(f"{where}: {name}[{reason!r}] must be a count, got "
                                          f"{count!r}")
        offsets = {TopicPartition(t, p): o
                   for (t, p), o in decode_offsets(offsets_part).items()}
        log.info("restoring checkpoint %s written by driftwatch %s: %d monitors, %d partitions",
                 checkpoint.path, checkpoint.driftwatch_version, len(monitors), len(offsets))
        join = payload.get("join")
        if join is not None and not isinstance(join, dict):
            raise CheckpointError(f"{where}: the payload's 'join' must be an object, got "
                                  f"{_kind(join)}")
        self.join_state = join
        self.skipped = dict(parts["skipped"])
        self.durable = dict(offsets)
        return offsets, dict(monitors), dict(rejected), dict(parts["comparisons"])


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (reference counting still frees everything).

    Exporting the monitors allocates a small list per window event (a million at 1000
    models of d = 1000), and those allocations trigger full collections that walk every
    monitor again: measured, the export takes about 6x longer with the collector running.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _kind(value: Any) -> str:
    return "nothing" if value is None else f"a {type(value).__name__}"


class Readiness:
    """Whether the broker side is ready, with hysteresis so ``/readyz`` does not flap.

    :meth:`update` is called on every loop pass with what the source says now. Once ready,
    the agent stays ready until the source has said "not ready" for ``not_ready_after_s``
    without a break; once not ready, it becomes ready again only after ``ready_after_s`` of
    uninterrupted "ready". Before it was ever ready (start-up), the first "ready" counts at
    once. O(1).
    """

    def __init__(self, not_ready_after_s: float, ready_after_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.not_ready_after_s = not_ready_after_s
        self.ready_after_s = ready_after_s
        self._clock = clock
        self.ready = False
        self._ever_ready = False
        self._raw: bool | None = None
        self._since = clock()

    def update(self, raw: bool, since: float | None = None) -> bool:
        """Take the source's current answer ``raw``; ``since`` is when it began, if known
        (a request that failed after a long timeout began the outage when it was sent, not
        when the loop saw it). Returns whether the agent is ready."""
        now = self._clock()
        if raw != self._raw:
            self._raw, self._since = raw, now if since is None else min(since, now)
        lasted = now - self._since
        if raw and not self.ready and (not self._ever_ready or lasted >= self.ready_after_s):
            self.ready = self._ever_ready = True
            log.info("ready: the broker answers and partitions are assigned")
        elif not raw and self.ready and lasted >= self.not_ready_after_s:
            self.ready = False
            log.warning("not ready: the broker has not answered (or no partition was "
                        "assigned) for %.0f s", lasted)
        return self.ready


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
            :class:`~driftwatch.io.source.KafkaSource` the ``kafka`` settings describe. A
            :class:`~driftwatch.pipeline.MemorySource` runs the loop without a broker.
        dead_letter: where rejected records go; None: the ``kafka.dead_letter_topic``
            producer when that is set, else nowhere.
        wall_clock, clock: Unix time and a monotonic clock, replaceable in tests.

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
        self.snapshot_interval_s = snapshot_interval_s
        self._clock = clock
        self._wall_clock = wall_clock
        self._format: EventFormat = settings.events.event_format()
        self.monitors = Monitors(settings.monitoring.monitor_config, settings.limits.max_models)
        self.comparisons = Comparisons(settings.comparison_configs(), self._format)
        self._comparison_snapshots: tuple[ComparisonSnapshot, ...] = ()
        # The state topic (the default with Kafka) or the file; see CheckpointSettings.
        store: CheckpointStore | StateTopicStore | None = None
        self.partitioned: PartitionStates | None = None
        if settings.checkpoint.enabled and settings.checkpoint_backend() == "kafka":
            store = StateTopicStore(
                producer_config(settings.kafka.consumer_config()), settings.state_topic(),
                partitions=settings.checkpoint.topic_partitions,
                replication_factor=settings.checkpoint.topic_replication_factor,
                max_record_bytes=settings.checkpoint.max_record_bytes,
                request_timeout_s=settings.kafka.request_timeout_seconds)
            self.partitioned = PartitionStates()
        elif settings.checkpoint.enabled:
            store = CheckpointStore(settings.checkpoint.directory)
        self.checkpointer = Checkpointer(store, settings.checkpoint.interval_seconds, clock,
                                         wall_clock=wall_clock)
        readiness = settings.readiness
        self.readiness = Readiness(readiness.not_ready_after_seconds,
                                   readiness.ready_after_seconds, clock)
        self._ready = False
        self._rejected: dict[str, int] = dict.fromkeys((*REJECTION_REASONS, TOO_MANY_MODELS), 0)
        # Predictions and labels as separate records (settings ``join``): the join, the
        # label-free watches and the join's metrics; None when records come joined.
        self.delayed: DelayedLabels | None = None
        join = settings.join
        self._join_format = join.join_format()
        self._kinds: dict[str, RecordKind] = {}
        if join.enabled:
            self.delayed = join.delayed_labels(
                lambda model: settings.monitoring.monitor_config(model).threshold)
            if join.predictions_topic is not None and join.labels_topic is not None:
                self._kinds = {join.predictions_topic: "prediction", join.labels_topic: "label"}
            self._rejected.update(dict.fromkeys(JOIN_REJECTION_REASONS, 0))
        # With the state topic the join is kept per input partition, to be handed over.
        self.join_shards: JoinShards | None = None
        if self.delayed is not None and self.partitioned is not None:
            self.join_shards = JoinShards(
                lambda: join.delayed_labels(
                    lambda model: settings.monitoring.monitor_config(model).threshold),
                join.predictions_topic, join.labels_topic)
            self.partitioned = PartitionStates(self.join_shards.shard_of)
            self.delayed = None
        self._rejection_logged: dict[str, float] = {}
        self._only_models = frozenset(settings.events.only_models)
        # Checkpointed like the rejection counts, so that restarted replicas agree.
        self._skipped: dict[str, int] = {UNWATCHED_MODEL: 0} if self._only_models else {}
        # Next offset per partition whose events are all in the monitors.
        self._positions: dict[TopicPartition, int] = {}
        self._restored = False
        # Timestamp (ms) of the last processed record per partition, for the lag in seconds.
        self._last_timestamp_ms: dict[TopicPartition, int] = {}
        self._offset_resets: dict[tuple[str, int, str], int] = {}
        self._batch_seconds = LatencyHistogram()
        self._started = wall_clock()
        self._snapshot = AgentSnapshot.empty(self._started)
        self._snapshot_at = -float("inf")
        self._source_factory = source
        self._dead_letter_sink = dead_letter
        self.source: Source[Record] | None = None
        self.dead_letter: DeadLetterSink | None = None
        self.alarm_publisher: AlarmPublisher | None = None
        self.alarms = AlarmLog(logging.getLogger("driftwatch.alarms"))
        self.metrics_server: MetricsServer | None = None
        # The one processing step (decode, route, monitor, alarms), shared with replay.
        self.pipeline: Pipeline[Record] = Pipeline(
            self._format, self.monitors, on_alarms=self._emit, on_reject=self._rejected_by,
            join=None if self.delayed is None else (self.delayed, self._join_format),
            on_event=self._compare, observe_all=bool(self.comparisons),
            accept=None if self.partitioned is None or self.join_shards is not None
            else self._take,
            only_models=self._only_models, on_skip=self._skip)

    # -- the loop ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Consume until ``stop`` is set; then checkpoint, commit and close everything.

        Raises:
            CheckpointSaveError: the checkpoint could not be saved on the way out; nothing
                was committed (everything is closed all the same).
        """
        with ExitStack() as resources:
            source = self._start(resources)
            while not stop.is_set():
                records = source.poll()
                if records:
                    started = self._clock()
                    self.process_batch(records)
                    self._batch_seconds.observe(self._clock() - started)
                self._update_readiness()
                self._publish_snapshot()
                if self.checkpointer.due():
                    self.checkpoint()
            log.info("stopping: saving a checkpoint and committing the offsets it covers")
            saved = self._final_checkpoint()
            # Leaving the ExitStack closes the source (without committing), the producers
            # and the metrics server, in reverse order of their start.
        if not saved:
            raise CheckpointSaveError(
                f"the final checkpoint could not be saved ({self.checkpointer.last_error}); "
                "no offset was committed, so the records since the last saved checkpoint "
                "will be read again at the next start"
            )
        log.info("stopped")

    def process(self, record: Record) -> None:
        """Decode one record and give its event to its model's monitor (or count a rejection)."""
        self.process_batch((record,))

    def process_batch(self, records: Sequence[Record]) -> None:
        """Process a batch as :meth:`process` does each record: the record through the
        pipeline (decode, route, monitor, alarms), then its offset noted. The loop's hot
        path: one partition tuple per run of records of the same partition, not per record."""
        positions, timestamps = self._positions, self._last_timestamp_ms
        pipeline = self.pipeline
        joined = self.delayed is not None or self.join_shards is not None
        tp = TopicPartition("", -1)
        for record in records:
            if record.partition != tp.partition or record.topic != tp.topic:
                tp = TopicPartition(record.topic, record.partition)
            offset = record.offset
            expected = positions.get(tp)
            if expected is not None and offset < expected:
                self._offset_reset(record, expected)
            if joined:
                self._joinable(record)
            else:
                pipeline.record(record.value, record.key, record)
            positions[tp] = offset + 1
            timestamps[tp] = record.timestamp_ms

    def checkpoint(self) -> bool:
        """Save a checkpoint of everything processed so far, then commit exactly its offsets.

        The order is what keeps the promises: dead letters of the processed records are
        flushed first (a checkpoint never passes a record whose dead letter may be lost), the
        state is saved, and only a save that succeeded is followed by a commit. Returns True
        when the checkpoint was saved (the commit is best effort: a failed one is counted,
        and the next save's commit carries newer offsets).
        """
        offsets = dict(self._positions)
        timeout_s = self.settings.kafka.request_timeout_seconds
        if self.dead_letter is not None and not self.dead_letter.flush(timeout_s):
            log.warning("dead letters not delivered within %.0f s: checkpoint and commit "
                        "postponed", timeout_s)
            self.checkpointer.postpone(self.checkpointer.interval_s)
            return False
        saved = self.checkpointer.save(lambda: self._payload(offsets), offsets)
        self._update_readiness()
        if not saved:
            return False
        if self.source is not None:
            self.source.commit(self.checkpointer.durable)
        return True

    @property
    def snapshot(self) -> AgentSnapshot:
        """The latest snapshot, the one ``/metrics`` shows: immutable, so any thread may read
        it. The loop replaces it about every ``snapshot_interval_s`` seconds."""
        return self._snapshot

    @property
    def ready(self) -> bool:
        """What ``/readyz`` answers: the broker side is ready (with the hysteresis of
        :class:`Readiness`) and the last checkpoint save, if any failed, was retried
        successfully. Any thread may read it."""
        return self._ready

    # -- parts ------------------------------------------------------------------------------

    def _payload(self, offsets: Mapping[TopicPartition, int]) -> dict[str, Any]:
        if self.partitioned is not None:
            shards = self.join_shards
            joins = None if shards is None else {
                shard: (shards.partitions_of(shard), state)
                for shard, state in shards.export_state().items()}
            return self.partitioned.payload(self.monitors.export_state(), offsets, joins,
                                            self.comparisons.export_model)
        plain = {(tp.topic, tp.partition): offset for tp, offset in offsets.items()}
        payload = {"offsets": encode_offsets(plain), "monitors": self.monitors.export_state(),
                   "rejected": dict(self._rejected),
                   "comparisons": self.comparisons.export_state()}
        if self._skipped:
            payload["skipped"] = dict(self._skipped)
        if self.delayed is not None:  # pending predictions and labels, with the same offsets
            payload["join"] = self.delayed.export_state()
        return payload

    def _joinable(self, record: Record) -> None:
        """A prediction or label record through the join: its kind from its topic (or its
        kind field), its time from the record when its value has none. With the state topic
        there is a join per input partition, and after a restore a record the saved state
        already holds is skipped (see :mod:`driftwatch.io.state_topic`)."""
        kind = self._kinds.get(record.topic)
        if kind is None and self._join_format.kind_field is None:
            self._reject(record, Rejected("bad_kind", f"topic {record.topic!r} is neither "
                                          "join.predictions_topic nor join.labels_topic"))
            return
        if self.join_shards is None:
            self.pipeline.joinable(record.value, record.key, record, kind,
                                   record.timestamp_ms / 1000.0)
            return
        result = decode_joinable(record.value, record.key, self._format, self._join_format,
                                 kind, record.timestamp_ms / 1000.0)
        if isinstance(result, Rejected):
            self._reject(record, result)
            return
        tp = record.topic_partition
        partitioned = self.partitioned
        assert partitioned is not None
        if not partitioned.join_takes(tp, record.offset):
            return  # a replay after a restore: the join's saved state holds it
        delayed = self.join_shards.get(tp)
        if isinstance(result, Prediction):
            # Admit the model before its prediction enters the join: pending predictions and
            # label-free watches are bounded by limits.max_models like the monitors.
            if self.pipeline.admit(result.model, record) is None:
                return
            joined, alarms = delayed.add_prediction(result)
            self._emit(alarms, record)
        else:
            joined = delayed.add_label(result)
        if joined is None:
            partitioned.pending_half(result.event_id, tp, record.offset)
            return
        shard = self.join_shards.partitions_of(self.join_shards.shard_of(tp))
        if partitioned.take_pair(joined.model, joined.event_id, tp, record.offset, shard):
            self.pipeline.event(Decoded(joined.model, joined.event()), record.value,
                                record.key, record)

    def _emit(self, alarms: list[Alarm], record: Record) -> None:
        for alarm in alarms:
            self.alarms.emit(alarm)
            if self.on_alarm is not None:
                self._notify(alarm)

    def _rejected_by(self, rejected: Rejected, value: bytes | None, record: Record) -> None:
        self._reject(record, rejected)

    def _compare(self, monitor: Monitor, decoded: Decoded, value: bytes | None,
                 key: bytes | None, record: Record) -> None:
        self.comparisons.feed(value, key, decoded)

    def _take(self, model: str, record: Record) -> bool:
        """Whether the model's monitor takes the record's event: not when the model's state,
        restored from the state topic, already holds it (a replay after a restore)."""
        assert self.partitioned is not None
        return self.partitioned.take(model, TopicPartition(record.topic, record.partition),
                                     record.offset)

    def _skip(self, record: Record) -> None:
        if self.partitioned is None or self.partitioned.skip(
                TopicPartition(record.topic, record.partition), record.offset):
            self._skipped[UNWATCHED_MODEL] += 1

    def _final_checkpoint(self) -> bool:
        for attempt in range(FINAL_SAVE_ATTEMPTS):
            if attempt:
                time.sleep(FINAL_SAVE_RETRY_S * attempt)
            if self.checkpoint():
                return True
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

        Raises :class:`~driftwatch.io.checkpoint.CheckpointError` when the file, or a monitor
        state inside it, cannot be restored: nothing is half-loaded.
        """
        offsets, states, rejected, comparisons = self.checkpointer.load()
        try:
            self.monitors.restore(states)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                OverflowError) as error:
            raise CheckpointError(f"a monitor state in the checkpoint: "
                                  f"{type(error).__name__}: {error}") from error
        try:
            self.comparisons.restore(comparisons)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                OverflowError) as error:
            raise CheckpointError(f"a comparison state in the checkpoint: "
                                  f"{type(error).__name__}: {error}") from error
        join_state = self.checkpointer.join_state
        if join_state is not None and self.delayed is not None:
            try:
                self.delayed.restore(join_state, **self.settings.join.limits())
            except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                    OverflowError) as error:
                raise CheckpointError(f"the join state in the checkpoint: "
                                      f"{type(error).__name__}: {error}") from error
        elif join_state is not None:
            log.warning("the checkpoint holds pending predictions and labels of a join, but "
                        "join is not enabled: they are dropped")
        self._positions.update(offsets)
        for reason, count in rejected.items():
            self._rejected[reason] = self._rejected.get(reason, 0) + count
        for reason, count in self.checkpointer.skipped.items():
            self._skipped[reason] = self._skipped.get(reason, 0) + count
        self._restored = bool(offsets or states)

    def _start(self, resources: ExitStack) -> Source[Record]:
        self.restore()
        store = self.checkpointer.store
        if isinstance(store, StateTopicStore):  # closed after the source, whose revoke saves
            resources.callback(store.close)
            try:
                store.ensure_topic()
            except StateSaveError as error:
                log.warning("%s; trying again at the first save", error)
        kafka = self.settings.kafka
        consumer_config = kafka.consumer_config()
        producer_options = producer_config(consumer_config)
        if self._dead_letter_sink is not None:
            self.dead_letter = self._dead_letter_sink
        elif kafka.dead_letter_topic:
            self.dead_letter = resources.enter_context(
                DeadLetter(producer_options, kafka.dead_letter_topic))
        if kafka.alarms_topic:
            publisher = self.alarm_publisher = resources.enter_context(
                AlarmPublisher(producer_options, kafka.alarms_topic))
            self.alarms = AlarmLog(logging.getLogger("driftwatch.alarms"), publisher.publish)
        metrics = self.settings.metrics
        registry = CollectorRegistry(auto_describe=True)
        registry.register(SnapshotCollector(lambda: self._snapshot,
                                            self.settings.alerts.thresholds))
        registry.register(JoinCollector(lambda: self._snapshot.join))
        ProcessCollector(registry=registry)  # process_* (CPU, memory, descriptors): Linux
        PlatformCollector(registry=registry)  # python_info
        if self.comparisons:
            registry.register(ComparisonCollector(lambda: self._comparison_snapshots))
        source = self.source = self._source_factory(self._on_assigned) \
            if self._source_factory is not None else self._kafka_source()
        basic_auth = None
        if metrics.basic_auth_username is not None and metrics.basic_auth_password is not None:
            basic_auth = (metrics.basic_auth_username,
                          metrics.basic_auth_password.get_secret_value())
        tls = (metrics.tls_certfile, metrics.tls_keyfile) if metrics.tls_certfile and \
            metrics.tls_keyfile else None
        self.metrics_server = MetricsServer(registry, metrics.host, metrics.port,
                                            ready=lambda: self._ready,
                                            not_ready_reasons=lambda: (
                                                self._snapshot.operations.not_ready),
                                            basic_auth=basic_auth, tls=tls,
                                            max_connections=metrics.max_connections,
                                            request_timeout=metrics.request_timeout_seconds)
        resources.enter_context(self.metrics_server)
        log.info("metrics at %s", self.metrics_server.url)
        return resources.enter_context(source)

    def _kafka_source(self) -> KafkaSource:
        kafka = self.settings.kafka
        return KafkaSource(
            kafka.consumer_config(),
            topics=kafka.topics or (),
            pattern=kafka.topic_pattern,
            on_assigned=self._on_assigned,
            on_revoked=self._on_revoked if self.partitioned is not None else None,
            ignore_committed=True,
            whole_stream=kafka.assignment == "all_partitions",
            poll_timeout_s=kafka.poll_timeout_ms / 1000,
            backoff_initial_s=kafka.reconnect_backoff_initial_seconds,
            backoff_max_s=kafka.reconnect_backoff_max_seconds,
            probe_interval_s=self.settings.readiness.probe_interval_seconds,
            request_timeout_s=kafka.request_timeout_seconds,
        )

    def _on_assigned(self, partitions: set[TopicPartition]) -> dict[TopicPartition, int]:
        # Runs on kafka-python's IO thread while the loop is blocked in poll: a plain read.
        if self.partitioned is not None:
            self._restore_partitions(partitions)
        known = {tp: self._positions[tp] for tp in partitions if tp in self._positions}
        unknown = sorted(partitions - known.keys())
        if unknown:
            reset = self.settings.kafka.auto_offset_reset
            where = "the beginning of the retained log" if reset == "earliest" else \
                "the end of the log"
            level = logging.WARNING if self._restored else logging.INFO
            log.log(level, "%d partition(s) not covered by the checkpoint: %s; reading them "
                    "from %s (kafka.auto_offset_reset=%s), never from the group's committed "
                    "offset", len(unknown), ", ".join(f"{t}[{p}]" for t, p in unknown),
                    where, reset)
        return known

    def _restore_partitions(self, partitions: set[TopicPartition]) -> None:
        """Restore newly assigned partitions' models from the state topic (on kafka-python's
        IO thread, while the loop waits in poll; a rebalance waits for it, so it is timed).

        Raises (re-raised from poll, so the agent stops) :class:`~driftwatch.io.state_topic.
        StateTopicUnavailable` when the topic cannot be read (exit 1: restart and try again)
        and :class:`~driftwatch.io.checkpoint.CheckpointError` when it holds a state that
        cannot be restored (exit 3).
        """
        assert isinstance(self.checkpointer.store, StateTopicStore)
        assert self.partitioned is not None
        started = self._clock()
        restored = self.checkpointer.store.load(partitions)
        states = {model: state for model, state in restored.monitors.items()
                  if model not in self.monitors}
        clashes = restored.monitors.keys() - states.keys()
        try:
            self.monitors.restore(states)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                OverflowError) as error:
            raise CheckpointError(f"a monitor state in the state topic: "
                                  f"{type(error).__name__}: {error}") from error
        if self.join_shards is not None:
            apart = self.join_shards.apart(partitions)
            if apart:
                log.warning("join: %s assigned without the partition of the same number of "
                            "the other topic: their predictions and labels cannot be joined "
                            "here; give join.predictions_topic and join.labels_topic the same "
                            "partition count", ", ".join(f"{t}[{p}]" for t, p in apart))
            try:
                self.join_shards.restore(restored.joins, self.settings.join.limits())
            except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                    OverflowError) as error:
                raise CheckpointError(f"a join state in the state topic: "
                                      f"{type(error).__name__}: {error}") from error
        try:
            self.comparisons.restore(restored.comparisons)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                OverflowError) as error:
            raise CheckpointError(f"a comparison state in the state topic: "
                                  f"{type(error).__name__}: {error}") from error
        self.partitioned.restored(restored)
        self.partitioned.split |= clashes
        for counts in restored.rejected.values():
            for reason, count in counts.items():
                self._rejected[reason] = self._rejected.get(reason, 0) + count
        if self._skipped:
            self._skipped[UNWATCHED_MODEL] += sum(restored.skipped.values())
        self._positions.update({TopicPartition(*tp): o for tp, o in restored.offsets.items()})
        self._restored = self._restored or bool(restored.offsets)
        took = self._clock() - started
        log.info("restored %d model(s) of %d partition(s) from state topic %s in %.2f s",
                 len(states), len(restored.offsets), self.checkpointer.store.topic, took)
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
        self._publish_snapshot(force=True)

    def _on_revoked(self, partitions: set[TopicPartition], lost: bool) -> None:
        """Save (unless ``lost``: another member may own them already) and forget the
        partitions' models at once, so no frozen series stay on ``/metrics``. On
        kafka-python's IO thread, while the loop waits in poll; nothing is committed here
        (the consumer cannot commit from its IO thread; the state topic is the resume
        point anyway)."""
        assert self.partitioned is not None
        if not lost and self._positions != self.checkpointer.durable:  # else saved already
            offsets = dict(self._positions)
            timeout_s = self.settings.kafka.request_timeout_seconds
            flushed = self.dead_letter is None or self.dead_letter.flush(timeout_s)
            if flushed and self.checkpointer.save(lambda: self._payload(offsets), offsets):
                log.info("saved the state of %d revoked partition(s)", len(partitions))
        gone, rejected, skipped = self.partitioned.drop(partitions)
        self.monitors.drop(gone)
        self.comparisons.drop(gone)
        if self.join_shards is not None:
            self.join_shards.drop(partitions)
        for tp in partitions:
            self._positions.pop(tp, None)
            self._last_timestamp_ms.pop(tp, None)
        for reason, count in rejected.items():
            self._rejected[reason] = self._rejected.get(reason, 0) - count
        if self._skipped:
            self._skipped[UNWATCHED_MODEL] -= skipped
        log.info("dropped %d model(s) of %d %s partition(s)", len(gone), len(partitions),
                 "lost" if lost else "revoked")
        self._publish_snapshot(force=True)

    def _offset_reset(self, record: Record, expected: int) -> None:
        key = (record.topic, record.partition, BEYOND_LOG_END)
        self._offset_resets[key] = self._offset_resets.get(key, 0) + 1
        log.error("%s[%d]: the log no longer reaches offset %d (the topic was recreated or "
                  "truncated) and reading restarted at %d; its records are taken as new "
                  "events: if they are old events produced again, they are counted twice",
                  record.topic, record.partition, expected, record.offset)

    def _reject(self, record: Record, rejected: Rejected) -> None:
        if self.partitioned is not None and not self.partitioned.reject(
                record.topic_partition, record.offset, rejected.reason):
            return  # a replay after a restore: counted (and dead-lettered) before the save
        self._rejected[rejected.reason] = self._rejected.get(rejected.reason, 0) + 1
        now = self._clock()
        if now - self._rejection_logged.get(rejected.reason, -float("inf")) \
                >= REJECTION_LOG_INTERVAL_S:
            self._rejection_logged[rejected.reason] = now
            log.warning("rejected record %s[%d]@%d: %s (%s); %d so far for this reason",
                        record.topic, record.partition, record.offset, rejected.reason,
                        rejected.detail, self._rejected[rejected.reason])
        if self.dead_letter is not None:
            self.dead_letter.send(record, rejected)

    def _update_readiness(self) -> None:
        source = self.source
        if source is None:
            broker_ready = self.readiness.update(False)
        elif not source.reachable:  # the outage began with the first failed request
            broker_ready = self.readiness.update(False, source.reachability_changed_at)
        else:
            broker_ready = self.readiness.update(source.ready)
        ready = broker_ready and not self.checkpointer.failing
        if ready != self._ready:
            self._ready = ready
            self._publish_snapshot(force=True)  # driftwatch_ready agrees with /readyz

    def _publish_snapshot(self, *, force: bool = False) -> None:
        now = self._clock()
        if not force and now - self._snapshot_at < self.snapshot_interval_s:
            return
        self._snapshot_at = now
        source = self.source
        monitors = self.monitors.snapshots()
        self._comparison_snapshots = self.comparisons.snapshots()
        # A model's events count grew since the last snapshot: it had events about now
        # (within snapshot_interval_s), which is what the "no events" alert measures.
        before = {snap.model: snap.events for snap in self._snapshot.monitors}
        wall = self._wall_clock()
        last = {snap.model: (wall if snap.events != before.get(snap.model)
                             else self._snapshot.last_processed.get(snap.model, wall))
                for snap in monitors}
        # A forced publish (readiness changed) must not wait for a probe of a dead broker.
        lag = source.lag(refresh=not force) if source is not None else {}
        checkpointer = self.checkpointer
        not_ready = set()
        if not self.readiness.ready:
            not_ready.add("kafka")
        if checkpointer.failing:
            not_ready.add("checkpoint")
        operations = Operations(
            consumer_group=self.settings.kafka.group_id,
            lag_seconds=self._lag_seconds(lag),
            not_ready=frozenset(not_ready),
            checkpoint_saves=checkpointer.saves,
            checkpoint_save_failures=checkpointer.failures,
            checkpoint_last_success_time=checkpointer.last_success_time,
            checkpoint_save_seconds=checkpointer.last_save_seconds,
            commits=source.commits if source is not None else 0,
            commit_failures=source.commit_failures if source is not None else 0,
            dead_letter_failures=self.dead_letter.failed if self.dead_letter else 0,
            alarm_publish_failures=self.alarm_publisher.failed if self.alarm_publisher else 0,
            broker_reconnects=source.reconnects if source is not None else 0,
            offset_resets=self._offset_resets,
            batch_seconds=self._batch_seconds.value(),
            state_split_models=None if self.partitioned is None else len(
                self.partitioned.split),
        )
        self._snapshot = AgentSnapshot(
            monitors=monitors,
            rejected=dict(self._rejected),
            skipped=dict(self._skipped),
            consumer_lag=lag,
            ready=self._ready,
            started_time=self._started,
            last_processed=last,
            operations=operations,
            join=self.join_shards.snapshot() if self.join_shards is not None else
            None if self.delayed is None else self.delayed.snapshot(),
        )

    def _lag_seconds(self, lag: Mapping[tuple[str, int], int]) -> dict[tuple[str, int], float]:
        now = self._wall_clock()
        seconds: dict[tuple[str, int], float] = {}
        for tp, records in lag.items():
            if records == 0:
                seconds[tp] = 0.0
            elif tp in self._last_timestamp_ms:
                seconds[tp] = max(0.0, now - self._last_timestamp_ms[tp] / 1000)
        return seconds


_PRODUCER_KEYS = ("bootstrap_servers", "client_id", "security_protocol")


def producer_config(consumer_config: Mapping[str, Any]) -> dict[str, Any]:
    """The connection and security part of the consumer's options, for producers (the
    dead-letter and alarm producers here, the simulated models of ``driftwatch simulate``)."""
    return {key: value for key, value in consumer_config.items()
            if key in _PRODUCER_KEYS or key.startswith(("sasl_", "ssl_"))}
