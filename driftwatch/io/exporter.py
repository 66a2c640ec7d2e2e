"""Prometheus exposition: a collector over an immutable agent snapshot, and its HTTP server.

The agent's loop thread owns the monitors; the HTTP server answers scrapes on its own threads.
They meet in one place only: a ``source`` callable that returns the latest
:class:`AgentSnapshot`, an immutable value the loop replaces wholesale (one attribute
assignment, atomic in CPython). :class:`SnapshotCollector` calls it once per scrape and builds
every metric family from that one value, so a scrape never sees half-updated state and
processing an event costs the exporter nothing.

Metrics (label sets in braces)::

    driftwatch_events_processed_total{model}                    counter
    driftwatch_events_rejected_total{reason}                    counter
    driftwatch_measure{model,measure}                           gauge   raw value
    driftwatch_measure_normalized{model,measure}                gauge   class-ratio-normalized
    driftwatch_measure_threshold{model,measure}                 gauge   adjusted raw threshold
    driftwatch_auc_standard_error{model}                        gauge   DeLong s.e. of window AUC
    driftwatch_window_events{model,class}                       gauge   class = positive|negative
    driftwatch_detector_state{model,measure,detector}           gauge   0 stable, 1 warning, 2 drift
    driftwatch_alarms_total{model,measure,detector,level}       counter
    driftwatch_last_event_timestamp_seconds{model}              gauge   event time (``ts``)
    driftwatch_last_alarm_timestamp_seconds{model}              gauge   event time (``ts``)
    driftwatch_last_processed_timestamp_seconds{model}          gauge   wall clock
    driftwatch_auc_floor{model}                                 gauge   alert thresholds from
    driftwatch_auc_max_drop{model}                              gauge     the settings'
    driftwatch_no_events_seconds{model}                         gauge     ``alerts`` section
    driftwatch_batch_labels{model}                              gauge     (1 or 0)
    driftwatch_consumer_lag_records{topic,partition,group}      gauge
    driftwatch_consumer_lag_seconds{topic,partition,group}      gauge   from record timestamps
    driftwatch_ready                                            gauge   1 ready, 0 not
    driftwatch_not_ready{reason}                                gauge   1 while it keeps /readyz 503
    driftwatch_checkpoint_saves_total                           counter
    driftwatch_checkpoint_save_failures_total                   counter
    driftwatch_checkpoint_last_success_timestamp_seconds        gauge   Unix time
    driftwatch_checkpoint_save_duration_seconds                 gauge   the last save's
    driftwatch_commits_total                                    counter
    driftwatch_commit_failures_total                            counter
    driftwatch_dead_letter_failures_total                       counter
    driftwatch_alarm_publish_failures_total                     counter
    driftwatch_broker_reconnects_total                          counter
    driftwatch_offset_resets_total{topic,partition,reason}      counter
    driftwatch_batch_processing_seconds                         histogram  per polled batch
    driftwatch_start_time_seconds                               gauge   Unix time
    driftwatch_build_info{version}                              gauge   always 1
    driftwatch_scrape_dropped_series_total                      counter series left out
    driftwatch_http_connections                                 gauge   open connections
    driftwatch_http_connections_closed_total{reason}            counter evicted|refused|timeout

Two choices shape the alert rules and dashboards:

- **Undefined values are omitted, not exported as NaN.** A measure is undefined when its window
  cannot define it (AUC with no positive or no negative, precision with no predicted positive),
  and a threshold is undefined until the first sample. PromQL comparisons with NaN are false
  either way, so ``driftwatch_measure < on(model, measure) driftwatch_measure_threshold`` does
  not fire on an undefined window whichever is chosen; but one NaN poisons ``avg``, ``sum``,
  ``avg_over_time`` and every recording rule built on them (an ``avg_over_time(...[15m]) < 0.7``
  alert would stay silent for 15 minutes after a single undefined scrape), and Grafana shows
  "NaN" in stat panels. An omitted sample is a gap: Prometheus marks the series stale, range
  functions use the defined points, Grafana draws a gap and applies its "no data" handling.
  "Why is AUC missing" stays answerable: ``driftwatch_window_events{class="positive"} == 0``,
  or ``driftwatch_events_processed_total unless on(model) driftwatch_measure{measure="auc"}``.
  Likewise a timestamp of something that has not happened yet (no event carried ``ts``, no
  alarm so far) is omitted rather than exported as 0, which would read as "1970".
- **Detector state is one ordinal gauge** (0 stable, 1 warning, 2 drift) rather than a
  StateSet: the states are ordered by severity, so ``== 2``, ``>= 1`` and
  ``max by (model) (driftwatch_detector_state)`` (the worst detector of a model) are one-liners,
  a Grafana state-timeline panel maps the three values to colours, and it is one series per
  detector instead of three. Drift is a one-step state (the detector restarts on its next
  input, ``sample_every`` events later), so it can fall between two scrapes: alert on
  ``increase(driftwatch_alarms_total{level="drift"}[5m]) > 0``. For that to catch the first
  alarm the counter must exist before it, so every (measure, detector) with a detector gets its
  ``warning`` and ``drift`` series, and every floored measure its ``threshold`` series, at 0.

The alert thresholds (``alerts`` in the settings, per model with defaults) are exported as
gauges next to the measures they judge, with the same labels, so that one rule set serves
every model: ``driftwatch_measure{measure="auc"} < ignoring(measure) driftwatch_auc_floor``.
The rules then need no per-model constants, and a threshold changes with the settings file,
not with the rules.

One series never fails a scrape: a sample whose labels cannot be encoded (a model id holding
a lone surrogate, from an old checkpoint: the decoder refuses such ids now) or whose building
raises is left out with the rest of its model's series, counted in
``driftwatch_scrape_dropped_series_total`` and logged once per model; everything else is
served with status 200. Only a failure of the snapshot itself answers 500.

The HTTP side, :class:`MetricsServer`, serves ``/metrics`` (content negotiation between the
Prometheus text format and OpenMetrics, gzip when asked, ``name[]`` filtering), ``/healthz``,
``/readyz`` and a landing page at ``/``, for GET and HEAD, optionally behind basic auth and
TLS. It holds at most ``max_connections`` connections and each for at most
``request_timeout`` seconds, so no client, however slow or numerous, can exhaust the agent's
threads or file descriptors (see :class:`MetricsServer`).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import contextlib
import gzip
import hashlib
import hmac
import logging
import math
import os
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from driftwatch import __version__

if TYPE_CHECKING:
    # Only for annotations: the collector reads attributes, so the exporter does not need the
    # core's detector modules loaded to be imported.
    from driftwatch.core.delayed import JoinSnapshot
    from driftwatch.core.monitor import Snapshot
    from driftwatch.settings import AlertThresholds

__all__ = [
    "BATCH_SECONDS_BUCKETS",
    "DETECTOR_STATE_CODES",
    "NOT_READY_REASONS",
    "AgentSnapshot",
    "Histogram",
    "HttpCollector",
    "LatencyHistogram",
    "MetricsServer",
    "Operations",
    "SnapshotCollector",
]

logger = logging.getLogger(__name__)

DETECTOR_STATE_CODES: Mapping[str, int] = MappingProxyType({"stable": 0, "warning": 1, "drift": 2})
"""The value of ``driftwatch_detector_state`` for each detector state, ordered by severity."""

_DETECTOR_LEVELS = ("warning", "drift")
"""Alarm levels a detector can raise; their counters are exported at 0 before the first one."""

_THRESHOLD = "threshold"
"""Detector name and level of a floor crossing (see :class:`driftwatch.core.monitor.Watch`)."""


BATCH_SECONDS_BUCKETS: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
"""Upper bounds of ``driftwatch_batch_processing_seconds``. A batch of 500 records at about
20 µs each takes about 10 ms; the buckets span 0.5 ms (a few records) to 5 s (the default
``kafka.max_poll_interval_ms``, past which the broker evicts the member)."""

NOT_READY_REASONS = ("kafka", "checkpoint")
"""What can keep ``/readyz`` at 503: ``kafka`` (broker unreachable for longer than the
readiness settings allow, or no partition assigned) and ``checkpoint`` (the last checkpoint
save failed; offsets are not committed until one succeeds)."""


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
    """

    consumer_group: str = ""
    lag_seconds: Mapping[tuple[str, int], float] = field(default_factory=_empty_mapping)
    not_ready: frozenset[str] = frozenset()
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "lag_seconds", MappingProxyType(dict(self.lag_seconds)))
        object.__setattr__(self, "offset_resets", MappingProxyType(dict(self.offset_resets)))
        object.__setattr__(self, "not_ready", frozenset(self.not_ready))


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
        ready: whether the agent is ready (assigned partitions, state restored).
        started_time: when the agent started, Unix seconds.
        last_processed: per model, the wall-clock time (Unix seconds) when the agent last
            took an event of it into its monitor; for a model restored from a checkpoint
            and silent since, when the agent started. What a "no events" alert measures.
        operations: the agent's own counters (:class:`Operations`).
        join: the join of predictions and labels (settings ``join``), None when records
            come joined; shown by :class:`~driftwatch.io.join_metrics.JoinCollector`, from
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

    def __post_init__(self) -> None:
        monitors = tuple(self.monitors)
        models = [m.model for m in monitors]
        if len(set(models)) != len(models):
            duplicates = sorted({m for m in models if models.count(m) > 1})
            raise ValueError(f"monitors: model ids must be distinct, repeated: {duplicates}")
        object.__setattr__(self, "monitors", monitors)
        object.__setattr__(self, "rejected", MappingProxyType(dict(self.rejected)))
        object.__setattr__(self, "consumer_lag", MappingProxyType(dict(self.consumer_lag)))
        object.__setattr__(self, "last_processed",
                           MappingProxyType(dict(self.last_processed)))

    @classmethod
    def empty(cls, started_time: float) -> AgentSnapshot:
        """The snapshot of an agent that has started but processed nothing and is not ready."""
        return cls(monitors=(), rejected={}, consumer_lag={}, ready=False,
                   started_time=started_time)


