"""The metric families of one scrape, and how an agent snapshot fills them.

:class:`Families` creates every family the agent exports, empty, and :meth:`Families.fill`
adds the samples of one :class:`~driftwatch.sinks.snapshot.AgentSnapshot`; the collector
(:class:`~driftwatch.sinks.prometheus.collector.SnapshotCollector`) builds one per scrape.

Every family with its labels and help text: docs/metrics.md, generated from these families
(``python -m driftwatch.reference``; a test fails when one is missing).

The per-model families are :class:`~driftwatch.sinks.prometheus.rendered.RenderedFamily`:
their lines are written as text, once per model per snapshot (:meth:`Families.fill` returns
them for the next scrape), because at 10 000 models a scrape holds half a million of them
(docs/fleet.md). How many each model exports is the settings' ``metrics.per_model``
(:class:`Families`, ``level``).

The names 0.1.0 used for the thresholds, and ``driftwatch_start_time_seconds`` (which
duplicated ``process_start_time_seconds``), are still exported until 0.3.0:
:mod:`driftwatch.sinks.prometheus.deprecated`.

Undefined values are omitted, not exported as NaN; detector state is one ordinal gauge (0, 1,
2); every alarm counter and floored threshold exists at 0 before its first event; the alert
thresholds are gauges beside the measures they judge. Why:
docs/exporters.md#why-the-prometheus-families-look-as-they-do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)

from driftwatch.sinks.prometheus.budget_families import BudgetFamilies
from driftwatch.sinks.prometheus.deprecated import (
    DEPRECATED_NAMES,
    START_TIME,
    deprecated_help,
)
from driftwatch.sinks.prometheus.estimate_families import EstimateFamilies
from driftwatch.sinks.prometheus.rendered import RenderedFamily, escape_label_value
from driftwatch.sinks.snapshot import NOT_READY_REASONS, AgentSnapshot
from driftwatch.version import __version__, revision

if TYPE_CHECKING:
    # Only for annotations: the exporter reads attributes, so it does not need the core's
    # detector modules loaded to be imported.
    from driftwatch.core.monitor import Monitor, Snapshot
    from driftwatch.settings import AlertThresholds

__all__ = ["DETECTOR_STATE_CODES", "LEVELS", "Families", "ModelText", "normalized_shown"]

LEVELS = ("all", "standard", "minimal")
"""How much each model exports (the settings' ``metrics.per_model``): see :class:`Families`."""

_MINIMAL = frozenset({
    "driftwatch_events_processed", "driftwatch_measure", "driftwatch_auc_standard_error",
    "driftwatch_window_events", "driftwatch_alarms", "driftwatch_last_processed_timestamp_seconds",
    "driftwatch_auc_floor_threshold", "driftwatch_auc_max_drop_threshold",
    "driftwatch_no_events_threshold_seconds", "driftwatch_batch_labels_enabled",
})
"""The per-model families of level ``minimal`` (``driftwatch_measure`` for AUC only; the
deprecated names of its thresholds go with them)."""

_BY_MEASURE = frozenset({"driftwatch_measure", "driftwatch_measure_normalized"})
"""The families level ``standard`` restricts to the measures the model watches, and AUC."""

def normalized_shown(level: str, overrides: Mapping[str, str] | None = None
                     ) -> Callable[[Monitor], frozenset[str] | None] | None:
    """Which measures a model's snapshot must normalize for what ``level`` (and the
    per-model ``overrides``) export of ``driftwatch_measure_normalized``: every one at
    ``all``, the watched ones and AUC at ``standard``, none at ``minimal`` (see
    :class:`Families`); None when every model exports everything. The agent's snapshots
    compute no more (:class:`~driftwatch.pipeline.Monitors`): the normalizations are most
    of a snapshot's cost."""
    overrides = dict(overrides or {})
    if level == "all" and set(overrides.values()) <= {"all"}:
        return None

    def shown(monitor: Monitor) -> frozenset[str] | None:
        chosen = overrides.get(monitor.model, level)
        if chosen == "all":
            return None
        if chosen == "minimal":
            return frozenset()
        return monitor.watched_measures | {"auc"}

    return shown


DETECTOR_STATE_CODES: Mapping[str, int] = MappingProxyType({"stable": 0, "warning": 1, "drift": 2})
"""The value of ``driftwatch_detector_state`` for each detector state, ordered by severity."""

_DETECTOR_LEVELS = ("warning", "drift")
"""Alarm levels a detector can raise; their counters are exported at 0 before the first one."""

_THRESHOLD = "threshold"
"""Detector name and level of a floor crossing (see :class:`driftwatch.core.monitor.Watch`)."""


class Families:
    """The metric families of one scrape, created empty; :meth:`fill` adds the samples.

    ``deprecated``: whether :meth:`all` includes the names deprecated until 0.3.0
    (:mod:`driftwatch.sinks.prometheus.deprecated`), copies of the new families' samples.

    ``level``: how much each model exports (docs/metrics.md, Export levels). ``all``: every
    series. ``standard``: ``driftwatch_measure`` and ``driftwatch_measure_normalized`` only
    for the measures the model's watches watch (a detector or a floor), and AUC; every other
    family whole. ``minimal``: events processed, the window's events by class, AUC and its
    standard error, alarms, the last-processed time and the alert thresholds: what the
    paging alerts (AUC floor and drop, drift, no events) read; the other per-model families
    are not exported at all.
    """

    def __init__(self, deprecated: bool = True, level: str = "all",
                 overrides: Mapping[str, str] | None = None) -> None:
        self.overrides = dict(overrides or {})
        for name in (level, *self.overrides.values()):
            if name not in LEVELS:
                raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {name!r}")
        self.deprecated = deprecated
        self.level = level
        self.processed = RenderedFamily(
            "driftwatch_events_processed_total",
            "Events taken into the model's monitor (kept across restarts by the checkpoint).",
            "counter",
            labels=("model",),
        )
        self.rejected = CounterMetricFamily(
            "driftwatch_events_rejected_total",
            "Records rejected before reaching a monitor, by reason.",
            labels=("reason",),
        )
        self.skipped = CounterMetricFamily(
            "driftwatch_events_skipped_total",
            "Well-formed records left out on purpose, by reason (unwatched_model: not one of "
            "the settings' events.only_models); not errors.",
            labels=("reason",),
        )
        self.measure = RenderedFamily(
            "driftwatch_measure",
            "Measure over the model's window, raw; absent while undefined "
            "(e.g. AUC without both classes).",
            "gauge",
            labels=("model", "measure"),
        )
        self.normalized = RenderedFamily(
            "driftwatch_measure_normalized",
            "Measure normalized for the window's class ratio: share of all confusion matrices "
            "at this P:N scoring at most the raw value; absent while undefined.",
            "gauge",
            labels=("model", "measure"),
        )
        self.threshold = RenderedFamily(
            "driftwatch_measure_threshold",
            "Raw threshold equivalent to the measure's normalized floor at the current class "
            "ratio; compare with driftwatch_measure.",
            "gauge",
            labels=("model", "measure"),
        )
        self.auc_standard_error = RenderedFamily(
            "driftwatch_auc_standard_error",
            "DeLong standard error of the window AUC at the window's P and N; "
            "driftwatch_measure{measure=\"auc\"} + 2 * this < floor means significantly "
            "below the floor. Absent while undefined.",
            "gauge",
            labels=("model",),
        )
        self.window = RenderedFamily(
            "driftwatch_window_events",
            "Events in the model's window, by true class.",
            "gauge",
            labels=("model", "class"),
        )
        self.detector_state = RenderedFamily(
            "driftwatch_detector_state",
            "Detector state after its latest input: 0 stable, 1 warning, 2 drift "
            "(drift only with an alarm, until the detector's next input).",
            "gauge",
            labels=("model", "measure", "detector"),
        )
        self.alarms = RenderedFamily(
            "driftwatch_alarms_total",
            "Alarms raised: detector warnings and drifts, and floor crossings "
            '(detector="threshold").',
            "counter",
            labels=("model", "measure", "detector", "level"),
        )
        self.budget = BudgetFamilies()
        self.estimate = EstimateFamilies()
        self.last_event = RenderedFamily(
            "driftwatch_last_event_timestamp_seconds",
            "Event time (ts) of the model's latest event that carried one, Unix seconds.",
            "gauge",
            labels=("model",),
        )
        self.last_alarm = RenderedFamily(
            "driftwatch_last_alarm_timestamp_seconds",
            "Event time (ts) of the event that raised the model's latest alarm, Unix seconds.",
            "gauge",
            labels=("model",),
        )
        self.last_processed = RenderedFamily(
            "driftwatch_last_processed_timestamp_seconds",
            "Wall-clock time the agent last processed an event of the model (or started, for "
            "a model restored from the checkpoint and silent since), Unix seconds.",
            "gauge",
            labels=("model",),
        )
        self.auc_floor = RenderedFamily(
            "driftwatch_auc_floor_threshold",
            "Alert threshold from the settings (alerts): AUC below this fires the AUC floor "
            "alerts.",
            "gauge",
            labels=("model",),
        )
        self.auc_max_drop = RenderedFamily(
            "driftwatch_auc_max_drop_threshold",
            "Alert threshold from the settings (alerts): largest AUC drop below the model's "
            "6-hour average that is not an alert.",
            "gauge",
            labels=("model",),
        )
        self.no_events_seconds = RenderedFamily(
            "driftwatch_no_events_threshold_seconds",
            "Alert threshold from the settings (alerts): seconds without events before the "
            "no-events alert fires.",
            "gauge",
            labels=("model",),
        )
        self.batch_labels = RenderedFamily(
            "driftwatch_batch_labels_enabled",
            "1 when the settings (alerts) mark the model's labels as arriving in batches: "
            "no paging no-events alert for it.",
            "gauge",
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
            "partition), checkpoint (saves failing, so nothing is committed) or restoring "
            "(assigned partitions' state still being restored from the state topic).",
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
            "The loop's time the last successful checkpoint save took (export, write, fsync; "
            "for a save to the state topic sliced between polls, the sum of its slices: "
            "driftwatch_loop_pause_seconds shows the longest stop).",
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
        self.loop_pause = HistogramMetricFamily(
            "driftwatch_loop_pause_seconds",
            "Time between two polls of the loop (a batch, a snapshot, a save), seconds: "
            "no record is read while it lasts.",
        )
        self.split_models = GaugeMetricFamily(
            "driftwatch_state_split_models",
            "Models whose events arrive on more than one input partition: the state topic "
            "cannot hand them over exactly between replicas (key records by model). Only "
            "with checkpoint.backend kafka.",
        )
        self.partitions_restoring = GaugeMetricFamily(
            "driftwatch_state_partitions_restoring",
            "Assigned input partitions whose state is still being restored from the state "
            "topic (held: their records are read once it is complete; not ready meanwhile). "
            "Only with checkpoint.backend kafka.",
        )
        self.restore_seconds = GaugeMetricFamily(
            "driftwatch_state_restore_seconds_per_partition",
            "The last completed restore from the state topic, from assignment to resumption, "
            "seconds per partition restored (absent before the first). Only with "
            "checkpoint.backend kafka.",
        )
        self.snapshot_refresh = GaugeMetricFamily(
            "driftwatch_snapshot_refresh_seconds",
            "How long the last refresh of the models' values took, from its start to its "
            "publish, seconds: the values on /metrics were taken at most this long before "
            "they were published. Long at thousands of busy models, whose snapshots the loop "
            "takes a slice at a time (docs/fleet.md).",
        )
        self.start_time = GaugeMetricFamily(
            START_TIME,
            deprecated_help("process_start_time_seconds",
                            "When the agent started, Unix seconds."),
        )
        self.build = InfoMetricFamily(
            "driftwatch_build",
            "driftwatch version and source revision (or unknown); the value is always 1.",
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
        self._escaped: dict[str, str] = {}
        """Label values of this scrape's models, escaped, each once (they repeat: measure
        and detector names)."""
        self._aliases: dict[str, RenderedFamily] = {}
        """Each family with a deprecated name, and its copy under that name."""
        self._alias_of = {old: new for old, new in DEPRECATED_NAMES.items()}
        if deprecated:
            by_name = {family.name: family for family in self._per_model()}
            for old, new in DEPRECATED_NAMES.items():
                family = by_name[new]
                self._aliases[new] = RenderedFamily(
                    old, deprecated_help(new, family.documentation), family.type,
                    labels=family.label_names)

    def all(self) -> list[Metric]:
        families: list[Metric] = [
            self.processed, self.rejected, self.measure, self.normalized, self.threshold,
            self.auc_standard_error, self.window, self.detector_state, self.alarms,
            *self.budget.all(), *self.estimate.all(), self.last_event, self.last_alarm,
            self.last_processed, self.auc_floor, self.auc_max_drop, self.no_events_seconds,
            self.batch_labels, self.lag, self.lag_seconds, self.ready, self.not_ready, self.saves,
            self.save_failures, self.last_save, self.save_seconds, self.commits,
            self.commit_failures, self.dead_letter_failures, self.alarm_failures, self.reconnects,
            self.offset_resets, self.batch_seconds, self.loop_pause, self.split_models,
            self.partitions_restoring, self.restore_seconds, self.snapshot_refresh, self.build,
            self.dropped, self.skipped,
        ]
        if self.deprecated:
            families += [*self._aliases.values(), self.start_time]
        if {self.level, *self.overrides.values()} == {"minimal"}:
            families = [family for family in families if not isinstance(family, RenderedFamily)
                        or self._alias_of.get(family.name, family.name) in _MINIMAL]
        return families

    def fill(self, agent: AgentSnapshot,
             thresholds: Callable[[str], AlertThresholds] | None = None,
             rendered: Mapping[str, ModelText] | None = None) -> dict[str, ModelText]:
        """Add the samples of ``agent``; returns each model's text, to pass as ``rendered``
        to the next scrape's :meth:`fill`: a model whose snapshot is the same object, with
        the same last-processed time and thresholds, is not written again."""
        texts: dict[str, ModelText] = {}
        previous = rendered if rendered is not None else {}
        by_name = {family.name: family for family in self._per_model()}
        for snap in agent.monitors:
            alert = thresholds(snap.model) if thresholds is not None else None
            last = agent.last_processed.get(snap.model)
            text = previous.get(snap.model)
            if text is None or text.snapshot is not snap or text.last_processed != last or \
                    text.alert != alert:
                text = self._render(snap, last, alert)
            texts[snap.model] = text
            if text.lines is None:
                self._drop_model(snap.model, text.series)
                continue
            for name, lines in text.lines.items():
                by_name[name].parts.append(lines)
        self._add_all(
            ((self.rejected, (reason,), count) for reason, count in sorted(agent.rejected.items())),
        )
        self._add_all(
            ((self.skipped, (reason,), count) for reason, count in sorted(agent.skipped.items())),
        )
        ops = agent.operations
        group = ops.consumer_group
        self._add_all(
            ((self.lag, (topic, str(partition), group), lag)
             for (topic, partition), lag in sorted(agent.consumer_lag.items())),
        )
        self._add_all(
            ((self.lag_seconds, (topic, str(partition), group), seconds)
             for (topic, partition), seconds in sorted(ops.lag_seconds.items())),
        )
        self._add_all(
            ((self.offset_resets, (topic, str(partition), reason), count)
             for (topic, partition, reason), count in sorted(ops.offset_resets.items())),
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
        self.loop_pause.add_metric(
            [], [(_bound(bound), count) for bound, count in ops.loop_pause_seconds.buckets],
            ops.loop_pause_seconds.sum)
        if ops.state_split_models is not None:
            self.split_models.add_metric([], ops.state_split_models)
        if ops.state_partitions_restoring is not None:
            self.partitions_restoring.add_metric([], ops.state_partitions_restoring)
        if ops.state_restore_seconds_per_partition is not None:
            self.restore_seconds.add_metric([], ops.state_restore_seconds_per_partition)
        if ops.snapshot_refresh_seconds is not None:
            self.snapshot_refresh.add_metric([], ops.snapshot_refresh_seconds)
        if self.deprecated:
            self.start_time.add_metric([], agent.started_time)
        self.build.add_metric([], {"version": __version__, "revision": revision()})
        return texts

    def _add_all(self, samples: Iterable[_PlainSample]) -> None:
        """Add the agent-wide ``samples``; each one whose labels or value cannot be encoded
        is counted and left out."""
        built = list(samples)
        good = [sample for sample in built if _encodable(sample, self._known_labels)]
        self.dropped_now += len(built) - len(good)
        for family, labels, value in good:
            family.add_metric(list(labels), value)

    def _per_model(self) -> list[RenderedFamily]:
        """The families with a model label: written as text (:meth:`_render`)."""
        return [family for family in self.all() if isinstance(family, RenderedFamily)]

    def _render(self, snap: Snapshot, last_processed: float | None,
                alert: AlertThresholds | None) -> ModelText:
        """The lines of every series of one model, by family name; or, when one of its
        samples cannot be encoded or building them raises, none (``lines`` None) and how
        many series are left out: a model is shown whole or not at all."""
        built: list[_Sample] = []
        try:
            built.extend(self._model_samples(snap, last_processed, alert))
        except Exception:  # the rest is unknown: at least one more
            return ModelText(snap, last_processed, alert, None, len(built) + 1)
        level = self.overrides.get(snap.model, self.level)
        if level != "all":
            built = self._level_samples(snap, built, level)
        lines: dict[str, list[str]] = {}
        escaped, aliases = self._escaped, self._aliases
        try:
            for family, labels, value in built:
                try:
                    values = tuple(map(escaped.__getitem__, labels))
                except KeyError:  # a label value first seen in this scrape
                    values = tuple(map(self._escape, labels))
                name = family.name
                found = lines.get(name)
                if found is None:
                    found = lines[name] = []
                found.append(family.format.line(values, value))
                if name in aliases:
                    alias = aliases[name]
                    lines.setdefault(alias.name, []).append(alias.format.line(values, value))
        except (TypeError, ValueError, UnicodeEncodeError):
            return ModelText(snap, last_processed, alert, None, len(built))
        return ModelText(snap, last_processed, alert,
                         {name: "".join(text) for name, text in lines.items()}, len(built))

    def _drop_model(self, model: str, series: int) -> None:
        self.dropped_now += series
        self.dropped_models.append(model)

    def _level_samples(self, snap: Snapshot, built: list[_Sample], level: str
                       ) -> list[_Sample]:
        """The samples of ``built`` that ``level`` exports (see the class docstring)."""
        if level == "minimal":
            return [sample for sample in built if sample[0].name in _MINIMAL and (
                sample[0] is not self.measure or sample[1][1] == "auc")]
        watched = {measure for measure, _ in snap.detector_states}
        watched.update(snap.thresholds, ("auc",))
        return [sample for sample in built
                if sample[0].name not in _BY_MEASURE or sample[1][1] in watched]

    def _escape(self, label: str) -> str:
        """``label`` escaped for the exposition, remembered for this scrape; raises when
        it is not a string encodable as UTF-8 (a lone surrogate is not)."""
        text = self._escaped.get(label)
        if text is None:
            if type(label) is not str:
                raise TypeError(f"label value {label!r} is not a string")
            label.encode("utf-8")
            text = self._escaped[label] = escape_label_value(label)
        return text

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
        if snap.budget is not None:
            yield from self.budget.samples(model, snap.budget)
        if snap.estimate is not None:
            yield from self.estimate.samples(model, snap.estimate)
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


_Sample = tuple[RenderedFamily, tuple[str, ...], float]
"""One sample of a model before it is written: its family, label values and value."""

_PlainSample = tuple[CounterMetricFamily | GaugeMetricFamily, tuple[str, ...], float]
"""One agent-wide sample before it is added: its family, label values and value."""


@dataclass(frozen=True, slots=True)
class ModelText:
    """One model's series as written for a scrape, and what they were written from.

    ``lines``: the lines of each family (by name), None when the model is left out;
    ``series``: how many series it has (left out, when ``lines`` is None)."""

    snapshot: Snapshot
    last_processed: float | None
    alert: AlertThresholds | None
    lines: Mapping[str, str] | None
    series: int


def _encodable(sample: _PlainSample, known: set[str]) -> bool:
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


def _defined(family: RenderedFamily, model: str, values: Mapping[str, float]
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
