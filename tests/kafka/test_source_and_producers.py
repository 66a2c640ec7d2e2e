"""KafkaSource, DeadLetter and AlarmPublisher against real brokers (Tansu and Apache Kafka).

Every wait is bounded; every server listens on 127.0.0.1. Group timing is short because
Tansu holds a JoinGroup for up to the rebalance timeout, which kafka-python takes from
``max_poll_interval_ms``, so the tests use 5 s instead of the 300 s default.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic

from driftwatch.decoding.decoder import Rejected
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.producers import AlarmPublisher, DeadLetter
from driftwatch.kafka.source import SLOW_PROBE_S, KafkaSource, Record
from driftwatch.replay.kafka_range import KafkaRangeSource
from driftwatch.replay.sources import SourceError
from tests.broker import Broker, BrokerFactory, free_port

TOPIC = "events"
WAIT_S = 60.0
"""Bound on a wait for records, a group join or a rebalance. Tansu holds a group's first join
for about 3 s; two sources splitting a topic take two such joins, often plus a follower's
second JoinGroup (about 8 s in all on an idle 2-core machine), and with four busy processes
beside the test a first join alone took 9 s. A passing test never waits this long: the bound
only decides when a stuck one fails, so it is generous."""


def group_config(bootstrap: str, group: str = "driftwatch") -> dict[str, Any]:
    return {
        "bootstrap_servers": bootstrap,
        "group_id": group,
        "auto_offset_reset": "earliest",
        "max_poll_interval_ms": 5000,
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 1000,
    }


def make_source(
    bootstrap: str, group: str = "driftwatch", pattern: str | None = None, **kwargs: Any
) -> KafkaSource:
    # request_timeout_s as the product's default: a live broker answers in milliseconds, but
    # a loaded runner can hold a reply past 1 s, and a commit that times out returns False.
    # The tests of a dead broker pass a short one.
    options: dict[str, Any] = {
        "poll_timeout_s": 0.2,
        "backoff_initial_s": 0.1,
        "backoff_max_s": 1.0,
        "probe_interval_s": 0.3,
        "request_timeout_s": 5.0,
    }
    options.update(kwargs)
    topics = [] if pattern else [TOPIC]
    return KafkaSource(group_config(bootstrap, group), topics=topics, pattern=pattern, **options)


def create_topic(bootstrap: str, name: str = TOPIC, partitions: int = 1) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def produce(
    bootstrap: str,
    values: Iterable[bytes],
    partitions: int = 1,
    topic: str = TOPIC,
    *,
    one_per_batch: bool = False,
) -> list[bytes]:
    """Send values round-robin over the partitions, in order within each; wait for acks."""
    sent = list(values)
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for i, value in enumerate(sent):
            producer.send(topic, value=value, partition=i % partitions)
            if one_per_batch:
                producer.flush(timeout=10)
        producer.flush(timeout=10)
    finally:
        producer.close(timeout=5)
    return sent


def values(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(count)]


def poll_until(
    sources: list[KafkaSource],
    done: Callable[[list[Record]], bool],
    *,
    timeout_s: float = WAIT_S,
) -> list[Record]:
    """Poll every source in turn until ``done(records)``; fail after ``timeout_s`` with the
    records got so far and each source's state."""
    got: list[Record] = []
    deadline = time.monotonic() + timeout_s
    while not done(got):
        assert time.monotonic() < deadline, \
            f"timed out after {timeout_s:.0f} s with {len(got)} records; {states(sources)}"
        for source in sources:
            got += source.poll()
    return got


def states(sources: Iterable[KafkaSource]) -> str:
    """Each source's assignment and readiness, for failure messages."""
    return "; ".join(
        f"source {i}: partitions {sorted(p for _, p in s.assignment)}, ready={s.ready}, "
        f"reachable={s.reachable}" for i, s in enumerate(sources))


def next_offsets(records: Iterable[Record]) -> dict[TopicPartition, int]:
    """Partition → the offset after the last of ``records`` there (what a commit carries)."""
    offsets: dict[TopicPartition, int] = {}
    for record in records:
        offsets[record.topic_partition] = record.offset + 1
    return offsets