class _Families:
    """The metric families of one scrape, created empty; :meth:`fill` adds the samples."""

    def __init__(self) -> None:
        self.processed = CounterMetricFamily(
            "driftwatch_events_processed_total",
            "Events taken into the model's monitor (kept across restarts by the checkpoint).",
            labels=("model",),
        )
        self.rejected = CounterMetricFamily(
            "driftwatch_events_rejected_total",
            "Records rejected before reaching a monitor, by reason.",
            labels=("reason",),
        )
        self.measure = GaugeMetricFamily(
            "driftwatch_measure",
            "Measure over the model's window, raw; absent while undefined "
            "(e.g. AUC without both classes).",
            labels=("model", "measure"),
        )
        self.normalized = GaugeMetricFamily(
            "driftwatch_measure_normalized",
            "Measure normalized for the window's class ratio: share of all confusion matrices "
            "at this P:N scoring at most the raw value; absent while undefined.",
            labels=("model", "measure"),
        )
        self.threshold = GaugeMetricFamily(
            "driftwatch_measure_threshold",
            "Raw threshold equivalent to the measure's normalized floor at the current class "
            "ratio; compare with driftwatch_measure.",
            labels=("model", "measure"),
        )
        self.auc_standard_error = GaugeMetricFamily(
            "driftwatch_auc_standard_error",
            "DeLong standard error of the window AUC at the window's P and N; "
            "driftwatch_measure{measure=\"auc\"} + 2 * this < floor means significantly "
            "below the floor. Absent while undefined.",
            labels=("model",),
        )
        self.window = GaugeMetricFamily(
            "driftwatch_window_events",
            "Events in the model's window, by true class.",
            labels=("model", "class"),
        )
        self.detector_state = GaugeMetricFamily(
            "driftwatch_detector_state",
            "Detector state after its latest input: 0 stable, 1 warning, 2 drift "
            "(drift only with an alarm, until the detector's next input).",
            labels=("model", "measure", "detector"),
        )
        self.alarms = CounterMetricFamily(
            "driftwatch_alarms_total",
            "Alarms raised: detector warnings and drifts, and floor crossings "
            '(detector="threshold").',
            labels=("model", "measure", "detector", "level"),
        )
        self.last_event = GaugeMetricFamily(
            "driftwatch_last_event_timestamp_seconds",
            "Event time (ts) of the model's latest event that carried one, Unix seconds.",
            labels=("model",),
        )
        self.last_alarm = GaugeMetricFamily(
            "driftwatch_last_alarm_timestamp_seconds",
            "Event time (ts) of the event that raised the model's latest alarm, Unix seconds.",
            labels=("model",),
        )
        self.last_processed = GaugeMetricFamily(
            "driftwatch_last_processed_timestamp_seconds",
            "Wall-clock time the agent last processed an event of the model (or started, for "
            "a model restored from the checkpoint and silent since), Unix seconds.",
            labels=("model",),
        )
        self.auc_floor = GaugeMetricFamily(
            "driftwatch_auc_floor",
            "Alert threshold from the settings (alerts): AUC below this fires the AUC floor "
            "alerts.",
            labels=("model",),
        )
        self.auc_max_drop = GaugeMetricFamily(
            "driftwatch_auc_max_drop",
            "Alert threshold from the settings (alerts): largest AUC drop below the model's "
            "6-hour average that is not an alert.",
            labels=("model",),
        )
        self.no_events_seconds = GaugeMetricFamily(
            "driftwatch_no_events_seconds",
            "Alert threshold from the settings (alerts): seconds without events before the "
            "no-events alert fires.",
            labels=("model",),
        )
        self.batch_labels = GaugeMetricFamily(
            "driftwatch_batch_labels",
            "1 when the settings (alerts) mark the model's labels as arriving in batches: "
            "no paging no-events alert for it.",
            labels=("model",),
        )
        self.lag = GaugeMetricFamily(
            "driftwatch_consumer_lag_records",
            "Records between the consumer's position and the end of the partition.",
            labels=("topic", "partition", "group"),
        )
        self.lag_seconds = GaugeMetricFamily(
            "driftwatch_consumer_lag_seconds",
            "0 when caught up, else the age of the last processed record's timestamp: how "
            "far behind the producers the monitors are.",
            labels=("topic", "partition", "group"),
        )
        self.ready = GaugeMetricFamily(
            "driftwatch_ready",
            "1 when the agent is ready (partitions assigned, state restored), else 0.",
        )
        self.not_ready = GaugeMetricFamily(
            "driftwatch_not_ready",
            "1 while this reason keeps /readyz at 503: kafka (broker unreachable, or no "
            "partition) or checkpoint (saves failing, so nothing is committed).",
            labels=("reason",),
        )
        self.saves = CounterMetricFamily(
            "driftwatch_checkpoint_saves",
            "Checkpoints saved (monitor state with the offsets it covers).",
        )
        self.save_failures = CounterMetricFamily(
            "driftwatch_checkpoint_save_failures",
            "Checkpoint saves that failed (disk full, permission denied, ...); each retry "
            "counts. No offset is committed until a save succeeds.",
        )
        self.last_save = GaugeMetricFamily(
            "driftwatch_checkpoint_last_success_timestamp_seconds",
            "When the last checkpoint save succeeded, Unix seconds.",
        )
        self.save_seconds = GaugeMetricFamily(
            "driftwatch_checkpoint_save_duration_seconds",
            "How long the last successful checkpoint save took (export, write, fsync).",
        )
        self.commits = CounterMetricFamily(
            "driftwatch_commits",
            "Offset commits to the consumer group (each follows a checkpoint save).",
        )
        self.commit_failures = CounterMetricFamily(
            "driftwatch_commit_failures",
            "Offset commits that failed; the next save's commit carries newer offsets.",
        )
        self.dead_letter_failures = CounterMetricFamily(
            "driftwatch_dead_letter_failures",
            "Rejected records the dead-letter producer could not deliver.",
        )
        self.alarm_failures = CounterMetricFamily(
            "driftwatch_alarm_publish_failures",
            "Alarms the alarms-topic producer could not deliver.",
        )
        self.reconnects = CounterMetricFamily(
            "driftwatch_broker_reconnects",
            "Returns of the Kafka broker after it was unreachable.",
        )
        self.offset_resets = CounterMetricFamily(
            "driftwatch_offset_resets",
            "Times a partition's reading position jumped back because the log no longer "
            "reached the checkpoint's offset (reason beyond_log_end: recreated or truncated).",
            labels=("topic", "partition", "reason"),
        )
        self.batch_seconds = HistogramMetricFamily(
            "driftwatch_batch_processing_seconds",
            "Time to process one polled batch (decode, monitors, alarms), seconds.",
        )
        self.start_time = GaugeMetricFamily(
            "driftwatch_start_time_seconds",
            "When the agent started, Unix seconds.",
        )
        self.build = InfoMetricFamily(
            "driftwatch_build",
            "driftwatch version; the value is always 1.",
        )
        self.dropped = CounterMetricFamily(
            "driftwatch_scrape_dropped_series",
            "Series left out of scrapes because they could not be encoded (e.g. a model id "
            "that is not valid UTF-8) or built; the rest of each scrape is served.",
        )
        self.dropped_now = 0
        """Series left out of this scrape (the collector adds them to its running total)."""
        self.dropped_models: list[str] = []
        self._known_labels: set[str] = set()

    def all(self) -> list[Metric]:
        return [
            self.processed, self.rejected, self.measure, self.normalized, self.threshold,
            self.auc_standard_error, self.window, self.detector_state, self.alarms,
            self.last_event, self.last_alarm, self.last_processed, self.auc_floor,
            self.auc_max_drop, self.no_events_seconds, self.batch_labels, self.lag,
            self.lag_seconds, self.ready, self.not_ready, self.saves, self.save_failures,
            self.last_save, self.save_seconds, self.commits, self.commit_failures,
            self.dead_letter_failures, self.alarm_failures, self.reconnects, self.offset_resets,
            self.batch_seconds, self.start_time, self.build, self.dropped,
        ]

    def fill(self, agent: AgentSnapshot,
             thresholds: Callable[[str], AlertThresholds] | None = None) -> None:
        for snap in agent.monitors:
            alert = thresholds(snap.model) if thresholds is not None else None
            samples = self._model_samples(snap, agent.last_processed.get(snap.model), alert)
            self._add_all(samples, snap.model)
        self._add_all(
            ((self.rejected, (reason,), count) for reason, count in sorted(agent.rejected.items())),
            None,
        )
        ops = agent.operations
        group = ops.consumer_group
        self._add_all(
            ((self.lag, (topic, str(partition), group), lag)
             for (topic, partition), lag in sorted(agent.consumer_lag.items())),
            None,
        )
        self._add_all(
            ((self.lag_seconds, (topic, str(partition), group), seconds)
             for (topic, partition), seconds in sorted(ops.lag_seconds.items())),
            None,
        )
        self._add_all(
            ((self.offset_resets, (topic, str(partition), reason), count)
             for (topic, partition, reason), count in sorted(ops.offset_resets.items())),
            None,
        )
        self.ready.add_metric([], 1.0 if agent.ready else 0.0)
        for reason in NOT_READY_REASONS:
            self.not_ready.add_metric([reason], 1.0 if reason in ops.not_ready else 0.0)
        self.saves.add_metric([], ops.checkpoint_saves)
        self.save_failures.add_metric([], ops.checkpoint_save_failures)
        if ops.checkpoint_last_success_time is not None:
            self.last_save.add_metric([], ops.checkpoint_last_success_time)
        if ops.checkpoint_save_seconds is not None:
            self.save_seconds.add_metric([], ops.checkpoint_save_seconds)
        self.commits.add_metric([], ops.commits)
        self.commit_failures.add_metric([], ops.commit_failures)
        self.dead_letter_failures.add_metric([], ops.dead_letter_failures)
        self.alarm_failures.add_metric([], ops.alarm_publish_failures)
        self.reconnects.add_metric([], ops.broker_reconnects)
        self.batch_seconds.add_metric(
            [], [(_bound(bound), count) for bound, count in ops.batch_seconds.buckets],
            ops.batch_seconds.sum)
        self.start_time.add_metric([], agent.started_time)
        self.build.add_metric([], {"version": __version__})

    def _add_all(self, samples: Iterable[_Sample], model: str | None) -> None:
        """Add ``samples``: each one whose labels or value cannot be encoded is counted and
        left out, and when ``model`` is given, one bad sample (or an error while building
        them) leaves out all of that model's series: a model is shown whole or not at all."""
        built: list[_Sample] = []
        try:
            built.extend(samples)
        except Exception:
            if model is None:
                raise
            self._drop_model(model, len(built) + 1)  # the rest is unknown: at least one more
            return
        good = [sample for sample in built if _encodable(sample, self._known_labels)]
        if len(good) < len(built) and model is not None:
            self._drop_model(model, len(built))
            return
        self.dropped_now += len(built) - len(good)
        for family, labels, value in good:
            family.add_metric(list(labels), value)

    def _drop_model(self, model: str, series: int) -> None:
        self.dropped_now += series
        self.dropped_models.append(model)

    def _monitor_samples(self, snap: Snapshot) -> Iterator[_Sample]:
        model = snap.model
        yield self.processed, (model,), snap.events
        yield from _defined(self.measure, model, snap.values)
        yield from _defined(self.normalized, model, snap.normalized)
        yield from _defined(self.threshold, model, snap.thresholds)
        if snap.auc_standard_error == snap.auc_standard_error:  # omitted when NaN
            yield self.auc_standard_error, (model,), snap.auc_standard_error
        yield self.window, (model, "positive"), snap.positives
        yield self.window, (model, "negative"), snap.negatives
        for (measure, detector), state in sorted(snap.detector_states.items()):
            code = DETECTOR_STATE_CODES.get(state)
            if code is None:  # not a state the core produces; never guess a severity
                continue
            yield self.detector_state, (model, measure, detector), code
        for (measure, detector, level), count in _alarm_counts(snap):
            yield self.alarms, (model, measure, detector, level), count
        if snap.last_event_time is not None:
            yield self.last_event, (model,), snap.last_event_time
        if snap.last_alarm_time is not None:
            yield self.last_alarm, (model,), snap.last_alarm_time


    def _model_samples(self, snap: Snapshot, last_processed: float | None,
                       alert: AlertThresholds | None) -> Iterator[_Sample]:
        """Every series of one model: the monitor's, when it last processed an event, and
        its alert thresholds (when the collector has them)."""
        yield from self._monitor_samples(snap)
        model = snap.model
        if last_processed is not None:
            yield self.last_processed, (model,), last_processed
        if alert is not None:
            yield self.auc_floor, (model,), alert.auc_floor
            yield self.auc_max_drop, (model,), alert.auc_max_drop
            yield self.no_events_seconds, (model,), alert.no_events_seconds
            yield self.batch_labels, (model,), 1.0 if alert.batch_labels else 0.0


