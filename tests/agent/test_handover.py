"""The state topic's restore runs in the agent's loop, a slice at a time, on a real broker
(Tansu and Apache Kafka): a restore many slices long runs while the loop reads another
partition's records; a partition revoked before its restore is complete leaves nothing
behind; a stop during a restore saves nothing for it.

Interleaving is shown by counts and offsets (the other partition's position at each slice),
never by time.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewPartitions

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
MODELS = 150
"""Models homed on P0. A restore reading the (one) state partition parses their records a
few per slice (slices of no time: about one unit of work each), so it takes many slices."""


def settings(broker: Broker, name: str, **kafka: Any) -> Settings:
    return Settings(**{
        "kafka": {"bootstrap_servers": [broker.bootstrap], "topics": ["events"],
                  "group_id": f"g-{name}", "auto_offset_reset": "earliest", **kafka},
        "monitoring": {"defaults": {"window_size": 40}},
        "readiness": {"probe_interval_seconds": 0.2},
        "checkpoint": {"backend": "kafka", "topic": f"state-{name}", "topic_partitions": 1,
                       "interval_seconds": 3600}})


def value(model: str, n: int) -> bytes:
    return json.dumps({"model": model, "label": n % 2, "score": (n % 7) / 7}).encode()


def as_records(values: list[tuple[int, bytes]]) -> list[Record]:
    """The records Kafka holds for ``values`` produced in order to a new topic."""
    offsets = {0: 0, 1: 0}
    records = []
    for partition, payload in values:
        records.append(Record("events", partition, offsets[partition], None, payload, 0))
        offsets[partition] += 1
    return records


def send(producer: KafkaProducer, values: list[tuple[int, bytes]]) -> None:
    for partition, payload in values:
        producer.send("events", value=payload, partition=partition)
    producer.flush(timeout=30)


def running(agent: Agent, stop: threading.Event) -> tuple[threading.Thread,
                                                         list[BaseException]]:
    """``agent`` running in a thread until ``stop`` is set; what it raises goes to the list."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            agent.run(stop)
        except BaseException as error:  # handed to the test
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


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


@pytest.mark.brokers("apache", reason="Tansu 0.6 has no CreatePartitions")
def test_a_restore_runs_in_slices_while_another_partition_is_read(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole-stream sidecar (no group: no rebalance revokes P0) is given a partition added
    to its topic; P1's restore reads the state partition it shares with P0 (150 models'
    records, a slice each) while the loop reads P0's new records."""
    name = uuid.uuid4().hex[:8]
    create_topics(broker.bootstrap, "events", partitions=1)
    config = settings(broker, name, assignment="all_partitions",
                      client_options={"metadata_max_age_ms": 300})
    first = [(0, value(f"m-{m}", n)) for n in range(2) for m in range(MODELS)]
    later = [(0, value(f"m-{m % 20}", n)) for n in range(2, 4) for m in range(20)]
    records = as_records(first + later)
    saved_state(config, records[:len(first)])
    reference = Agent(config)
    for record in records:
        reference.process(record)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)

    monkeypatch.setattr(loop, "RESTORE_SLICE_S", 0.0)  # one unit of work per slice
    agent = Agent(config)
    handover = agent.handover
    assert handover is not None
    slices: list[tuple[frozenset[TopicPartition], int]] = []
    step = handover.step

    def counted(budget_s: float) -> frozenset[TopicPartition] | None:
        slices.append((handover.restoring, agent.positions.offsets.get(P0, -1)))
        return step(budget_s)

    handover.step = counted  # type: ignore[method-assign]
    stop = threading.Event()
    thread, errors = running(agent, stop)
    try:
        send(producer, first)
        wait_for(lambda: agent.positions.offsets.get(P0) == len(first) or errors, 60,
                 "P0 restored")
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.create_partitions({"events": NewPartitions(2)})
        finally:
            admin.close()
        wait_for(lambda: P1 in handover.restoring or errors, 60, "P1 restoring")
        send(producer, later)
        wait_for(lambda: (agent.positions.offsets.get(P0) == len(records)
                          and not handover.restoring) or errors, 60, "all read",
                 diagnostics=lambda: f"at {agent.positions.offsets}, {len(slices)} slices")
        # Every record is in (nothing more arrives): the monitors, before the stop drops them.
        final = json.dumps(agent.monitors.export_state(), sort_keys=True)
    finally:
        stop.set()
        thread.join(30)
        producer.close(timeout=5)
    assert not errors, errors
    p1 = [p0 for restoring, p0 in slices if restoring == {P1}]
    assert len(p1) > 20, len(p1)  # several slices (fewer than records: a slice overruns)
    # P0 was read to its end while P1 still restored, slice by slice.
    assert p1[0] == len(first) and len(records) in p1, p1
    assert final == json.dumps(reference.monitors.export_state(), sort_keys=True)


