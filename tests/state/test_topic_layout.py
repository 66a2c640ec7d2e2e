"""The state topic's layout on real brokers: input partition p's records in state partition
p mod n, a restore reading only its share, and the refusal of a topic whose records are
placed otherwise (spread by key, or placed before partitions were added).

Pure helpers are checked with plain data; the rest against Tansu and Apache Kafka.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient, NewPartitions

from driftwatch.state.checkpoint import CheckpointSettingError
from driftwatch.state.topic import StateTopicStore
from driftwatch.state.topic_layout import HEADER, header, misplaced, state_partition, written_with
from tests.broker import Broker
from tests.integration.helpers import create_topics, wait_for
from tests.state.test_topic import Owner, reference, states_of, store_for, stream


def test_the_header_round_trips_and_only_one_partition_accepts_records_without_it() -> None:
    assert [state_partition(p, 8) for p in range(17)] == [*range(8), *range(8), 0]
    for partitions in (1, 2, 8, 10_000):
        assert written_with(header(partitions)) == partitions
        assert not misplaced(partitions, partitions)
        assert misplaced(partitions + 1, partitions)
    assert written_with(None) is None
    assert written_with([("other", b"3"), (HEADER, b"x")]) is None
    assert not misplaced(None, 1)  # spread by key over one partition: the same place
    assert misplaced(None, 2)


def read_partitions(broker: Broker, topic: str) -> dict[int, list[Any]]:
    """Every record of ``topic``, by partition, read without a group."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False)
    try:
        tps = [KafkaTopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        records: dict[int, list[Any]] = {tp.partition: [] for tp in tps}
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for tp, batch in consumer.poll(timeout_ms=500).items():
                records[tp.partition].extend(batch)
        return records
    finally:
        consumer.close()


def test_each_input_partition_is_stored_in_p_mod_n_and_a_restore_reads_only_its_share(
    broker: Broker,
) -> None:
    """Two agents' worth of state (input partitions 0-4 and 5-9, three models each) in a
    4-partition state topic: every record is in the state partition its home maps to, and
    restoring input partition 3 reads state partition 3 only (which also holds 7's records),
    exactly."""
    inputs = [("events", p) for p in range(10)]
    models = {f"m{p}-{i}": [inputs[p]] for p in range(10) for i in range(3)}
    records = stream(7, 2000, models)
    store = store_for(broker, "spread", partitions=4)
    try:
        assert store.ensure_topic() is True
        for mine in (inputs[:5], inputs[5:]):
            owner = Owner()
            owner.feed([r for r in records if r[0] in mine])
            store.save(owner.payload())
        placed = read_partitions(broker, "spread")
        assert sorted(placed) == [0, 1, 2, 3]
        for partition, written in placed.items():
            for record in written:
                assert json.loads(record.key)[2] % 4 == partition
                assert dict(record.headers) == {HEADER: b"4"}
        assert sum(map(len, placed.values())) == 10 * 4  # a meta and three models each

        restored = Owner()
        restored.restore(store, {inputs[3]})
        assert store.last_load_partitions == {3}
        assert store.last_load_records == len(placed[3]) == 2 * 4  # input partitions 3, 7
        assert store.last_load_bytes == sum(len(r.key) + len(r.value) for r in placed[3])
        share = [r for r in records if r[0] == inputs[3]]
        assert states_of(restored.monitors) == reference(share)
        restored.feed(share)  # the partition's log again, from the resume point
        assert states_of(restored.monitors) == reference(share)

        everything = Owner()
        everything.restore(store, set(inputs))
        assert store.last_load_records == 10 * 4
        everything.feed(records)
        assert states_of(everything.monitors) == reference(records)
    finally:
        store.close()


def write_spread_by_key(broker: Broker, topic: str, store: StateTopicStore,
                        payload: dict[str, Any]) -> int:
    """Write a save as a driftwatch before the mapping did: no header, partition by key
    hash (the producer's default); returns the records written."""
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        records = list(store._records(payload, {}))
        for _, key, value in records:
            producer.send(topic, key=key, value=value)
        producer.flush(timeout=10)
        return len(records)
    finally:
        producer.close(timeout=5)


def test_a_single_partition_topic_is_valid_in_both_layouts(broker: Broker) -> None:
    """Spread by key over one partition is p mod 1: a topic written before the mapping is
    read as it is, and a save of this version on top of it restores exactly too."""
    inputs = [("events", p) for p in range(3)]
    records = stream(8, 900, {f"m{p}": [inputs[p]] for p in range(3)})
    store = store_for(broker, "single")
    try:
        old = Owner()
        old.feed(records[:300])
        create_topics(broker.bootstrap, "single", partitions=1,
                      configs={"cleanup.policy": "compact"})
        write_spread_by_key(broker, "single", store, old.payload())
        assert store.ensure_topic() is False
        restored = Owner()
        restored.restore(store, {inputs[1]})
        assert store.last_load_partitions == {0}
        restored.feed([r for r in records[:600] if r[0] == inputs[1]])
        store.save(restored.payload())
        again = Owner()
        again.restore(store, set(inputs))
        again.feed(records)
        assert states_of(again.monitors) == reference(records)
    finally:
        store.close()


def test_a_topic_spread_by_key_over_several_partitions_is_refused(broker: Broker) -> None:
    """Records written before the mapping over four partitions: a restore of one would miss
    the keys hashed elsewhere, so the topic is refused at start, at a restore and at a save,
    naming checkpoint.topic and the fix, and nothing is written to it."""
    inputs = [("events", p) for p in range(4)]
    records = stream(9, 400, {f"m{p}-{i}": [inputs[p]] for p in range(4) for i in range(4)})
    creator = store_for(broker, "hashed", partitions=4)
    try:
        assert creator.ensure_topic() is True  # empty: nothing to refuse yet
        old = Owner()
        old.feed(records)
        written = write_spread_by_key(broker, "hashed", creator, old.payload())
    finally:
        creator.close()
    refused = (r"^state topic hashed has 4 partitions and holds records spread over its "
               r"partitions by key .*Name a new checkpoint\.topic .* or delete hashed ")
    for attempt in ("ensure_topic", "load", "save"):
        store = store_for(broker, "hashed", partitions=4)
        try:
            with pytest.raises(CheckpointSettingError, match=refused) as error:
                if attempt == "ensure_topic":
                    store.ensure_topic()
                elif attempt == "load":
                    store.load({inputs[0]})
                else:
                    store.save(old.payload())
            assert error.value.key == ("checkpoint", "topic")
        finally:
            store.close()
    assert sum(map(len, read_partitions(broker, "hashed").values())) == written


def test_an_older_writer_after_the_start_is_refused_at_the_restore(broker: Broker) -> None:
    """An agent of an older version still saving during a rollout writes without the header;
    the restore that reads its record refuses the topic rather than miss the keys it hashed
    elsewhere."""
    records = stream(10, 300, {"a": [("events", 0)], "b": [("events", 1)]})
    store = store_for(broker, "rollout", partitions=2)
    try:
        owner = Owner()
        owner.feed(records)
        store.save(owner.payload())
        assert store.load({("events", 0)}).monitors.keys() == {"a"}
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        try:
            home, key, value = next(iter(store._records(owner.payload(), {})))
            producer.send("rollout", key=key, value=value, partition=home % 2)
            producer.flush(timeout=10)
        finally:
            producer.close(timeout=5)
        with pytest.raises(CheckpointSettingError, match="spread over its partitions by key"):
            store.load({("events", home)})
    finally:
        store.close()


@pytest.mark.brokers("apache", reason="Tansu 0.6 does not implement CreatePartitions: "
                     "partitions cannot be added to its topics")
def test_partitions_added_after_records_were_written_are_refused(broker: Broker) -> None:
    """An administrator raises the state topic from 2 to 3 partitions: input partition 2's
    records are in state partition 0, where a restore would now read partition 2. The
    running store refuses at its next restore, a new one at start."""
    records = stream(11, 300, {f"m{p}": [("events", p)] for p in range(3)})
    store = store_for(broker, "grown", partitions=2)
    try:
        owner = Owner()
        owner.feed(records)
        store.save(owner.payload())
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.create_partitions({"grown": NewPartitions(3)})

            def grown() -> bool:
                described = admin.describe_topics(["grown"])
                return len(described[0]["partitions"]) == 3
            wait_for(grown, 30.0, "the state topic to have 3 partitions")
        finally:
            admin.close()
        refused = (r"^state topic grown has 3 partitions and holds records placed when it had "
                   r"2 partition\(s\) \(partitions were added since\).* Name a new "
                   r"checkpoint\.topic")
        with pytest.raises(CheckpointSettingError, match=refused):
            store.load({("events", 2)})
    finally:
        store.close()
    fresh = store_for(broker, "grown")
    try:
        with pytest.raises(CheckpointSettingError, match=refused):
            fresh.ensure_topic()
    finally:
        fresh.close()


def test_unset_the_topic_is_created_with_the_largest_input_partition_count(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    """checkpoint.topic_partitions unset: as many state partitions as the largest input
    topic has (so each input partition's restore reads its own); with no input topic to
    size it by, one partition, and the log says what that costs."""
    create_topics(broker.bootstrap, "narrow", partitions=2)
    create_topics(broker.bootstrap, "wide", partitions=6)
    sized = store_for(broker, "sized", partitions=None,
                      input_topics=["narrow", "wide", "not-there-yet"])
    unsized = store_for(broker, "unsized", partitions=None, input_topics=["not-there-yet"])
    try:
        assert sized.ensure_topic() is True
        with caplog.at_level(logging.WARNING, logger="driftwatch.state"):
            assert unsized.ensure_topic() is True
    finally:
        sized.close()
        unsized.close()
    assert sorted(read_partitions(broker, "sized")) == list(range(6))
    assert sorted(read_partitions(broker, "unsized")) == [0]
    assert "state topic unsized: no input topic known to size it by (not-there-yet); " \
        "created with 1 partition" in caplog.text
