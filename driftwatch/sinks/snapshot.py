"""The agent's snapshot: everything the exporter shows, as one immutable value.

The agent builds an :class:`AgentSnapshot` on its loop thread and publishes it by replacing a
reference; the collectors (:mod:`driftwatch.sinks.prometheus.collector`,
:mod:`driftwatch.sinks.prometheus.join_collector`) only read it, on the HTTP server's threads.
:class:`Operations` is the agent's view of itself (durability, Kafka, timing),
:class:`LatencyHistogram` the one mutable counter it keeps for it.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Only for annotations: the exporter reads attributes, so it does not need the core's
    # detector modules loaded to be imported.
    from driftwatch.core.delayed import JoinSnapshot
    from driftwatch.core.monitor import Snapshot

__all__ = [
    "BATCH_SECONDS_BUCKETS",
    "LOOP_PAUSE_SECONDS_BUCKETS",
    "NOT_READY_REASONS",
    "AgentSnapshot",
    "Histogram",
    "LatencyHistogram",
    "Operations",
]

BATCH_SECONDS_BUCKETS: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
"""Upper bounds of ``driftwatch_batch_processing_seconds``. A batch of 500 records at about
20 µs each takes about 10 ms; the buckets span 0.5 ms (a few records) to 5 s (the default
``kafka.max_poll_interval_ms``, past which the broker evicts the member)."""

LOOP_PAUSE_SECONDS_BUCKETS: tuple[float, ...] = (
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Upper bounds of ``driftwatch_loop_pause_seconds``: 0.5 s is issue 25's target for the
longest pause (a save, a restore slice); the long end tells a save of thousands of models
(seconds to tens of seconds) from one that outlasts the group's timeouts."""

NOT_READY_REASONS = ("kafka", "checkpoint", "restoring")
"""What can keep ``/readyz`` at 503: ``kafka`` (broker unreachable for longer than the
readiness settings allow, or no partition assigned), ``checkpoint`` (the last checkpoint
save failed; offsets are not committed until one succeeds) and ``restoring`` (assigned
partitions' state is still being restored from the state topic; the body names them)."""


@dataclass(frozen=True, slots=True)
class Histogram:
    """A histogram's value: cumulative counts per upper bound (the last one ``+Inf``) and the
    sum of the observations."""

    buckets: tuple[tuple[float, int], ...]
    sum: float


class LatencyHistogram:
    """Counts observations into fixed buckets; :meth:`value` gives an immutable copy.

    Used by one thread (the agent's loop); the copy goes into the snapshot, so scrapes never
    touch it. O(log buckets) per observation.
    """

    def __init__(self, bounds: Iterable[float] = BATCH_SECONDS_BUCKETS) -> None:
        self.bounds = tuple(sorted(bounds))
        self._counts = [0] * (len(self.bounds) + 1)
        self._sum = 0.0

    def observe(self, seconds: float) -> None:
        self._counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self._sum += seconds

    def value(self) -> Histogram:
        cumulative, total = [], 0
        for bound, count in zip((*self.bounds, math.inf), self._counts, strict=True):
            total += count
            cumulative.append((bound, total))
        return Histogram(tuple(cumulative), self._sum)


