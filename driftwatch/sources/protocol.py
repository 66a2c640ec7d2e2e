"""What a source of records is: the :class:`Source` protocol and its :class:`SourceRecord`.

A source hands the agent records in batches and is told which of them are durable. Its
duties, in the order the loop meets them:

- **Assignment.** A source reads one or more *partitions* ``(topic, partition)``, each an
  ordered log whose records have increasing offsets (a Kafka partition; a file is one
  partition whose offsets are its line numbers). When it starts reading a partition it calls
  the ``on_assigned`` hook its factory was given (:data:`OnAssignedHook`) with the new
  partitions, and resumes each at the offset the hook returns: the agent answers with its
  checkpoint's offsets, so the monitors' state and the records read agree. A partition the
  hook gives no offset for starts where the source's own settings say.
- **Poll.** :meth:`Source.poll` returns the next batch (possibly empty) after a bounded wait
  (about a second at most): the loop notices a stop, publishes snapshots and checkpoints
  between polls. Trouble with whatever the source reads from never raises out of it; the
  source retries and says why no records come (:attr:`Source.problem`).
- **Commit.** :meth:`Source.commit` is given, after each checkpoint, the offsets (partition →
  next offset) that the saved state covers; a source that keeps positions elsewhere (a Kafka
  consumer group) records exactly those, never more. A source with nowhere to record them
  returns True: the checkpoint is the resume point anyway.
- **Health.** :attr:`Source.ready` (and :attr:`~Source.problem` while not) feeds ``/readyz``;
  :meth:`Source.lag` (records not yet read, per partition) the lag metrics.
- **Close.** :meth:`Source.close`, or leaving the ``with`` block, ends it without committing.

Five members only a source behind a broker has something to say about: whether the broker
is :attr:`~Source.reachable` and since when (``reachability_changed_at``), how often it came
back (``reconnects``), and the counts of ``commits`` and ``commit_failures``. The loop reads
them for ``/readyz`` and the operations metrics, so they stay in the protocol (splitting them
off would move a test of each into the loop, for every source); a source without a broker
inherits them from :class:`LocalSource`, which also gives the ``with`` block, and writes
the rest: ``poll``, ``commit``, ``lag``, ``close``, ``ready`` and ``problem``.

There is no pause and resume: the loop processes each batch before it polls again, so
back-pressure is the poll itself. (The Kafka source alone can hold newly assigned partitions
until the agent releases them, ``hold_assigned``: the state topic's restore between polls.)

Replay reads its inputs differently (a whole file or topic range, iterated once, with a
progress bar and no commits or checkpoints): that is
:class:`~driftwatch.replay.sources.ReplayInput`, named for what it is, not a second
``Source``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar

from driftwatch.sources.record import Record

__all__ = ["LocalSource", "OnAssignedHook", "Source", "SourceContext", "SourceRecord"]

R_co = TypeVar("R_co", covariant=True)


class SourceRecord(Protocol):
    """What a source's record holds: where it is in its partition, its bytes, and its time
    (:class:`driftwatch.kafka.source.Record` is the one the agent takes)."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def offset(self) -> int: ...

    @property
    def key(self) -> bytes | None: ...

    @property
    def value(self) -> bytes | None: ...

    @property
    def timestamp_ms(self) -> int:
        """When the record was written (Unix ms; 0 when unknown): the lag in seconds."""
        ...


OnAssignedHook = Callable[[set[Any]], Mapping[Any, int] | None]
"""``on_assigned(partitions) -> {partition: offset} | None``: where each newly assigned
``(topic, partition)`` resumes (the agent answers with its checkpoint's offsets)."""


class Source(Protocol[R_co]):
    """Where the agent's records come from (see the module docstring for each duty).

    - :meth:`poll`: the next batch of records (possibly none, after a bounded wait).
    - :meth:`commit`: everything before these offsets (partition → next offset) is durable;
      the agent calls it only after a checkpoint covering them is saved. False: it failed.
    - :attr:`ready` and :attr:`problem` (one line naming the setting to look at) feed
      ``/readyz``; :meth:`lag` the lag metrics.
    - :attr:`reachable`, :attr:`reachability_changed_at`, :attr:`reconnects`,
      :attr:`commits`, :attr:`commit_failures`: the broker's health (:class:`LocalSource`
      gives them to a source without one).
    - :meth:`close` (or leaving the ``with`` block) ends it without committing.
    """

    @property
    def ready(self) -> bool: ...

    @property
    def reachable(self) -> bool: ...

    @property
    def reachability_changed_at(self) -> float: ...

    @property
    def problem(self) -> str | None: ...

    @property
    def commits(self) -> int: ...

    @property
    def commit_failures(self) -> int: ...

    @property
    def reconnects(self) -> int: ...

    def poll(self) -> Sequence[R_co]: ...

    def commit(self, offsets: Mapping[Any, int]) -> bool: ...

    def lag(self, *, refresh: bool = True) -> dict[tuple[str, int], int]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...


class LocalSource:
    """The members of :class:`Source` that only a broker gives meaning to, for a source
    without one (a list, a file): it is reachable until closed, never reconnects, and its
    commits are counted (a subclass's :meth:`commit` calls ``super().commit``) and never
    fail. Leaving the ``with`` block closes it."""

    reachability_changed_at = 0.0
    reconnects = 0
    commit_failures = 0

    def __init__(self) -> None:
        self.closed = False
        self.commits = 0

    @property
    def reachable(self) -> bool:
        return not self.closed

    def commit(self, offsets: Mapping[Any, int]) -> bool:
        """Count the commit; nothing to record it in."""
        self.commits += 1
        return True

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class SourceContext:
    """What the agent gives a source factory besides its options.

    Attributes:
        on_assigned: to call with the partitions the source starts reading; resume each at
            the offset it returns (the checkpoint's), see :mod:`driftwatch.sources.protocol`.
        kafka: builds the Kafka source the ``kafka`` settings describe, with the agent's
            first contact and state topic (the ``kafka`` source; a plug-in may wrap it).
    """

    on_assigned: OnAssignedHook
    kafka: Callable[[], Source[Record]]
