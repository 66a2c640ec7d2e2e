"""The snapshot the agent's loop publishes: the one ``/metrics`` shows.

The exporter only ever reads an immutable :class:`~driftwatch.sinks.snapshot.AgentSnapshot`,
so a scrape never sees the monitors mid-update and never waits for the loop. About every
``snapshot_interval_s`` the loop starts a *round*: it takes a new snapshot of each model
that moved since its last one (:meth:`~driftwatch.pipeline.Monitors.refresh`), at most
:data:`PUBLISH_SLICE_S` of work between two polls (:class:`SnapshotRound`), and publishes
once the round has looked at every model. A snapshot costs 0.2–1.5 ms a model (the
normalizations most of it), so at thousands of busy models a round spans several polls
instead of stopping the loop for seconds (past ``kafka.max_poll_interval_ms`` at ten
thousand); a round of more than one slice also delays the next one, so that refreshing
takes at most :data:`PUBLISH_SHARE` of the loop's time. What that costs in freshness is
exported (``driftwatch_snapshot_refresh_seconds``) and documented (docs/fleet.md).

When readiness changes or partitions come or go the loop publishes at once what it has
(:meth:`SnapshotPublisher.publish` with the latest snapshots): the models restored come with
their snapshots, the models dropped leave.

:class:`SnapshotPublisher` owns the published snapshot and decides when the next round is
due; the agent hands it the parts (its monitors' snapshots, counts and
:class:`Operations`), so the publisher reads nothing of the agent's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from driftwatch.core.delayed import JoinSnapshot
from driftwatch.core.monitor import Snapshot
from driftwatch.sinks.comparison_snapshot import ComparisonSnapshot
from driftwatch.sinks.snapshot import AgentSnapshot, Operations

__all__ = ["PUBLISH_SHARE", "PUBLISH_SLICE_S", "SnapshotPublisher", "SnapshotRound",
           "lag_seconds"]

PUBLISH_SLICE_S = 0.1
"""A round's work between two polls, seconds: far below the issue's longest loop pause of
0.5 s and the default ``kafka.max_poll_interval_ms`` (5 s), as a save's and a restore's
slices are."""

PUBLISH_SHARE = 0.25
"""The most of the loop's time refreshing snapshots takes when a round needs more than one
slice: the next round starts no sooner than its work divided by this after it started. So
at ten thousand busy models the monitors keep three quarters of the loop, and ``/metrics``
is refreshed about every four rounds' work (docs/fleet.md)."""

Refresh = Callable[[Iterator[str], Callable[[], bool]], bool]
"""``refresh(models, more) -> done``: :meth:`~driftwatch.pipeline.Monitors.refresh`."""


class SnapshotRound:
    """A refresh of the models' snapshots under way: the models still to look at (those
    there when it started; a model first seen since waits for the next round), when it
    started and how much of the loop's time its slices took."""

    def __init__(self, models: Iterator[str], clock: Callable[[], float]) -> None:
        self._models = models
        self._clock = clock
        self.started = clock()
        self.work = 0.0
        self.slices = 0

    def step(self, refresh: Refresh, budget_s: float = PUBLISH_SLICE_S) -> bool:
        """Refresh for about ``budget_s`` (at least one snapshot); True once every model
        was looked at."""
        clock = self._clock
        began = clock()
        deadline = began + budget_s
        done = refresh(self._models, lambda: clock() < deadline)
        self.work += clock() - began
        self.slices += 1
        return done


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
        self.round: SnapshotRound | None = None
        self.refresh_seconds: float | None = None
        self._next_at = -float("inf")

    def due(self, *, force: bool = False) -> bool:
        """Whether to start the next round now: ``interval_s`` has passed since the last one
        started (and the pace :meth:`finish` set), or ``force``. True starts the next
        interval."""
        now = self._clock()
        if not force and now < self._next_at:
            return False
        self._next_at = now + self.interval_s
        return True

    def start(self, models: Iterator[str]) -> SnapshotRound:
        """Start a round over ``models`` (:attr:`round` until :meth:`finish`)."""
        self.round = SnapshotRound(models, self._clock)
        return self.round

    def finish(self) -> None:
        """The round is done and its snapshots published: note how long it took from start
        to publish (:attr:`refresh_seconds`) and, when it needed more than one slice, hold
        the next one back so that refreshing takes at most :data:`PUBLISH_SHARE` of the
        loop's time."""
        done = self.round
        assert done is not None
        self.round = None
        self.refresh_seconds = self._clock() - done.started
        if done.slices > 1:
            self._next_at = max(self._next_at, done.started + done.work / PUBLISH_SHARE)

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
