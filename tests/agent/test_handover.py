"""The state topic's restore runs in the agent's loop, a slice at a time, on a real broker
(Tansu and Apache Kafka): a partition with much state restores over many slices while the
loop reads another partition's records; a partition revoked before its restore is complete
leaves nothing behind; a stop during a restore saves nothing for it.

Interleaving is shown by counts and offsets (the other partition's position at each slice),
never by time.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import pytest
from kafka import KafkaProducer

import driftwatch.agent.loop as loop
from driftwatch.agent.loop import Agent
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.state.topic import StateTopicStore
from tests.agent.test_state_topic import scrape
from tests.broker import Broker
from tests.integration.helpers import create_topics, wait_for

P0, P1 = TopicPartition("events", 0), TopicPartition("events", 1)
BIG_MODELS = 60
"""Models homed on P1: its restore parses and rebuilds each in its own slice (slices of no
time: one unit of work each), so it takes well over a hundred slices."""


def settings(broker: Broker, name: str) -> Settings:
    return Settings(**{
        "kafka": {"bootstrap_servers": [broker.bootstrap], "topics": ["events"],
                  "group_id": f"g-{name}", "auto_offset_reset": "earliest"},
        "monitoring": {"defaults": {"window_size": 40}},
        "checkpoint": {"backend": "kafka", "topic": f"state-{name}", "topic_partitions": 2,
                       "interval_seconds": 3600}})


def value(model: str, n: int) -> bytes:
    return json.dumps({"model": model, "label": n % 2, "score": (n % 7) / 7}).encode()


def produce(broker: Broker, values: list[tuple[int, bytes]]) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
    try:
        for partition, payload in values:
            producer.send("events", value=payload, partition=partition)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=5)


def as_records(values: list[tuple[int, bytes]]) -> list[Record]:
    """The records Kafka holds for ``values`` produced in order to a new topic."""
    offsets = {0: 0, 1: 0}
    records = []
    for partition, payload in values:
        records.append(Record("events", partition, offsets[partition], None, payload, 0))
        offsets[partition] += 1
    return records


def saved_state(config: Settings, records: list[Record]) -> Agent:
    """An agent that processed ``records`` and saved them to the state topic (not run)."""
    agent = Agent(config)
    store = agent.checkpointer.store
    assert isinstance(store, StateTopicStore)
    store.ensure_topic()
    for record in records:
        agent.process(record)
    store.save(agent._payload(dict(agent.positions.offsets)))
    store.close()
    return agent


def test_a_long_restore_runs_in_slices_while_another_partition_is_read(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    name = uuid.uuid4().hex[:8]
    create_topics(broker.bootstrap, "events", partitions=2)
    config = settings(broker, name)
    first = [(0, value("small", n)) for n in range(5)] + [
        (1, value(f"big-{m}", n)) for n in range(2) for m in range(BIG_MODELS)]
    later = [(0, value("small", n)) for n in range(5, 45)] + [
        (1, value(f"big-{m}", 2)) for m in range(BIG_MODELS)]
    produce(broker, first + later)
    records = as_records(first + later)
    saved_state(config, records[:len(first)])
    reference = Agent(config)
    for record in records:
        reference.process(record)

    monkeypatch.setattr(loop, "RESTORE_SLICE_S", 0.0)  # one unit of work per slice
    agent = Agent(config)
    slices: list[tuple[frozenset[TopicPartition], int]] = []
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        assert agent.handover is not None
        step = agent.handover.step

        def counted(budget_s: float) -> frozenset[TopicPartition] | None:
            assert agent.handover is not None
            slices.append((agent.handover.restoring, agent.positions.offsets.get(P0, -1)))
            return step(budget_s)

        agent.handover.step = counted  # type: ignore[method-assign]
        try:
            agent.run(stop)
        except BaseException as error:  # handed to the test
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        ends = {P0: 45, P1: 3 * BIG_MODELS}
        wait_for(lambda: agent.positions.offsets == ends or errors, 60,
                 f"the agent at {ends}", diagnostics=lambda: f"at {agent.positions.offsets}, "
                 f"{len(slices)} slice(s), restoring {slices[-1:]}, "
                 f"n={agent.handover.store.state_partitions if agent.handover else None}")
        # Every record is in (nothing more arrives): the monitors, before the stop drops them.
        final = json.dumps(agent.monitors.export_state(), sort_keys=True)
    finally:
        stop.set()
        thread.join(30)
    assert not errors, errors
    big = [p0 for restoring, p0 in slices if P1 in restoring]
    assert P0 not in slices[-1][0] and len(big) > 2 * BIG_MODELS, len(big)
    # P0 resumed at 5 (its saved offset), and was read to its end while P1 still restored.
    assert big[0] in (-1, 5) and 45 in big, big
    assert final == json.dumps(reference.monitors.export_state(), sort_keys=True)


def test_a_partition_revoked_or_stopped_mid_restore_leaves_nothing(broker: Broker) -> None:
    name = uuid.uuid4().hex[:8]
    create_topics(broker.bootstrap, "events", partitions=2)
    config = settings(broker, name)
    saved = [(1, value(f"m-{m}", n)) for n in range(3) for m in range(20)]
    saved_state(config, as_records(saved))

    for revoke in (True, False):
        agent = Agent(config, snapshot_interval_s=0.0)
        handover = agent.handover
        assert handover is not None
        store = agent.checkpointer.store
        assert isinstance(store, StateTopicStore)
        store.ensure_topic()
        handover.queue({P1})
        steps = 0
        while handover.restoring and steps < 3:  # part of the way: read, a few parsed
            handover.step(0.0)
            steps += 1
        assert handover.restoring == {P1}
        agent._update_readiness()
        agent._publish_snapshot(force=True)
        why: Any = agent.snapshot.operations.not_ready_why
        assert why["restoring"].endswith("from the state topic: events[1]"), why
        assert "driftwatch_state_partitions_restoring 1.0" in scrape(agent)
        if revoke:
            agent._on_revoked({P1}, False)
        else:
            assert agent.checkpoint()  # the final checkpoint of a stop
            handover.close()
            agent._publish_snapshot(force=True)
        text = scrape(agent)
        assert handover.restoring == frozenset()
        assert 'model="m-' not in text and "driftwatch_state_partitions_restoring 0.0" in text
        assert agent.monitors.export_state() == {} and agent.positions.offsets == {}
        assert agent.checkpointer.saves == 0, "nothing was saved for a partition not restored"
        store.close()

    # What was saved is intact: a complete restore finds all of it.
    agent = Agent(config)
    assert agent.handover is not None
    agent.handover.assigned({P1})
    assert len(agent.monitors.export_state()) == 20
    assert agent.positions.offsets == {P1: 60}
    assert isinstance(agent.checkpointer.store, StateTopicStore)
    agent.checkpointer.store.close()
