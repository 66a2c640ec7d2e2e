"""The agent's checkpoint schedule and what its last durable save covers.

:class:`Checkpointer` decides when a save is due, writes it (to a file,
:class:`~driftwatch.state.checkpoint.CheckpointStore`, or to the state topic,
:class:`~driftwatch.state.topic.StateTopicStore`), retries a failed one with backoff, and
keeps the offsets the last successful save covers: the only offsets the agent may commit, so
a committed offset never passes what is saved. It also reads a file checkpoint back,
refusing one whose payload is not what the agent writes. :func:`checkpoint_store` is the
store the settings ask for.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from driftwatch.agent.sliced_save import Export, SlicedSave
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.producers import producer_config
from driftwatch.settings import Settings
from driftwatch.state.checkpoint import CheckpointError, CheckpointStore, decode_offsets
from driftwatch.state.topic import StateTopicStore

log = logging.getLogger(__name__)

__all__ = ["Checkpointer", "checkpoint_store"]


SAVE_SLICE_S = 0.1
"""The longest a slice of a state topic save exports for, in one loop iteration: a fifth of
the 0.5 s loop pause the agent allows itself, the rest for the batch, the snapshot and the
poll."""


class Checkpointer:
    """When and how the agent saves its checkpoint, and what the last durable one covers.

    A save writes the payload atomically (:class:`~driftwatch.state.checkpoint.CheckpointStore`)
    and, only when that succeeded, records the payload's offsets as :attr:`durable`: the
    offsets the agent may commit. A failed save (any ``OSError``: disk full, permission
    denied, too many open files) is logged, counted in :attr:`failures`, leaves
    :attr:`durable` as it was, makes :attr:`failing` true until a save succeeds, and is
    retried with backoff (``retry_initial_s`` doubling up to ``retry_max_s``).

    Saves are due every ``interval_s``, stretched to ``1 / MAX_SAVE_SHARE`` times the last
    save's duration when that is longer, so that saving a large state never takes more than
    that share of the loop's time.

    With the state topic the loop saves in slices (:meth:`begin`, :meth:`advance`:
    :class:`~driftwatch.agent.sliced_save.SlicedSave`), so that a save never stops the loop
    for long; its duration for the stretch is the loop time its slices took. :meth:`save`
    (the last save) saves at once, and :meth:`save_some` (a revoke's) at once within a
    budget.

    With ``store=None`` (checkpointing disabled) nothing is written, but :meth:`save` still
    returns True on the same schedule and :attr:`durable` follows the offsets given, so the
    agent commits processed offsets (for the group's lag) at the same pace.
    """

    MAX_SAVE_SHARE = 0.1
    """Most of the loop's time spent saving; see the class docstring."""

    def __init__(self, store: CheckpointStore | StateTopicStore | None, interval_s: float,
                 clock: Callable[[], float] = time.monotonic, *,
                 retry_initial_s: float = 1.0, retry_max_s: float = 60.0,
                 wall_clock: Callable[[], float] = time.time,
                 slice_s: float = SAVE_SLICE_S) -> None:
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
        self.slice_s = slice_s
        self.sliced: SlicedSave | None = None
        """The state topic's save under way in slices (None: none)."""

    @property
    def failing(self) -> bool:
        """True from a failed save until the next successful one."""
        return self.consecutive_failures > 0

    def due(self) -> bool:
        return self._clock() >= self._due_at

    def nothing_to_save(self) -> None:
        """The state is what the last save (or the restore) holds: nothing is written, and
        the next save is due an interval from now."""
        self._due_at = self._clock() + self.interval_s

    def postpone(self, delay_s: float) -> None:
        """Try again in ``delay_s`` (e.g. dead letters could not be flushed first)."""
        self._due_at = self._clock() + delay_s

    def save(self, payload: Callable[[], Mapping[str, Any]],
             offsets: Mapping[TopicPartition, int],
             saved: Callable[[], None] | None = None) -> bool:
        """Save ``payload()`` (which holds ``offsets``) at once; True when it is on disk (or
        when there is no store). ``payload`` is called only when there is a store to save it
        in, and ``saved`` only when that save succeeded. A sliced save under way is dropped
        first (this one holds everything it would)."""
        self.sliced = None
        started = self._clock()
        if self.store is not None:
            try:
                with _gc_paused():
                    self.store.save(payload())
                if saved is not None:
                    saved()
            except OSError as error:
                self._failed(error)
                return False
        self._succeeded(offsets, self._clock() - started)
        return True

    def save_some(self, snapshot: Callable[[], Mapping[str, Any]],
                  offsets: Mapping[TopicPartition, int], models: Sequence[str],
                  export: Export, *, budget_s: float) -> bool | None:
        """Save some partitions to the state topic at once, within a budget (a revoke's
        save): ``models``' records, exported by ``export`` for at most ``budget_s`` (at
        least one), then ``snapshot()``'s joins and metas (those partitions' only, at
        ``offsets``), waiting for every acknowledgement. A sliced save under way is dropped
        first (an assignment change voids it anyway).

        True when saved: ``offsets`` are durable, while the other partitions' durable
        offsets and the time the next save is due stay as they were. None when the budget
        ran out before every model was exported: the save is cut short before its joins and
        metas, as a crash cuts one (the records sent are consistent pairs: docs/state.md),
        nothing more is durable, and the partitions' next owner resumes from their last
        complete save. False when it failed (counted, retried with backoff as any).
        """
        assert isinstance(self.store, StateTopicStore)
        self.sliced = None
        started, due_at = self._clock(), self._due_at
        try:
            with _gc_paused():
                saving = self.store.round(snapshot())
                sliced = SlicedSave(saving, offsets, models, "", slice_s=budget_s,
                                    clock=self._clock)
                sliced.step(export)
                if sliced.exporting:
                    return None
                saving.wait()
        except OSError as error:
            self._failed(error)
            return False
        self._succeeded({**self.durable, **offsets}, self._clock() - started)
        self._due_at = due_at
        return True

    def begin(self, snapshot: Callable[[], Mapping[str, Any]],
              offsets: Mapping[TopicPartition, int], models: Sequence[str],
              writer: str) -> bool:
        """Begin a save in slices (:class:`~driftwatch.agent.sliced_save.SlicedSave`) of
        ``models``, whose joins and metas are ``snapshot()`` (holding ``offsets``), moved on
        by :meth:`advance`; False when the state topic could not be asked (a failure,
        counted and retried as any)."""
        assert isinstance(self.store, StateTopicStore)
        try:
            with _gc_paused():
                saving = self.store.round(snapshot())
        except OSError as error:
            self._failed(error)
            return False
        self.sliced = SlicedSave(saving, offsets, models, writer, slice_s=self.slice_s,
                                 clock=self._clock)
        return True

    def advance(self, export: Export, writer: str) -> bool | None:
        """Move the sliced save on by one slice (:meth:`SlicedSave.step`): None while it
        is under way or when a new epoch made it void (``writer`` changed: partitions came
        or went; dropped, no failure, and due again at once), True once it is done (its
        offsets durable), False when it failed (counted, retried with backoff)."""
        sliced = self.sliced
        assert sliced is not None
        if sliced.writer != writer:
            self.sliced = None
            self._due_at = self._clock()
            return None
        try:
            with _gc_paused():
                if not sliced.step(export):
                    return None
        except OSError as error:
            self.sliced = None
            self._failed(error)
            return False
        self.sliced = None
        self._succeeded(sliced.offsets, sliced.busy_s)
        return True

    def _failed(self, error: OSError) -> None:
        self.failures += 1
        self.consecutive_failures += 1
        self.last_error = f"{type(error).__name__}: {error}"
        delay = min(self.retry_initial_s * 2.0 ** (self.consecutive_failures - 1),
                    self.retry_max_s)
        self._due_at = self._clock() + delay
        log.error("checkpoint save failed (%s); offsets are not committed until a save "
                  "succeeds; retrying in %.0f s (failure %d in a row)",
                  self.last_error, delay, self.consecutive_failures)

    def _succeeded(self, offsets: Mapping[TopicPartition, int], took: float) -> None:
        """A save of ``offsets`` succeeded after ``took`` seconds of the loop's time."""
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

    def load(self) -> tuple[dict[TopicPartition, int], dict[str, Any], dict[str, int],
                            dict[str, Any]]:
        """Offsets, monitor states, rejection counts and comparison states from the last
        checkpoint (empty when there is none; one written before comparisons existed has
        none).

        Raises :class:`~driftwatch.state.checkpoint.CheckpointError` for an unreadable or
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


def checkpoint_store(settings: Settings) -> CheckpointStore | StateTopicStore | None:
    """Where checkpoints go: the state topic (the default with Kafka), the file, or nowhere;
    see :class:`~driftwatch.settings.CheckpointSettings`."""
    checkpoint = settings.checkpoint
    if not checkpoint.enabled:
        return None
    if settings.checkpoint_backend() == "kafka":
        return StateTopicStore(
            producer_config(settings.kafka.consumer_config()), settings.state_topic(),
            partitions=checkpoint.topic_partitions, input_topics=settings.kafka.topics or (),
            replication_factor=checkpoint.topic_replication_factor,
            max_record_bytes=checkpoint.max_record_bytes,
            request_timeout_s=settings.kafka.request_timeout_seconds)
    return CheckpointStore(checkpoint.directory)