def test_a_partition_revoked_or_stopped_mid_restore_leaves_nothing(broker: Broker) -> None:
    name = uuid.uuid4().hex[:8]
    create_topics(broker.bootstrap, "events", partitions=2)
    config = settings(broker, name)
    saved = [(1, value(f"m-{m}", n)) for n in range(3) for m in range(20)]  # P1's
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
        agent.publish_now()
        why: Any = agent.snapshot.operations.not_ready_why
        assert why["restoring"].endswith("from the state topic: events[1]"), why
        assert "driftwatch_state_partitions_restoring 1.0" in scrape(agent)
        if revoke:
            agent._on_revoked({P1}, False)
        else:
            assert agent.checkpoint()  # the final checkpoint of a stop
            handover.close()
            agent.publish_now()
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


MODELS_ON_TWO = [f"m{p}-{m}" for p in (0, 1) for m in range(10)]
"""Ten models homed on each of P0 and P1."""


@dataclass
class Revocable:
    """An agent on P0 and P1 that saved after 30 records of each, then read on (the
    state's exactness after a revoke, against a reference that read everything once)."""

    config: Settings
    records: list[Record]
    states: dict[str, Any]
    """The reference's monitors, every record read."""
    agent: Agent

    def same(self, agent: Agent, names: list[str]) -> bool:
        """``agent``'s monitors are the reference's ``names`` (NaN thresholds compare as
        JSON)."""
        return json.dumps(agent.monitors.export_state(), sort_keys=True) == json.dumps(
            {m: self.states[m] for m in names}, sort_keys=True)

    def restored(self, partition: TopicPartition) -> Agent:
        """A new agent given ``partition``: restored from the state topic."""
        other = Agent(self.config)
        assert other.handover is not None and isinstance(other.checkpointer.store,
                                                         StateTopicStore)
        other.handover.assigned({partition})
        other.checkpointer.store.close()
        return other

    def read_on(self, agent: Agent, partition: int) -> None:
        """Feed ``agent`` ``partition``'s records from its position."""
        for record in self.records:
            if record.partition == partition and \
                    record.offset >= agent.positions.offsets[record.topic_partition]:
                agent.process(record)


def revocable(broker: Broker, batches: int = 2) -> Revocable:
    """:class:`Revocable` over ``batches`` batches of three events per model; the agent
    saved after the first and read the second."""
    create_topics(broker.bootstrap, "events", partitions=2)
    config = settings(broker, uuid.uuid4().hex[:8])
    records = as_records([(int(model[1]), value(model, n)) for n in range(3 * batches)
                          for model in MODELS_ON_TWO])
    reference = Agent(config)
    for record in records:
        reference.process(record)
    agent = Agent(config)
    assert isinstance(agent.checkpointer.store, StateTopicStore)
    agent.checkpointer.store.ensure_topic()
    batch = 3 * len(MODELS_ON_TWO)
    for record in records[:batch]:
        agent.process(record)
    assert agent.checkpoint()  # both partitions saved at 30 records each
    for record in records[batch:2 * batch]:
        agent.process(record)
    return Revocable(config, records, reference.monitors.export_state(), agent)


def close(agent: Agent) -> None:
    assert isinstance(agent.checkpointer.store, StateTopicStore)
    agent.checkpointer.store.close()  # delivers what a save cut short had sent


def test_a_revoke_saves_only_the_partitions_that_leave(broker: Broker) -> None:
    """Under cooperative rebalancing a revoke names only the partitions that leave: their
    models are saved, the kept partitions' are not (at 10 000 models a revoke save of every
    changed model took 5.4 s inside the rebalance callback, past max_poll_interval_ms: the
    member left the group). What the topic holds stays exact for both: the leaving
    partition restores as it is now, the kept one as its last save left it, and its replay
    from there gives the same monitors."""
    run = revocable(broker)
    agent = run.agent
    saves = agent.checkpointer.saves
    agent._on_revoked({P1}, False)
    assert agent.checkpointer.saves == saves + 1
    assert agent.checkpointer.durable == {P0: 30, P1: 60}, "P0's save is still the first"
    assert sorted(agent.monitors.export_state()) == MODELS_ON_TWO[:10]
    close(agent)

    leaving = run.restored(P1)
    assert leaving.positions.offsets == {P1: 60}
    assert run.same(leaving, MODELS_ON_TWO[10:])
    kept = run.restored(P0)
    assert kept.positions.offsets == {P0: 30}, "the revoke wrote nothing of P0"
    run.read_on(kept, 0)
    assert run.same(kept, MODELS_ON_TWO[:10])