def committed(bootstrap: str, group: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets per partition (-1: none), asked by a separate client."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                             enable_auto_commit=False)
    try:
        answers = {p: consumer.committed(KafkaTopicPartition(TOPIC, p)) for p in range(partitions)}
    finally:
        consumer.close(autocommit=False)
    return {p: -1 if offset is None else offset for p, offset in answers.items()}


def wait_until(
    condition: Callable[[], bool], action: Callable[[], object], timeout_s: float,
    what: str, sources: Iterable[KafkaSource] = (),
) -> None:
    """Run ``action`` until ``condition()`` holds; fail after ``timeout_s`` with ``what`` and
    the state of ``sources``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, \
            f"timed out after {timeout_s:.0f} s waiting for {what}; {states(sources)}"
        action()


def consume_all(bootstrap: str, topic: str, count: int) -> list[Any]:
    """Read ``count`` records of a one-partition topic with a plain consumer (no group)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign([KafkaTopicPartition(topic, 0)])
        got: list[Any] = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < count and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                got.extend(batch)
        return got
    finally:
        consumer.close()


# -- pure parts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "kwargs", "word"),
    [
        ({"group_id": "g"}, {}, "topics"),
        ({"group_id": "g"}, {"topics": ["a"], "pattern": "b"}, "topics"),
        ({}, {"topics": ["a"]}, "group_id"),
        ({"group_id": "g", "enable_auto_commit": True}, {"topics": ["a"]}, "auto_commit"),
        ({"group_id": "g", "value_deserializer": bytes}, {"topics": ["a"]}, "deserializer"),
        ({"group_id": "g"}, {"topics": "abc"}, "string"),
        ({"group_id": "g"}, {"topics": ["a"], "backoff_max_s": 0.01}, "backoff_max_s"),
        ({}, {"pattern": "a.*", "whole_stream": True}, "whole_stream needs topics"),
    ],
)
def test_source_checks_its_configuration(
    config: dict[str, Any], kwargs: dict[str, Any], word: str
) -> None:
    with pytest.raises(ValueError, match=word):
        KafkaSource(config, **kwargs)


# -- against the broker ----------------------------------------------------------------------------


def test_poll_in_order_commit_exactly_what_is_given_and_resume_exactly_after(
    broker: Broker,
) -> None:
    create_topic(broker.bootstrap, partitions=2)
    first = produce(broker.bootstrap, values("a", 100), partitions=2)
    with make_source(broker.bootstrap) as source:
        got = poll_until([source], lambda got: len(got) >= 100)
        assert source.ready
        for partition in (0, 1):
            offsets = [r.offset for r in got if r.partition == partition]
            assert offsets == list(range(50)), "each partition in order, without gaps"
        assert sorted(r.value for r in got) == sorted(first)
        assert all(r.topic == TOPIC and r.timestamp_ms > 0 and r.key is None for r in got)
        # The caller's durable state covers offsets 0..29 of each partition: only those.
        covered = next_offsets(r for r in got if r.offset < 30)
        assert source.commit(covered) and source.commits == 1
        assert source.committed_offsets == {TopicPartition(TOPIC, 0): 30,
                                            TopicPartition(TOPIC, 1): 30}
        assert source.commit(covered) and source.commits == 1, "nothing new: no request"
        assert source.commit({TopicPartition("elsewhere", 0): 9}), "not assigned: ignored"
        assert source.commits == 1
        # close() commits nothing more, though 30..49 were returned by poll.
    assert committed(broker.bootstrap, "driftwatch", 2) == {0: 30, 1: 30}

    second = produce(broker.bootstrap, values("b", 20), partitions=2)
    with make_source(broker.bootstrap) as source:
        again = poll_until([source], lambda got: len(got) >= 60)
        time.sleep(0.5)  # anything duplicated would arrive now
        again += source.poll()
    unprocessed = [r.value for r in got if r.offset >= 30]
    assert sorted(r.value for r in again) == sorted(unprocessed + second)


