"""A list of records behind the :class:`~driftwatch.sources.protocol.Source` protocol."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from driftwatch.sources.protocol import LocalSource, OnAssignedHook, SourceRecord

R = TypeVar("R", bound=SourceRecord)


class MemorySource(LocalSource, Generic[R]):
    """A list of records behind the :class:`~driftwatch.sources.protocol.Source` protocol:
    the agent's loop without Kafka (unit tests, embedding a monitor fed from elsewhere).

    :meth:`poll` hands out the records ``batch`` at a time, in order. Like the Kafka source,
    the first poll "assigns" every partition the records name and asks ``on_assigned`` where
    to resume; the records of a partition before the offset it returns are skipped (what a
    seek does), so a restart from a checkpoint reads only what the checkpoint does not
    cover. :meth:`commit` keeps each commit in :attr:`commit_log` and the latest offset per
    partition in :attr:`committed`. :attr:`exhausted` tells when every record was handed out;
    ``on_exhausted`` is called then (once; e.g. to set the agent's stop event).
    """

    def __init__(self, records: Iterable[R], *, batch: int = 500,
                 on_assigned: OnAssignedHook | None = None,
                 on_exhausted: Callable[[], None] | None = None) -> None:
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch!r}")
        super().__init__()
        self._records = list(records)
        self._batch = batch
        self._on_assigned = on_assigned
        self._on_exhausted = on_exhausted
        self._next = 0
        self._assigned = False
        self.committed: dict[Any, int] = {}
        """The latest committed offset of each partition."""
        self.commit_log: list[dict[Any, int]] = []
        """Every :meth:`commit`'s offsets, in order."""

    @property
    def ready(self) -> bool:
        return self._assigned and not self.closed

    @property
    def problem(self) -> str | None:
        return None  # a list of records has nothing to be waited for

    @property
    def exhausted(self) -> bool:
        return self._assigned and self._next >= len(self._records)

    def poll(self) -> list[R]:
        """The next ``batch`` records (none once all are out)."""
        if self.closed:
            raise RuntimeError("MemorySource is closed")
        if not self._assigned:
            self._assign()
        batch = self._records[self._next:self._next + self._batch]
        self._next += len(batch)
        if not batch and self._on_exhausted is not None:
            on_exhausted, self._on_exhausted = self._on_exhausted, None
            on_exhausted()
        return batch

    def _assign(self) -> None:
        self._assigned = True
        if self._on_assigned is None:
            return
        partitions = {(r.topic, r.partition) for r in self._records}
        start = dict(self._on_assigned(set(partitions)) or {})
        if start:
            self._records = [r for r in self._records
                             if r.offset >= start.get((r.topic, r.partition), r.offset)]

    def commit(self, offsets: Mapping[Any, int]) -> bool:
        self.commit_log.append(dict(offsets))
        self.committed.update(offsets)
        return super().commit(offsets)

    def lag(self, *, refresh: bool = True) -> dict[tuple[str, int], int]:
        """Records not yet handed out, per partition."""
        lag: dict[tuple[str, int], int] = {}
        for record in self._records[self._next:]:
            tp = (record.topic, record.partition)
            lag[tp] = lag.get(tp, 0) + 1
        return lag
