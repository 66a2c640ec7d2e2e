"""The replay itself: recorded records through the agent's decoder into per-model monitors.

A replay is the agent without Kafka, Prometheus or the clock: each record is decoded with the
settings' events format, its event goes to its model's :class:`~driftwatch.core.monitor.Monitor`
(built from the same settings, at most ``limits.max_models`` of them), and what the agent
would log — alarms and rejected records — is collected instead, with where each happened.
Same settings, same events, same order: the same alarms as the agent.

It runs as fast as the monitors do: per record one decode and one monitor update; the
optional series for the figure cost one read per sample (:mod:`driftwatch.replay.series`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from driftwatch.core.monitor import Alarm, Monitor, MonitorConfig, Snapshot
from driftwatch.io.decode import REJECTION_REASONS, Decoded, EventFormat, Rejected, decode
from driftwatch.replay.series import Series, SeriesRecorder, default_measures
from driftwatch.replay.sources import BAD_CSV, Record

TOO_MANY_MODELS = "too_many_models"
"""Rejection of an event whose model would exceed ``limits.max_models`` (as in the agent)."""

MAX_KEPT_BAD_RECORDS = 1000
"""Bad records kept with their position; all are counted. Bounds memory on a garbage file."""

FIELD_SAMPLE_RECORDS = 5
"""While no record has become an event, the top-level fields of this many rejected JSON
objects are kept, so a replay that rejects everything can say which fields the records have
(most often the settings name other fields than the producer writes)."""


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A record that did not become an event: where, and the decoder's reason."""

    position: int  # line number, or offset within ``partition``
    partition: int | None
    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class ReplayAlarm:
    """An alarm and the record whose event raised it."""

    alarm: Alarm
    position: int
    partition: int | None


@dataclass(slots=True)
class ReplayResult:
    """Everything a replay found: counts, alarms, bad records, final snapshots, series."""

    source: str
    records: int = 0
    events: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    bad_records: list[BadRecord] = field(default_factory=list)
    alarms: list[ReplayAlarm] = field(default_factory=list)
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    configs: dict[str, MonitorConfig] = field(default_factory=dict)
    series: dict[str, Series] = field(default_factory=dict)
    seconds: float = 0.0
    fields_seen: tuple[str, ...] = ()
    """The top-level fields of the first rejected JSON objects, in order of appearance
    (collected only while no record has become an event)."""

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())


OnBad = Callable[[BadRecord], None]
OnAlarm = Callable[[ReplayAlarm], None]


class Replay:
    """Feeds records to per-model monitors and collects what they report.

    Parameters:
        fmt: how record values become events.
        config_for: the monitor configuration of a model (``settings.monitoring.monitor_config``).
        max_models: at most this many monitors; events of further models are rejected with
            reason ``too_many_models``.
        series_models: record the figure's series for these models; None: for every model,
            empty: for none (the default: recording costs a little per sample).
        measures: the measures to record; None: AUC and the watched ones of each model.
        on_bad, on_alarm: called as bad records and alarms occur (e.g. to print them).
    """

    def __init__(self, fmt: EventFormat, config_for: Callable[[str], MonitorConfig],
                 max_models: int, *, series_models: Collection[str] | None = (),
                 measures: tuple[str, ...] | None = None, on_bad: OnBad | None = None,
                 on_alarm: OnAlarm | None = None) -> None:
        self._fmt = fmt
        self._config_for = config_for
        self._max_models = max_models
        self._series_models = series_models
        self._measures = measures
        self._on_bad = on_bad
        self._on_alarm = on_alarm
        self._monitors: dict[str, Monitor] = {}
        self._recorders: dict[str, SeriesRecorder] = {}
        self.records = 0
        self.events = 0
        self.alarm_count = 0
        self._rejected = dict.fromkeys((*REJECTION_REASONS, TOO_MANY_MODELS), 0)
        self._bad: list[BadRecord] = []
        self._alarms: list[ReplayAlarm] = []
        self._fields_seen: dict[str, None] = {}  # ordered set
        self._field_samples = 0

    def process(self, record: Record) -> None:
        """Decode one record and give its event to its model's monitor (or count it)."""
        self.records += 1
        result: Decoded | Rejected = record.rejected or decode(record.value, record.key,
                                                               self._fmt)
        if isinstance(result, Rejected):
            self._reject(record, result)
            return
        model = result.model
        monitor = self._monitors.get(model)
        if monitor is None:
            monitor = self._add(model)
            if monitor is None:
                self._reject(record, Rejected(
                    TOO_MANY_MODELS, f"model {model!r} would exceed limits.max_models="
                    f"{self._max_models}"))
                return
        self.events += 1
        alarms = monitor.update(result.event)
        recorder = self._recorders.get(model)
        if recorder is not None and monitor.events % monitor.config.sample_every == 0:
            recorder.sample(monitor)
        for alarm in alarms:
            found = ReplayAlarm(alarm, record.position, record.partition)
            self._alarms.append(found)
            self.alarm_count += 1
            if self._on_alarm is not None:
                self._on_alarm(found)

    def _add(self, model: str) -> Monitor | None:
        if len(self._monitors) >= self._max_models:
            return None
        config = self._config_for(model)
        monitor = self._monitors[model] = Monitor(model, config)
        if self._series_models is None or model in self._series_models:
            measures = self._measures or default_measures(config)
            self._recorders[model] = SeriesRecorder(model, config, measures)
        return monitor

    def _reject(self, record: Record, rejected: Rejected) -> None:
        self._rejected[rejected.reason] = self._rejected.get(rejected.reason, 0) + 1
        bad = BadRecord(record.position, record.partition, rejected.reason, rejected.detail)
        if len(self._bad) < MAX_KEPT_BAD_RECORDS:
            self._bad.append(bad)
        if not self.events and self._field_samples < FIELD_SAMPLE_RECORDS:
            self._sample_fields(record.value)
        if self._on_bad is not None:
            self._on_bad(bad)

    def _sample_fields(self, value: bytes | None) -> None:
        try:
            obj = json.loads(value) if value else None
        except (ValueError, RecursionError):
            return
        if isinstance(obj, dict):
            self._field_samples += 1
            self._fields_seen.update(dict.fromkeys(map(str, obj)))

    def result(self, source: str, seconds: float) -> ReplayResult:
        """What the replay found so far; snapshots are taken now."""
        reasons = [*REJECTION_REASONS, TOO_MANY_MODELS]
        if self._rejected.get(BAD_CSV):
            reasons.append(BAD_CSV)
        return ReplayResult(
            source=source,
            records=self.records,
            events=self.events,
            rejected={reason: self._rejected.get(reason, 0) for reason in reasons},
            bad_records=list(self._bad),
            alarms=list(self._alarms),
            snapshots={m: monitor.snapshot() for m, monitor in self._monitors.items()},
            configs={m: monitor.config for m, monitor in self._monitors.items()},
            series={m: r.series for m, r in self._recorders.items()},
            seconds=seconds,
            fields_seen=tuple(self._fields_seen),
        )


def run(records: Iterable[Record], replay: Replay, source: str,
        tick: Callable[[Replay], None] | None = None, tick_every: int = 2048) -> ReplayResult:
    """Feed every record to ``replay``; call ``tick`` every ``tick_every`` records (for a
    progress bar: a clock read there, not per record) and return the result."""
    start = time.perf_counter()
    process = replay.process
    if tick is None:
        for record in records:
            process(record)
    else:
        for count, record in enumerate(records, start=1):
            process(record)
            if count % tick_every == 0:
                tick(replay)
    return replay.result(source, time.perf_counter() - start)