def _empty_mapping() -> Mapping[Any, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Operations:
    """The agent's view of itself, for operators: durability, Kafka and timing.

    Counters count since the process started (Prometheus handles the reset of a restart);
    a ``None`` gauge is omitted (nothing happened yet).

    Attributes:
        consumer_group: the Kafka consumer group, the ``group`` label of the lag metrics.
        lag_seconds: per ``(topic, partition)``: 0 when caught up, else how old the
            timestamp of the last processed record is (Unix now minus the record's
            timestamp): how far behind the producers the monitors are.
        not_ready: the :data:`NOT_READY_REASONS` that currently hold ``/readyz`` at 503.
        not_ready_why: for each of them, one line saying why, naming the setting to look
            at (``/readyz`` answers with it).
        checkpoint_saves, checkpoint_save_failures: saves done and failed (each retry counts).
        checkpoint_last_success_time: Unix time of the last successful save.
        checkpoint_save_seconds: how long the last successful save took (state export,
            serialization, write and fsyncs).
        commits, commit_failures: offset commit requests done and failed.
        dead_letter_failures, alarm_publish_failures: records the dead-letter and alarm
            producers could not deliver.
        broker_reconnects: returns of the broker after it was unreachable.
        offset_resets: per ``(topic, partition, reason)``: times a partition's reading
            position jumped back, because the log no longer reached the checkpoint's offset
            (``beyond_log_end``: the topic was recreated or truncated).
        batch_seconds: processing time of each polled batch (decode, monitors, alarms).
        loop_pause_seconds: the loop's time between two polls (a batch, a snapshot, a
            save): while it lasts no record is read.
        state_split_models: models whose events come from more than one input partition,
            so that the state topic cannot hand them over exactly (None: file checkpoint).
        state_partitions_restoring: assigned partitions whose restore from the state topic
            is not complete (None: file checkpoint).
        state_restore_seconds_per_partition: the last completed restore's seconds (from
            assignment to resumption) per partition (None: none yet, or file checkpoint).
        snapshot_refresh_seconds: how long the last refresh of the models' snapshots took
            from its start to its publish (None: none yet): a model's published values were
            taken at most this long before the publish.
    """

    consumer_group: str = ""
    lag_seconds: Mapping[tuple[str, int], float] = field(default_factory=_empty_mapping)
    not_ready: frozenset[str] = frozenset()
    not_ready_why: Mapping[str, str] = field(default_factory=_empty_mapping)
    checkpoint_saves: int = 0
    checkpoint_save_failures: int = 0
    checkpoint_last_success_time: float | None = None
    checkpoint_save_seconds: float | None = None
    commits: int = 0
    commit_failures: int = 0
    dead_letter_failures: int = 0
    alarm_publish_failures: int = 0
    broker_reconnects: int = 0
    offset_resets: Mapping[tuple[str, int, str], int] = field(default_factory=_empty_mapping)
    batch_seconds: Histogram = field(default_factory=lambda: LatencyHistogram().value())
    loop_pause_seconds: Histogram = field(default_factory=lambda: LatencyHistogram(
        LOOP_PAUSE_SECONDS_BUCKETS).value())
    state_split_models: int | None = None
    state_partitions_restoring: int | None = None
    state_restore_seconds_per_partition: float | None = None
    snapshot_refresh_seconds: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "lag_seconds", MappingProxyType(dict(self.lag_seconds)))
        object.__setattr__(self, "offset_resets", MappingProxyType(dict(self.offset_resets)))
        object.__setattr__(self, "not_ready", frozenset(self.not_ready))
        object.__setattr__(self, "not_ready_why", MappingProxyType(dict(self.not_ready_why)))

    def not_ready_text(self) -> list[str]:
        """What holds ``/readyz`` at 503, one ``reason: why`` per reason, sorted."""
        return [f"{reason}: {self.not_ready_why[reason]}" if reason in self.not_ready_why
                else reason for reason in sorted(self.not_ready)]


@dataclass(frozen=True, slots=True)
class AgentSnapshot:
    """Everything the exporter shows, as one immutable value.

    The agent builds it on its loop thread (never on the HTTP thread, which would race the
    monitors) and publishes it by replacing a reference; the collector only reads it. The
    mappings are copied into read-only views on construction, so the agent may keep mutating
    the dicts it built them from.

    Attributes:
        monitors: one :class:`~driftwatch.core.monitor.Snapshot` per model; model ids must be
            distinct. Each one's ``events`` is the model's processed-events counter.
        rejected: rejected records by reason (including ``"too_many_models"``). Reasons the
            agent knows in advance should be present at 0, so the first rejection shows up in
            ``increase()``.
        consumer_lag: records between the committed offset and the end of each assigned
            ``(topic, partition)``.
        skipped: well-formed records left out on purpose, by reason (``"unwatched_model"``:
            not one of ``events.only_models``); not errors, so apart from ``rejected``.
        ready: whether the agent is ready (assigned partitions, state restored).
        started_time: when the agent started, Unix seconds.
        last_processed: per model, the wall-clock time (Unix seconds) when the agent last
            took an event of it into its monitor; for a model restored from a checkpoint
            and silent since, when the agent started. What a "no events" alert measures.
        operations: the agent's own counters (:class:`Operations`).
        join: the join of predictions and labels (settings ``join``), None when records
            come joined; shown by
            :class:`~driftwatch.sinks.prometheus.join_collector.JoinCollector`, from
            this same value so that a scrape sees the join and the monitors at one moment.
    """

    monitors: tuple[Snapshot, ...]
    rejected: Mapping[str, int]
    consumer_lag: Mapping[tuple[str, int], int]
    ready: bool
    started_time: float
    last_processed: Mapping[str, float] = field(default_factory=dict)
    operations: Operations = field(default_factory=Operations)
    join: JoinSnapshot | None = None
    skipped: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        monitors = tuple(self.monitors)
        models = [m.model for m in monitors]
        if len(set(models)) != len(models):
            duplicates = sorted({m for m in models if models.count(m) > 1})
            raise ValueError(f"monitors: model ids must be distinct, repeated: {duplicates}")
        object.__setattr__(self, "monitors", monitors)
        object.__setattr__(self, "rejected", MappingProxyType(dict(self.rejected)))
        object.__setattr__(self, "skipped", MappingProxyType(dict(self.skipped)))
        object.__setattr__(self, "consumer_lag", MappingProxyType(dict(self.consumer_lag)))
        object.__setattr__(self, "last_processed",
                           MappingProxyType(dict(self.last_processed)))

    @classmethod
    def empty(cls, started_time: float) -> AgentSnapshot:
        """The snapshot of an agent that has started but processed nothing and is not ready."""
        return cls(monitors=(), rejected={}, consumer_lag={}, ready=False,
                   started_time=started_time)