def test_ignore_committed_starts_unknown_partitions_from_the_beginning(
    broker: Broker,
) -> None:
    """The group committed 0..9 of both partitions, but the caller's state covers only
    partition 0 (say its checkpoint was lost for partition 1): partition 1 is read from the
    beginning of the log, never from the commit, and partition 0 from the given offset."""
    create_topic(broker.bootstrap, partitions=2)
    produce(broker.bootstrap, values("a", 40), partitions=2)
    with make_source(broker.bootstrap) as source:
        got = poll_until([source], lambda got: len(got) >= 40)
        assert source.commit(next_offsets(r for r in got if r.offset < 10))
    assert committed(broker.bootstrap, "driftwatch", 2) == {0: 10, 1: 10}

    def restore(partitions: set[TopicPartition]) -> dict[TopicPartition, int]:
        return {TopicPartition(TOPIC, 0): 15}

    with make_source(broker.bootstrap, on_assigned=restore, ignore_committed=True) as source:
        again = poll_until([source], lambda got: len(got) >= 25)
    assert [r.offset for r in again if r.partition == 0] == list(range(15, 20))
    assert [r.offset for r in again if r.partition == 1] == list(range(20))


def test_on_assigned_offsets_are_seeked_to(broker: Broker) -> None:
    create_topic(broker.bootstrap, partitions=2)
    produce(broker.bootstrap, values("a", 20), partitions=2)
    calls: list[set[TopicPartition]] = []

    def restore(partitions: set[TopicPartition]) -> dict[TopicPartition, int]:
        calls.append(partitions)
        return {TopicPartition(TOPIC, 0): 7}  # partition 1: the group's commit (none: earliest)

    with make_source(broker.bootstrap, on_assigned=restore) as source:
        got = poll_until([source], lambda got: len(got) >= 13)
    assert calls == [{TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)}]
    assert [r.offset for r in got if r.partition == 0] == [7, 8, 9]
    assert [r.offset for r in got if r.partition == 1] == list(range(10))


def test_a_position_past_the_end_of_the_log_is_reset(broker: Broker) -> None:
    """A checkpointed offset beyond the log's end (the log was truncated, or recreated by a
    broker that lost its memory): Kafka would answer OFFSET_OUT_OF_RANGE and the client reset
    to auto_offset_reset; Tansu 0.6 answers with no records. The source resets by itself."""
    create_topic(broker.bootstrap)
    sent = produce(broker.bootstrap, values("a", 5))

    def restore(partitions: set[TopicPartition]) -> dict[TopicPartition, int]:
        return {TopicPartition(TOPIC, 0): 300}

    with make_source(broker.bootstrap, on_assigned=restore) as source:
        got = poll_until([source], lambda got: len(got) >= 5)
    assert [r.value for r in got] == sent


def test_on_assigned_errors_are_raised_from_poll(broker: Broker) -> None:
    create_topic(broker.bootstrap)

    def broken(partitions: set[TopicPartition]) -> None:
        raise RuntimeError("checkpoint unreadable")

    with (
        make_source(broker.bootstrap, on_assigned=broken) as source,
        pytest.raises(RuntimeError, match="checkpoint unreadable"),
    ):
        wait_until(lambda: False, source.poll, WAIT_S, "on_assigned's error", [source])


@pytest.mark.brokers("apache", reason="Tansu 0.6 has no CreatePartitions, and its slow first "
                     "join lets the leader's first assignment see the topic")
def test_a_rebalance_the_leader_starts_completes_however_short_the_poll(
    broker: Broker,
) -> None:
    """The group's leader rejoins by itself when its topics' metadata changes (here: a
    partition added). kafka-python 3.0.12 counts that rejoin as done once the leader has
    computed the assignment, so a poll whose timeout ends before the SyncGroup answer left
    the join unfinished for good: no assignment, no heartbeat, never ready, a core spent
    polling. On Apache Kafka every start takes that rejoin (the first assignment is made
    before the subscribed topic's metadata arrives: an empty one, then the rejoin), and 2
    of 17 starts hung with the tests' 200 ms poll. A 1 ms poll makes it certain;
    :func:`driftwatch.kafka.client_quirks.finish_interrupted_joins` finishes the join."""
    create_topic(broker.bootstrap, partitions=1)
    config = group_config(broker.bootstrap) | {"metadata_max_age_ms": 300}
    with KafkaSource(config, topics=[TOPIC], poll_timeout_s=0.001, probe_interval_s=0.3,
                     request_timeout_s=5.0) as source:
        before = produce(broker.bootstrap, values("before", 5))
        got = poll_until([source], lambda got: len(got) >= 5)
        assert [r.value for r in got] == before and source.assignment == {(TOPIC, 0)}
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.create_partitions({TOPIC: NewPartitions(2)})
        finally:
            admin.close()
        poll_until([source], lambda got: source.ready and len(source.assignment) == 2)
        after = produce(broker.bootstrap, values("after", 6), partitions=2)
        got = poll_until([source], lambda got: len(got) >= 6)
        assert sorted(r.value for r in got) == sorted(after)


