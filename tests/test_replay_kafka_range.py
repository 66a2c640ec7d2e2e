"""A Kafka topic range reads every record of the range once, on a real Tansu broker.

Tansu answers a partition's end (ListOffsets, latest) with its last batch's base offset + 1,
not the offset past its last record, so a range that trusted that answer lost the rest of
the last batch whenever a poll ended inside it. The topics here have several partitions,
each written in several batches (a flush after each), the last one longer than a poll
returns, and an empty partition; every record must come once, in order, and nothing past
``to_offset``. A range ends on an empty topic, and while a producer keeps writing.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from driftwatch.replay.kafka_range import KafkaRangeSource
from tests.broker import Broker

TOPIC = "recorded"
BATCHES = (3, 250, 1, 5_600)
"""Records per batch in each partition; the last is longer than one poll of the range."""
FILLED = 3
"""Partitions 0..FILLED-1 get the batches; partition FILLED stays empty."""
IDLE_S = 5.0
"""The range's idle timeout: a range that waits for records that never come fails."""

Offsets = dict[int, list[tuple[int, bytes]]]


def value(partition: int, index: int) -> bytes:
    return json.dumps({"partition": partition, "index": index}).encode()


@pytest.fixture
def batched(broker: Broker) -> Iterator[Offsets]:
    """The topic, filled batch by batch; each partition's (offset, value) as the broker
    acknowledged them."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, FILLED + 1, 1)])
    finally:
        admin.close()
    # One batch per flush: nothing leaves before the flush (long linger, large batches).
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=60_000,
                             batch_size=1 << 20)
    written: Offsets = {p: [] for p in range(FILLED + 1)}
    try:
        index = 0
        for size in BATCHES:
            for partition in range(FILLED):
                futures = [(producer.send(TOPIC, value=value(partition, i), partition=partition),
                            value(partition, i)) for i in range(index, index + size)]
                producer.flush(timeout=30)
                written[partition] += [(f.get(timeout=30).offset, v) for f, v in futures]
            index += size
    finally:
        producer.close(timeout=5)
    yield written


def read(bootstrap: str, **bounds: int) -> Offsets:
    source = KafkaRangeSource(TOPIC, {"bootstrap_servers": bootstrap}, idle_timeout_s=IDLE_S,
                              **bounds)
    found: Offsets = {p: [] for p in range(FILLED + 1)}
    for record in source:
        assert record.partition is not None and record.value is not None
        found[record.partition].append((record.position, record.value))
    assert source.progress() == (sum(map(len, found.values())),) * 2, \
        "the progress bar ends at its total"
    return found


def test_the_whole_topic_is_read_once(broker: Broker, batched: Offsets) -> None:
    total = sum(BATCHES)
    assert [len(batched[p]) for p in range(FILLED + 1)] == [total] * FILLED + [0]
    assert all([o for o, _ in batched[p]] == list(range(total)) for p in range(FILLED))

    assert read(broker.bootstrap) == batched


def test_offsets_inside_the_last_batch_bound_the_range(broker: Broker,
                                                      batched: Offsets) -> None:
    last = sum(BATCHES[:-1])  # the last batch's base offset
    start, stop = last + 2, last + 4_000  # both past the end Tansu reports (last + 1)

    found = read(broker.bootstrap, from_offset=start, to_offset=stop)

    assert found == {p: batched[p][start:stop] for p in range(FILLED + 1)}
    assert read(broker.bootstrap, from_offset=last + 2) == \
        {p: batched[p][last + 2:] for p in range(FILLED + 1)}
    assert read(broker.bootstrap, to_offset=last + 1) == \
        {p: batched[p][:last + 1] for p in range(FILLED + 1)}


def test_a_range_ends_while_producers_keep_writing(broker: Broker,
                                                   batched: Offsets) -> None:
    stop = threading.Event()
    written = threading.Event()

    def keep_writing() -> None:  # until the range is read (a million records at most)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
        try:
            for index in range(sum(BATCHES), sum(BATCHES) + 1_000_000):
                producer.send(TOPIC, value=value(0, index), partition=0)
                if index % 100 == 0:
                    producer.flush(timeout=30)
                    written.set()
                    if stop.wait(0.005):
                        return
        finally:
            producer.close(timeout=5)

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    try:
        assert written.wait(30), "the writer is writing"
        found = read(broker.bootstrap)
    finally:
        stop.set()
        writer.join(timeout=30)

    assert found[0][:len(batched[0])] == batched[0], "what was there at the start"
    assert len(found[0]) > len(batched[0]), "and what the writer had flushed by then"
    assert [offset for offset, _ in found[0]] == list(range(len(found[0]))), "each once"
    assert {p: found[p] for p in range(1, FILLED + 1)} == \
        {p: batched[p] for p in range(1, FILLED + 1)}


def test_an_empty_topic_ends_at_once(broker: Broker) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, FILLED + 1, 1)])
    finally:
        admin.close()

    assert read(broker.bootstrap) == {p: [] for p in range(FILLED + 1)}
