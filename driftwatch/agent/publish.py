"""The snapshot the agent's loop publishes: the one ``/metrics`` shows.

The exporter only ever reads an immutable
:class:`~driftwatch.sinks.prometheus.collector.AgentSnapshot`,
so a scrape never sees the monitors mid-update and never waits for the loop. The loop
builds a fresh one about every ``snapshot_interval_s`` (a snapshot costs one normalization
per measure and changed model), and at once when readiness changes or partitions come or go.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from driftwatch.sinks.snapshot import AgentSnapshot, Operations

if TYPE_CHECKING:
    from driftwatch.agent.loop import Agent

__all__ = ["lag_seconds", "publish_snapshot"]


def publish_snapshot(agent: Agent, *, force: bool = False) -> None:
    """Replace the agent's snapshot when ``snapshot_interval_s`` has passed since the last
    one (or at once with ``force``: readiness changed, partitions came or went)."""
    now = agent._clock()
    if not force and now - agent._snapshot_at < agent.snapshot_interval_s:
        return
    agent._snapshot_at = now
    source = agent.source
    monitors = agent.monitors.snapshots()
    agent._comparison_snapshots = agent.comparisons.snapshots()
    # A model's events count grew since the last snapshot: it had events about now
    # (within snapshot_interval_s), which is what the "no events" alert measures.
    before = {snap.model: snap.events for snap in agent._snapshot.monitors}
    wall = agent._wall_clock()
    last = {snap.model: (wall if snap.events != before.get(snap.model)
                         else agent._snapshot.last_processed.get(snap.model, wall))
            for snap in monitors}
    # A forced publish (readiness changed) must not wait for a probe of a dead broker.
    lag = source.lag(refresh=not force) if source is not None else {}
    checkpointer = agent.checkpointer
    why: dict[str, str] = {}
    if not agent.readiness.ready:
        problem = source.problem if source is not None else "the source is not started"
        why["kafka"] = problem or "the brokers answer again; ready once they have for " \
            "readiness.ready_after_seconds"
    if checkpointer.failing:
        why["checkpoint"] = (f"the last save failed ({checkpointer.last_error}); nothing is "
                             "committed until a save succeeds")
    operations = Operations(
        consumer_group=agent.settings.kafka.group_id,
        lag_seconds=lag_seconds(agent, lag),
        not_ready=frozenset(why),
        not_ready_why=why,
        checkpoint_saves=checkpointer.saves,
        checkpoint_save_failures=checkpointer.failures,
        checkpoint_last_success_time=checkpointer.last_success_time,
        checkpoint_save_seconds=checkpointer.last_save_seconds,
        commits=source.commits if source is not None else 0,
        commit_failures=source.commit_failures if source is not None else 0,
        dead_letter_failures=agent.dead_letter.failed if agent.dead_letter else 0,
        alarm_publish_failures=agent.alarm_publisher.failed if agent.alarm_publisher else 0,
        broker_reconnects=source.reconnects if source is not None else 0,
        offset_resets=agent._offset_resets,
        batch_seconds=agent._batch_seconds.value(),
        state_split_models=None if agent.partitioned is None else len(
            agent.partitioned.split),
    )
    agent._snapshot = AgentSnapshot(
        monitors=monitors,
        rejected=dict(agent._rejected),
        skipped=dict(agent._skipped),
        consumer_lag=lag,
        ready=agent._ready,
        started_time=agent._started,
        last_processed=last,
        operations=operations,
        join=agent.join_shards.snapshot() if agent.join_shards is not None else
        None if agent.delayed is None else agent.delayed.snapshot(),
    )


def lag_seconds(agent: Agent, lag: Mapping[tuple[str, int], int]
                ) -> dict[tuple[str, int], float]:
    """Per partition with a lag, how old its last processed record is (0 when caught up;
    none before the first record)."""
    now = agent._wall_clock()
    seconds: dict[tuple[str, int], float] = {}
    for tp, records in lag.items():
        if records == 0:
            seconds[tp] = 0.0
        elif tp in agent._last_timestamp_ms:
            seconds[tp] = max(0.0, now - agent._last_timestamp_ms[tp] / 1000)
    return seconds
