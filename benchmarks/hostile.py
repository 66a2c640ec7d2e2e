"""Hostile input, at length: a fuzz run through the agent's path and a connection flood.

Not a speed benchmark: the long version of ``tests/test_hostile_input.py`` and of the
exporter's connection tests, with the figures the robustness claims rest on.

1. **Fuzz.** Seeded random records (valid events of a few models mixed with huge integers,
   lone surrogates as ``\\u`` escapes and as raw bytes, deep nesting, ``NaN``/``Infinity``
   literals, control characters, UTF-16/32, truncations and random bytes) go through
   :meth:`driftwatch.agent.loop.Agent.process` (decode, the model's monitor), the snapshot, the
   collector and a real HTTP scrape every ``SCRAPE_EVERY`` records. Checked as it runs:
   nothing raises, every scrape answers 200, processed + rejected equals the records tried,
   no series is dropped, the decoder's last resort (``undecodable``) never acts; at the end
   the checkpoint saves and restores every model.
2. **Flood.** A metrics server with the default ``max_connections`` runs in a child process
   whose descriptor limit is 1024 (the issue's setting); the parent opens 1 100 idle
   connections, then slowloris clients trickling a byte every 0.2 s, and scrapes
   meanwhile. Reported: connections and descriptors the child held at most, scrapes
   answered, and what the server closed (evicted, refused, timeout).

``python -m benchmarks hostile`` (about 1 CPU-minute; ``--quick``: a few seconds).
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import os
import random
import resource
import socket
import tempfile
import time
import urllib.request
from collections import Counter
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from driftwatch.agent.loop import Agent
from driftwatch.decoding.decoder import REJECTION_REASONS
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.prometheus.server import MAX_CONNECTIONS, MetricsServer
from driftwatch.sinks.snapshot import AgentSnapshot

SCRAPE_EVERY = 2000
MODELS = ["churn", "modèle", "模型", "a b", "🙂", "fraud-v2"]
FIELDS = ["label", "score", "prediction", "ts", "model", "x"]


def hostile_value(rng: random.Random) -> str:
    """The JSON text of one field value, hostile more often than not."""
    kind = rng.randrange(12)
    if kind == 0:
        return rng.choice(["NaN", "Infinity", "-Infinity", "-0", "1E400", "true", "null", "[]"])
    if kind == 1:
        return "9" * rng.choice([20, 309, 400, 4300, 4400])  # float overflow; json's limit
    if kind == 2:
        return str(rng.randrange(-(10**400), 10**400))
    if kind == 3:
        depth = rng.choice([10, 500, 990, 1500, 5000])
        return "[" * depth + "]" * depth
    if kind == 4:
        depth = rng.choice([10, 900, 2000])
        return '{"a":' * depth + "1" + "}" * depth
    if kind == 5:  # any code points, lone surrogates included, as \u escapes
        return json.dumps("".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(8))))
    if kind == 6:  # control characters and separators
        return json.dumps("".join(rng.choice("\n\r\t\x00\x1b\x7f\x85\u2028\u202e\u200bab")
                                  for _ in range(rng.randrange(1, 6))))
    if kind == 7:
        return json.dumps(rng.choice(["0.83", " 1", "nan", "inf", "0x10", "1_000", "1e999"]))
    if kind == 8:
        return json.dumps(rng.choice(MODELS))
    if kind == 9:
        return json.dumps("x" * rng.choice([1, 200, 201, 5000]))
    if kind == 10:
        return repr(rng.uniform(-1e6, 1e6))
    return str(rng.choice([0, 1]))


def record(rng: random.Random) -> bytes | None:
    """One record value: a valid event half of the time, else a hostile one."""
    if rng.random() < 0.5:
        value = {"model": rng.choice(MODELS), "label": rng.randrange(2),
                 "score": rng.gauss(0.0, 1.0)}
        return json.dumps(value, ensure_ascii=rng.random() < 0.5).encode()
    kind = rng.randrange(10)
    if kind == 0:
        return None if rng.random() < 0.5 else bytes(rng.randrange(256)
                                                     for _ in range(rng.randrange(64)))
    if kind < 6:  # a valid event with one field made hostile: every check gets its turn
        fields = {"model": json.dumps(rng.choice(MODELS)), "label": str(rng.randrange(2)),
                  "score": repr(rng.random())}
        fields[rng.choice(FIELDS)] = hostile_value(rng)
    else:
        fields = {name: hostile_value(rng)
                  for name in rng.sample(FIELDS, rng.randrange(len(FIELDS) + 1))}
    text = "{" + ",".join(f'"{name}":{value}' for name, value in fields.items()) + "}"
    if kind == 1:
        text = hostile_value(rng)  # not an object
    encoding = rng.choice(["utf-8", "utf-8", "utf-16", "utf-32"])
    data = text.encode(encoding, "surrogatepass")  # raw surrogates: invalid UTF-8
    if kind == 2:
        cut = rng.randrange(len(data) + 1)
        data = data[:cut] + bytes(rng.randrange(256) for _ in range(rng.randrange(3)))
    return data


def scrape(url: str) -> dict[str, dict[str, float]]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as response:
        if response.status != 200:
            raise AssertionError(f"scrape answered {response.status}")
        text = response.read().decode("utf-8")
    samples: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples.setdefault(sample.name, {})[key] = sample.value
    return samples


def fuzz(count: int, seed: int = 9) -> None:
    rng = random.Random(seed)
    logging.getLogger("driftwatch").setLevel(logging.ERROR)  # rejections log by design
    with tempfile.TemporaryDirectory() as directory:
        agent = Agent(Settings(checkpoint={"backend": "file", "directory": directory},
                               limits={"max_models": 5}),
                      snapshot_interval_s=0.0)
        registry = CollectorRegistry()
        registry.register(SnapshotCollector(lambda: agent.snapshot))
        scrapes = 0
        started = time.perf_counter()
        with MetricsServer(registry, "127.0.0.1", 0, lambda: True) as server:
            for offset in range(count):
                agent.process(Record("events", offset % 4, offset // 4, None, record(rng), 0))
                if (offset + 1) % SCRAPE_EVERY == 0 or offset + 1 == count:
                    agent._publish_snapshot()
                    metrics = scrape(server.url)
                    scrapes += 1
                    processed = sum(metrics.get("driftwatch_events_processed_total",
                                                {}).values())
                    rejected = metrics["driftwatch_events_rejected_total"]
                    assert processed + sum(rejected.values()) == offset + 1
                    assert rejected["reason=undecodable"] == 0
                    assert metrics["driftwatch_scrape_dropped_series_total"][""] == 0
        elapsed = time.perf_counter() - started
        agent.checkpointer.save(agent.monitors, agent.positions.offsets)
        again = Agent(agent.settings)
        again.restore()
        assert set(again.monitors.export_state()) == set(agent.monitors.export_state())
    snapshot: AgentSnapshot = agent.snapshot
    by_reason = Counter({r: n for r, n in snapshot.rejected.items() if n})
    processed_total = sum(m.events for m in snapshot.monitors)
    print(f"fuzz: {count:,} records tried (seed {seed}) in {elapsed:.1f} s; {scrapes} HTTP "
          f"scrapes, all 200; 0 exceptions; 0 series dropped; checkpoint restored "
          f"{len(snapshot.monitors)} models\n")
    print("| outcome | records |")
    print("|---|---|")
    print(f"| processed ({len(snapshot.monitors)} models) | {processed_total:,} |")
    for reason in (*REJECTION_REASONS, "too_many_models"):
        print(f"| rejected: {reason} | {by_reason.get(reason, 0):,} |")
    print()


# -- the flood ------------------------------------------------------------------------------


def _serve(port_out: Any, stop: Any, limit: int) -> None:
    """The child: a metrics server with the default bounds and ``limit`` descriptors."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    logging.disable(logging.CRITICAL)
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: AgentSnapshot.empty(time.time())))
    with MetricsServer(registry, "127.0.0.1", 0, lambda: True, request_timeout=10.0) as server:
        port_out.send(server.port)
        stop.wait()


