"""Handover of a joined stream (predictions and labels as separate records) through the state
topic, on a real broker.

Two ``driftwatch run`` processes in one group over a four-partition topic carrying both kinds
of record (``join.kind_field``), keyed by model (eight models, two per partition), labels
arriving up to a minute of event time after their prediction, some before it, a tenth never.
One agent is SIGKILLed mid-stream; the other takes its partitions over, restores their
monitors *and* their pending predictions and labels from the state topic, and must end with
exactly the ``/metrics`` of one agent that saw every record once: the monitors' state, the
join's counts and pending records, label delays and label-free watches. That agent is the
agent's own code fed the same records in process; its pairs are checked against an offline
join (every labelled prediction joined once).
"""

from __future__ import annotations

import random
import time
from typing import Any

from kafka import KafkaProducer
from prometheus_client import CollectorRegistry, generate_latest

from driftwatch.agent.loop import Agent
from driftwatch.core.join import Label, Prediction
from driftwatch.demo.feed import encode_joinable
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.prometheus.join_collector import JoinCollector
from tests.broker import Broker
from tests.integration.helpers import (
    JOIN_S,
    Labels,
    Metrics,
    StartAgent,
    create_topics,
    sigkill_mid_stream,
    wait_for,
)

TOPIC = "events"
PARTITIONS = 4
MODELS = [f"model-{i}" for i in range(8)]
SETTINGS: dict[str, Any] = {
    "kafka": {"topics": [TOPIC]},
    "events": {"model_source": "field", "time_field": "ts"},
    "monitoring": {"defaults": {"window_size": 200, "sample_every": 10}},
    "join": {"enabled": True, "kind_field": "kind"},
    "checkpoint": {"backend": "kafka", "interval_seconds": 1},
}
COMPARED = ("driftwatch_join_", "driftwatch_label_delay", "driftwatch_score_drift")


def joined_stream(seed: int, per_model: int) -> tuple[list[tuple[int, bytes]], int]:
    """``(partition, value)`` in arrival order, and how many predictions have a label."""
    rng = random.Random(seed)
    settings = Settings(**SETTINGS)
    fmt, join = settings.events.event_format(), settings.join.join_format()
    timed: list[tuple[float, int, Prediction | Label]] = []
    labelled = 0
    for i in range(per_model):
        for index, model in enumerate(MODELS):
            t = float(i)
            label = int(rng.random() < 0.3 + 0.05 * index)
            score = rng.random() * 0.6 + 0.4 * label
            event_id = f"{model}/{i}"
            partition = index % PARTITIONS
            timed.append((t + rng.uniform(0, 2), partition,
                          Prediction(event_id, model, score, None, t)))
            if rng.random() < 0.9:
                labelled += 1
                delay = rng.choice([rng.uniform(-2, 0), rng.uniform(1, 60)])
                timed.append((t + delay + rng.uniform(0, 2), partition,
                              Label(event_id, label, t + delay)))
    timed.sort(key=lambda item: item[0])
    return [(partition, encode_joinable(record, fmt, join)[1])
            for _, partition, record in timed], labelled


def produce(bootstrap: str, records: list[tuple[int, bytes]], seconds: float) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        pause = seconds / max(len(records) // 50, 1)
        for n, (partition, value) in enumerate(records):
            producer.send(TOPIC, value=value, partition=partition)
            if n % 50 == 49:
                time.sleep(pause)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=5)


def compared(metrics: Metrics) -> dict[tuple[str, Labels], float]:
    """The monitors' state and everything the join exports."""
    return {**metrics.state(), **{key: value for key, value in metrics.samples.items()
                                  if key[0].startswith(COMPARED)}}


def uninterrupted(records: list[tuple[int, bytes]]) -> Metrics:
    """The agent's own code fed every record once, each partition in order."""
    agent = Agent(Settings(**SETTINGS), snapshot_interval_s=0.0)
    offsets = [0] * PARTITIONS
    for partition, value in records:
        agent.process(Record(TOPIC, partition, offsets[partition], None, value, 0))
        offsets[partition] += 1
    agent.publish_now()
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: agent.snapshot, agent.settings.alerts.thresholds))
    registry.register(JoinCollector(lambda: agent.snapshot.join))
    return Metrics.parse(generate_latest(registry).decode())


def test_sigkill_one_of_two_agents_of_a_joined_stream_and_the_other_takes_over_exactly(
    broker: Broker, start_agent: StartAgent
) -> None:
    create_topics(broker.bootstrap, TOPIC, partitions=PARTITIONS)
    records, labelled = joined_stream(44, 150)
    expected_metrics = uninterrupted(records)
    expected = compared(expected_metrics)
    # The reference is an offline join: every labelled prediction joined once, nothing
    # dropped, the never-labelled ones pending.
    assert expected_metrics.total("driftwatch_join_matched_total") == labelled
    assert expected_metrics.total("driftwatch_join_dropped_total") == 0
    assert expected_metrics.total("driftwatch_events_processed_total") == labelled
    assert expected_metrics.total("driftwatch_join_pending_predictions") == \
        len(MODELS) * 150 - labelled

    first, second = start_agent("a", SETTINGS, group="kill"), start_agent("b", SETTINGS,
                                                                         group="kill")
    for agent in (first, second):
        agent.wait_ready()
    sigkill_mid_stream(first, lambda: produce(broker.bootstrap, records, 12.0), processed=200,
                       what="agent a has joined pairs and a save")

    def settled() -> Metrics | None:
        metrics = second.scrape()
        done = metrics.total("driftwatch_join_labels_total") == \
            expected_metrics.total("driftwatch_join_labels_total") and \
            metrics.total("driftwatch_join_predictions_total") == \
            expected_metrics.total("driftwatch_join_predictions_total")
        return metrics if done else None

    metrics = wait_for(settled, JOIN_S * 2, "agent b has every record", interval_s=0.3,
                       diagnostics=lambda: second.log(3000))
    got = compared(metrics)
    assert got.keys() == expected.keys()
    different = {key: (got[key], value) for key, value in expected.items() if got[key] != value}
    assert not different, f"after the handover (got, want): {different}"
    assert "restored" in second.output()
