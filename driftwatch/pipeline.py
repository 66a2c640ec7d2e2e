"""The one processing step every record takes, and the source protocol that feeds it.

The agent (``driftwatch run``), ``driftwatch replay`` and the demo all process a record the
same way, through :class:`Pipeline`::

    source ─poll─▶ decode ─▶ route ─▶ monitor ─▶ alarms
                     │         │
                     └─────────┴──▶ rejections (counted, logged, dead-lettered)

- **decode**: the record's value becomes a model id and an event, or a rejection. Plainly
  valid values take the fast decoder (:mod:`driftwatch.decoding.fast_decoder`: one
  ``json.loads`` and a few type checks), which gives the event's values as a tuple that
  :meth:`~driftwatch.core.monitor.Monitor.update_values` takes as they are; anything else
  takes :func:`~driftwatch.decoding.decoder.decode`, which gives the same event or says why not.
  So a value is validated once, at this boundary, and a plain record builds no ``Decoded``
  or ``Event``.
- **route**: the model's monitor, created on its first event while there are fewer than
  ``limits.max_models`` (:class:`Monitors`); an event of a further model is rejected with
  reason ``too_many_models``, so memory and metric cardinality stay bounded.
- **monitor** and **alarms**: the monitor takes the event; the alarms it returns go to the
  caller's ``on_alarms`` with the caller's note of where the record was (a Kafka record, a
  line number).
- With predictions and labels as separate records (settings ``join``), decode gives a
  prediction or a label; a prediction's model is routed (admitted) before it enters the join,
  and a joined pair is the event its monitor gets, when the second half arrives.

What happens around the step is the caller's: the agent notes each record's offset and
checkpoints and commits (:mod:`driftwatch.agent`), the replay counts records and keeps the
alarms with their line numbers (:mod:`driftwatch.replay.run`). The agent reads a
:class:`~driftwatch.sources.protocol.Source` (:mod:`driftwatch.sources`: the Kafka source by
default, chosen by the ``source`` settings); the replay iterates its file and topic-range
inputs, JSON Lines in chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from driftwatch.core.delayed import DelayedLabels
from driftwatch.core.join import Prediction
from driftwatch.core.monitor import Alarm, Monitor, MonitorConfig, Snapshot
from driftwatch.decoding.decoder import Decoded, EventFormat, Rejected, decode
from driftwatch.decoding.fast_decoder import PARSE_SELF, FastDecoder, plain_event
from driftwatch.decoding.joinable import JoinFormat, RecordKind, decode_joinable

TOO_MANY_MODELS = "too_many_models"
"""The rejection reason of an event whose model would exceed ``limits.max_models``."""

UNWATCHED_MODEL = "unwatched_model"
"""The ``reason`` of ``driftwatch_events_skipped_total``: the record's model is not in
``events.only_models``. A skip, not an error: the record is fine, just someone else's."""

W = TypeVar("W")
"""Where a record came from, as the caller notes it (handed back with alarms and
rejections): the agent's Kafka record, the replay's line number or partition offset."""

W_contra = TypeVar("W_contra", contravariant=True)


class FastPath(Protocol[W_contra]):
    """:attr:`Pipeline.fast`: ``(value, key, where[, parsed]) -> taken``."""

    def __call__(self, value: bytes | None, key: bytes | None, where: W_contra,
                 parsed: Any = ..., /) -> bool: ...


def progress(monitor: Monitor) -> tuple[int, int]:
    """How far ``monitor`` has got: the events it took and the predictions its estimate
    took. Its state changes only when this does, so a snapshot is reused and a state topic
    save skips the model (:meth:`~driftwatch.agent.partition_states.PartitionStates.unsaved`)
    while it stays the same: two counts the monitor keeps anyway, compared once per
    snapshot or save, nothing per record."""
    return monitor.events, monitor.estimate.predictions if monitor.estimate else 0