def _bound(bound: float) -> str:
    return "+Inf" if bound == math.inf else repr(bound)


_Sample = tuple[CounterMetricFamily | GaugeMetricFamily, tuple[str, ...], float]
"""One sample before it is added: its family, label values and value."""


def _encodable(sample: _Sample, known: set[str]) -> bool:
    """Whether the exposition can write ``sample``: label values that are strings encodable
    as UTF-8 (a lone surrogate is not) and a value that is a real number. ``known`` holds
    label values already found encodable in this scrape (they repeat: measure and detector
    names), so each distinct one is encoded once."""
    _, labels, value = sample
    for label in labels:
        if label in known:
            continue
        if type(label) is not str:
            return False
        try:
            label.encode("utf-8")
        except UnicodeEncodeError:
            return False
        known.add(label)
    if type(value) in (float, int):
        return True
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _defined(family: GaugeMetricFamily, model: str, values: Mapping[str, float]
             ) -> Iterator[_Sample]:
    for measure, value in sorted(values.items()):
        if value == value:  # NaN is the only value unequal to itself: undefined, omitted
            yield family, (model, measure), value


def _alarm_counts(snap: Snapshot) -> Iterable[tuple[tuple[str, str, str], int]]:
    """The snapshot's alarm counts, plus a 0 for every alarm its watches could still raise."""
    counts: dict[tuple[str, str, str], int] = {}
    for measure, detector in snap.detector_states:
        for level in _DETECTOR_LEVELS:
            counts[(measure, detector, level)] = 0
    for measure in snap.thresholds:
        counts[(measure, _THRESHOLD, _THRESHOLD)] = 0
    counts.update(snap.alarms)
    return sorted(counts.items())