def test_two_sources_split_partitions_without_loss_or_duplicates(broker: Broker) -> None:
    create_topic(broker.bootstrap, partitions=4)
    first = produce(broker.bootstrap, values("a", 100), partitions=4)
    a = make_source(broker.bootstrap)
    b = make_source(broker.bootstrap)
    try:
        # a alone takes all four partitions, processes everything and commits it: b, joining,
        # resumes its two partitions from that commit.
        got = poll_until([a], lambda got: len(got) >= 100)
        assert len(a.assignment) == 4 and a.commit(next_offsets(got))
        wait_until(lambda: a.ready and b.ready, lambda: got.extend(a.poll() + b.poll()), WAIT_S,
                   "both sources ready", [a, b])
        assert len(a.assignment) == len(b.assignment) == 2
        assert a.assignment | b.assignment == {TopicPartition(TOPIC, p) for p in range(4)}

        second = produce(broker.bootstrap, values("b", 100), partitions=4)
        got += poll_until([a, b], lambda more: len(got) + len(more) >= 200)
        time.sleep(0.5)
        got += a.poll() + b.poll()
    finally:
        a.close()
        b.close()
    assert sorted(r.value for r in got) == sorted(first + second), "no loss, no duplicates"


def test_whole_stream_sources_each_read_every_partition_and_commit_nothing(
    broker: Broker,
) -> None:
    """Three whole-stream sources (the sidecars of a three-replica model) each get every
    partition at once, without a group join, and each read every record exactly once, in
    order within each partition; a topic created later is picked up at a probe; a
    partition the caller gives an offset for starts there; nothing is committed."""
    create_topic(broker.bootstrap, partitions=3)
    first = produce(broker.bootstrap, values("a", 90), partitions=3)
    calls: list[set[TopicPartition]] = []

    def restore(partitions: set[TopicPartition]) -> dict[TopicPartition, int]:
        calls.append(partitions)
        return {}

    def whole_stream(on_assigned: Any) -> KafkaSource:
        return KafkaSource(group_config(broker.bootstrap, ""), topics=[TOPIC, "later"],
                           on_assigned=on_assigned, whole_stream=True, poll_timeout_s=0.2,
                           probe_interval_s=0.3, request_timeout_s=1.0)

    sources = [whole_stream(restore) for _ in range(3)]
    restored = whole_stream(lambda _: {TopicPartition(TOPIC, 1): 25})
    everything = {TopicPartition(TOPIC, p) for p in range(3)}
    try:
        got = [poll_until([source], lambda got: len(got) >= 90) for source in sources]
        assert calls == [everything] * 3, "all partitions at once, to each source"
        for source, records in zip(sources, got, strict=True):
            assert source.ready and source.assignment == everything
            assert sorted(r.value for r in records) == sorted(first)
            for partition in range(3):
                assert [r.offset for r in records if r.partition == partition] == \
                    list(range(30))
            assert source.commit(next_offsets(records)) and source.commits == 0
        late = poll_until([restored], lambda got: len(got) >= 65)
        assert [r.offset for r in late if r.partition == 1] == list(range(25, 30))

        create_topic(broker.bootstrap, "later", partitions=2)
        second = produce(broker.bootstrap, values("b", 40), partitions=2, topic="later")
        more = [poll_until([source], lambda got: len(got) >= 40) for source in sources]
        for source, records in zip(sources, more, strict=True):
            assert source.assignment == everything | {TopicPartition("later", 0),
                                                      TopicPartition("later", 1)}
            assert sorted(r.value for r in records) == sorted(second)
        assert calls[3:] == [{TopicPartition("later", 0), TopicPartition("later", 1)}] * 3
    finally:
        for source in [*sources, restored]:
            source.close()
    assert committed(broker.bootstrap, "driftwatch", 3) == {0: -1, 1: -1, 2: -1}


