"""The two brokers the Kafka tests and benchmarks run on: what each costs to start and hold.

Tansu (the demo's embedded broker, memory storage) and Apache Kafka 4 (tests/apache_kafka.py,
KRaft, one node, disk storage), each started on a free loopback port until it answers a
metadata request that lists itself (how the tests wait for it). Printed per broker, medians
over the runs: a first start (Apache Kafka also formats its storage), a restart on the same
data, a stop, and the resident memory right after start and after 20 000 records were
produced and consumed. The jars are fetched beforehand (not timed).

``python -m benchmarks brokers`` (5 runs each; ``--quick``: 2).

Also the broker choice of the other benchmarks: ``--broker tansu|apache|both``
(:func:`broker_kinds`, :func:`open_broker`).
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from tests.apache_kafka import ApacheKafkaBroker, fetch_libs, kafka_version
from tests.broker import Broker, TansuBroker

BROKER_CHOICES = ("tansu", "apache", "both")


def broker_kinds(choice: str) -> tuple[str, ...]:
    """``--broker``'s value as the kinds to run: ``both`` is Tansu, then Apache Kafka."""
    if choice not in BROKER_CHOICES:
        raise ValueError(f"broker must be one of {BROKER_CHOICES}, got {choice!r}")
    return ("tansu", "apache") if choice == "both" else (choice,)


def broker_label(kind: str) -> str:
    return f"Apache Kafka {kafka_version()}" if kind == "apache" else "Tansu 0.6"


@contextlib.contextmanager
def open_broker(kind: str) -> Iterator[Broker]:
    """A running, empty broker of ``kind`` on loopback, stopped (and its data removed) on
    leaving."""
    broker: Broker = ApacheKafkaBroker() if kind == "apache" else TansuBroker()
    with broker:
        yield broker


def _seconds(action: Callable[[], object]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def _rss_mib(pid: int | None) -> float:
    assert pid is not None
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _traffic(bootstrap: str, count: int = 20_000) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic("load", 1, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for i in range(count):
        producer.send("load", value=b'{"model": "m", "label": %d, "score": 0.5}' % (i % 2))
    producer.flush(timeout=60)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    consumer.assign([KafkaTopicPartition("load", 0)])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < count and time.monotonic() < deadline:
        seen += sum(len(batch) for batch in consumer.poll(timeout_ms=500).values())
    consumer.close()


def measure(kind: str, runs: int) -> dict[str, float]:
    first, again, stop, rss, rss_loaded = [], [], [], [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as directory:
            broker: Broker = (ApacheKafkaBroker(Path(directory) / "kafka") if kind == "apache"
                              else TansuBroker())
            try:
                first.append(_seconds(broker.start))
                rss.append(_rss_mib(broker.pid))
                _traffic(broker.bootstrap)
                rss_loaded.append(_rss_mib(broker.pid))
                stop.append(_seconds(broker.stop))
                again.append(_seconds(broker.start))
            finally:
                broker.close()
    return {"first": statistics.median(first), "again": statistics.median(again),
            "stop": statistics.median(stop), "rss": statistics.median(rss),
            "rss_loaded": statistics.median(rss_loaded)}


def main(quick: bool = False) -> None:
    fetch_libs()
    runs = 2 if quick else 5
    print(f"| broker | first start, s | restart, s | stop, s | RSS after start, MiB "
          f"| RSS after 20 000 records, MiB |  (medians of {runs})")
    print("|---|---|---|---|---|---|")
    for kind in ("tansu", "apache"):
        m = measure(kind, runs)
        print(f"| {broker_label(kind)} | {m['first']:.2f} | {m['again']:.2f} | {m['stop']:.2f} "
              f"| {m['rss']:.0f} | {m['rss_loaded']:.0f} |")


if __name__ == "__main__":
    import sys

    main(quick="--quick" in sys.argv)
