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
- **the Kafka source's poll** (:meth:`~driftwatch.kafka.source.KafkaSource.poll`, 500 records
  a poll): kafka-python's consume plus what is ours per poll and per record (the
  :class:`~driftwatch.sources.record.Record` of each message, the lag bookkeeping);
- **the agent** in process on the same topic (:func:`benchmarks.agent.run_agent`: the
  default monitors at d = 1000, the file checkpoint), per CPU-second of this process, four
  ways: on the Kafka source and on :class:`benchmarks.confluent_source.ConfluentSource` (the
  agent's constructor hook), each at ``kafka.poll_batch`` 500 (the default) and 2000.

The agent's CPU per record is consume + the rest (loop, decode, monitor, bookkeeping). A
confluent-kafka source changes only the consume part, so from the consume rows alone the
agent's records per CPU-second would grow by ``agent / (agent - kafka_python + confluent)``;
the bound, with a consume that costs nothing, is ``agent / (agent - kafka_python)``. Both are
printed beside what the agent on the confluent source measures. Every consumer reads the same
records (their count and the sum of their offsets are checked), and every agent run must end
with the same monitor state (``Monitor.export_state``, compared as canonical JSON): the
"identical" column.

The agent's rates count from its first record; the "whole run" ratio counts the CPU from the
agent's construction to its last record, so it includes start-up and the read-ahead that
librdkafka's threads do before the first record is processed (which the first measure misses).

``python -m benchmarks consume`` (200 000 records, 3 interleaved repeats, Tansu and Apache
Kafka; ``--broker`` picks one); ``--quick``: 50 000 records, one repeat (on Tansu only when run
as ``python -m benchmarks.consume --quick``). ``python -m benchmarks.consume --profile``
instead profiles the Kafka source's poll (cProfile, 100 000 records, Tansu) and prints where
its time goes: kafka-python's record parsing, the source's own per-record work, and the rest
(kafka-python's per-poll machinery: coordinator, fetch requests, IO thread).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import cast

from kafka import KafkaConsumer

from benchmarks.agent import GROUP_TIMING, TOPIC, AgentRun, fill_topic, run_agent
from benchmarks.brokers import broker_kinds, broker_label, open_broker
from driftwatch.kafka.source import KafkaSource
from driftwatch.sources.record import Record

AGENTS = {  # name: (source, kafka.poll_batch)
    "agent, Kafka source": ("kafka", 500),
    "agent, Kafka source, batch 2000": ("kafka", 2000),
    "agent, confluent source": ("confluent", 500),
    "agent, confluent source, batch 2000": ("confluent", 2000),
}


def kafka_python_cpu(bootstrap: str, count: int, group: str) -> float:
    """CPU seconds of this process per record, kafka-python consuming ``count`` records."""
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             max_poll_records=500, **GROUP_TIMING)

    def batch() -> Iterable[tuple[int, bytes | None]]:
        return ((r.offset, r.value) for records in consumer.poll(timeout_ms=1000).values()
                for r in records)

    return _cpu_per_record(batch, consumer.close, count)


def kafka_source_cpu(bootstrap: str, count: int, group: str) -> float:
    """CPU seconds of this process per record, the agent's Kafka source polling ``count``
    records (kafka-python's consume and the source's own work per poll and record)."""
    source = KafkaSource({"bootstrap_servers": [bootstrap], "group_id": group,
                          "auto_offset_reset": "earliest", "max_poll_records": 500,
                          **GROUP_TIMING}, topics=[TOPIC], poll_timeout_s=1.0)
    return _cpu_per_record(lambda: [(r.offset, r.value) for r in source.poll()],
                           source.close, count)


def profile_source(kind: str = "tansu", count: int = 100_000) -> None:
    """Print the shares of :meth:`KafkaSource.poll`'s profiled time (main thread; the client's
    IO thread is not profiled)."""
    profile = cProfile.Profile()
    with open_broker(kind) as broker:
        fill_topic(broker.bootstrap, count)
        source = KafkaSource({"bootstrap_servers": [broker.bootstrap], "group_id": "profile",
                              "auto_offset_reset": "earliest", "max_poll_records": 500,
                              **GROUP_TIMING}, topics=[TOPIC], poll_timeout_s=1.0)
        seen = 0
        while seen < count:
            if seen:
                profile.enable()
            seen += len(source.poll())
            profile.disable()
        source.close()
    stats = cast(dict[tuple[str, int, str], tuple[int, int, float, float, object]],
                 pstats.Stats(profile).stats)  # type: ignore[attr-defined]

    def cumulative(file: str, function: str) -> float:
        return sum(entry[3] for (path, _, name), entry in stats.items()
                   if path.endswith(file) and name == function)

    total = cumulative("driftwatch/kafka/source.py", "poll")
    parts = {
        "kafka-python: unpacking records (fetcher._unpack_records)":
            cumulative("kafka/consumer/fetcher.py", "_unpack_records"),
        "ours: a Record per message (KafkaSource.poll's list)":
            cumulative("driftwatch/kafka/source.py", "<listcomp>"),
        "ours: lag from the fetch (Offsets.follow_lag)":
            cumulative("driftwatch/kafka/offsets.py", "follow_lag"),
    }
    print(f"KafkaSource.poll under cProfile, {count:,} records after the first batch, "
          f"{broker_label(kind)}: {total:.2f} s profiled.\n")
    print("| part | share of the poll's time |\n|---|---|")
    for name, seconds in parts.items():
        print(f"| {name} | {seconds / total:.0%} |")
    print(f"| the rest (per poll: coordinator, fetch requests, waits) | "
          f"{1 - sum(parts.values()) / total:.0%} |")


def agent_run(name: str, bootstrap: str, count: int, group: str) -> AgentRun:
    """The agent over the topic as ``AGENTS[name]`` says."""
    kind, batch = AGENTS[name]
    if kind == "confluent":
        from benchmarks.confluent_source import confluent_factory
        return run_agent(bootstrap, count, group, source=confluent_factory,
                         kafka={"poll_batch": batch})
    return run_agent(bootstrap, count, group, kafka={"poll_batch": batch})


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

    def batch() -> Iterable[tuple[int, bytes | None]]:
        for message in consumer.consume(num_messages=500, timeout=1.0):
            if message.error() is None:
                record = Record(str(message.topic()), cast(int, message.partition()),
                                cast(int, message.offset()), message.key(), message.value(),
                                message.timestamp()[1])
                yield record.offset, record.value

    return _cpu_per_record(batch, consumer.close, count)


def _cpu_per_record(batch: Callable[[], Iterable[tuple[int, bytes | None]]],
                    close: Callable[[], None], count: int) -> float:
    """CPU seconds of this process per record, reading ``batch()``'s (offset, value) pairs
    until ``count`` records, from the first non-empty batch on; checks that every record
    was read once (the count and the sum of the offsets)."""
    seen = offsets = 0
    cpu = None
    while seen < count:
        for offset, value in batch():
            if cpu is None:
                cpu = time.process_time()
            offsets += offset
            seen += value is not None
    assert cpu is not None
    used = time.process_time() - cpu
    close()
    _check(seen, offsets, count)
    return used / count


def _check(seen: int, offsets: int, count: int) -> None:
    if seen != count or offsets != count * (count - 1) // 2:
        raise AssertionError(f"read {seen} records (offset sum {offsets}), expected {count}")


@dataclass
class Measured:
    """Medians over the repeats: µs of CPU per record of each consume and agent, the agents'
    whole-run CPU seconds, and whether every agent run ended in the same monitor state."""

    us: dict[str, float]
    whole: dict[str, float]
    identical: dict[str, bool]


def measure(kind: str, count: int, repeats: int) -> Measured:
    consumes: dict[str, Callable[[str, int, str], float]] = {
        "kafka-python": kafka_python_cpu, "Kafka source": kafka_source_cpu,
        "confluent-kafka": confluent_cpu}
    runs: dict[str, list[float]] = {name: [] for name in [*consumes, *AGENTS]}
    whole: dict[str, list[float]] = {name: [] for name in AGENTS}
    states: dict[str, set[str]] = {name: set() for name in AGENTS}
    with open_broker(kind) as broker:
        fill_topic(broker.bootstrap, count)
        for i in range(repeats):
            for name, consume in consumes.items():
                runs[name].append(consume(broker.bootstrap, count, f"{name}-{i}") * 1e6)
            for name in AGENTS:
                group = "-".join(f"{name} {i}".replace(",", "").split())
                run = agent_run(name, broker.bootstrap, count, group)
                runs[name].append(1e6 / run.rate[1])
                whole[name].append(run.cpu_whole)
                states[name].add(run.state)
    reference = states["agent, Kafka source"]
    return Measured({name: statistics.median(values) for name, values in runs.items()},
                    {name: statistics.median(values) for name, values in whole.items()},
                    {name: len(reference) == 1 and found == reference
                     for name, found in states.items()})


def main(quick: bool = False, broker: str | None = None) -> None:
    count, repeats = (50_000, 1) if quick else (200_000, 3)
    kinds = broker_kinds(broker or ("tansu" if quick else "both"))
    measured = {kind: measure(kind, count, repeats) for kind in kinds}
    load = os.getloadavg()[0]
    print(f"{count:,} records, one partition, median of {repeats} interleaved repeats; µs of "
          f"this process's CPU per record; load average at the end {load:.1f} on "
          f"{os.cpu_count()} CPUs.\n")
    print("| broker | kafka-python consume | the Kafka source's poll | confluent-kafka consume "
          "→ Record | agent, expected with confluent-kafka | bound (free consume) |")
    print("|---|---|---|---|---|---|")
    for kind, m in measured.items():
        kp, ours, ck = m.us["kafka-python"], m.us["Kafka source"], m.us["confluent-kafka"]
        agent = m.us["agent, Kafka source"]
        rest = agent - kp
        print(f"| {broker_label(kind)} | {kp:.2f} | {ours:.2f} | {ck:.2f} | "
              f"{agent / (rest + ck):.2f}× | {agent / rest:.2f}× |")
    print("\nThe agent end to end (records per CPU-second from its first record; ratios to the "
          "agent on the Kafka source at the default batch, same broker, same run):\n")
    print("| broker | agent | µs CPU per record | records per CPU-second | ratio | "
          "ratio, whole run | identical final state |")
    print("|---|---|---|---|---|---|---|")
    for kind, m in measured.items():
        base, base_whole = m.us["agent, Kafka source"], m.whole["agent, Kafka source"]
        for name in AGENTS:
            us = m.us[name]
            print(f"| {broker_label(kind)} | {name.removeprefix('agent, ')} | {us:.2f} | "
                  f"{1e6 / us:,.0f} | {base / us:.2f}× | {base_whole / m.whole[name]:.2f}× | "
                  f"{'yes' if m.identical[name] else 'NO'} |")
    print("\nAn extra is worth adding only at ≥ 2× with identical results (issue 25).")
    if not all(all(m.identical.values()) for m in measured.values()):
        raise AssertionError("the agents' final monitor states differ between sources")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--broker", choices=("tansu", "apache", "both"))
    parser.add_argument("--profile", action="store_true",
                        help="profile the Kafka source's poll instead")
    arguments = parser.parse_args()
    if arguments.profile:
        profile_source(arguments.broker if arguments.broker in ("tansu", "apache") else "tansu")
    else:
        main(arguments.quick, arguments.broker)