Normalized = Callable[[Monitor], Collection[str] | None]
"""``normalized(monitor)``: the measures the monitor's snapshots normalize (None: every
normalizable one; see :meth:`~driftwatch.core.monitor.Monitor.snapshot`)."""


class Monitors:
    """One monitor per model, created on first sight, at most ``max_models`` of them; and
    the latest snapshot of each, normalizing what ``normalized`` says (None: everything)."""

    def __init__(self, config_for: Callable[[str], MonitorConfig], max_models: int,
                 normalized: Normalized | None = None) -> None:
        self._config_for = config_for
        self._max_models = max_models
        self._normalized = normalized
        self._monitors: dict[str, Monitor] = {}
        self._snapshots: dict[str, tuple[tuple[int, int], Snapshot]] = {}

    @property
    def max_models(self) -> int:
        return self._max_models

    @property
    def by_model(self) -> Mapping[str, Monitor]:
        """The monitors by model, in order of creation (a live view, not a copy)."""
        return self._monitors

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

    def __contains__(self, model: object) -> bool:
        return model in self._monitors

    def drop(self, models: Iterable[str]) -> None:
        """Forget ``models`` (their partitions moved to another replica)."""
        self.take(models)

    def take(self, models: Iterable[str]) -> tuple[dict[str, Monitor], dict[str, Snapshot]]:
        """Take ``models`` out, with their latest snapshots (for :meth:`add` to put back)."""
        monitors: dict[str, Monitor] = {}
        snapshots: dict[str, Snapshot] = {}
        for model in models:
            monitor = self._monitors.pop(model, None)
            cached = self._snapshots.pop(model, None)
            if monitor is not None:
                monitors[model] = monitor
                if cached is not None and cached[0] == progress(monitor):
                    snapshots[model] = cached[1]
        return monitors, snapshots

    def snapshot_of(self, monitor: Monitor) -> Snapshot:
        """``monitor``'s snapshot now, normalizing what this collection's snapshots do."""
        normalized = self._normalized
        return monitor.snapshot(None if normalized is None else normalized(monitor))

    def snapshots(self) -> tuple[Snapshot, ...]:
        """Every monitor's snapshot; a monitor that saw no event since its last one is reused."""
        self.refresh(iter(list(self._monitors)))
        return self.latest()

    def refresh(self, models: Iterator[str], more: Callable[[], bool] = lambda: True) -> bool:
        """Take a new snapshot of each of ``models`` whose monitor moved since its last one
        (or has none), asking ``more()`` after each one taken whether to go on; models no
        longer here are passed over. True once ``models`` ran out, False when ``more()``
        stopped it (call again with the same iterator to go on: a refresh in slices)."""
        monitors, snapshots = self._monitors, self._snapshots
        for model in models:
            monitor = monitors.get(model)
            if monitor is None:
                continue
            seen = progress(monitor)
            cached = snapshots.get(model)
            if cached is None or cached[0] != seen:
                snapshots[model] = (seen, self.snapshot_of(monitor))
                if not more():
                    return False
        return True

    def latest(self) -> tuple[Snapshot, ...]:
        """The latest snapshot taken of each monitor, in order of creation; a monitor never
        snapshotted yet is left out."""
        snapshots = self._snapshots
        return tuple(cached[1] for model in self._monitors
                     if (cached := snapshots.get(model)) is not None)

    def export_state(self) -> dict[str, Any]:
        return {model: monitor.export_state() for model, monitor in self._monitors.items()}

    def restore(self, states: Mapping[str, Any]) -> None:
        """Restore saved monitors, all or none; one whose settings changed keeps its window."""
        self.add(self.built(states))

    def built(self, states: Mapping[str, Any]) -> dict[str, Monitor]:
        """Monitors restored from ``states``, not yet added (a restore done in slices)."""
        return {model: Monitor.restore(state, config=self._config_for(model))
                for model, state in states.items()}

    def add(self, monitors: Mapping[str, Monitor],
            snapshots: Mapping[str, Snapshot] | None = None) -> None:
        """Add restored monitors (see :meth:`built`), with their snapshots when taken already
        (a restore in slices takes each with its monitor, so the next publish is cheap)."""
        self._monitors.update(monitors)
        for model, snapshot in (snapshots or {}).items():
            if model in monitors:
                self._snapshots[model] = (progress(monitors[model]), snapshot)