_MAX_LOGGED_MODELS = 100
"""Model ids whose dropped series are logged (once each); further ones are only counted."""


class SnapshotCollector(Collector):
    """A Prometheus collector that renders the latest :class:`AgentSnapshot` at each scrape.

    ``source`` is called once per scrape, on the HTTP server's thread: it must be cheap and
    thread-safe, typically returning an attribute the agent's loop replaces. Every family is
    built fresh from that one value (the only state kept between scrapes is the count of
    dropped series), so the per-event cost is zero and the scrape cost is O(models ×
    measures). If ``source`` raises, the scrape fails (HTTP 500, Prometheus sets ``up`` to 0)
    rather than showing partial data; a model whose series cannot be encoded is left out and
    counted instead (``driftwatch_scrape_dropped_series_total``, see the module docstring).

    ``thresholds``, when given, maps a model id to its alert thresholds (the settings'
    ``alerts.thresholds``); they are exported for every model the snapshot holds, with the
    same labels as its measures.

    :meth:`describe` lists the families without calling ``source``, so registering the
    collector does not scrape it.

    Example:
        >>> from prometheus_client import CollectorRegistry
        >>> registry = CollectorRegistry()
        >>> registry.register(SnapshotCollector(lambda: AgentSnapshot.empty(1.7e9)))
        >>> registry.get_sample_value("driftwatch_start_time_seconds")
        1700000000.0
    """

    def __init__(self, source: Callable[[], AgentSnapshot],
                 thresholds: Callable[[str], AlertThresholds] | None = None) -> None:
        self.source = source
        self.thresholds = thresholds
        self._lock = threading.Lock()
        self._dropped = 0
        self._logged_models: set[str] = set()

    def collect(self) -> Iterator[Metric]:
        families = _Families()
        families.fill(self.source(), self.thresholds)
        with self._lock:  # scrapes run on concurrent server threads
            self._dropped += families.dropped_now
            dropped = self._dropped
            new = [m for m in families.dropped_models if m not in self._logged_models]
            if len(self._logged_models) < _MAX_LOGGED_MODELS:
                self._logged_models.update(new)
            else:
                new = []
        for model in new:
            logger.warning("model %s: its series cannot be exported (left out of every scrape, "
                           "counted in driftwatch_scrape_dropped_series_total)", ascii(model))
        families.dropped.add_metric([], dropped)
        return iter(families.all())

    def describe(self) -> Iterator[Metric]:
        return iter(_Families().all())