def test_a_revoke_save_cut_short_by_its_budget_leaves_an_exact_state(broker: Broker) -> None:
    """A revoke's save past its budget (here none: one model is exported, then it stops) is
    cut short before its joins and metas: nothing more becomes durable, and the partition's
    next owner resumes from its last complete save, the first model's newer record
    included, and replays from there to the same monitors as an agent never revoked."""
    run = revocable(broker)
    agent = run.agent
    assert agent.handover is not None
    saves = agent.checkpointer.saves
    agent.handover.revoke_save_s = 0.0
    agent._on_revoked({P1}, False)
    assert agent.checkpointer.saves == saves, "cut short: not a save"
    assert agent.checkpointer.durable == {P0: 30, P1: 30}
    assert sorted(agent.monitors.export_state()) == MODELS_ON_TWO[:10]
    close(agent)

    other = run.restored(P1)
    assert other.positions.offsets == {P1: 30}, "resumes from the last complete save"
    assert [m for m in MODELS_ON_TWO[10:] if json.dumps(
        other.monitors.export_state()[m], sort_keys=True) == json.dumps(
        run.states[m], sort_keys=True)] == MODELS_ON_TWO[10:11], \
        "the one model the cut save wrote restores as it was at the revoke"
    run.read_on(other, 1)
    assert run.same(other, MODELS_ON_TWO[10:])


def test_partitions_given_back_by_the_next_assignment_are_kept_not_restored(
        broker: Broker) -> None:
    """An eager rebalance revokes P0 and P1 and gives P1 straight back: P1's models are the
    very monitors the revoke dropped (not read from the topic, where the revoke's save was
    cut short and holds only the first save), P1 resumes at its own position, the state
    topic is said to hold P1 at its last complete save until the next save, and reading on
    gives the reference, as does a restore of P1 after that save. P0, not given back, is
    forgotten: a later assignment of P0 restores it from the topic."""
    run = revocable(broker, batches=3)
    agent, handover = run.agent, run.agent.handover
    assert handover is not None
    before = dict(agent.monitors.by_model)
    handover.revoke_save_s = 0.0  # the topic keeps the first save: no restore could be this
    agent._on_revoked({P0, P1}, False)
    assert len(agent.monitors) == 0 and agent.positions.offsets == {}

    handover.assigned({P1})

    assert sorted(agent.monitors.by_model) == MODELS_ON_TWO[10:]
    assert all(agent.monitors.by_model[m] is before[m] for m in MODELS_ON_TWO[10:])
    assert agent.positions.offsets == {P1: 60}
    assert agent.checkpointer.durable[P1] == 30, "the topic holds P1's first save"
    assert "m0-0" not in scrape(agent)
    run.read_on(agent, 1)
    assert run.same(agent, MODELS_ON_TWO[10:])
    assert agent.checkpoint() and agent.checkpointer.durable[P1] == 90
    handover.assigned({P0})  # a later assignment: P0 is no longer kept
    assert agent.positions.offsets == {P0: 30, P1: 90}, "P0 restored from its first save"
    assert all(agent.monitors.by_model[m] is not before[m] for m in MODELS_ON_TWO[:10])
    close(agent)

    other = run.restored(P1)
    assert other.positions.offsets == {P1: 90}
    assert run.same(other, MODELS_ON_TWO[10:]), "the save after the handback restores exactly"


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_partitions_are_kept_under_an_eager_assignor_and_for_a_rebalance_at_most(
        broker: Broker, strategy: str) -> None:
    """Kept only until the rebalance this member takes part in can have ended
    (``kept_for_s``: a later assignment restores from the topic, since another member may
    have read on meanwhile), and never under cooperative-sticky (its revokes name only
    partitions that move elsewhere)."""
    name = uuid.uuid4().hex[:8]
    create_topics(broker.bootstrap, "events", partitions=1)
    config = settings(broker, name, assignment_strategy=strategy)
    agent = Agent(config)
    handover = agent.handover
    assert handover is not None and isinstance(agent.checkpointer.store, StateTopicStore)
    assert handover.kept_for_s == 11.0, "max_poll_interval_ms + session_timeout_ms"
    for record in as_records([(0, value(f"m-{m}", 0)) for m in range(5)]):
        agent.process(record)
    before = dict(agent.monitors.by_model)
    agent._on_revoked({P0}, False)
    handover.kept_for_s = 0.0 if strategy == "range" else 3600.0
    handover.assigned({P0})
    assert agent.positions.offsets == {P0: 5}
    assert sorted(agent.monitors.by_model) == sorted(before)
    assert not any(agent.monitors.by_model[m] is before[m] for m in before), "restored"
    agent.checkpointer.store.close()
