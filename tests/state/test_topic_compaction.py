"""What only a real broker shows about the state topic: it is created compacted, the broker
compacts it during a long run while every restore stays exact, an existing topic's policy is
checked, and a broker too old for the default replication factor is refused (Apache Kafka).

Tansu 0.6 answers DescribeConfigs with no entries and never compacts, so these run on Apache
Kafka only. The broker is the test's own, with the log cleaner checking every half second
(``log.cleaner.backoff.ms``, 15 s by default) and Apache's default topic auto-creation on, so
that the test also shows that reading the state topic never creates it.
"""

from __future__ import annotations

import logging
import time

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from driftwatch.state.checkpoint import CheckpointSettingError
from driftwatch.state.topic import TOPIC_CONFIG, StateTopicStore
from tests.broker import Broker, BrokerFactory
from tests.integration.helpers import create_topics
from tests.state.test_topic import P0, P1, Owner, reference, states_of, stream

pytestmark = pytest.mark.brokers(
    "apache", reason="Tansu 0.6 neither describes topic configs nor compacts"
)

SAVES = 40
"""Saves in the long run: each rewrites the same keys, so all but the last of each are
garbage the cleaner may remove."""

COMPACTED_S = 60.0
"""Bound on the cleaner removing superseded records: it checks every 0.5 s here and a
segment rolls 0.2 s after it was opened (at the next save); the rest is margin."""


@pytest.fixture
def compacting_broker(broker_factory: BrokerFactory) -> Broker:
    return broker_factory(server_properties={"log.cleaner.backoff.ms": "500",
                                             "auto.create.topics.enable": "true"})


def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        answer = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                        config_filter="all")
    finally:
        admin.close()
    return {key: entry["value"] for key, entry in answer["topic"][topic].items()}


def records_kept(bootstrap: str, topic: str) -> tuple[int, int]:
    """``(records still in the log, end offset)`` of partition 0: fewer records than offsets
    once the cleaner has removed superseded ones."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False)
    try:
        tp = KafkaTopicPartition(topic, 0)
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        kept = 0
        while consumer.position(tp) < end:
            kept += sum(len(batch) for batch in consumer.poll(timeout_ms=500).values())
        return kept, end
    finally:
        consumer.close()


def test_the_state_topic_is_created_compacted_and_compaction_keeps_restores_exact(
    compacting_broker: Broker,
) -> None:
    bootstrap = compacting_broker.bootstrap
    store = StateTopicStore({"bootstrap_servers": bootstrap}, "state", request_timeout_s=5.0)
    try:
        # A restore before any save (a new deployment) finds nothing and creates nothing,
        # though the broker creates any topic a metadata request names.
        assert store.load({P0, P1}).monitors == {}
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            assert "state" not in admin.list_topics()
            assert store.ensure_topic() is True
            configs = topic_configs(bootstrap, "state")
            assert configs["cleanup.policy"] == TOPIC_CONFIG["cleanup.policy"] == "compact"
            # Roll a segment at every save so the cleaner has closed segments to compact.
            admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "state", configs={
                "cleanup.policy": "compact", "segment.ms": "200",
                "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100"})])
        finally:
            admin.close()

        models = {"a": [P0], "b": [P0], "c": [P1], "d": [P1]}
        records = stream(7, 4000, models)
        step = len(records) // SAVES
        owner = Owner()
        for save in range(SAVES):
            fed = records[: (save + 1) * step]
            owner.feed(records[save * step:(save + 1) * step])
            store.save(owner.payload())
            time.sleep(0.25)  # past segment.ms: the next save opens a new segment
            if save % 10 == 9:  # restores along the way, compacted or not, are exact
                restored = Owner()
                restored.restore(store, {P0, P1})
                assert states_of(restored.monitors) == reference(fed), save
                assert restored.positions == owner.positions

        deadline = time.monotonic() + COMPACTED_S
        while True:
            kept, end = records_kept(bootstrap, "state")
            if kept < end // 2:
                break
            assert time.monotonic() < deadline, f"not compacted: {kept} of {end} records kept"
            store.save(owner.payload())  # a new segment, so the last save's can be cleaned
            time.sleep(0.5)
        restored = Owner()
        restored.restore(store, {P0, P1})
        assert states_of(restored.monitors) == reference(records[: SAVES * step])
        assert restored.positions == owner.positions
    finally:
        store.close()


def test_an_existing_topic_is_checked_compact_delete_warned_and_a_fixed_one_accepted(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    """The check of an existing state topic (the refusal of one without ``compact`` is in
    tests/state/test_topic.py): ``compact,delete`` is used with a warning that names its
    retention, and a topic refused for ``delete`` is accepted once the fix the refusal
    names (cleanup.policy=compact) was applied; the agent's own topic draws no warning."""
    week = str(7 * 24 * 3600 * 1000)
    create_topics(broker.bootstrap, "both-policies", partitions=1,
                  configs={"cleanup.policy": "compact,delete", "retention.ms": week})
    create_topics(broker.bootstrap, "deleting", partitions=1)
    stores = [StateTopicStore({"bootstrap_servers": broker.bootstrap}, topic)
              for topic in ("both-policies", "deleting", "agents-own")]
    try:
        with caplog.at_level(logging.INFO, logger="driftwatch.state"):
            assert stores[0].ensure_topic() is False
        assert ours(caplog) == [
            f"state topic both-policies has cleanup.policy=compact,delete: a state not saved "
            f"for retention.ms ({week} ms) is deleted, so an agent stopped that long restarts "
            "its partitions without their state"]

        with pytest.raises(CheckpointSettingError, match=r"cleanup\.policy=delete, not compact"):
            stores[1].ensure_topic()
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:  # what the refusal tells the operator to do
            admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "deleting",
                                                configs={"cleanup.policy": "compact"})])
        finally:
            admin.close()
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="driftwatch.state"):
            assert stores[1].ensure_topic() is False
            assert stores[2].ensure_topic() is True
            assert stores[2].ensure_topic() is False
        assert ours(caplog) == ["created state topic agents-own (1 partition(s), "
                                   "cleanup.policy=compact)"]
    finally:
        for store in stores:
            store.close()


def ours(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The driftwatch lines captured (not those of clients other tests left running)."""
    return [record.getMessage() for record in caplog.records
            if record.name.startswith("driftwatch.")]


def test_a_broker_before_2_4_is_refused_the_default_replication_factor(broker: Broker) -> None:
    """The oldest broker supported (docs/brokers.md): with the default replication factor
    (-1, the broker's default.replication.factor) the state topic needs Kafka 2.4+, so an
    older broker is refused at start with the key to change, never a save that fails
    forever; with an explicit factor it works. kafka-python decides this from the version it
    detects, so pinning its ``api_version`` to (2, 3) is what a 2.3 broker makes it do."""
    old_client = {"bootstrap_servers": broker.bootstrap, "api_version": (2, 3)}
    store = StateTopicStore(old_client, "state-default", request_timeout_s=5.0)
    with pytest.raises(CheckpointSettingError, match=r"-1 cannot create state topic "
                       r"state-default: .*\(2, 3\).*needs Kafka 2\.4\+") as refused:
        store.ensure_topic()
    assert refused.value.key == ("checkpoint", "topic_replication_factor")
    store.close()
    explicit = StateTopicStore(old_client, "state-explicit", replication_factor=1)
    try:
        assert explicit.ensure_topic() is True
        assert topic_configs(broker.bootstrap, "state-explicit")["cleanup.policy"] == "compact"
    finally:
        explicit.close()