# ------------------------------------------------------------------------------------------------
# HTTP


REQUEST_TIMEOUT = 10.0
"""Default seconds a connection may last, from accept to the end of its response (TLS
handshake, request, answer); setting ``metrics.request_timeout_seconds``.

A scrape is a few kB over a live connection; ten seconds is far above any healthy client and
keeps a stalled or hostile client from holding a server thread indefinitely.
"""

MAX_CONNECTIONS = 32
"""Default most connections served at once; setting ``metrics.max_connections``. Prometheus
(one or two servers) and the kubelet's probes need a handful."""

EVICTION_WAIT = 1.0
"""Seconds the accept loop waits for an evicted idle connection's thread to let go of its
slot (it normally takes about a millisecond) before refusing the newcomer instead."""

POLL_INTERVAL = 0.1
"""Seconds between the accept loop's checks for :meth:`MetricsServer.stop`; bounds stop().

An idle server wakes ten times a second for one ``select`` call, unmeasurable next to the
agent's work; in exchange the agent's shutdown on SIGTERM waits at most 0.1 s for it.
"""


@dataclass(eq=False)
class _Connection:
    """One accepted connection, as the server's bookkeeping sees it."""

    sock: socket.socket  # the TLS socket once wrapped: the one whose descriptor is live
    deadline: float  # time.monotonic() by which it must be done
    busy: bool = False  # a complete request has been read and is being answered
    closing: bool = False  # shut down by the server (evicted or timed out)


_CLOSE_REASONS = ("evicted", "refused", "timeout")
"""Why the server closed a connection before its response: ``evicted``, idle (no complete
request yet) when every slot was taken and a newcomer arrived; ``refused``, a newcomer that
found every slot busy answering a request; ``timeout``, past ``request_timeout``."""


@dataclass
class _Stats:
    """Connection counts for :class:`HttpCollector`; written under the server's lock."""

    open: int = 0
    closed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_CLOSE_REASONS, 0))


