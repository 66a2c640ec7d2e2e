"""The last save at a stop, with the state topic, on a real broker (Tansu and Apache Kafka):
it runs in slices with the source polled between them, so a save longer than
``kafka.max_poll_interval_ms`` keeps the member in its group, its commit goes through, and
records that arrive meanwhile are not read.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from driftwatch.agent.loop import Agent
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.source import KafkaSource
from tests.agent.test_handover import P0, as_records, running, send, settings, value
from tests.broker import Broker
from tests.integration.helpers import create_topics, wait_for

MODELS = 90
"""Busy models at the stop (the default ``limits.max_models`` is 100)."""
EXPORT_S = 0.04
"""A model's export at the stop, slowed down: the 90 models take 3.6 s, past the 1 s
``max_poll_interval_ms`` of these tests (a save at once would be evicted meanwhile)."""


def committed(broker: Broker, group: str) -> int | None:
    """The group's committed offset of P0, as a new consumer of the group sees it."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group,
                             enable_auto_commit=False)
    try:
        return consumer.committed(KafkaTopicPartition("events", 0))
    finally:
        consumer.close()


def run_until(agent: Agent, stop: threading.Event, read: int) -> tuple[threading.Thread,
                                                                       list[BaseException]]:
    """``agent`` running in a thread, once it has read ``read`` records of P0."""
    thread, errors = running(agent, stop)
    wait_for(lambda: agent.positions.offsets.get(P0) == read or errors, 60, f"{read} read",
             diagnostics=lambda: f"at {agent.positions.offsets}")
    return thread, errors


def test_the_last_save_polls_between_slices_stays_in_the_group_and_reads_nothing_more(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    """90 busy models saved at a stop, 3.6 s of exporting: the save is sliced with polls
    between (the member is not evicted at 1 s, so the group's commit is the save's offset),
    records sent during the save are not read, and an agent started after it resumes there
    and ends equal to one that read everything once."""
    name = uuid.uuid4().hex[:8]
    create_topics(broker.bootstrap, "events", partitions=1)
    config = settings(broker, name, max_poll_interval_ms=1000, poll_timeout_ms=200)
    first = [(0, value(f"m-{m}", n)) for n in range(2) for m in range(MODELS)]
    late = [(0, value(f"m-{m % 20}", n)) for n in range(2, 4) for m in range(20)]
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
    agent = Agent(config)
    stop = threading.Event()
    steps: list[str] = []  # what the loop did after the stop, in order
    positions: list[dict[TopicPartition, int]] = []  # the agent's, at each poll then
    export = agent.saved_state.export

    def slow_export(models: Sequence[str], offsets: Mapping[TopicPartition, int]
                    ) -> tuple[Mapping[str, Any], Mapping[str, object]]:
        if stop.is_set():
            if not steps:
                send(producer, late)  # arrives while the last save runs
            steps.append("export")
            time.sleep(EXPORT_S * len(models))
        return export(models, offsets)

    monkeypatch.setattr(agent.saved_state, "export", slow_export)
    poll = KafkaSource.poll

    def counted(source: KafkaSource) -> list[Any]:
        if steps:
            steps.append("poll")
            positions.append(dict(agent.positions.offsets))
        return poll(source)

    monkeypatch.setattr(KafkaSource, "poll", counted)
    send(producer, first)
    thread, errors = run_until(agent, stop, len(first))
    stop.set()
    thread.join(60)
    monkeypatch.undo()  # the agent started below polls as usual
    assert not errors, errors
    assert not thread.is_alive()
    exports = steps.count("export")
    assert exports == MODELS, steps  # every busy model, one export call each
    # Slices of about 0.1 s (three models) with a poll after each.
    assert steps.count("poll") >= exports // 5, steps
    assert "export, export, export, export, export, export" not in ", ".join(steps), steps
    # The late records were not read (the stop leaves the group: nothing is left after).
    assert positions and all(p == {P0: len(first)} for p in positions), positions
    assert committed(broker, f"g-{name}") == len(first)  # not evicted: the commit went through

    records = as_records(first + late)
    reference = Agent(config)
    for record in records:
        reference.process(record)
    again = Agent(config)
    stop = threading.Event()
    thread, errors = run_until(again, stop, len(records))
    final = json.dumps(again.monitors.export_state(), sort_keys=True)
    stop.set()
    thread.join(60)
    producer.close(timeout=5)
    assert not errors, errors
    assert final == json.dumps(reference.monitors.export_state(), sort_keys=True)
