"""The join's pending records and the comparisons in the state topic, on a real broker.

The agent itself is driven (its :meth:`~driftwatch.agent.loop.Agent.process`, save payload and
partition restore), with records handed to it as Kafka would: each partition in order, from
where the agent resumes it. Only the input is not read from the broker; the state topic is.
The reference is an agent that saw every record once: a save cut short after any of its
records must restore to an agent that, fed the log again from its resume points, holds
exactly the reference's monitors, pending predictions and labels, and counts.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from kafka import KafkaProducer

from driftwatch.agent.loop import Agent
from driftwatch.core.join import Label, Prediction
from driftwatch.demo.feed import encode_joinable
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.state.topic import StateTopicStore
from driftwatch.state.topic_layout import header
from tests.broker import Broker

HOMES = {"a": 0, "b": 0, "c": 1, "d": 1}
"""Model → partition: records are keyed by model, so a model's predictions and labels land
on partitions of the same number (co-partitioned)."""


def settings(broker: Broker, topic: str, *, one_topic: bool, join: bool = True,
             bounds: dict[str, Any] | None = None, state_partitions: int = 1) -> Settings:
    values: dict[str, Any] = {
        "kafka": {"bootstrap_servers": [broker.bootstrap],
                  "topics": ["events"] if one_topic else ["pred", "lab"]},
        "events": {"model_source": "field", **({"time_field": "ts"} if join else {})},
        "monitoring": {"defaults": {"window_size": 40}},
        "checkpoint": {"backend": "kafka", "topic": topic,
                       "topic_partitions": state_partitions},
    }
    if join:
        values["join"] = {"enabled": True,
                          **(bounds or {"max_pending": 12, "max_label_age_seconds": 20}),
                          **({"kind_field": "kind"} if one_topic else
                             {"predictions_topic": "pred", "labels_topic": "lab"})}
    else:
        values["comparisons"] = [{"name": "v2", "model": "a",
                                  "challenger_score_field": "challenger"}]
    return Settings(**values)


def joinable(seed: int, count: int, config: Settings) -> list[Record]:
    """Predictions and labels of ``count`` events in arrival order: labels a few seconds to
    a minute after their prediction, some before it, a tenth never; partition by model."""
    rng = random.Random(seed)
    fmt, join = config.events.event_format(), config.join.join_format()
    timed: list[tuple[float, Prediction | Label]] = []
    for i in range(count):
        model = rng.choice(sorted(HOMES))
        label = int(rng.random() < 0.4)
        prediction = Prediction(f"e{i}", model, rng.random() * 0.6 + 0.4 * label, None, i)
        timed.append((i + rng.uniform(0, 3), prediction))
        if rng.random() < 0.9:
            delay = rng.choice([rng.uniform(-2, 0), rng.uniform(0, 60)])
            timed.append((i + delay + rng.uniform(0, 3), Label(f"e{i}", label, i + delay)))
    timed.sort(key=lambda pair: pair[0])
    one_topic = join.kind_field is not None
    offsets: dict[tuple[str, int], int] = {}
    records = []
    model_of = {r.event_id: r.model for _, r in timed if isinstance(r, Prediction)}
    for _, record in timed:
        topic = "events" if one_topic else "pred" if isinstance(record, Prediction) else "lab"
        tp = (topic, HOMES[model_of[record.event_id]])
        offset = offsets[tp] = offsets.get(tp, -1) + 1
        key, value = encode_joinable(record, fmt, join)
        records.append(Record(tp[0], tp[1], offset, key, value, 0))
    return records


def compared(seed: int, count: int) -> list[Record]:
    """Joined records with a challenger's score, partitioned by model."""
    rng = random.Random(seed)
    records = []
    offsets: dict[int, int] = {}
    for _ in range(count):
        model = rng.choice(sorted(HOMES))
        label = int(rng.random() < 0.4)
        value = {"model": model, "label": label, "score": rng.random() * 0.6 + 0.4 * label,
                 "challenger": rng.random() * 0.5 + 0.5 * label}
        partition = HOMES[model]
        offset = offsets[partition] = offsets.get(partition, -1) + 1
        records.append(Record("events", partition, offset, None,
                              json.dumps(value).encode(), 0))
    return records