def _shutdown(sock: socket.socket) -> None:
    """Shut ``sock`` down for both directions, waking the thread blocked on it.

    ``socket.socket``'s shutdown, on the descriptor, also for a TLS socket: the TLS layer's
    own would tear its state down under the connection's thread. An error means the socket
    is already closed by its thread (or never fully connected): nothing left to do.
    """
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    """One thread per connection, TLS handshake on that thread, quiet on client errors, and
    at most ``max_connections`` connections, each for at most ``request_timeout`` seconds.

    The bound is enforced in the accept loop (:meth:`process_request`), before a thread is
    started: at the limit, the connection idle longest is shut down for the newcomer (or the
    newcomer is closed at once when every connection is answering a request). The deadline is
    enforced by :meth:`service_actions`, which ``serve_forever`` calls every
    :data:`POLL_INTERVAL`: a client trickling one byte a second gets no more time than a
    silent one. A shut-down socket wakes its thread, which closes it and frees the slot.
    """

    daemon_threads = True  # a stuck client never keeps the process alive at exit
    block_on_close = False  # stop() never waits for clients; they are shut down instead
    # The kernel's queue of connections not yet accepted (socketserver's default is 5): a
    # burst of clients waits there, costing the process nothing, instead of retrying SYNs.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], family: socket.AddressFamily,
                 app: _App) -> None:
        self.address_family = family
        self.app = app
        self.stats = _Stats()
        self._connections: dict[int, _Connection] = {}  # in accept order
        self._lock = threading.Lock()
        self._slot_freed = threading.Condition(self._lock)
        self._local = threading.local()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, a DNS lookup that can stall start-up
        # for seconds and whose result nothing here uses.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    # -- the bound, in the accept loop

    def process_request(self, request: Any, client_address: Any) -> None:
        connection = self._admit(request)
        if connection is None:
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)  # starts the thread
        except BaseException:
            self._release(request)
            raise

    def _admit(self, request: socket.socket) -> _Connection | None:
        limit = self.app.max_connections
        with self._lock:
            if len(self._connections) >= limit:
                idle = next((c for c in self._connections.values()
                             if not c.busy and not c.closing), None)
                if idle is not None:
                    self._close(idle, "evicted")
                    self._slot_freed.wait_for(lambda: len(self._connections) < limit,
                                              EVICTION_WAIT)
                if len(self._connections) >= limit:
                    self.stats.closed["refused"] += 1
                    return None
            connection = _Connection(request, time.monotonic() + self.app.request_timeout)
            self._connections[id(request)] = connection
            self.stats.open = len(self._connections)
            return connection

    def _close(self, connection: _Connection, reason: str) -> None:
        """Shut ``connection`` down (its thread then closes it); the lock is held."""
        connection.closing = True
        self.stats.closed[reason] += 1
        _shutdown(connection.sock)

    def _release(self, request: socket.socket) -> None:
        with self._lock:
            self._connections.pop(id(request), None)
            self.stats.open = len(self._connections)
            self._slot_freed.notify_all()

    def service_actions(self) -> None:
        """Called by ``serve_forever`` every :data:`POLL_INTERVAL`: enforce the deadlines."""
        now = time.monotonic()
        with self._lock:
            for connection in self._connections.values():
                if not connection.closing and now > connection.deadline:
                    self._close(connection, "timeout")

    def close_connections(self) -> None:
        """Shut every open connection down (on stop); not counted as closed early."""
        with self._lock:
            for connection in self._connections.values():
                connection.closing = True
                _shutdown(connection.sock)

    # -- on the connection's thread

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(request)

    def finish_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            connection = self._connections.get(id(request))
        self._local.connection = connection
        request.settimeout(self.app.request_timeout)
        context = self.app.ssl_context
        if context is None:
            super().finish_request(request, client_address)
            return
        # The handshake runs here, on the connection's own thread, not in the accept loop,
        # where one slow client would block every other scrape and probe. Wrapping moves the
        # descriptor to the TLS socket: that is the one to shut down from now on, so it is
        # recorded before the handshake, which may stall.
        tls = context.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        if connection is not None:
            with self._lock:
                connection.sock = tls
                if connection.closing:  # shut down while the descriptor was moving
                    _shutdown(tls)
        try:
            tls.do_handshake()
            super().finish_request(tls, client_address)
        finally:
            self.shutdown_request(tls)

    def mark_busy(self) -> None:
        """The current thread's connection has a complete request: no longer evictable."""
        connection: _Connection | None = getattr(self._local, "connection", None)
        if connection is not None:
            connection.busy = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up, time out, or speak plain HTTP to the TLS port are their own
        # problem: one debug line, not a traceback on stderr.
        logger.debug("metrics server: request from %s failed", client_address, exc_info=True)


@dataclass(frozen=True, slots=True)
class _App:
    """What the request handler needs, shared by all connections."""

    registry: CollectorRegistry
    ready: Callable[[], bool]
    credentials: tuple[bytes, bytes] | None  # SHA-256 of the user and of the password
    ssl_context: ssl.SSLContext | None
    collect_failing: threading.Event
    max_connections: int = MAX_CONNECTIONS
    request_timeout: float = REQUEST_TIMEOUT
    not_ready_reasons: Callable[[], Iterable[str]] | None = None


_TEXT = (("Content-Type", "text/plain; charset=utf-8"),)