@pytest.mark.brokers("apache", reason="Tansu never creates a topic by itself")
def test_a_source_does_not_create_the_topic_it_reads(broker_factory: BrokerFactory) -> None:
    """Apache Kafka's default (auto.create.topics.enable) creates a topic on any metadata
    request that names it: a source (or a replay of a range) of a topic not created yet, or
    misspelt, must not create it with the broker's default partition count."""
    broker = broker_factory(server_properties={"auto.create.topics.enable": "true"})
    with make_source(broker.bootstrap, pattern=None) as source:
        for _ in range(10):
            assert source.poll() == []
        assert not source.ready
    with pytest.raises(SourceError, match="no such topic"):
        list(KafkaRangeSource(TOPIC, {"bootstrap_servers": broker.bootstrap}))
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        assert TOPIC not in admin.list_topics()
        # The broker does create topics: a producer (allowed to) makes one.
        produce(broker.bootstrap, values("a", 1), topic="created-by-a-producer")
        assert "created-by-a-producer" in admin.list_topics()
    finally:
        admin.close()


def test_lag_is_end_offset_minus_position(broker: Broker) -> None:
    create_topic(broker.bootstrap)
    produce(broker.bootstrap, values("a", 30))
    # Subscribed by pattern, to cover that path as well.
    with make_source(
        broker.bootstrap, pattern="^even.*", max_records=10, probe_interval_s=0.1
    ) as source:
        poll_until([source], lambda got: len(got) >= 10)
        time.sleep(0.15)  # let the cached value expire
        assert source.lag() == {(TOPIC, 0): 20}
        poll_until([source], lambda got: len(got) >= 20)
        time.sleep(0.15)
        assert source.lag() == {(TOPIC, 0): 0}
        # One record per batch: Tansu's ListOffsets is exact then (see KafkaSource.lag), so
        # this checks the ListOffsets path; the above checked the fetch high watermark.
        produce(broker.bootstrap, values("b", 5), one_per_batch=True)
        time.sleep(0.15)
        assert source.lag() == {(TOPIC, 0): 5}


def test_lag_follows_consumption_between_probes(broker: Broker) -> None:
    """Each poll that returns records updates their partition's lag from the fetch's high
    watermark, with no probe: the lag falls as a backlog is consumed and is 0 once it is,
    where it used to show the last probe's value for up to ``probe_interval_s``."""
    create_topic(broker.bootstrap)
    produce(broker.bootstrap, values("a", 30))
    with make_source(broker.bootstrap, max_records=10, probe_interval_s=600.0) as source:
        got = poll_until([source], lambda got: len(got) >= 10)
        assert source.lag(refresh=False) == {(TOPIC, 0): 30 - (got[-1].offset + 1)}
        poll_until([source], lambda got: len(got) >= 20)
        assert source.lag(refresh=False) == {(TOPIC, 0): 0}
        produce(broker.bootstrap, values("b", 5))
        poll_until([source], lambda got: len(got) >= 5)
        assert source.lag(refresh=False) == {(TOPIC, 0): 0}