def feed(agent: Agent, records: list[Record]) -> None:
    """Each partition from where the agent resumes it, as Kafka delivers."""
    for record in records:
        if record.offset >= agent.positions.offsets.get(record.topic_partition, 0):
            agent.process(record)


def fingerprint(agent: Agent) -> str:
    """Everything the agent keeps: monitors, each join shard, comparisons, counts."""
    shards = {} if agent.join_shards is None else agent.join_shards.export_state()
    return json.dumps({"monitors": agent.monitors.export_state(),
                       "joins": {f"{t}:{p}": state for (t, p), state in shards.items()},
                       "comparisons": agent.comparisons.export_state(),
                       "rejected": agent.rejections.rejected}, sort_keys=True)


def partitions(records: list[Record]) -> set[TopicPartition]:
    return {record.topic_partition for record in records}


def save(agent: Agent) -> None:
    store = agent.checkpointer.store
    assert isinstance(store, StateTopicStore)
    store.save(agent._payload(dict(agent.positions.offsets)))


def cut_saves(broker: Broker, name: str, config: Any, records: list[Record],
              replay: list[Record] | None = None) -> int:
    """Save after the first third, feed the second, then for every prefix of the second
    save's records: restore into a new agent, feed the whole log (``replay``: in another
    interleaving of the partitions) and compare with the reference. Returns the records of
    the cut save."""
    first, second = records[:len(records) // 3], records[:2 * len(records) // 3]
    reference = Agent(config(f"{name}-ref"))
    feed(reference, records)
    owner = Agent(config(f"{name}-owner"))
    feed(owner, first)
    save(owner)
    feed(owner, second)
    store = owner.checkpointer.store
    assert isinstance(store, StateTopicStore)
    cut = list(store._records(owner._payload(dict(owner.positions.offsets)), {}))
    store.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        for written in range(len(cut) + 1):
            topic = f"{name}-{written}"
            copy = Agent(config(topic))
            feed(copy, first)
            save(copy)
            state_partitions = copy.settings.checkpoint.topic_partitions or 1
            for home, key, value in cut[:written]:  # where the save puts it
                producer.send(topic, key=key, value=value, headers=header(state_partitions),
                              partition=home % state_partitions)
            producer.flush(timeout=10)
            restored = Agent(config(topic))
            restored._restore_partitions(partitions(records))
            feed(restored, records if replay is None else replay)
            if replay is None:
                assert fingerprint(restored) == fingerprint(reference), written
            else:
                assert counts(restored) == counts(reference), written
            for agent in (copy, restored):
                assert isinstance(agent.checkpointer.store, StateTopicStore)
                agent.checkpointer.store.close()
    finally:
        producer.close(timeout=5)
    return len(cut)


def counts(agent: Agent) -> dict[str, Any]:
    """What no interleaving changes: events per model, the join's counts and pending ids."""
    assert agent.join_shards is not None
    snapshot = agent.join_shards.snapshot()
    pending = sorted(record[0] for shard in agent.join_shards.shards.values()
                     for record in shard.join.export_state()["predictions"])
    return {"events": {s.model: s.events for s in agent.monitors.snapshots()},
            "matched": dict(snapshot.matched), "pending": dict(snapshot.pending),
            "pending_ids": pending, "pending_labels": snapshot.pending_labels,
            "dropped": dict(snapshot.dropped)}


@pytest.mark.parametrize("state_partitions", [1, 2])
@pytest.mark.parametrize("one_topic", [True, False], ids=["one-topic", "two-topics"])
def test_a_save_cut_short_after_any_record_restores_the_join_exactly(
    broker: Broker, one_topic: bool, state_partitions: int,
) -> None:
    """With one state partition, and with each input partition's (and join shard's) records
    in their own."""
    def config(topic: str) -> Settings:
        return settings(broker, topic, one_topic=one_topic, state_partitions=state_partitions)

    records = joinable(11, 240, config("x"))
    reference = Agent(config("x"))
    feed(reference, records)
    snapshot = reference.join_shards.snapshot() if reference.join_shards else None
    # The stream exercises what must survive a restart: pairs, pending predictions and
    # labels at the cut, and drops.
    assert snapshot is not None and sum(snapshot.matched.values()) > 100
    assert sum(snapshot.dropped.values()) > 0
    # four models, two shards, the metas of two (one topic) or four partitions
    assert cut_saves(broker, f"cut-{one_topic}-{state_partitions}", config, records) == \
        6 + (2 if one_topic else 4)


def test_a_restore_replayed_in_another_interleaving_loses_and_doubles_nothing(
    broker: Broker,
) -> None:
    """Two topics interleave differently when read again, so a pair may be completed by its
    other half in the replay: it must still be taken exactly once."""
    def config(topic: str) -> Settings:  # bounds never reached: no drop depends on order
        return settings(broker, topic, one_topic=False,
                        bounds={"max_pending": 1000, "max_label_age_seconds": 1e6})

    records = joinable(12, 240, config("x"))
    rng = random.Random(5)
    queues: dict[TopicPartition, list[Record]] = {}
    for record in records:
        queues.setdefault(record.topic_partition, []).append(record)
    replay = []
    while queues:
        tp = rng.choice(sorted(queues))
        replay.append(queues[tp].pop(0))
        if not queues[tp]:
            del queues[tp]
    cut_saves(broker, "shuffled", config, records, replay)


def test_comparisons_are_saved_with_their_model_and_restored_exactly(
    broker: Broker,
) -> None:
    def config(topic: str) -> Settings:
        return settings(broker, topic, one_topic=True, join=False)

    records = compared(13, 300)
    assert cut_saves(broker, "compare", config, records) == 4 + 2
    agent = Agent(config("compare-drop"))
    feed(agent, records)
    assert agent.comparisons.snapshots()[0].events > 0
    agent._on_revoked({TopicPartition("events", 0)}, True)  # model a's partition: lost
    assert agent.comparisons.snapshots()[0].events == 0  # no frozen comparison stays


@pytest.mark.parametrize("cut", [False, True], ids=["saved", "save-cut-short"])
@pytest.mark.parametrize("kind", ["one-topic", "two-topics", "comparisons"])
def test_partitions_given_back_keep_the_join_and_comparisons_exactly(
    broker: Broker, kind: str, cut: bool,
) -> None:
    """An eager rebalance revokes every partition mid-stream and gives them all back: the
    monitors are the ones dropped (kept, not restored), and reading on gives the reference's
    monitors, join shards, comparisons and counts; so does a restore from the topic after the
    next save. ``save-cut-short``: the revoke's save stops after one model, so the topic
    holds less than what is kept."""
    name = f"kept-{kind}-{cut}-{random.randrange(10**9)}"

    def config(topic: str) -> Settings:
        return settings(broker, topic, one_topic=kind != "two-topics",
                        join=kind != "comparisons")

    probe = config("x")
    records = compared(5, 300) if kind == "comparisons" else joinable(12, 240, probe)
    reference = Agent(config(f"{name}-ref"))
    feed(reference, records)
    owner = Agent(config(name))
    assert owner.handover is not None
    feed(owner, records[:len(records) // 3])
    save(owner)
    feed(owner, records[:2 * len(records) // 3])
    before = dict(owner.monitors.by_model)
    if cut:
        owner.handover.revoke_save_s = 0.0
    every = partitions(records)
    owner._on_revoked(every, False)
    owner._restore_partitions(every)
    assert owner.monitors.by_model == before and all(
        owner.monitors.by_model[m] is monitor for m, monitor in before.items())
    feed(owner, records)
    assert fingerprint(owner) == fingerprint(reference)
    save(owner)
    restored = Agent(config(name))
    restored._restore_partitions(every)
    feed(restored, records)
    assert fingerprint(restored) == fingerprint(reference)
    for agent in (owner, restored):
        assert isinstance(agent.checkpointer.store, StateTopicStore)
        agent.checkpointer.store.close()