def flood(idle_count: int, slow_count: int, limit: int = 1024) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = idle_count + slow_count + 256
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    stop = context.Event()
    child = context.Process(target=_serve, args=(send, stop, limit), daemon=True)
    child.start()
    port = receive.recv()
    url = f"http://127.0.0.1:{port}/metrics"
    held_fds = held_connections = 0
    answered = tried = 0
    clients: list[socket.socket] = []

    def observe() -> None:
        nonlocal held_fds, held_connections, answered, tried
        held_fds = max(held_fds, len(os.listdir(f"/proc/{child.pid}/fd")))
        tried += 1
        try:
            metrics = scrape(url)
        except (OSError, AssertionError):
            return
        answered += 1
        held_connections = max(held_connections, int(metrics["driftwatch_http_connections"][""]))

    started = time.perf_counter()
    try:
        for i in range(idle_count):
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=10))
            if i % 100 == 0:
                observe()
        slow = [socket.create_connection(("127.0.0.1", port), timeout=10)
                for _ in range(slow_count)]
        clients += slow
        request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 200
        for step in range(60):  # 12 s of trickling: past the 10 s request timeout
            for sock in slow:
                with contextlib.suppress(OSError):  # evicted or timed out: closed by it
                    sock.send(request[step:step + 1])
            if step % 5 == 0:
                observe()
            time.sleep(0.2)
        final = scrape(url)
    finally:
        for sock in clients:
            sock.close()
        stop.set()
        child.join(10)
    closed = final["driftwatch_http_connections_closed_total"]
    elapsed = time.perf_counter() - started
    print(f"flood: {idle_count:,} idle + {slow_count} slowloris connections in {elapsed:.0f} s "
          f"against a server with max_connections={MAX_CONNECTIONS}, request_timeout=10 s, "
          f"{limit} descriptors\n")
    print("| measure | value |")
    print("|---|---|")
    print(f"| connections opened by clients | {idle_count + slow_count:,} |")
    print(f"| connections held by the server, at most | {held_connections} |")
    print(f"| descriptors of the server process, at most | {held_fds} (limit {limit}) |")
    print(f"| scrapes answered during the flood | {answered}/{tried} |")
    for reason in ("evicted", "refused", "timeout"):
        print(f"| closed early: {reason} | {int(closed[f'reason={reason}']):,} |")
    print()


def main(quick: bool) -> None:
    fuzz(20_000 if quick else 300_000)
    flood(200 if quick else 1_100, 10 if quick else 50)
