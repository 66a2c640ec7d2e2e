"""The sidecars of a three-replica model, each watching the model's whole stream.

Three agents with ``kafka.assignment: all_partitions`` and ``events.only_models: [fraud]``
read a three-partition topic that two models share, as the sidecars of a replicated model
would. Each must export exactly the same monitor state (not a third of it each, as three
members of one group would), equal to the brute-force AUC and class counts of the model's
last ``WINDOW`` events, skip and count the other model's records, and commit nothing. One
replica is then stopped and restarted while events keep coming: it resumes from its local
checkpoint (``checkpoint.backend: file``, the test helpers' default; there is no group
commit to resume from) and again agrees with the others to the last sample.

With the state topic (``checkpoint.backend`` auto, which picks kafka for whole-stream
agents) all three save under the same keys, and a replica replaced by a new Pod (an empty
disk, ``auto_offset_reset: latest``, so nothing but the topic can bring its window back)
restores the model's window, detectors and skip counts from its siblings' saves and exports
the same values as they do.

The watched model's records are keyed by its id, so they share one partition and every
replica reads them in the same order: the condition for identical windows (records of one
model spread over several partitions reach each replica in its own interleaving).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from driftwatch.core.events import Event
from driftwatch.settings import Settings
from driftwatch.simulate import generate
from tests.broker import Broker
from tests.integration.helpers import (
    AgentProcess,
    Metrics,
    StartAgent,
    create_topics,
    deep_merge,
    event_json,
)
from tests.integration.test_models import brute_force_auc

TOPIC = "scores"
PARTITIONS = 3
WINDOW = 300
WATCHED = "fraud"
OTHER = "churn"
SIDECAR: dict[str, Any] = {
    "kafka": {"topics": [TOPIC], "assignment": "all_partitions"},
    "events": {"model_source": "key", "only_models": [WATCHED]},
    "monitoring": {"defaults": {"window_size": WINDOW, "sample_every": 25}},
}
"""The settings of one model's whole-stream sidecar on the shared topic."""