OnAlarms = Callable[[list[Alarm], W], None]
"""``on_alarms(alarms, where)``: the alarms one record raised (never an empty list)."""
OnReject = Callable[[Rejected, bytes | None, W], None]
"""``on_reject(rejected, value, where)``: a record that did not become an event; ``value`` is
the record's value when the decoder refused it, None when its model was refused."""
OnAdmit = Callable[[str, Monitor], bool]
"""``on_admit(model, monitor)``: a monitor was just created for ``model``; True asks for its
events through ``on_event`` (the replay's figure series and block AUCs)."""
Accept = Callable[[str, W], bool]
"""``accept(model, where)``: whether the model's (routed) monitor takes the record's event;
False skips it (the agent's state-topic mode: a model's restored state already holds it)."""
OnEvent = Callable[[Monitor, Decoded, bytes | None, bytes | None, W], None]
"""``on_event(monitor, decoded, value, key, where)``: an observed model's monitor has just
taken ``decoded``, the event of the record ``value``/``key``."""
OnSkip = Callable[[str, W], None]
"""``on_skip(model, where)``: an event of a model not in ``only_models`` was skipped."""


@dataclass(frozen=True)
class Hooks(Generic[W]):
    """What the caller does with what a record became, each with the caller's ``where``.

    Attributes:
        on_alarms, on_reject: where alarms and rejections go (:data:`OnAlarms`,
            :data:`OnReject`).
        on_admit, on_event: see :data:`OnAdmit`, :data:`OnEvent`. ``observe_all`` gives every
            model's events to ``on_event`` (the agent's champion/challenger comparisons).
        accept: see :data:`Accept`; None takes every routed event.
        on_skip: an event of a model outside the pipeline's ``only_models``
            (:data:`OnSkip`); None: skipped silently.
    """

    on_alarms: OnAlarms[W]
    on_reject: OnReject[W]
    on_admit: OnAdmit | None = None
    on_event: OnEvent[W] | None = None
    observe_all: bool = False
    accept: Accept[W] | None = None
    on_skip: OnSkip[W] | None = None


class Join(Protocol[W_contra]):
    """The join a prediction or label record goes through (:meth:`Pipeline.joinable`): which
    join takes the record, and what becomes of a half that waits and of a pair.

    :class:`OneJoin` is one join for every record; the agent's state topic keeps one per input
    partition (:class:`~driftwatch.agent.join_shards.PartitionedJoin`), skipping what a
    restored join holds already.
    """

    @property
    def format(self) -> JoinFormat: ...

    def delayed(self, where: W_contra) -> DelayedLabels | None:
        """The join that takes the record at ``where``; None: skip it (its join holds it)."""

    def pending(self, event_id: str, where: W_contra) -> None:
        """The record at ``where`` is a half that waits for the other."""

    def pair(self, model: str, event_id: str, where: W_contra) -> bool:
        """Whether the model's monitor takes the pair the record at ``where`` completed."""


class OneJoin:
    """One join (with the models' label-free watches) for every record, in ``format``."""

    def __init__(self, delayed: DelayedLabels, format: JoinFormat) -> None:
        self.join = delayed
        self.format = format

    def delayed(self, where: object) -> DelayedLabels:
        return self.join

    def pending(self, event_id: str, where: object) -> None:
        pass

    def pair(self, model: str, event_id: str, where: object) -> bool:
        return True


