"""The agent: Kafka records in, per-model monitors, Prometheus metrics and alarms out.

The loop is the whole program and reads in a few lines (:meth:`Agent.run`): poll a batch,
decode each record, give its event to its model's monitor, emit the alarms, store the
record's offset, then maybe commit and maybe checkpoint. Every concern lives in its own
object: :class:`~driftwatch.io.kafka.KafkaSource` (group membership, offsets, backoff),
:class:`Monitors` (one pure :class:`~driftwatch.core.monitor.Monitor` per model, bounded),
:class:`Checkpointer` (state + offsets on disk), :class:`~driftwatch.io.alarms.AlarmLog`,
and the exporter, which only ever reads the immutable :class:`AgentSnapshot` the loop
publishes.

Lifecycle and failure behaviour:

- **At-least-once, no double counting.** A record's offset is stored only after its event is
  in the monitor; commits carry stored offsets only. The checkpoint holds the monitors' state
  *and* the offsets it corresponds to; on start the monitors are restored and every partition
  resumes from the checkpointed offset (not the group's commit, which may be ahead), so each
  event reaches a monitor exactly once across restarts. On any later assignment the agent
  seeks to the offsets its monitors have reached, for the same reason.
- **Stop.** ``stop`` (set by SIGTERM/SIGINT in the CLI) ends the loop after the current
  batch; the agent then writes a checkpoint, flushes the dead-letter producer and commits the
  processed offsets (in that order: a crash between them re-delivers, never loses), and
  returns. Every step is bounded (``KafkaSource.request_timeout_s``).
- **Broker loss.** The source retries with backoff; the loop keeps running, ``/readyz``
  answers 503 meanwhile, and metrics stay scrapable.
- **Bad records** are counted by reason, logged at a bounded rate, dead-lettered when a topic
  is configured, and skipped; **models beyond** ``limits.max_models`` are rejected the same
  way (reason ``too_many_models``) so memory and metric cardinality stay bounded.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import Any

from prometheus_client import CollectorRegistry

from driftwatch.core.monitor import Alarm, Monitor, MonitorConfig, Snapshot
from driftwatch.io.alarms import AlarmLog
from driftwatch.io.checkpoint import (
    CheckpointError,
    CheckpointStore,
    decode_offsets,
    encode_offsets,
)
from driftwatch.io.decode import REJECTION_REASONS, Decoded, EventFormat, Rejected, decode
from driftwatch.io.exporter import AgentSnapshot, MetricsServer, SnapshotCollector
from driftwatch.io.kafka import (
    AlarmPublisher,
    CommitPolicy,
    DeadLetter,
    KafkaSource,
    Record,
    TopicPartition,
)
from driftwatch.settings import Settings

log = logging.getLogger("driftwatch.agent")

TOO_MANY_MODELS = "too_many_models"

SNAPSHOT_INTERVAL_S = 1.0
"""How often the loop publishes a fresh snapshot for scrapes. Prometheus scrapes every 15 s
or so; a snapshot costs one normalization per measure and changed model (tens of µs each)."""

REJECTION_LOG_INTERVAL_S = 10.0
"""At most one log line per rejection reason in this many seconds: a producer sending only
garbage must not turn the agent's log into a copy of the topic."""


class Monitors:
    """One monitor per model, created on first sight, at most ``max_models`` of them."""

    def __init__(self, config_for: Callable[[str], MonitorConfig], max_models: int) -> None:
        self._config_for = config_for
        self._max_models = max_models
        self._monitors: dict[str, Monitor] = {}
        self._snapshots: dict[str, tuple[int, Snapshot]] = {}

    def get(self, model: str) -> Monitor | None:
        """The model's monitor; None when it would exceed the limit."""
        monitor = self._monitors.get(model)
        if monitor is None:
            if len(self._monitors) >= self._max_models:
                return None
            monitor = self._monitors[model] = Monitor(model, self._config_for(model))
        return monitor

    def __len__(self) -> int:
        return len(self._monitors)

    def snapshots(self) -> tuple[Snapshot, ...]:
        """Every monitor's snapshot; a monitor that saw no event since its last one is reused."""
        result = []
        for model, monitor in self._monitors.items():
            cached = self._snapshots.get(model)
            if cached is None or cached[0] != monitor.events:
                cached = self._snapshots[model] = (monitor.events, monitor.snapshot())
            result.append(cached[1])
        return tuple(result)

    def export_state(self) -> dict[str, Any]:
        return {model: monitor.export_state() for model, monitor in self._monitors.items()}

    def restore(self, states: Mapping[str, Any]) -> None:
        """Restore saved monitors, all or none; one whose settings changed keeps its window."""
        restored = {model: Monitor.restore(state, config=self._config_for(model))
                    for model, state in states.items()}
        self._monitors.update(restored)


