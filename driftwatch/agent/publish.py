"""The snapshot the agent's loop publishes: the one ``/metrics`` shows.

The exporter only ever reads an immutable :class:`~driftwatch.sinks.snapshot.AgentSnapshot`,
so a scrape never sees the monitors mid-update and never waits for the loop. The loop
builds a fresh one about every ``snapshot_interval_s`` (a snapshot costs one normalization
per measure and changed model), and at once when readiness changes or partitions come or go.

:class:`SnapshotPublisher` owns the published snapshot and decides when the next one is due;
the agent hands it the parts (its monitors' snapshots, counts and :class:`Operations`), so
the publisher reads nothing of the agent's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from driftwatch.core.delayed import JoinSnapshot
from driftwatch.core.monitor import Snapshot
from driftwatch.sinks.comparison_snapshot import ComparisonSnapshot
from driftwatch.sinks.snapshot import AgentSnapshot, Operations

__all__ = ["SnapshotPublisher", "lag_seconds"]


class SnapshotPublisher:
    """The latest published snapshot (:attr:`snapshot`, any thread may read it; the
    champion/challenger comparisons' beside it, :attr:`comparisons`) and when the next one is
    due.

    Parameters:
        started: the agent's start, Unix seconds (the last-processed time of a restored
            model silent since; exported under a deprecated name until 0.3.0).
        interval_s: publish at most this often unless forced.
        clock, wall_clock: a monotonic clock for the interval, Unix time for the models'
            last-processed times.
    """

    def __init__(self, started: float, interval_s: float, clock: Callable[[], float],
                 wall_clock: Callable[[], float]) -> None:
        self.started = started
        self.interval_s = interval_s
        self._clock = clock
        self._wall_clock = wall_clock
        self.snapshot = AgentSnapshot.empty(started)
        self.comparisons: tuple[ComparisonSnapshot, ...] = ()
        self._published_at = -float("inf")

    def due(self, *, force: bool = False) -> bool:
        """Whether to publish now: ``interval_s`` has passed since the last one, or ``force``
        (readiness changed, partitions came or went). True starts the next interval."""
        now = self._clock()
        if not force and now - self._published_at < self.interval_s:
            return False
        self._published_at = now
        return True

    def publish(self, monitors: tuple[Snapshot, ...], *, rejected: Mapping[str, int],
                skipped: Mapping[str, int], consumer_lag: Mapping[tuple[str, int], int],
                ready: bool, operations: Operations, join: JoinSnapshot | None,
                comparisons: tuple[ComparisonSnapshot, ...] = ()) -> AgentSnapshot:
        """Replace :attr:`snapshot` (and :attr:`comparisons`) with these parts and return
        the snapshot."""
        self.comparisons = comparisons
        # A model's events count grew since the last snapshot: it had events about now
        # (within interval_s), which is what the "no events" alert measures.
        before = {snap.model: snap.events for snap in self.snapshot.monitors}
        wall = self._wall_clock()
        last = {snap.model: (wall if snap.events != before.get(snap.model)
                             else self.snapshot.last_processed.get(snap.model, wall))
                for snap in monitors}
        self.snapshot = AgentSnapshot(
            monitors=monitors,
            rejected=dict(rejected),
            skipped=dict(skipped),
            consumer_lag=consumer_lag,
            ready=ready,
            started_time=self.started,
            last_processed=last,
            operations=operations,
            join=join,
        )
        return self.snapshot


def lag_seconds(lag: Mapping[tuple[str, int], int], last_timestamp_ms: Mapping[Any, int],
                now: float) -> dict[tuple[str, int], float]:
    """Per partition with a lag, how old its last processed record is at ``now`` (0 when
    caught up; none before the first record)."""
    seconds: dict[tuple[str, int], float] = {}
    for tp, records in lag.items():
        if records == 0:
            seconds[tp] = 0.0
        elif tp in last_timestamp_ms:
            seconds[tp] = max(0.0, now - last_timestamp_ms[tp] / 1000)
    return seconds