def test_a_slow_lag_probe_is_logged(broker: Broker, monkeypatch: pytest.MonkeyPatch,
                                    caplog: pytest.LogCaptureFixture) -> None:
    """A probe the loop waits for longer than SLOW_PROBE_S (here: a broker whose answer is
    held for 0.6 s) is logged with its length; a quick one is not."""
    create_topic(broker.bootstrap)
    produce(broker.bootstrap, values("a", 5))
    caplog.set_level(logging.INFO, logger="driftwatch.kafka.source")
    with make_source(broker.bootstrap, probe_interval_s=600.0) as source:
        poll_until([source], lambda got: len(got) >= 5)
        source.lag(refresh=False)
        source._probe_at = 0.0  # due now
        source.lag()
        assert not [r for r in caplog.records if "end offsets" in r.getMessage()]
        measure = source._offsets.measure_lag

        def held(*args: Any) -> dict[tuple[str, int], int]:
            time.sleep(SLOW_PROBE_S + 0.1)
            return measure(*args)

        monkeypatch.setattr(source._offsets, "measure_lag", held)
        source._probe_at = 0.0
        assert source.lag() == {(TOPIC, 0): 0}
    slow = [r for r in caplog.records if "end offsets" in r.getMessage()]
    assert len(slow) == 1 and slow[0].args[0] > SLOW_PROBE_S  # type: ignore[index]


def test_broker_loss_and_return(broker: Broker) -> None:
    """Poll keeps returning while the broker is gone; ``ready`` follows it down and back up.

    Either way none of ours is lost around the outage: everything produced before it was
    consumed and committed first, and everything produced after it arrives, once. Tansu keeps
    everything in memory: its restarted broker is empty (no topic, no group, no committed
    offset), so the topic is created again and the consumer must rejoin by itself. Apache
    Kafka keeps its log on disk: there the records from before the outage are still stored
    after it, and the consumer resumes at its position.
    """
    create_topic(broker.bootstrap)
    before = produce(broker.bootstrap, values("before", 20))
    assignments: list[set[TopicPartition]] = []
    returned: dict[TopicPartition, int] = {}  # the next offset after what poll returned

    def on_assigned(partitions: set[TopicPartition]) -> dict[TopicPartition, int] | None:
        assignments.append(partitions)
        if not broker.persistent:  # an empty broker: its log starts again at 0
            return None
        # Apache Kafka may rebalance the group after its restart, possibly only once the
        # records produced after the outage were polled: resume where the caller got to,
        # as the agent does (its positions), not at the group's commit, which would
        # deliver them again.
        return {tp: returned[tp] for tp in partitions if tp in returned}

    class Tracked:
        """The source, noting the position after each record it returns."""

        def __init__(self, source: KafkaSource) -> None:
            self.source = source

        def poll(self) -> list[Record]:
            records = self.source.poll()
            returned.update(next_offsets(records))
            return records

    # request_timeout_s bounds each failing probe during the outage.
    with make_source(broker.bootstrap, on_assigned=on_assigned, request_timeout_s=0.5) as source:
        tracked: Any = Tracked(source)
        got = poll_until([tracked], lambda got: len(got) >= 20)
        assert [r.value for r in got] == before
        assert source.commit(next_offsets(got)) and source.ready

        broker.stop(kill=True)
        outage_polls = 0

        def poll_during_outage() -> None:
            nonlocal outage_polls
            assert source.poll() == []  # and it must not raise
            outage_polls += 1

        # Ready falls at the first probe of the dead broker. A probe is due at most
        # probe_interval_s (0.3 s) after the last one and every poll waits poll_timeout_s
        # (0.2 s) for records, so that is the third poll at the latest, however slow the
        # machine (a count of polls, not seconds, which a loaded runner stretches).
        wait_until(lambda: not source.ready, poll_during_outage, WAIT_S,
                   "ready to fall without a broker", [source])
        assert outage_polls <= 3, f"ready fell only after {outage_polls} polls"
        for _ in range(5):  # stays down, keeps returning
            poll_during_outage()
        assert not source.ready and outage_polls >= 5

        broker.start()  # same port
        if broker.persistent:
            wait_until(lambda: source.ready, source.poll, WAIT_S, "ready again", [source])
        else:  # an empty broker
            create_topic(broker.bootstrap)
            joins = len(assignments)
            # The restarted broker does not know the member: the consumer rejoins by itself.
            # Produce only after that, or the old position (20) would apply to the new log.
            wait_until(lambda: source.ready and len(assignments) > joins, source.poll, WAIT_S,
                       "a new assignment from the restarted broker", [source])
        after = produce(broker.bootstrap, values("after", 20))
        got = poll_until([tracked], lambda got: len(got) >= 20)
        time.sleep(0.5)
        got += tracked.poll()
    assert [r.value for r in got] == after
    assert source.reconnects >= 1
    if broker.persistent:  # the outage lost nothing the broker had stored
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                                 auto_offset_reset="earliest")
        try:
            consumer.assign([KafkaTopicPartition(TOPIC, 0)])
            stored: list[bytes] = []
            deadline = time.monotonic() + WAIT_S
            while len(stored) < 40 and time.monotonic() < deadline:
                stored += [r.value for b in consumer.poll(timeout_ms=200).values() for r in b]
        finally:
            consumer.close()
        assert stored == before + after


