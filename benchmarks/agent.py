"""End to end: events/s from a Tansu topic through the agent, against the raw ceiling.

The ceiling is kafka-python consuming the same topic and decoding every record, with no
monitoring: what the agent could reach if monitoring were free. Two ceilings: decoding with
the general decoder (:func:`~driftwatch.decoding.decoder.decode`, the ceiling the target was set
against), and with the decoding the agent itself does (the fast path's values,
:class:`~driftwatch.decoding.fast_decoder.FastDecoder`, the general decoder only for what it does
not take), which isolates what monitoring costs.
The agent runs in-process (:class:`~driftwatch.agent.loop.Agent`) with the default measures and
detectors at d = 1000. Both read the same one-partition topic from an embedded broker on
loopback, in fresh consumer groups; the median of a few interleaved repeats is reported, in
wall time and in this process's CPU time over the same span (both paths run in this
process, the broker in another; on a shared machine the CPU time is the steadier measure).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from driftwatch.agent.loop import Agent, SourceFactory
from driftwatch.decoding.decoder import EventFormat, decode
from driftwatch.decoding.fast_decoder import FastDecoder
from driftwatch.demo.broker import EmbeddedBroker
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.simulate import generate

TOPIC = "bench-events"
GROUP_TIMING = {"max_poll_interval_ms": 5000, "session_timeout_ms": 6000,
                "heartbeat_interval_ms": 1000}


def fill_topic(bootstrap: str, count: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, batch_size=512 * 1024)
    for event in generate("sudden_auc_drop", seed=3, length=count):
        value = {"model": "bench", "label": event.y_true, "score": event.y_score, "ts": event.ts}
        producer.send(TOPIC, json.dumps(value).encode())
    producer.flush()
    producer.close()


Rate = tuple[float, float]
"""Records per wall second and per CPU second of this process."""


def raw_ceiling(bootstrap: str, count: int, group: str, fast: bool) -> Rate:
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             max_poll_records=500, **GROUP_TIMING)
    fmt = EventFormat()
    values = FastDecoder(fmt).values
    seen, start, cpu = 0, None, 0.0
    while seen < count:
        for records in consumer.poll(timeout_ms=1000).values():
            if start is None:
                start, cpu = time.perf_counter(), time.process_time()
            for record in records:
                if not fast or values(record.value) is None:
                    decode(record.value, record.key, fmt)
            seen += len(records)
    elapsed = time.perf_counter() - (start or time.perf_counter())
    cpu = time.process_time() - cpu
    consumer.close()
    return count / elapsed, count / cpu


def through_agent(bootstrap: str, count: int, group: str) -> Rate:
    return run_agent(bootstrap, count, group).rate


@dataclass(frozen=True)
class AgentRun:
    """One run of the agent over the topic: its rates, the CPU seconds of this process from the
    agent's construction to the last record (start-up and the source's read-ahead included),
    and the final state of the model's monitor (``Monitor.export_state`` as canonical JSON), which
    two runs over the same records must give identically."""

    rate: Rate
    cpu_whole: float
    state: str


def run_agent(bootstrap: str, count: int, group: str, *,
              source: Callable[[Settings], SourceFactory] | None = None,
              kafka: Mapping[str, Any] | None = None) -> AgentRun:
    """The agent in process over ``count`` records of :data:`TOPIC`: its source is the Kafka
    source the settings describe, or the one ``source(settings)`` builds (given to the agent's
    constructor hook);
    ``kafka`` adds to the ``kafka`` settings. Rates count from the first record processed."""
    logging.getLogger("driftwatch.alarms").setLevel(logging.ERROR)  # the drift's alarms
    with tempfile.TemporaryDirectory() as state:
        settings = Settings(
            kafka={"bootstrap_servers": [bootstrap], "topics": [TOPIC], "group_id": group,
                   "poll_timeout_ms": 200, **GROUP_TIMING, **(kafka or {})},
            metrics={"host": "127.0.0.1", "port": 0},
            checkpoint={"backend": "file", "directory": state},
            logging={"level": "WARNING"},
        )
        cpu_begin = time.process_time()
        agent = Agent(settings, source=None if source is None else source(settings))
        stop = threading.Event()
        thread = threading.Thread(target=agent.run, args=(stop,), daemon=True)
        thread.start()
        start = None
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            monitor = agent.monitors.get("bench") if len(agent.monitors) else None
            processed = monitor.events if monitor is not None else 0
            if start is None and processed:
                start, first, cpu = time.perf_counter(), processed, time.process_time()
            if processed >= count:
                break
            time.sleep(0.005)
        cpu_end = time.process_time()
        elapsed = time.perf_counter() - start if start else float("nan")
        cpu = cpu_end - cpu if start else float("nan")
        stop.set()
        thread.join(30)
        monitor = agent.monitors.get("bench")
        final = json.dumps(monitor.export_state() if monitor is not None else None,
                           sort_keys=True, default=repr)
        return AgentRun(((count - first) / elapsed, (count - first) / cpu),
                        cpu_end - cpu_begin, final)


def loop_cost(count: int, repeats: int) -> tuple[float, float]:
    """CPU µs per record of the agent's loop without Kafka (:meth:`Agent.process_batch` on
    in-memory records, batches of 500, checkpoints off) and of the agent's decoding alone on
    the same values (the fast ceiling's per-record work); best of ``repeats``."""
    values = [json.dumps({"model": "bench", "label": e.y_true, "score": e.y_score,
                          "ts": e.ts}).encode()
              for e in generate("sudden_auc_drop", seed=3, length=count)]
    records = [Record(TOPIC, 0, offset, None, value, 0) for offset, value in enumerate(values)]
    values_of = FastDecoder(EventFormat()).values
    loop = decoding = float("inf")
    for _ in range(repeats):
        agent = Agent(Settings(checkpoint={"enabled": False}))
        start = time.process_time()
        if hasattr(agent, "process_batch"):
            for first in range(0, count, 500):
                agent.process_batch(records[first:first + 500])
        else:  # a tree from before the one pipeline, for the before/after comparison
            for record in records:
                agent.process(record)
        loop = min(loop, time.process_time() - start)
        start = time.process_time()
        for value in values:
            values_of(value)
        decoding = min(decoding, time.process_time() - start)
    return loop / count * 1e6, decoding / count * 1e6


def main(quick: bool = False) -> None:
    count = 50_000 if quick else 200_000
    repeats = 1 if quick else 3
    with EmbeddedBroker() as broker:
        fill_topic(broker.bootstrap, count)
        general: list[Rate] = []
        fast: list[Rate] = []
        agent: list[Rate] = []
        for i in range(repeats):
            general.append(raw_ceiling(broker.bootstrap, count, f"raw-{i}", fast=False))
            fast.append(raw_ceiling(broker.bootstrap, count, f"fast-{i}", fast=True))
            agent.append(through_agent(broker.bootstrap, count, f"agent-{i}"))

    def medians(rates: list[Rate]) -> Rate:
        return statistics.median(r[0] for r in rates), statistics.median(r[1] for r in rates)

    ours, ours_cpu = medians(agent)
    load = os.getloadavg()[0]
    print(f"{count:,} records, one partition, embedded Tansu on loopback, median of {repeats}; "
          f"load average at the end {load:.1f} on {os.cpu_count()} CPUs.\n")
    print("| ceiling: kafka-python consume + | ceiling records/s (wall) | agent's share, wall | "
          "ceiling records per CPU-second | agent's share, CPU |")
    print("|---|---|---|---|---|")
    for name, rates in (("the general decoder (`decode`)", general),
                        ("the agent's own decoding (fast path)", fast)):
        raw, raw_cpu = medians(rates)
        print(f"| {name} | {raw:,.0f} | {ours / raw:.0%} | {raw_cpu:,.0f} | "
              f"{ours_cpu / raw_cpu:.0%} |")
    print(f"\nThe agent (default monitors, d = 1000): {ours:,.0f} records/s wall, "
          f"{ours_cpu:,.0f} per CPU-second.")
    loop, decoding = loop_cost(20_000 if quick else 100_000, repeats)
    print("\nThe agent's loop without Kafka (in-memory records of one model, CPU time, best of "
          f"{repeats}): {loop:.2f} µs per record, decode, route, monitor and offsets, against "
          f"{decoding:.2f} µs for its decoding alone.")
    print("\nMemory per model: `python -m benchmarks memory`.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
