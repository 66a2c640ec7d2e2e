"""The agent's side of the state topic without a broker: which partition a model belongs to,
what a revoked partition takes away from ``/metrics`` at once, and the count of models whose
events arrive on several partitions. The topic itself is tested on a real broker in
tests/state/test_topic.py and tests/integration/test_handover.py."""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry, generate_latest

from driftwatch.agent.loop import Agent
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.sinks.prometheus.collector import SnapshotCollector

P0, P1 = TopicPartition("events", 0), TopicPartition("events", 1)


def record(tp: TopicPartition, offset: int, model: str, score: float = 0.7) -> Record:
    value = json.dumps({"model": model, "label": offset % 2, "score": score}).encode()
    return Record(tp.topic, tp.partition, offset, None, value, 0)


def scrape(agent: Agent) -> str:
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: agent.snapshot))
    return generate_latest(registry).decode()


def test_a_lost_partition_takes_its_models_and_rejections_off_metrics_at_once() -> None:
    agent = Agent(Settings(), snapshot_interval_s=0.0)  # backend auto: the state topic
    assert agent.partitioned is not None
    for offset in range(10):
        agent.process(record(P0, offset, "zero"))
        agent.process(record(P1, offset, "one"))
    agent.process(Record("events", 1, 10, None, b"not json", 0))
    agent.publish_now()
    text = scrape(agent)
    assert 'model="zero"' in text and 'model="one"' in text
    assert 'driftwatch_events_rejected_total{reason="not_json"} 1.0' in text

    agent._on_revoked({P1}, True)  # lost: nothing may be written for it any more
    text = scrape(agent)
    assert 'model="zero"' in text and 'model="one"' not in text
    assert 'driftwatch_events_rejected_total{reason="not_json"} 0.0' in text
    assert agent.positions.offsets == {P0: 10}
    assert "driftwatch_state_split_models 0.0" in text


def test_skips_are_saved_per_partition_and_leave_with_it() -> None:
    agent = Agent(Settings(events={"only_models": ["zero"]}), snapshot_interval_s=0.0)
    assert agent.partitioned is not None
    for offset in range(4):
        agent.process(record(P0, offset, "zero" if offset % 2 else "other"))
        agent.process(record(P1, offset, "other"))
    payload = agent._payload(dict(agent.positions.offsets))
    assert [(tp, meta["skipped"]) for tp, meta in payload["partitions"]] == [(P0, 2), (P1, 4)]
    agent._on_revoked({P1}, True)
    agent.publish_now()
    assert 'driftwatch_events_skipped_total{reason="unwatched_model"} 2.0' in scrape(agent)


def test_a_model_on_two_partitions_is_counted() -> None:
    agent = Agent(Settings(), snapshot_interval_s=0.0)
    agent.process(record(P0, 0, "spread"))
    agent.process(record(P1, 0, "spread"))
    agent.process(record(P0, 1, "kept"))
    agent.publish_now()
    assert "driftwatch_state_split_models 1.0" in scrape(agent)
    payload = agent._payload(dict(agent.positions.offsets))
    assert payload["models"]["spread"]["home"] == P0
    assert dict(payload["models"]["spread"]["covers"]) == {P0: 2, P1: 1}


def test_the_file_backend_exports_no_split_count(tmp_path: object) -> None:
    agent = Agent(Settings(checkpoint={"backend": "file", "directory": str(tmp_path)}))
    assert agent.partitioned is None
    agent.publish_now()
    assert "\ndriftwatch_state_split_models " not in scrape(agent)


def test_a_lost_partition_takes_its_pending_join_off_metrics_at_once() -> None:
    agent = Agent(Settings(join={"enabled": True, "kind_field": "kind"}),
                  snapshot_interval_s=0.0)
    assert agent.join_shards is not None and agent.delayed is None
    for offset in range(5):
        for tp, model in ((P0, "zero"), (P1, "one")):
            value = {"event_id": f"{model}-{offset}", "kind": "prediction", "model": model,
                     "score": 0.5}
            agent.process(Record(tp.topic, tp.partition, offset, None,
                                 json.dumps(value).encode(), 0))
    agent.publish_now()
    assert agent.snapshot.join is not None
    assert dict(agent.snapshot.join.pending) == {"zero": 5, "one": 5}
    agent._on_revoked({P1}, True)
    assert agent.snapshot.join is not None
    assert dict(agent.snapshot.join.pending) == {"zero": 5}
    assert set(agent.join_shards.shards) == {P0}


def test_join_partitions_assigned_apart_are_named() -> None:
    agent = Agent(Settings(kafka={"topics": ["pred", "lab"]},
                           join={"enabled": True, "predictions_topic": "pred",
                                 "labels_topic": "lab"}))
    shards = agent.join_shards
    assert shards is not None
    assert shards.shard_of(TopicPartition("lab", 3)) == ("pred", 3)
    together = {TopicPartition("pred", 0), TopicPartition("lab", 0)}
    assert shards.apart(together) == []
    assert shards.apart(together | {TopicPartition("lab", 1), TopicPartition("pred", 2)}) == [
        ("lab", 1), ("pred", 2)]


def test_the_state_topic_is_sized_from_the_input_topics() -> None:
    """With ``checkpoint.topic_partitions`` unset, the store is given the input topics, whose
    largest partition count sizes the state topic it creates."""
    from driftwatch.agent.checkpointer import checkpoint_store
    from driftwatch.state.topic import StateTopicStore

    store = checkpoint_store(Settings.model_validate(
        {"kafka": {"topics": ["predictions", "labels"]}}))
    assert isinstance(store, StateTopicStore)
    assert store.input_topics == ("predictions", "labels")
    assert store.partitions is None  # unset: read from the input topics when created