class Checkpointer:
    """Saves monitor state with its offsets every ``interval_s`` (and on demand)."""

    def __init__(self, store: CheckpointStore | None, interval_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.interval_s = interval_s
        self._clock = clock
        self._last = clock()

    def due(self) -> bool:
        return self.store is not None and self._clock() - self._last >= self.interval_s

    def save(self, monitors: Monitors, offsets: Mapping[TopicPartition, int]) -> None:
        if self.store is None:
            return
        self.store.save({"offsets": encode_offsets(offsets), "monitors": monitors.export_state()})
        self._last = self._clock()
        log.debug("checkpoint saved: %d monitors, %d partitions", len(monitors), len(offsets))

    def load(self) -> tuple[dict[TopicPartition, int], dict[str, Any]]:
        """Offsets and monitor states from the last checkpoint (empty when there is none).

        Raises :class:`~driftwatch.io.checkpoint.CheckpointError` for an unreadable or
        incompatible checkpoint: the agent refuses to start rather than half-load it.
        """
        if self.store is None:
            return {}, {}
        checkpoint = self.store.read()
        if checkpoint is None:
            return {}, {}
        offsets = {TopicPartition(t, p): o
                   for (t, p), o in decode_offsets(checkpoint.payload["offsets"]).items()}
        log.info("restoring checkpoint %s written by driftwatch %s: %d monitors, %d partitions",
                 checkpoint.path, checkpoint.driftwatch_version,
                 len(checkpoint.payload["monitors"]), len(offsets))
        return offsets, dict(checkpoint.payload["monitors"])


class Agent:
    """Wires a source, the monitors, the exporter and the checkpoints; see the module doc.

    Parameters:
        settings: what to consume, monitor and serve.
        on_alarm: called with each alarm after it is logged (and published), on the loop's
            thread, so it must be quick; an exception it raises is logged, never raised into
            the loop. For an embedding program (the demo prints alarms as they fire).
        snapshot_interval_s: how often the loop publishes :attr:`snapshot`. An embedding
            program that shows live values next to live alarms may want it shorter.
        wall_clock, clock: Unix time and a monotonic clock, replaceable in tests.
    """

    def __init__(self, settings: Settings, *, on_alarm: Callable[[Alarm], None] | None = None,
                 snapshot_interval_s: float = SNAPSHOT_INTERVAL_S,
                 wall_clock: Callable[[], float] = time.time,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.on_alarm = on_alarm
        self.snapshot_interval_s = snapshot_interval_s
        self._clock = clock
        self._wall_clock = wall_clock
        self._format: EventFormat = settings.events.event_format()
        self.monitors = Monitors(settings.monitoring.monitor_config, settings.limits.max_models)
        store = CheckpointStore(settings.checkpoint.directory) if settings.checkpoint.enabled \
            else None
        self.checkpointer = Checkpointer(store, settings.checkpoint.interval_seconds, clock)
        self._rejected: dict[str, int] = dict.fromkeys((*REJECTION_REASONS, TOO_MANY_MODELS), 0)
        self._rejection_logged: dict[str, float] = {}
        # Next offset per partition whose events are all in the monitors.
        self._positions: dict[TopicPartition, int] = {}
        self._started = wall_clock()
        self._snapshot = AgentSnapshot.empty(self._started)
        self._snapshot_at = -float("inf")
        self.source: KafkaSource | None = None
        self.dead_letter: DeadLetter | None = None
        self.alarms = AlarmLog(logging.getLogger("driftwatch.alarms"))
        self.metrics_server: MetricsServer | None = None

    # -- the loop ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Consume until ``stop`` is set; then checkpoint, commit and close everything."""
        with ExitStack() as resources:
            source = self._start(resources)
            while not stop.is_set():
                for record in source.poll():
                    self.process(record)
                    source.store(record)
                self._publish_snapshot()
                if self.checkpointer.due():
                    self.checkpointer.save(self.monitors, self._positions)
                if self.dead_letter is None or self.dead_letter.flush(1.0):
                    source.maybe_commit()
            log.info("stopping: saving a checkpoint and committing processed offsets")
            self.checkpointer.save(self.monitors, self._positions)
            if self.dead_letter is not None:
                self.dead_letter.flush(5.0)
            # Leaving the ExitStack closes the source (which commits the stored offsets), the
            # producers and the metrics server, in reverse order of their start.
        log.info("stopped")

    def process(self, record: Record) -> None:
        """Decode one record and give its event to its model's monitor (or count a rejection)."""
        result = decode(record.value, record.key, self._format)
        if isinstance(result, Decoded):
            monitor = self.monitors.get(result.model)
            if monitor is not None:
                for alarm in monitor.update(result.event):
                    self.alarms.emit(alarm)
                    if self.on_alarm is not None:
                        self._notify(alarm)
            else:
                self._reject(record, Rejected(TOO_MANY_MODELS,
                                              f"model {result.model!r} would exceed "
                                              f"limits.max_models={self.settings.limits.max_models}"))
        else:
            self._reject(record, result)
        self._positions[record.topic_partition] = record.offset + 1

    @property
    def snapshot(self) -> AgentSnapshot:
        """The latest snapshot, the one ``/metrics`` shows: immutable, so any thread may read
        it. The loop replaces it about every ``snapshot_interval_s`` seconds."""
        return self._snapshot

    # -- parts ------------------------------------------------------------------------------

    def _notify(self, alarm: Alarm) -> None:
        assert self.on_alarm is not None
        try:
            self.on_alarm(alarm)
        except Exception:
            log.exception("the on_alarm callback failed for an alarm of model %s", alarm.model)

    def restore(self) -> None:
        """Load the checkpoint into the monitors and positions (nothing when there is none).

        Raises :class:`~driftwatch.io.checkpoint.CheckpointError` when the file, or a monitor
        state inside it, cannot be restored: nothing is half-loaded.
        """
        offsets, states = self.checkpointer.load()
        try:
            self.monitors.restore(states)
        except ValueError as error:
            raise CheckpointError(f"a monitor state in the checkpoint: {error}") from error
        self._positions.update(offsets)

    def _start(self, resources: ExitStack) -> KafkaSource:
        self.restore()
        kafka = self.settings.kafka
        consumer_config = kafka.consumer_config()
        producer_options = producer_config(consumer_config)
        if kafka.dead_letter_topic:
            self.dead_letter = resources.enter_context(
                DeadLetter(producer_options, kafka.dead_letter_topic))
        if kafka.alarms_topic:
            publisher = resources.enter_context(
                AlarmPublisher(producer_options, kafka.alarms_topic))
            self.alarms = AlarmLog(logging.getLogger("driftwatch.alarms"), publisher.publish)
        metrics = self.settings.metrics
        registry = CollectorRegistry(auto_describe=True)
        registry.register(SnapshotCollector(lambda: self._snapshot,
                                            self.settings.alerts.thresholds))
        self.source = KafkaSource(
            consumer_config,
            topics=kafka.topics or (),
            pattern=kafka.topic_pattern,
            on_assigned=self._on_assigned,
            commit_policy=CommitPolicy(kafka.commit_every_records, kafka.commit_every_seconds,
                                       self._clock),
            poll_timeout_s=kafka.poll_timeout_ms / 1000,
            backoff_initial_s=kafka.reconnect_backoff_initial_seconds,
            backoff_max_s=kafka.reconnect_backoff_max_seconds,
        )
        basic_auth = None
        if metrics.basic_auth_username is not None and metrics.basic_auth_password is not None:
            basic_auth = (metrics.basic_auth_username,
                          metrics.basic_auth_password.get_secret_value())
        tls = (metrics.tls_certfile, metrics.tls_keyfile) if metrics.tls_certfile and \
            metrics.tls_keyfile else None
        self.metrics_server = MetricsServer(registry, metrics.host, metrics.port,
                                            ready=lambda: self._snapshot.ready,
                                            basic_auth=basic_auth, tls=tls,
                                            max_connections=metrics.max_connections,
                                            request_timeout=metrics.request_timeout_seconds)
        resources.enter_context(self.metrics_server)
        log.info("metrics at %s", self.metrics_server.url)
        return resources.enter_context(self.source)

    def _on_assigned(self, partitions: set[TopicPartition]) -> dict[TopicPartition, int]:
        # Runs on kafka-python's IO thread while the loop is blocked in poll: a plain read.
        return {tp: self._positions[tp] for tp in partitions if tp in self._positions}

    def _reject(self, record: Record, rejected: Rejected) -> None:
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

    def _publish_snapshot(self) -> None:
        now = self._clock()
        if now - self._snapshot_at < self.snapshot_interval_s:
            return
        self._snapshot_at = now
        source = self.source
        monitors = self.monitors.snapshots()
        # A model's events count grew since the last snapshot: it had events about now
        # (within snapshot_interval_s), which is what the "no events" alert measures.
        before = {snap.model: snap.events for snap in self._snapshot.monitors}
        wall = self._wall_clock()
        last = {snap.model: (wall if snap.events != before.get(snap.model)
                             else self._snapshot.last_processed.get(snap.model, wall))
                for snap in monitors}
        self._snapshot = AgentSnapshot(
            monitors=monitors,
            rejected=dict(self._rejected),
            consumer_lag=source.lag() if source is not None else {},
            ready=source is not None and source.ready,
            started_time=self._started,
            last_processed=last,
        )


_PRODUCER_KEYS = ("bootstrap_servers", "client_id", "security_protocol")


def producer_config(consumer_config: Mapping[str, Any]) -> dict[str, Any]:
    """The connection and security part of the consumer's options, for producers (the
    dead-letter and alarm producers here, the simulated models of ``driftwatch simulate``)."""
    return {key: value for key, value in consumer_config.items()
            if key in _PRODUCER_KEYS or key.startswith(("sasl_", "ssl_"))}