def test_broker_absent_at_start_then_appears(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(start=False)
    source = make_source(broker.bootstrap, request_timeout_s=0.3)
    try:
        start = time.monotonic()
        for _ in range(3):
            assert source.poll() == []
        assert time.monotonic() - start < 3.0, "each poll is bounded"
        assert not source.ready and not source.reachable

        broker.start()
        create_topic(broker.bootstrap)
        sent = produce(broker.bootstrap, values("a", 5))
        got = poll_until([source], lambda got: len(got) >= 5)
        assert [r.value for r in got] == sent
        assert source.ready

        # The broker goes again: a commit fails (counted, not raised; those records would be
        # delivered again: at-least-once) and close() still returns promptly.
        broker.stop()
        assert not source.commit(next_offsets(got))
        assert (source.commits, source.commit_failures) == (0, 1)
        started = time.monotonic()
        source.close()
        assert time.monotonic() - started < 3.0
        with pytest.raises(RuntimeError, match="closed"):
            source.poll()
    finally:
        source.close()


def test_dead_letter_and_alarms_arrive_with_their_metadata(broker: Broker) -> None:
    create_topic(broker.bootstrap, "dead")
    create_topic(broker.bootstrap, "alarms")
    producer_config = {"bootstrap_servers": broker.bootstrap}
    record = Record(TOPIC, 3, 41, b"churn", b'{"label": 7}', 1_700_000_000_000)
    with (
        DeadLetter(producer_config, "dead") as dead,
        AlarmPublisher(producer_config, "alarms") as alarms,
    ):
        dead.send(record, Rejected("bad_label", "label=7 is not 1 or 0"))
        dead.send(Record(TOPIC, 1, 5, b"k", None, 0), Rejected("empty", "tombstone (no value)"))
        dead.send(Record(TOPIC, 0, 0, None, None, 0), Rejected("empty", "tombstone (no value)"))
        alarms.publish(
            {"model": "churn", "measure": "auc", "value": float("nan"), "state": "drift"}
        )
        assert dead.flush() and alarms.flush()
        assert (dead.delivered, dead.failed, alarms.delivered) == (3, 0, 1)

    letters = consume_all(broker.bootstrap, "dead", 3)
    assert [(m.key, m.value) for m in letters] == [
        (b"churn", b'{"label": 7}'),
        (b"k", None),  # a tombstone stays one
        (None, b""),  # unless it has no key: Kafka needs one of the two
    ]
    assert dict(letters[0].headers) == {
        "reason": b"bad_label",
        "detail": b"label=7 is not 1 or 0",
        "source_topic": TOPIC.encode(),
        "source_partition": b"3",
        "source_offset": b"41",
    }
    assert dict(letters[2].headers)["reason"] == b"empty"
    (alarm,) = consume_all(broker.bootstrap, "alarms", 1)
    assert alarm.key == b"churn"
    assert json.loads(alarm.value) == {
        "model": "churn",
        "measure": "auc",
        "value": None,
        "state": "drift",
    }


def test_dead_letter_without_a_broker_counts_failures_and_does_not_block() -> None:
    dead = DeadLetter(
        {"bootstrap_servers": f"127.0.0.1:{free_port()}"}, "dead", request_timeout_s=0.3
    )
    start = time.monotonic()
    for _ in range(3):  # the first tries to connect (0.3 s), the others wait for the retry
        dead.send(Record(TOPIC, 0, 0, None, b"x", 0), Rejected("not_json", "x"))
    dead.close()
    assert dead.failed == 3 and dead.delivered == 0
    assert time.monotonic() - start < 2.0
