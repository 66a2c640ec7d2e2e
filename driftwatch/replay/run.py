"""The replay itself: recorded records through the agent's decoder into per-model monitors.

A replay is the agent without Kafka, Prometheus or the clock: each record takes the agent's
own processing step (:class:`~driftwatch.pipeline.Pipeline`: decoded with the settings'
events format, routed to its model's :class:`~driftwatch.core.monitor.Monitor`, built from the
same settings, at most ``limits.max_models`` of them), and what the agent would log — alarms
and rejected records — is collected instead, with where each happened. Same settings, same
events, same order, same code: the same alarms as the agent.

It runs about as fast as the monitors do: JSON Lines are read in chunks
(:meth:`Replay.process_lines`) and plainly valid records take the fast decoder's path
(:mod:`driftwatch.decoding.fast_decoder`), so per record what remains is mostly the monitor
update; the optional series for the figure cost one read per sample
(:mod:`driftwatch.replay.series`). A file of several models can be split between processes
by model (:mod:`driftwatch.replay.parallel`): a :class:`Replay` given a ``share`` decodes
every line but processes only its share of the models, and the shares merge into the result
one process gives.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat

from driftwatch.core.delayed import DelayedLabels, JoinSnapshot
from driftwatch.core.measures.block import BlockAUCs
from driftwatch.core.monitor import Alarm, Monitor, MonitorConfig, Snapshot
from driftwatch.decoding.decoder import REJECTION_REASONS, Decoded, EventFormat, Rejected, decode
from driftwatch.decoding.fast_decoder import PARSE_SELF, Columns, FastDecoder
from driftwatch.decoding.joinable import JOIN_REJECTION_REASONS, JoinFormat
from driftwatch.pipeline import (
    TOO_MANY_MODELS,
    UNWATCHED_MODEL,
    Hooks,
    Monitors,
    OneJoin,
    Pipeline,
)
from driftwatch.replay.series import Series, SeriesRecorder, default_measures
from driftwatch.replay.sources import BAD_CSV, BadRecord, ReplayRecord

__all__ = ["MAX_KEPT_BAD_RECORDS", "TOO_MANY_MODELS", "Replay", "ReplayAlarm",
           "ReplayResult", "merge", "run"]

Where = ReplayRecord | int
"""Where a replayed record was: its :class:`ReplayRecord` (a Kafka range, CSV) or its line number
(JSON Lines read in chunks)."""

MAX_KEPT_BAD_RECORDS = 1000
"""Bad records kept with their position; all are counted. Bounds memory on a garbage file."""

MAX_SKIPPED_MODELS = 100
"""Models not in ``events.only_models`` whose skipped records are counted by name; the
records of further ones are counted in the total only."""

FIELD_SAMPLE_RECORDS = 5
"""While no record has become an event, the top-level fields of this many rejected JSON
objects are kept, so a replay that rejects everything can say which fields the records have
(most often the settings name other fields than the producer writes)."""


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
    skipped: dict[str, int] = field(default_factory=dict)
    """Records left out on purpose, by reason, as the agent counts them in
    ``driftwatch_events_skipped_total``: ``unwatched_model`` (its model is not in the
    settings' ``events.only_models``; present, maybe 0, when that list is not empty). Not
    errors, so apart from ``rejected``."""
    skipped_models: dict[str, int] = field(default_factory=dict)
    """The skipped records by model, for the first :data:`MAX_SKIPPED_MODELS` models seen,
    in that order."""
    bad_records: list[BadRecord] = field(default_factory=list)
    alarms: list[ReplayAlarm] = field(default_factory=list)
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    configs: dict[str, MonitorConfig] = field(default_factory=dict)
    series: dict[str, Series] = field(default_factory=dict)
    seconds: float = 0.0
    fields_seen: tuple[str, ...] = ()
    """The top-level fields of the first rejected JSON objects, in order of appearance
    (collected only while no record has become an event)."""
    block_size: int | None = None
    """The block length of ``block_aucs`` (None: block and batch AUC were not asked for)."""
    block_aucs: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """Each model's AUC per complete block of ``block_size`` events (NaN: one class)."""
    batch_aucs: dict[str, float] = field(default_factory=dict)
    """Each model's AUC over all its events (Brzezinski & Stefanowski's (2017) batch AUC)."""
    join: JoinSnapshot | None = None
    """The join's counts at the end, when predictions and labels came separately."""

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


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
        share: ``(k, n)``: process only share k of n of a JSON Lines file (the models whose
            rank by first event is k modulo n, and the rejected lines whose number is);
            :func:`merge` joins the n results. None: everything.
        block_size: also keep each model's block AUC over consecutive blocks of this many
            events, and its batch AUC over all events (Brzezinski & Stefanowski 2017, §4; the batch
            AUC holds every score in memory). None: neither.
        join: predictions and labels as separate records (settings ``join`` with a
            ``kind_field``): the join (with the models' label-free watches) and the record
            format. Joined pairs go to the monitors as the agent's do, label-free alarms are
            collected with the others; records without a time field are ``bad_time`` (a file
            has no record timestamps). Not with ``share``: labels name no model.
        only_models: when not empty, the events of other models are skipped and counted
            (:attr:`ReplayResult.skipped`), as the agent does with the settings'
            ``events.only_models``: they get no monitor and take no place among
            ``max_models``. Not with ``join`` (the settings refuse both: labels name no
            model).
    """

    def __init__(self, fmt: EventFormat, config_for: Callable[[str], MonitorConfig],
                 max_models: int, *, series_models: Collection[str] | None = (),
                 measures: tuple[str, ...] | None = None, on_bad: OnBad | None = None,
                 on_alarm: OnAlarm | None = None, share: tuple[int, int] | None = None,
                 block_size: int | None = None,
                 join: tuple[DelayedLabels, JoinFormat] | None = None,
                 only_models: Collection[str] = ()) -> None:
        if join is not None and share is not None:
            raise ValueError("a replay with a join cannot be split into shares")
        if join is not None and only_models:
            raise ValueError("a replay with a join cannot skip models: labels name none")
        self._fmt = fmt
        self._decoder = FastDecoder(fmt)
        self._max_models = max_models
        self._series_models = series_models
        self._measures = measures
        self._on_bad = on_bad
        self._on_alarm = on_alarm
        self._monitors = Monitors(config_for, max_models)
        self._recorders: dict[str, SeriesRecorder] = {}
        self._block_size = block_size
        self._blocks: dict[str, BlockAUCs] = {}
        self._pipeline: Pipeline[Where] = Pipeline(
            fmt, self._monitors, Hooks(self._found, self._rejected_by, on_admit=self._admitted,
                                       on_event=self._observe, on_skip=self._skip),
            join=None if join is None else OneJoin(*join), only_models=only_models)
        self.records = 0
        self.alarm_count = 0
        self._rejected = dict.fromkeys((*REJECTION_REASONS, TOO_MANY_MODELS), 0)
        self._only = frozenset(only_models)
        self._skipped: dict[str, int] = {UNWATCHED_MODEL: 0} if self._only else {}
        self._skipped_models: dict[str, int] = {}
        self._bad: list[BadRecord] = []
        self._alarms: list[ReplayAlarm] = []
        self._field_samples: list[tuple[int, tuple[str, ...]]] = []  # (position, fields)
        self._events_seen = False  # whether a record of another share became an event
        self._share = share
        self._model_index: dict[str, int] = {}  # model → its rank by first event (shares)
        self._join = join
        if join is not None:
            self._rejected.update(dict.fromkeys(JOIN_REJECTION_REASONS, 0))

    @property
    def events(self) -> int:
        """Events given to monitors so far (each monitor counts its own)."""
        return sum(monitor.events for monitor in self._monitors.by_model.values())

    def process(self, record: ReplayRecord) -> None:
        """Decode one record and give its event to its model's monitor (or count it)."""
        self.records += 1
        pipeline = self._pipeline
        if record.rejected is not None:
            self._rejected_by(record.rejected, record.value, record)
        elif self._join is not None:
            pipeline.joinable(record.value, record.key, record)
        else:
            pipeline.record(record.value, record.key, record)

    def process_lines(self, lines: Sequence[bytes], first: int) -> None:
        """Replay a run of JSON Lines lines numbered from ``first``: the same as one
        :meth:`process` per non-blank line, without a :class:`ReplayRecord` per line.

        Each line goes through the pipeline's fast path; any other line (blank, too long,
        invalid, or merely unusual) takes the general path with its line ending removed, as
        :class:`~driftwatch.replay.sources.JsonLinesSource` would yield it. With orjson the
        chunk's JSON is parsed in one call when that gives exactly each line's own parse
        (:meth:`~driftwatch.decoding.fast_decoder.FastDecoder.parse_lines`: about half the parsing
        cost of a call per line), and a chunk of plain records of one model already
        monitored (the usual file) is checked a field at a time and given to its monitor in
        one call (:attr:`~driftwatch.decoding.fast_decoder.FastDecoder.columns`,
        :meth:`~driftwatch.core.monitor.Monitor.update_columns`): the same results, a
        fraction of the calls.
        """
        if self._share is not None:
            self._process_share(lines, first)
            return
        pipeline = self._pipeline
        if self._join is not None:
            for number, line in enumerate(lines, first):
                value = line.rstrip(b"\r\n")
                if value.strip():
                    self.records += 1
                    pipeline.joinable(value, None, number)
            return
        fast, decoded, fmt = pipeline.fast, pipeline.decoded, self._fmt
        records = 0  # counted here, added to the total at the end
        # The chunk's JSON in one call where that is exact, else each line's by its own;
        # a chunk of plain records of one monitored model goes to it in one call.
        parsed = self._decoder.parse_lines(lines)
        if parsed is not None:
            columns = self._decoder.columns(lines, parsed)
            if columns is not None and self._take_columns(columns, first):
                self.records += len(lines)
                return
        objects = repeat(PARSE_SELF) if parsed is None else parsed
        for number, (line, obj) in enumerate(zip(lines, objects), first):  # noqa: B905
            if fast(line, None, number, obj):
                records += 1
                continue
            value = line.rstrip(b"\r\n")
            if value.strip():
                records += 1
                decoded(decode(value, None, fmt), value, None, number)
        self.records += records

    def _take_columns(self, columns: Columns, first: int) -> bool:
        """A run of plain records of one model, numbered from ``first``, to its monitor in
        one call (:meth:`~driftwatch.core.monitor.Monitor.update_columns`), the alarms of
        record i with line number ``first + i``; False (nothing done) when the model's
        events need more than its monitor (:meth:`~driftwatch.pipeline.Pipeline.
        monitor_alone`): then record by record."""
        monitor = self._pipeline.monitor_alone(columns.model)
        if monitor is None:
            return False
        for index, alarms in monitor.update_columns(columns.labels, columns.scores,
                                                    columns.times):
            self._found(alarms, first + index)
        return True

    def _process_share(self, lines: Sequence[bytes], first: int) -> None:
        """:meth:`process_lines` for one share: every line is decoded, so that each share
        ranks the models alike (and knows whether any record became an event), but only the
        share's records are counted and given to monitors."""
        assert self._share is not None
        mine, shares = self._share
        fast = self._decoder.fast
        ranks = self._model_index
        limit = self._max_models
        pipeline = self._pipeline
        only = self._only
        for number, line in enumerate(lines, first):
            decoded = fast(line)
            if decoded is None:
                value = line.rstrip(b"\r\n")
                if not value.strip():
                    continue
                result = decode(value, None, self._fmt)
                if isinstance(result, Rejected):
                    if number % shares == mine:
                        self.records += 1
                        self._reject(number, None, value, result)
                    continue
                decoded = result
            if only and decoded.model not in only:  # no rank: it takes no share or slot
                counted = int(number % shares == mine)
                self.records += counted
                self._skip(decoded.model, number, counted)
                continue
            rank = ranks.get(decoded.model)
            if rank is None:
                rank = ranks[decoded.model] = len(ranks)
            if rank < limit:
                self._events_seen = True
            if rank % shares != mine:
                continue
            self.records += 1
            if rank < limit:
                pipeline.event(decoded, line, None, number)
            else:
                self._reject(number, None, None, pipeline.too_many(decoded.model))

    def _admitted(self, model: str, monitor: Monitor) -> bool:
        """A new model's block AUCs and figure series, when asked for; True when it has
        either (its events then come to :meth:`_observe`)."""
        if self._block_size is not None:
            self._blocks[model] = BlockAUCs(self._block_size)
        if self._series_models is None or model in self._series_models:
            measures = self._measures or default_measures(monitor.config)
            self._recorders[model] = SeriesRecorder(model, monitor.config, measures)
        return model in self._blocks or model in self._recorders

    def _observe(self, monitor: Monitor, decoded: Decoded, value: bytes | None,
                 key: bytes | None, where: Where) -> None:
        """An observed model's event, just taken by its monitor: its block AUC and, when the
        monitor sampled, the figure's point."""
        model, event = decoded.model, decoded.event
        block = self._blocks.get(model)
        if block is not None:
            block.update(event.y_true, event.y_score)
        recorder = self._recorders.get(model)
        if recorder is not None and monitor.sampled:
            recorder.sample(monitor, event.ts)

    def ranks(self) -> dict[str, int]:
        """Each monitored model's rank among the models by first event (the order in which
        a single replay creates their monitors)."""
        if self._share is None:
            return {model: rank for rank, model in enumerate(self._monitors.by_model)}
        return {model: self._model_index[model] for model in self._monitors.by_model}

    def field_samples(self) -> list[tuple[int, tuple[str, ...]]]:
        """The sampled fields of rejected records, with their positions (for :func:`merge`)."""
        return list(self._field_samples)

    def _found(self, alarms: list[Alarm], where: Where) -> None:
        position, partition = _position(where)
        for alarm in alarms:
            found = ReplayAlarm(alarm, position, partition)
            self._alarms.append(found)
            self.alarm_count += 1
            if self._on_alarm is not None:
                self._on_alarm(found)

    def _skip(self, model: str, where: Where, count: int = 1) -> None:
        """``count`` records of a model not in ``only_models``, counted by model for the
        first :data:`MAX_SKIPPED_MODELS` models seen. A share counts 0 for the other shares'
        records, so that every share names the same models in the same order."""
        self._skipped[UNWATCHED_MODEL] += count
        models = self._skipped_models
        if model in models:
            models[model] += count
        elif len(models) < MAX_SKIPPED_MODELS:
            models[model] = count

    def _rejected_by(self, rejected: Rejected, value: bytes | None, where: Where) -> None:
        position, partition = _position(where)
        self._reject(position, partition, value, rejected)

    def _reject(self, position: int, partition: int | None, value: bytes | None,
                rejected: Rejected) -> None:
        self._rejected[rejected.reason] = self._rejected.get(rejected.reason, 0) + 1
        bad = BadRecord(position, partition, rejected.reason, rejected.detail)
        if len(self._bad) < MAX_KEPT_BAD_RECORDS:
            self._bad.append(bad)
        if len(self._field_samples) < FIELD_SAMPLE_RECORDS and not self._events_seen \
                and not self.events:
            self._sample_fields(position, value)
        if self._on_bad is not None:
            self._on_bad(bad)

    def _sample_fields(self, position: int, value: bytes | None) -> None:
        try:
            obj = json.loads(value) if value else None
        except (ValueError, RecursionError):
            return
        if isinstance(obj, dict):
            self._field_samples.append((position, tuple(map(str, obj))))

    def result(self, source: str, seconds: float) -> ReplayResult:
        """What the replay found so far; snapshots are taken now."""
        reasons = [*REJECTION_REASONS, TOO_MANY_MODELS]
        if self._join is not None:
            reasons += JOIN_REJECTION_REASONS
        if self._rejected.get(BAD_CSV):
            reasons.append(BAD_CSV)
        return ReplayResult(
            source=source,
            records=self.records,
            events=self.events,
            rejected={reason: self._rejected.get(reason, 0) for reason in reasons},
            skipped=dict(self._skipped),
            skipped_models=dict(self._skipped_models),
            bad_records=list(self._bad),
            alarms=list(self._alarms),
            snapshots={m: monitor.snapshot() for m, monitor in self._monitors.by_model.items()},
            configs={m: monitor.config for m, monitor in self._monitors.by_model.items()},
            series={m: r.series for m, r in self._recorders.items()},
            seconds=seconds,
            fields_seen=_fields(self._field_samples),
            block_size=self._block_size,
            block_aucs={m: tuple(b.values) for m, b in self._blocks.items()},
            batch_aucs={m: b.batch_auc for m, b in self._blocks.items()},
            join=None if self._join is None else self._join[0].snapshot(),
        )


def _position(where: Where) -> tuple[int, int | None]:
    """A record's position and partition (None: a file's line)."""
    if isinstance(where, int):
        return where, None
    return where.position, where.partition


def _fields(samples: Iterable[tuple[int, tuple[str, ...]]]) -> tuple[str, ...]:
    """The fields of the first FIELD_SAMPLE_RECORDS samples by position, in order, once."""
    first = sorted(samples, key=lambda sample: sample[0])[:FIELD_SAMPLE_RECORDS]
    return tuple(dict.fromkeys(name for _, names in first for name in names))


def merge(source: str, parts: Sequence[tuple[ReplayResult, dict[str, int],
                                             list[tuple[int, tuple[str, ...]]]]],
          seconds: float) -> ReplayResult:
    """One result from the results of the shares of one file (each with its models' ranks
    and its field samples): what a single replay of the file gives. Alarms and bad records
    are ordered by line (a line is one record, so no two shares hold the same one), models
    by rank."""
    models = sorted(((rank, model, part) for part, ranks, _ in parts
                     for model, rank in ranks.items()), key=lambda item: item[0])
    results = [part for part, _, _ in parts]
    bad = sorted((b for part in results for b in part.bad_records), key=lambda b: b.position)
    alarms = sorted((a for part in results for a in part.alarms), key=lambda a: a.position)
    return ReplayResult(
        source=source,
        records=sum(part.records for part in results),
        events=sum(part.events for part in results),
        rejected=_summed(part.rejected for part in results),
        skipped=_summed(part.skipped for part in results),
        # every part names the same skipped models, in the same order
        skipped_models=_summed(part.skipped_models for part in results),
        bad_records=bad[:MAX_KEPT_BAD_RECORDS],
        alarms=alarms,
        snapshots={model: part.snapshots[model] for _, model, part in models},
        configs={model: part.configs[model] for _, model, part in models},
        series={model: part.series[model] for _, model, part in models
                if model in part.series},
        seconds=seconds,
        fields_seen=_fields(sample for _, _, samples in parts for sample in samples),
        block_size=results[0].block_size if results else None,
        block_aucs={model: part.block_aucs[model] for _, model, part in models
                    if model in part.block_aucs},
        batch_aucs={model: part.batch_aucs[model] for _, model, part in models
                    if model in part.batch_aucs},
    )


def _summed(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Counts by key added up, keys in order of first appearance (zeros kept)."""
    total: dict[str, int] = {}
    for part in counts:
        for key, count in part.items():
            total[key] = total.get(key, 0) + count
    return total


def run(records: Iterable[ReplayRecord], replay: Replay, source: str,
        tick: Callable[[Replay], None] | None = None, tick_every: int = 2048) -> ReplayResult:
    """Feed every record to ``replay``; call ``tick`` every ``tick_every`` records, or after
    each chunk of a source read in chunks (for a progress bar: a clock read there, not per
    record), and return the result.

    A source with a ``chunks()`` method (JSON Lines) is read in bulk and replayed by
    :meth:`Replay.process_lines`; any other record by record.
    """
    start = time.perf_counter()
    chunks = getattr(records, "chunks", None)
    if chunks is not None:
        for first, lines in chunks():
            replay.process_lines(lines, first)
            if tick is not None:
                tick(replay)
        return replay.result(source, time.perf_counter() - start)
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