_LANDING_PAGE = b"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>driftwatch</title></head>
<body>
<h1>driftwatch</h1>
<p>Watches deployed binary classifiers: windowed AUC, class-ratio-normalized measures and
drift alarms.</p>
<ul>
<li><a href="metrics">metrics</a>: Prometheus metrics</li>
<li><a href="healthz">healthz</a>: liveness</li>
<li><a href="readyz">readyz</a>: readiness</li>
</ul>
</body>
</html>
"""
"""``/``: links to the endpoints, as exporters usually serve (relative links, so they also
work behind a reverse proxy's path prefix). Nothing on it needs protecting."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = f"driftwatch/{__version__}"

    def version_string(self) -> str:
        return self.server_version  # not the Python version: nothing for a scanner to match

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        if parsed:
            self.server.mark_busy()
        return parsed

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/metrics":
            self._metrics(url.query)
        elif url.path == "/healthz":
            self._reply(200, b"ok")
        elif url.path == "/readyz":
            if self._ready():
                self._reply(200, b"ready")
            else:
                self._reply(503, self._not_ready_text())
        elif url.path == "/":
            self._reply(200, _LANDING_PAGE, (("Content-Type", "text/html; charset=utf-8"),))
        else:
            self._reply(404, b"not found")

    def do_HEAD(self) -> None:
        """As GET, status and headers (Content-Length included), without the body: uptime
        probes use HEAD. :meth:`_reply` leaves the body out."""
        self.do_GET()

    def _ready(self) -> bool:
        try:
            return bool(self.server.app.ready())
        except Exception:
            logger.warning("readiness check raised; reporting not ready", exc_info=True)
            return False

    def _not_ready_text(self) -> bytes:
        """``not ready``, with the reasons when the owner gives them (``not ready: kafka,
        checkpoint``), so ``kubectl describe pod`` shows why without a metrics query."""
        reasons_of = self.server.app.not_ready_reasons
        try:
            reasons = sorted(reasons_of()) if reasons_of is not None else []
        except Exception:
            logger.warning("not-ready reasons raised; answering without them", exc_info=True)
            reasons = []
        text = "not ready" + (": " + ", ".join(reasons) if reasons else "")
        return text.encode("ascii", "replace")

    def _metrics(self, query: str) -> None:
        app = self.server.app
        if app.credentials is not None and not self._authorized(app.credentials):
            self._reply(401, b"unauthorized",
                        [*_TEXT, ("WWW-Authenticate", 'Basic realm="driftwatch", charset="UTF-8"')])
            return
        encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
        target: Collector = app.registry
        names = parse_qs(query).get("name[]")
        if names:
            target = cast(Collector, app.registry.restricted_registry(names))
        try:
            body = encoder(target)
        except Exception:
            # Log the first failure of a run of failures with its traceback, then stay quiet
            # until a scrape succeeds again: Prometheus retries every scrape interval.
            if not app.collect_failing.is_set():
                app.collect_failing.set()
                logger.exception("collecting metrics failed; answering 500 until it recovers")
            self._reply(500, b"collecting metrics failed")
            return
        if app.collect_failing.is_set():
            app.collect_failing.clear()
            logger.info("collecting metrics works again")
        headers = [("Content-Type", content_type)]
        if gzip_accepted(self.headers.get("Accept-Encoding", "")):
            body = gzip.compress(body)
            headers.append(("Content-Encoding", "gzip"))
        self._reply(200, body, headers)

    def _authorized(self, credentials: tuple[bytes, bytes]) -> bool:
        scheme, _, value = self.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            decoded = base64.b64decode(value.strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        user, colon, password = decoded.partition(b":")
        # Compare digests, in constant time, and both of them: neither the lengths nor which
        # part was wrong leak through timing.
        user_ok = hmac.compare_digest(_digest(user), credentials[0])
        password_ok = hmac.compare_digest(_digest(password), credentials[1])
        return bool(colon) and user_ok and password_ok

    def _reply(self, status: int, body: bytes,
               headers: Iterable[tuple[str, str]] = _TEXT) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("metrics server: %s - " + format, self.address_string(), *args)


class HttpCollector(Collector):
    """The metrics server's own series: open connections and those it closed early.

    ``driftwatch_http_connections_closed_total{reason}`` counts connections the server shut
    before their response: ``evicted`` (idle when the limit was reached and a newcomer
    arrived), ``refused`` (a newcomer finding every slot busy with a request) and ``timeout``
    (past the request timeout). A rising ``evicted`` or ``refused`` means clients are
    crowding the endpoint; a rising ``timeout`` means slow or stalled clients.
    """

    def __init__(self, stats: _Stats | None = None) -> None:
        self.stats = _Stats() if stats is None else stats

    def _families(self) -> tuple[GaugeMetricFamily, CounterMetricFamily]:
        return (
            GaugeMetricFamily(
                "driftwatch_http_connections",
                "Connections the metrics server holds open now (at most "
                "metrics.max_connections).",
            ),
            CounterMetricFamily(
                "driftwatch_http_connections_closed",
                "Connections the metrics server closed before answering: evicted (idle, "
                "at the connection limit), refused (every slot busy), timeout.",
                labels=("reason",),
            ),
        )

    def collect(self) -> Iterator[Metric]:
        connections, closed = self._families()
        connections.add_metric([], self.stats.open)
        for reason in _CLOSE_REASONS:
            closed.add_metric([reason], self.stats.closed[reason])
        return iter((connections, closed))

    def describe(self) -> Iterator[Metric]:
        return iter(self._families())


def _digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


def _display(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class MetricsServer:
    """Serves ``/metrics``, ``/healthz`` and ``/readyz`` on a daemon thread.

    Endpoints:
        ``/metrics``: ``registry`` in the format the client asks for (Prometheus text or
        OpenMetrics), gzip-compressed when accepted, restricted by ``name[]`` query parameters.
        Behind basic auth when ``basic_auth`` is given: 401 with ``WWW-Authenticate`` otherwise.
        ``/healthz``: 200 ``ok`` while the process serves at all (liveness).
        ``/readyz``: 200 when ``ready()`` is true, else 503 (readiness; a ``ready`` that raises
        counts as not ready). ``/``: a small HTML page linking the three. The probes and the
        page stay open under basic auth: Kubernetes probes cannot carry secrets without
        writing them into the pod spec, and they reveal nothing but up/ready. Any other path:
        404. HEAD is answered on every path as GET is, without the body.

    Bounds: at most ``max_connections`` connections at once (each holds a thread and a
    descriptor) and each for at most ``request_timeout`` seconds from accept to the end of
    its response. At the limit the connection idle longest (connected, no complete request
    yet) is shut down for the newcomer, so a crowd of idle or trickling clients cannot lock
    Prometheus out; when every slot is answering a request the newcomer is closed unanswered.
    Descriptors and threads held by the server therefore never exceed ``max_connections``
    (plus the listening socket and its thread), whatever the clients do. Open connections and
    early closes are exported by an :class:`HttpCollector` the server registers in
    ``registry`` while it runs.

    Lifecycle: :meth:`start` binds and starts serving (or raises ``OSError`` naming host:port,
    with no chained traceback, when the address is taken or the TLS files cannot be loaded);
    :meth:`stop` stops accepting, closes the socket and returns within about
    :data:`POLL_INTERVAL`; connections in flight are daemon threads and do not delay exit.
    Also a context manager (start on enter, stop on exit). Not restartable.

    Parameters:
        registry: what ``/metrics`` exposes (a fresh ``CollectorRegistry`` holding a
            :class:`SnapshotCollector`, plus whatever else the agent registers).
        host: address to bind, e.g. ``"0.0.0.0"``, ``"::"`` or ``"127.0.0.1"``.
        port: TCP port; 0 picks a free one, see :attr:`port`.
        ready: readiness predicate, called on each ``/readyz`` from a server thread.
        not_ready_reasons: optional, what keeps the agent not ready (e.g. ``kafka``,
            ``checkpoint``), named in the 503 body of ``/readyz``.
        basic_auth: ``(user, password)`` required for ``/metrics``, or None; neither may be
            empty (configured auth is enforced auth).
        tls: ``(certfile, keyfile)`` PEM files to serve HTTPS (TLS 1.2 or newer), or None.
        max_connections: connections served at once (≥ 1).
        request_timeout: seconds a connection may last (> 0).
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        host: str,
        port: int,
        ready: Callable[[], bool],
        basic_auth: tuple[str, str] | None = None,
        tls: tuple[str | os.PathLike[str], str | os.PathLike[str]] | None = None,
        max_connections: int = MAX_CONNECTIONS,
        request_timeout: float = REQUEST_TIMEOUT,
        not_ready_reasons: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        if not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an integer in 0..65535, got {port!r}")
        if basic_auth is not None and not basic_auth[0]:
            raise ValueError("basic_auth: the user name must not be empty")
        if basic_auth is not None and not basic_auth[1]:
            raise ValueError("basic_auth: the password must not be empty")
        if not isinstance(max_connections, int) or max_connections < 1:
            raise ValueError(f"max_connections must be a positive integer, got "
                             f"{max_connections!r}")
        if not request_timeout > 0:
            raise ValueError(f"request_timeout must be positive, got {request_timeout!r}")
        self.max_connections = max_connections
        self.request_timeout = request_timeout
        self.registry = registry
        self.host = host
        self.requested_port = port
        self.ready = ready
        self.not_ready_reasons = not_ready_reasons
        self.basic_auth = basic_auth
        self.tls = tls
        self._server: _Server | None = None
        self._collector: HttpCollector | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False

    def start(self) -> None:
        """Bind and serve on a daemon thread. Raises ``OSError`` naming the address on failure."""
        if self._server is not None or self._stopped:
            raise RuntimeError("MetricsServer.start: already started (servers do not restart)")
        where = _display(self.host, self.requested_port)
        context = self._ssl_context() if self.tls is not None else None
        credentials = None
        if self.basic_auth is not None:
            user, password = self.basic_auth
            credentials = (_digest(user.encode()), _digest(password.encode()))
        app = _App(self.registry, self.ready, credentials, context, threading.Event(),
                   self.max_connections, self.request_timeout, self.not_ready_reasons)
        try:
            infos = socket.getaddrinfo(self.host, self.requested_port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
            family, *_, sockaddr = infos[0]
            server = _Server((str(sockaddr[0]), self.requested_port), family, app)
        except OSError as error:
            reason = error.strerror or str(error)
            raise OSError(error.errno, f"metrics server cannot listen on {where}: {reason}") \
                from None
        self._server = server
        self._collector = HttpCollector(server.stats)
        self.registry.register(self._collector)
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": POLL_INTERVAL},
            name=f"driftwatch-metrics-{self.port}", daemon=True,
        )
        self._thread.start()
        logger.info("serving metrics at %s", self.url)

    def _ssl_context(self) -> ssl.SSLContext:
        assert self.tls is not None
        certfile, keyfile = self.tls
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(certfile, keyfile)
        except OSError as error:  # ssl.SSLError is an OSError
            raise OSError(
                error.errno,
                f"metrics server cannot load TLS certificate {os.fspath(certfile)!s} "
                f"with key {os.fspath(keyfile)!s}: {error.strerror or error}",
            ) from None
        return context

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and close the socket; idempotent; returns within ~POLL_INTERVAL."""
        self._stopped = True
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._server = self._thread = None
        if thread.is_alive():
            server.shutdown()  # returns once serve_forever notices, within POLL_INTERVAL
        server.server_close()
        server.close_connections()
        thread.join(timeout)
        if self._collector is not None:
            self.registry.unregister(self._collector)
            self._collector = None

    @property
    def port(self) -> int:
        """The bound port (the one the OS chose when 0 was asked). Only while serving."""
        if self._server is None:
            raise RuntimeError("MetricsServer.port: the server is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The metrics URL, e.g. ``http://127.0.0.1:9464/metrics``. Only while serving."""
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{_display(self.host, self.port)}/metrics"

    def __enter__(self) -> MetricsServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
