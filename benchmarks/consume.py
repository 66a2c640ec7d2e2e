"""Would an optional confluent-kafka source double the agent's records per CPU-second?

Issue 25 asks for one only if it at least doubles the agent's records per CPU-second with
identical results. This benchmark measures what decides it, in one run on one broker:

- **kafka-python's consume**: a group consumer polling the topic (500 records a poll),
  touching each record's value: what the agent's :class:`~driftwatch.kafka.source.KafkaSource`
  pays per record before its loop sees it;
- **confluent-kafka's consume** (librdkafka; ``pip install confluent-kafka``, not a
  dependency): a group consumer's ``consume(500)``, turning each message into the agent's
  :class:`~driftwatch.sources.record.Record` (topic, partition, offset, key, value, timestamp),
  which is what a source behind the same :class:`~driftwatch.sources.protocol.Source`
  protocol would do per record;
- **the agent** in process on the same topic (:func:`benchmarks.agent.through_agent`: the
  default monitors at d = 1000, the file checkpoint), per CPU-second of this process.

The agent's CPU per record is consume + the rest (loop, decode, monitor, bookkeeping). A
confluent-kafka source changes only the consume part, so the agent's records per CPU-second
would grow by ``agent / (agent - kafka_python + confluent)``; the bound, with a consume that
costs nothing, is ``agent / (agent - kafka_python)``. Both are printed. Every consumer reads the
same records (their count and the sum of their offsets are checked).

``python -m benchmarks consume`` (200 000 records, 3 interleaved repeats, Tansu and Apache
Kafka); ``--quick``: 50 000 records, one repeat, Tansu.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import cast

from kafka import KafkaConsumer

from benchmarks.agent import GROUP_TIMING, TOPIC, fill_topic, through_agent
from benchmarks.brokers import broker_kinds, broker_label, open_broker
from driftwatch.sources.record import Record


def kafka_python_cpu(bootstrap: str, count: int, group: str) -> float:
    """CPU seconds of this process per record, kafka-python consuming ``count`` records."""
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             max_poll_records=500, **GROUP_TIMING)
    seen = offsets = 0
    cpu = None
    while seen < count:
        for records in consumer.poll(timeout_ms=1000).values():
            if cpu is None:
                cpu = time.process_time()
            for record in records:
                offsets += record.offset
                seen += record.value is not None
    assert cpu is not None
    used = time.process_time() - cpu
    consumer.close()
    _check(seen, offsets, count)
    return used / count


def confluent_cpu(bootstrap: str, count: int, group: str) -> float:
    """CPU seconds of this process per record, confluent-kafka consuming ``count`` records
    into :class:`Record` objects (librdkafka's threads count: they are this process's)."""
    from confluent_kafka import Consumer  # type: ignore[import-not-found, unused-ignore]

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": GROUP_TIMING["session_timeout_ms"],
                         # librdkafka wants it at least the session timeout
                         "max.poll.interval.ms": max(GROUP_TIMING.values())})
    consumer.subscribe([TOPIC])
    seen = offsets = 0
    cpu = None
    while seen < count:
        messages = consumer.consume(num_messages=500, timeout=1.0)
        if messages and cpu is None:
            cpu = time.process_time()
        for message in messages:
            if message.error() is not None:
                continue
            record = Record(str(message.topic()), cast(int, message.partition()),
                            cast(int, message.offset()), message.key(), message.value(),
                            message.timestamp()[1])
            offsets += record.offset
            seen += record.value is not None
    assert cpu is not None
    used = time.process_time() - cpu
    consumer.close()
    _check(seen, offsets, count)
    return used / count


def _check(seen: int, offsets: int, count: int) -> None:
    if seen != count or offsets != count * (count - 1) // 2:
        raise AssertionError(f"read {seen} records (offset sum {offsets}), expected {count}")


def measure(kind: str, count: int, repeats: int) -> dict[str, float]:
    """Median µs of CPU per record: kafka-python, confluent-kafka, the agent."""
    runs: dict[str, list[float]] = {"kafka-python": [], "confluent-kafka": [], "agent": []}
    with open_broker(kind) as broker:
        fill_topic(broker.bootstrap, count)
        steps: dict[str, Callable[[str, int, str], float]] = {
            "kafka-python": kafka_python_cpu, "confluent-kafka": confluent_cpu,
            "agent": lambda bootstrap, n, group: 1 / through_agent(bootstrap, n, group)[1]}
        for i in range(repeats):
            for name, step in steps.items():
                runs[name].append(step(broker.bootstrap, count, f"{name}-{i}") * 1e6)
    return {name: statistics.median(values) for name, values in runs.items()}


def main(quick: bool = False, broker: str | None = None) -> None:
    count, repeats = (50_000, 1) if quick else (200_000, 3)
    print(f"{count:,} records, one partition, median of {repeats}; µs of this process's CPU "
          "per record.\n")
    print("| broker | kafka-python consume | confluent-kafka consume → Record | the agent "
          "(kafka-python) | agent with confluent-kafka, expected | bound (free consume) |")
    print("|---|---|---|---|---|---|")
    for kind in broker_kinds(broker or ("tansu" if quick else "both")):
        us = measure(kind, count, repeats)
        kp, ck, agent = us["kafka-python"], us["confluent-kafka"], us["agent"]
        rest = agent - kp
        print(f"| {broker_label(kind)} | {kp:.2f} | {ck:.2f} | {agent:.2f} | "
              f"{agent / (rest + ck):.2f}× | {agent / rest:.2f}× |")
    print("\nAn extra is worth adding only at ≥ 2× (issue 25).")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--broker", choices=("tansu", "apache", "both"))
    arguments = parser.parse_args()
    main(arguments.quick, arguments.broker)