def produce_keyed(bootstrap: str, records: Iterable[tuple[str, int, bytes]]) -> None:
    """Send ``(model, partition, value)`` records keyed by model, in order; wait for acks."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        for model, partition, value in records:
            producer.send(TOPIC, key=model.encode(), value=value, partition=partition)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=5)


def batch(watched: list[Event], other: list[Event]) -> list[tuple[str, int, bytes]]:
    """The watched model on partition 1 (its key's one partition), the other model spread
    over every partition; the two interleaved in a fixed random mix, each in its order."""
    streams = {WATCHED: iter([(WATCHED, 1, event_json(e)) for e in watched]),
               OTHER: iter([(OTHER, i % PARTITIONS, event_json(e))
                            for i, e in enumerate(other)])}
    order = [WATCHED] * len(watched) + [OTHER] * len(other)
    random.Random(len(order)).shuffle(order)
    return [next(streams[model]) for model in order]


def settled(agents: list[AgentProcess], watched: int, skipped: int) -> list[Metrics]:
    """Each agent's scrape once it has processed ``watched`` and skipped ``skipped`` records
    and measured the lag of every partition (at its first probe with known positions)."""
    return [
        agent.wait_metrics(
            lambda m: m.total("driftwatch_events_processed_total") == watched
            and m.get("driftwatch_events_skipped_total", reason="unwatched_model") == skipped
            and len(m.series("driftwatch_consumer_lag_records")) == PARTITIONS,
            f"{watched} processed and {skipped} skipped records, lag of every partition",
        )
        for agent in agents
    ]


def assert_identical_and_exact(scrapes: list[Metrics], events: list[Event]) -> None:
    states = [m.state() for m in scrapes]
    assert states[0], "no monitor state exported"
    for state in states[1:]:
        assert state == states[0], "the replicas export different values"
    window = events[-WINDOW:]
    positives = sum(e.y_true for e in window)
    for metrics in scrapes:
        assert metrics.by_label("driftwatch_measure", "model", measure="auc") == {
            WATCHED: pytest.approx(brute_force_auc(window), rel=1e-12, abs=0)}
        assert metrics.by_label("driftwatch_window_events", "class", model=WATCHED) == {
            "positive": positives, "negative": WINDOW - positives}
        assert not metrics.series("driftwatch_measure", model=OTHER), "skipped, not monitored"
        assert metrics.total("driftwatch_events_rejected_total") == 0, "skips are not errors"
        assert metrics.total("driftwatch_commits_total") == 0, "no group, no commits"
        partitions = metrics.by_label("driftwatch_consumer_lag_records", "partition")
        assert set(partitions) == {str(p) for p in range(PARTITIONS)}, "every partition"


def test_three_whole_stream_sidecars_export_identical_values(
    broker: Broker, start_agent: StartAgent
) -> None:
    create_topics(broker.bootstrap, TOPIC, partitions=PARTITIONS)
    overrides = SIDECAR
    watched = list(generate("stationary", seed=3, length=900, auc=0.85))
    other = list(generate("stationary", seed=4, length=600, auc=0.7))
    # All three share the group id the chart would give them: with group assignment they
    # would split the three partitions, and only one would see the watched model at all.
    agents = [start_agent(f"replica-{i}", overrides, group="fraud-sidecar") for i in range(3)]
    produce_keyed(broker.bootstrap, batch(watched[:600], other[:400]))
    assert_identical_and_exact(settled(agents, 600, 400), watched[:600])
    for agent in agents:
        agent.wait_ready()

    # A rollout replaces one replica: it stops (saving its checkpoint), events keep coming,
    # and it resumes from its own checkpoint, reading each record once.
    agents[2].stop()
    produce_keyed(broker.bootstrap, batch(watched[600:750], other[400:500]))
    agents[2].start()
    produce_keyed(broker.bootstrap, batch(watched[750:], other[500:]))
    assert_identical_and_exact(settled(agents, 900, 600), watched)
    assert agents[2].log(limit=10**6).count("not covered by the checkpoint") == 1, \
        "only its first start found no checkpoint"


def test_a_replaced_sidecar_restores_its_window_from_the_state_topic(
    broker: Broker, start_agent: StartAgent, tmp_path: Path
) -> None:
    create_topics(broker.bootstrap, TOPIC, partitions=PARTITIONS)
    overrides = {**SIDECAR, "checkpoint": {"backend": "auto"}}
    state_topic = Settings(kafka={"group_id": "fraud-sidecar"},
                           events=overrides["events"]).state_topic()
    watched = list(generate("stationary", seed=5, length=700, auc=0.8))
    other = list(generate("stationary", seed=6, length=450, auc=0.7))
    agents = [start_agent(f"replica-{i}", overrides, group="fraud-sidecar") for i in range(3)]
    produce_keyed(broker.bootstrap, batch(watched[:500], other[:300]))
    assert_identical_and_exact(settled(agents, 500, 300), watched[:500])

    # A rollout replaces replica 2 by a new Pod: nothing on its disk, and latest, so a
    # partition the state topic did not cover would start at the end of the log.
    assert agents[2].stop()[0] == 0
    assert not (tmp_path / "replica-2-state").exists(), "backend kafka writes nothing to disk"
    produce_keyed(broker.bootstrap, batch(watched[500:600], other[300:380]))
    settled(agents[:2], 600, 380)
    replaced = {"kafka": {"auto_offset_reset": "latest"}}
    agents[2] = start_agent("replica-2-new", deep_merge(overrides, replaced),
                            group="fraud-sidecar")
    assert_identical_and_exact(settled(agents, 600, 380), watched[:600])
    assert f"restored 1 model(s) of {PARTITIONS} partition(s) from state topic " \
           f"{state_topic}" in agents[2].output()
    assert "not covered by the checkpoint" not in agents[2].output()
    produce_keyed(broker.bootstrap, batch(watched[600:], other[380:]))
    assert_identical_and_exact(settled(agents, 700, 450), watched)