class Pipeline(Generic[W]):
    """decode → route → monitor → alarms for one record at a time (see the module doc).

    Parameters:
        fmt: how record values become events.
        monitors: the monitors to route events to (bounded by their ``max_models``).
        hooks: what the caller does with alarms, rejections, skips and observed events.
        join: predictions and labels as separate records: the join (:class:`Join`; the
            label-free watches' alarms go to ``on_alarms`` too); None when each record is a
            whole event.
        only_models: when not empty, an event of another model is neither routed nor
            rejected but skipped: ``hooks.on_skip(model, where)`` (settings
            ``events.only_models``, the sidecar of one model on a shared topic).
    """

    def __init__(self, fmt: EventFormat, monitors: Monitors, hooks: Hooks[W], *,
                 join: Join[W] | None = None, only_models: Collection[str] = ()) -> None:
        self.fmt = fmt
        self.monitors = monitors
        self.join = join
        self._on_alarms = hooks.on_alarms
        self._on_reject = hooks.on_reject
        self._on_admit = hooks.on_admit
        self._on_event = hooks.on_event
        self._accept = hooks.accept
        self._only = frozenset(only_models)
        self._on_skip = hooks.on_skip
        self._observe_all = hooks.observe_all and hooks.on_event is not None
        self._observed: set[str] = set()
        self._by_model = monitors.by_model
        self._decoder = FastDecoder(fmt)
        self.fast: FastPath[W] = self._fast_path()
        """``fast(value, key, where)``: process one record if the fast decoder takes its
        value; False (nothing done) when the value needs the general decoder (:meth:`decoded`
        of :func:`~driftwatch.decoding.decoder.decode`'s answer) or its model id comes from the
        key. The hot path: no event object per record. ``fast(value, key, where, parsed)``
        takes the value's JSON already parsed
        (:meth:`~driftwatch.decoding.fast_decoder.FastDecoder.parse_lines`)."""

    def record(self, value: bytes | None, key: bytes | None, where: W) -> None:
        """Process one record that is a whole event (no join)."""
        if not self.fast(value, key, where):
            self.decoded(decode(value, key, self.fmt), value, key, where)

    def _fast_path(self) -> FastPath[W]:
        """:attr:`fast` as one closure over what it reads, as the fast decoder is: it runs
        once per record, and attribute reads were a measurable part of its cost."""
        values, by_model, observed = self._decoder.values, self._by_model, self._observed
        observe_all, event, on_alarms = self._observe_all, self.event, self._on_alarms
        accept, only = self._accept, self._only

        def fast(value: bytes | None, key: bytes | None, where: W,
                 parsed: Any = PARSE_SELF) -> bool:
            found = values(value, parsed)
            if found is None:
                return False
            model, y_true, y_score, y_pred, ts = found
            monitor = by_model.get(model)
            if monitor is None or observe_all or model in observed or \
                    (only and model not in only):
                event(Decoded(model, plain_event(y_true, y_score, y_pred, ts)), value, key,
                      where)
                return True
            if accept is not None and not accept(model, where):
                return True
            alarms = monitor.update_values(y_true, y_score, y_pred, ts)
            if alarms:
                on_alarms(alarms, where)
            return True

        return fast

    def monitor_alone(self, model: str) -> Monitor | None:
        """The model's monitor when nothing but it takes the model's events (it exists and is
        not observed, skipped or filtered): a caller may then give it a run of events in one
        call (replay's column path) and its alarms to ``hooks.on_alarms``; None otherwise
        (record by record, :attr:`fast`)."""
        monitor = self._by_model.get(model)
        if monitor is None or self._observe_all or model in self._observed or \
                (self._only and model not in self._only) or self._accept is not None:
            return None
        return monitor

    def decoded(self, result: Decoded | Rejected, value: bytes | None, key: bytes | None,
                where: W) -> None:
        """Route a decoder's answer: its event to its model's monitor, or a rejection."""
        if isinstance(result, Rejected):
            self._on_reject(result, value, where)
        else:
            self.event(result, value, key, where)

    def event(self, decoded: Decoded, value: bytes | None, key: bytes | None,
              where: W) -> None:
        """Give a decoded event to its model's monitor (admitting the model within the
        limit, else rejecting it), and its alarms to ``on_alarms``."""
        if self._only and decoded.model not in self._only:
            if self._on_skip is not None:
                self._on_skip(decoded.model, where)
            return
        monitor = self.admit(decoded.model, where)
        if monitor is None or (self._accept is not None and not self._accept(decoded.model,
                                                                             where)):
            return
        alarms = monitor.update(decoded.event)
        if self._on_event is not None and (self._observe_all or decoded.model in self._observed):
            self._on_event(monitor, decoded, value, key, where)
        if alarms:
            self._on_alarms(alarms, where)

    def admit(self, model: str, where: W) -> Monitor | None:
        """The model's monitor, created on its first sight while there is room; None (and a
        ``too_many_models`` rejection) when the model would exceed the limit."""
        monitor = self._by_model.get(model)
        if monitor is not None:
            return monitor
        monitor = self.monitors.get(model)
        if monitor is None:
            self._on_reject(self.too_many(model), None, where)
            return None
        if self._on_admit is not None and self._on_admit(model, monitor):
            self._observed.add(model)
        return monitor

    def too_many(self, model: str) -> Rejected:
        """The rejection of an event of ``model`` when it would exceed the limit."""
        return Rejected(TOO_MANY_MODELS, f"model {model!r} would exceed limits.max_models="
                                         f"{self.monitors.max_models}")

    def joinable(self, value: bytes | None, key: bytes | None, where: W,
                 kind: RecordKind | None = None, time_s: float | None = None) -> None:
        """Process one prediction or label record through the join (``join`` must be set):
        ``kind`` is what the record's topic says it is (None: its kind field says), and
        ``time_s`` the record's own time, used when its value has none."""
        join = self.join
        assert join is not None, "joinable() needs a pipeline with a join"
        result = decode_joinable(value, key, self.fmt, join.format, kind, time_s)
        if isinstance(result, Rejected):
            self._on_reject(result, value, where)
            return
        delayed = join.delayed(where)
        if delayed is None:
            return  # the join holds the record already
        if isinstance(result, Prediction):
            # Admit the model before its prediction enters the join: pending predictions and
            # label-free watches are bounded by limits.max_models like the monitors.
            if (monitor := self.admit(result.model, where)) is None:
                return
            joined, alarms = delayed.add_prediction(result, monitor.estimate)
            if alarms:
                self._on_alarms(alarms, where)
        else:
            joined = delayed.add_label(result)
        if joined is None:
            join.pending(result.event_id, where)
        elif join.pair(joined.model, joined.event_id, where):
            self.event(Decoded(joined.model, joined.event()), value, key, where)


class DeadLetterSink(Protocol):
    """Where the agent sends rejected records (:class:`~driftwatch.kafka.producers.DeadLetter`, or
    :class:`MemoryDeadLetter`): ``send`` queues, ``flush`` waits until everything sent is
    delivered or failed (False on timeout; the agent flushes before each checkpoint, so a
    checkpoint never passes a record whose dead letter may be lost)."""

    @property
    def failed(self) -> int: ...

    def send(self, record: Any, rejected: Rejected) -> None: ...

    def flush(self, timeout_s: float | None = None) -> bool: ...


class MemoryDeadLetter:
    """Dead letters kept in a list (:attr:`sent`: ``(record, rejection)`` pairs), for tests
    and embedding. :attr:`deliverable` False makes :meth:`flush` time out (a broker that
    does not take the dead letters), and :attr:`flushes` counts the flushes asked for."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, Rejected]] = []
        self.failed = 0
        self.flushes = 0
        self.deliverable = True

    def send(self, record: Any, rejected: Rejected) -> None:
        self.sent.append((record, rejected))

    def flush(self, timeout_s: float | None = None) -> bool:
        self.flushes += 1
        return self.deliverable
