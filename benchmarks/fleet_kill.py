"""A fleet of models on real agents, one SIGKILLed: the kill part of the fleet benchmark.

``python -m benchmarks fleet --kill`` (issue 25, item 6). A keyed stream of N models (10 000;
``--quick`` 1 000) at the default window (d = 1 000), E events each (1 000 + 100: every window
full), on an input topic of 8 partitions of Apache Kafka (``--broker tansu`` for Tansu), each
model's records keyed by its id, so the producer's partitioner spreads the models over the
partitions. Each configuration (1, 2 and 4 agents; ``--quick``: 2) has a topic, a consumer
group and so a state topic of its own, and its own copy of the stream: a random share of
every model's events (25 to 75 %) is produced before the agents start, the rest while they
read, by several producer processes (each owns a share of the models, so a model's records
stay in order); how long each part took is reported.

The agents are real ``driftwatch run`` processes with the defaults (state topic backend,
group timeouts, checkpoint interval) and ``limits.max_models`` raised to N. Once each has
saved at least once and the first share is read, a random 0 to 3 s later one of them,
chosen at random, is SIGKILLed and started again at once (as Kubernetes restarts a killed
container; the survivors may take its partitions over first). A configuration not done
within its bound (30 minutes; ``--quick`` 10) is reported as not finished. Reported per
configuration:

- restore: the slowest "restored N model(s) of K partition(s) ... in X s" of the agents'
  logs after the kill (X, and X / K per partition), and the slowest of the whole run (a
  member evicted before the kill restores too);
- handover gap: from the kill until every model the killed agent exported is exported again
  by some agent's ``/metrics``, all scraped at once: the end of the round of scrapes that found
  them all. The time since the end of the round before, which missed one, is printed as its
  resolution (±). That end includes the round's own transfer, decompression and parsing
  (tens of MB with four agents, on the loaded cores), so the gap is also given by the
  round's start ("asked at"): when its requests went out, the moment a Prometheus scrape
  would have found every model, within the time since the start of the round before;
- the longest loop pause: the highest bucket of ``driftwatch_loop_pause_seconds`` with an
  observation, over every agent (the killed one scraped just before the kill), and how many
  pauses were longer than 0.5 s (issue 25's target). A pause is the loop's time between two
  polls; work done inside a poll (the revoke save, in the rebalance callback) is not in it:
  its length is in the agents' logs, from "partitions revoked" to "saved the state of N
  revoked partition(s)" (``--logs`` keeps them);
- RSS (``process_resident_memory_bytes``) and the final scrape (MB, seconds) of each agent;
- group churn: "partitions assigned" lines (rebalances seen by the members, summed) and
  "partitions lost" lines (a member evicted: a rebalance it missed) in the agents' logs;
- whether the union of the agents' final monitor samples (each model on one agent,
  rejections summed) equals the reference: the pure monitors, one per model, fed its events
  in order through :meth:`~driftwatch.core.monitor.Monitor.update_columns` (the replay's
  path, which gives the same state as the agent's record by record) and exported by the same
  collector.

Two kinds of traffic while the agents run, each a table of its own in ``python -m benchmarks
fleet --kill`` (export level ``standard``, the one docs/fleet.md recommends at this size):

- **provisioned**: :data:`PROVISIONED_EVENTS_PER_MODEL_S` events a second per model (20 000
  records a second at 10 000 models), which the agents keep up with on this project's
  2-core machine, as agents in production are sized to keep up with their stream: after the
  first share is read they read as it comes, and a replacement's restore meets only the
  survivors' live traffic;
- **saturated**: as fast as the producers go (``--rate 0``, the only kind before), more
  than the agents read: every agent is catching up throughout, so a replacement restores
  beside three agents, a broker and two producers using every cycle of the two cores. The
  worst case, and a measure of the machine as much as of the agent.

``python -m benchmarks.fleet_kill --models 2000 --agents 1 2 --broker tansu --minutes 15`` for
other sizes, ``--rate`` for other traffic.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import http.client
import math
import multiprocessing
import os
import random
import re
import signal
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from kafka import KafkaProducer
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest

from benchmarks.brokers import broker_kinds, broker_label, open_broker
from driftwatch.core.monitor import Monitor
from driftwatch.decoding.decoder import REJECTION_REASONS
from driftwatch.pipeline import TOO_MANY_MODELS
from driftwatch.settings import Settings
from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.snapshot import AgentSnapshot
from tests.broker import free_port
from tests.integration.helpers import (
    HOST,
    AgentProcess,
    Labels,
    Metrics,
    create_topics,
    deep_merge,
)

PARTITIONS = 8
MODELS = 10_000
QUICK_MODELS = 1_000
EVENTS_PER_MODEL = 1_100
"""Above the default window (1 000), so every window is full when the stream is read."""
PROVISIONED_EVENTS_PER_MODEL_S = 2.0
"""The provisioned traffic (module docstring): 20 000 records a second at 10 000 models,
well under what four agents read on two cores beside the broker and the producers (the 11
million records of a saturated run in about 4 minutes, at least 45 000 a second)."""
AGENTS = (1, 2, 4)
QUICK_AGENTS = (2,)
PRODUCERS = 2
"""Producer processes (the machine has two cores)."""
KILL_SHARE = (0.25, 0.75)
"""The kill comes once this share of the stream (drawn uniformly) has been consumed."""
SCRAPE_TIMEOUT_S = 60.0
PAUSE_TARGET_S = 0.5
TIMEOUT_S = 1800.0
QUICK_TIMEOUT_S = 600.0
"""Bound on one configuration: one that is not done by then (a group churning for ever) is
reported as not finished."""
BASE_TS = 1_700_000_000


# ------------------------------------------------------------------------------------------
# the stream


@dataclass(frozen=True)
class Fleet:
    """N models' streams: model ``k``'s E events are its own binormal stream (10 %
    positives, AUC about 0.8), seeded by ``(seed, k)``, with times ``BASE_TS + j``."""

    models: int
    events: int = EVENTS_PER_MODEL
    seed: int = 25
    partitions: int = PARTITIONS

    def model(self, k: int) -> str:
        return f"model-{k:05d}"

    def columns(self, k: int) -> tuple[list[int], list[float]]:
        rng = np.random.default_rng([self.seed, k])
        labels = (rng.random(self.events) < 0.1).astype(np.int64)
        scores = rng.normal(1.19 * labels, 1.0)
        return labels.tolist(), scores.tolist()

    @property
    def total(self) -> int:
        return self.models * self.events


def _produce_share(bootstrap: str, topic: str, fleet: Fleet, share: int, shares: int,
                   first: int, last: int, seconds: float) -> int:
    """Produce events ``first`` to ``last`` (excluded) of the models ``k % shares == share``,
    event by event across them (as live traffic interleaves), keyed by model, spread over
    about ``seconds`` (0: as fast as the producer goes). Returns the records sent."""
    models = range(share, fleet.models, shares)
    names = [fleet.model(k).encode() for k in models]
    columns = [fleet.columns(k) for k in models]
    send, finish = _producer(bootstrap, topic)
    sent = 0
    started = time.monotonic()
    for j in range(first, last):
        ahead = started + seconds * (j - first) / max(last - first, 1) - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
        ts = BASE_TS + j
        for name, (labels, scores) in zip(names, columns, strict=True):
            send(b'{"model": "%s", "label": %d, "score": %s, "ts": %d}' % (
                name, labels[j], repr(scores[j]).encode(), ts), name)
            sent += 1
    finish()
    return sent


def _producer(bootstrap: str, topic: str
              ) -> tuple[Callable[[bytes, bytes], None], Callable[[], None]]:
    """``send(value, key)`` and ``finish()`` (flush, close, raise if a record was not
    acknowledged) of a producer to ``topic``: confluent-kafka's when it is installed (about
    ten times kafka-python's rate here: 11 million records in a minute or two instead of up to
    an hour), else kafka-python's. Both hash keys with murmur2, so a model's records go to
    the same partition either way; the agents read with kafka-python regardless."""
    failures: list[object] = []
    try:
        import confluent_kafka  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, acks=1,
                                 retries=0, batch_size=512 * 1024)

        def send(value: bytes, key: bytes) -> None:
            producer.send(topic, value=value, key=key).add_errback(failures.append)

        def finish() -> None:
            try:
                producer.flush(timeout=600)
            finally:
                producer.close(timeout=30)
            if failures:
                raise RuntimeError(f"{len(failures)} records not acknowledged: {failures[0]!r}")

        return send, finish
    fast = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "linger.ms": 50, "acks": 1,
        "batch.size": 1024 * 1024, "queue.buffering.max.messages": 1_000_000,
        "partitioner": "murmur2_random", "enable.idempotence": False})

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failures.append(error)

    def send_fast(value: bytes, key: bytes) -> None:
        while True:
            try:
                fast.produce(topic, value, key, on_delivery=delivered)
                return
            except BufferError:  # the local queue is full: let deliveries drain it
                fast.poll(0.05)

    def finish_fast() -> None:
        left = fast.flush(600)
        if left or failures:
            raise RuntimeError(f"{left} records unsent, {len(failures)} not acknowledged: "
                               f"{failures[:1]!r}")

    return send_fast, finish_fast


def produce_fleet(bootstrap: str, topic: str, fleet: Fleet, first: int, last: int, *,
                  producers: int = PRODUCERS, seconds: float = 0.0) -> float:
    """Produce events ``first`` to ``last`` of every model with ``producers`` processes (each
    a share of the models, so a model's records keep their order); the seconds it took."""
    started = time.monotonic()
    with multiprocessing.get_context("fork").Pool(producers) as pool:
        sent = sum(pool.starmap(_produce_share, [
            (bootstrap, topic, fleet, share, producers, first, last, seconds)
            for share in range(producers)]))
    assert sent == fleet.models * (last - first), (sent, fleet.models, first, last)
    return time.monotonic() - started


def reference_state(fleet: Fleet, settings: Settings) -> dict[tuple[str, Labels], float]:
    """The monitor samples one uninterrupted reader of the stream exports: each model's
    pure monitor fed its events in order, exported by the agent's collector."""
    snapshots = []
    for k in range(fleet.models):
        model = fleet.model(k)
        monitor = Monitor(model, settings.monitoring.monitor_config(model))
        labels, scores = fleet.columns(k)
        monitor.update_columns(labels, scores, [float(BASE_TS + j) for j in range(fleet.events)])
        snapshots.append(monitor.snapshot())
    rejected = dict.fromkeys((*REJECTION_REASONS, TOO_MANY_MODELS), 0)
    snapshot = AgentSnapshot(monitors=tuple(snapshots), rejected=rejected, consumer_lag={},
                             ready=True, started_time=0.0)
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: snapshot, per_model=settings.metrics.per_model))
    return Metrics.parse(generate_latest(registry).decode()).state()


# ------------------------------------------------------------------------------------------
# reading an agent


_PROCESSED = re.compile(rb'^driftwatch_events_processed_total\{[^}]*model="([^"]*)"[^}]*\} (\S+)',
                        re.MULTILINE)
_PAUSE = re.compile(rb'^driftwatch_loop_pause_seconds_bucket\{le="([^"]+)"\} (\S+)',
                    re.MULTILINE)


@dataclass(frozen=True)
class Scrape:
    """What the benchmark reads from one ``/metrics`` answer, found without parsing it all
    (a 10 000-model answer is tens of MB)."""

    body: bytes
    seconds: float
    wire: int = 0
    """Bytes on the wire (gzip'd, as Prometheus asks)."""

    @property
    def processed(self) -> dict[str, float]:
        return {m.decode(): float(v) for m, v in _PROCESSED.findall(self.body)}

    def gauge(self, name: str) -> float | None:
        found = re.search(rb"^" + re.escape(name.encode()) + rb" (\S+)", self.body,
                          re.MULTILINE)
        return None if found is None else float(found.group(1))

    @property
    def pauses(self) -> list[tuple[float, float]]:
        """``driftwatch_loop_pause_seconds``' cumulative buckets (``[]`` when absent)."""
        return [(float(le), float(count)) for le, count in _PAUSE.findall(self.body)]


def scrape(agent: AgentProcess, timeout_s: float = SCRAPE_TIMEOUT_S) -> Scrape | None:
    """One GET of the agent's ``/metrics`` asking for gzip, as Prometheus does; None when
    it does not answer, or not whole (the agent closes a connection past
    ``metrics.request_timeout_seconds``, 10 s, as Prometheus' own ``scrape_timeout``
    gives up; counted in :data:`FAILED_SCRAPES`)."""
    started = time.monotonic()
    request = urllib.request.Request(f"{agent.url}/metrics",
                                     headers={"Accept-Encoding": "gzip"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            wire = response.read()
            zipped = response.headers.get("Content-Encoding") == "gzip"
    except (OSError, http.client.HTTPException):
        FAILED_SCRAPES[agent.name] = FAILED_SCRAPES.get(agent.name, 0) + 1
        return None
    seconds = time.monotonic() - started
    return Scrape(gzip.decompress(wire) if zipped else wire, seconds, len(wire))


FAILED_SCRAPES: dict[str, int] = {}
"""Per agent, the scrapes that got no whole answer (reported with the final scrapes)."""


def longest_pause(buckets: Sequence[tuple[float, float]]) -> tuple[float, float, float]:
    """``(upper bound of the highest bucket with an observation, observations above
    PAUSE_TARGET_S, observations)`` of a cumulative histogram (nan without one)."""
    if not buckets:
        return float("nan"), float("nan"), float("nan")
    total = buckets[-1][1]
    highest = next(le for le, count in buckets if count == total)
    within = max((count for le, count in buckets if le <= PAUSE_TARGET_S), default=0.0)
    return highest, total - within, total


_RESTORED = re.compile(r"restored (\d+) model\(s\) of (\d+) partition\(s\).* in ([\d.]+) s")


def restores(log: str) -> list[tuple[int, int, float]]:
    """``(models, partitions, seconds)`` of each restore line of an agent's log."""
    return [(int(m), int(p), float(s)) for m, p, s in _RESTORED.findall(log)]


# ------------------------------------------------------------------------------------------
# one configuration


@dataclass
class Result:
    """One configuration's measurements (see the module docstring)."""

    agents: int
    before: tuple[int, float] = (0, 0.0)
    """Records produced before the agents started, and the seconds it took."""
    during: tuple[int, float] = (0, 0.0)
    """Records produced while they ran (and one was killed), and the seconds it took."""
    read_at_kill: float = float("nan")
    """Share of the stream the agents had read when one was killed."""
    restores: list[tuple[int, int, float]] = field(default_factory=list)
    """The restores after the kill: ``(models, partitions, seconds)``."""
    slowest_restore_s: float = float("nan")
    """The slowest restore of the whole run (the first starts and evictions included)."""
    gap_s: float = float("nan")
    gap_round_s: float = float("nan")
    gap_asked_s: float = float("nan")
    """The gap by the start of the round that found every model (when its requests went
    out, as a Prometheus scrape at that moment would have found them): without the
    round's own transfer, decompression and parsing, which :attr:`gap_s` includes."""
    gap_asked_round_s: float = float("nan")
    pause_s: float = float("nan")
    long_pauses: float = float("nan")
    pauses: float = float("nan")
    rss_mib: list[float] = field(default_factory=list)
    scrapes: list[tuple[float, float, float]] = field(default_factory=list)
    """Per agent, its final scrape: MB, MB gzip'd, seconds."""
    assignments: int = 0
    lost: int = 0
    equal: str = "not compared"
    seconds: float = 0.0

    @property
    def killed_mid_stream(self) -> bool:
        return self.read_at_kill < 1.0


def fleet_settings(bootstrap: str, topic: str, group: str, name: str, models: int,
                   overrides: Mapping[str, Any] | None = None, *,
                   static: bool = False) -> dict[str, Any]:
    """An agent's settings: the defaults, but the broker, topic, group, a loopback metrics
    port, ``limits.max_models`` (N) and the state topic backend; ``overrides`` on top.
    ``static``: a static member named ``name`` (``kafka.group_instance_id``), which its
    restart after the kill keeps, as a container restarted in its Pod keeps the Pod's name."""
    return deep_merge({
        "kafka": {"bootstrap_servers": [bootstrap], "topics": [topic], "group_id": group,
                  "client_id": name, **({"group_instance_id": name} if static else {})},
        "metrics": {"host": HOST, "port": free_port()},
        "checkpoint": {"backend": "kafka"},
        "limits": {"max_models": models},
        "logging": {"level": "INFO", "format": "text"},
    }, overrides or {})


def overlap(scrapes: Sequence[Scrape]) -> set[str]:
    """The models exported by more than one of the agents."""
    seen: set[str] = set()
    twice: set[str] = set()
    for each in scrapes:
        models = each.processed.keys()
        twice |= seen & models
        seen |= models
    return twice


def union(scrapes: Sequence[Metrics]) -> dict[tuple[str, Labels], float]:
    """The monitor samples of all agents: a model's series on one agent only (else it is an
    error: a frozen series); rejection counters summed."""
    merged: dict[tuple[str, Labels], float] = {}
    for metrics in scrapes:
        for key, value in metrics.state().items():
            if key[0] == "driftwatch_events_rejected_total":
                merged[key] = merged.get(key, 0.0) + value
            elif key in merged:
                raise AssertionError(f"{key} exported by two agents (a frozen series?)")
            else:
                merged[key] = value
    return merged


def compare(got: Mapping[tuple[str, Labels], float],
            expected: Mapping[tuple[str, Labels], float]) -> str:
    """"yes", or what differs."""
    if got.keys() != expected.keys():
        missing, extra = expected.keys() - got.keys(), got.keys() - expected.keys()
        return (f"NO: {len(missing)} sample(s) missing (e.g. {sorted(missing)[:2]}), "
                f"{len(extra)} extra (e.g. {sorted(extra)[:2]})")
    different = {key: (got[key], value) for key, value in expected.items()
                 if got[key] != value and not (math.isnan(value) and math.isnan(got[key]))}
    if different:
        return f"NO: {len(different)} sample(s) differ, e.g. {list(different.items())[:2]}"
    return "yes"


class Agents:
    """The configuration's ``driftwatch run`` processes, stopped on leaving."""

    def __init__(self, processes: list[AgentProcess]) -> None:
        self.processes = processes

    def __enter__(self) -> Agents:
        for agent in self.processes:
            agent.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for agent in self.processes:
            if agent.running:
                agent.send_signal(signal.SIGTERM)
        for agent in self.processes:
            with contextlib.suppress(AssertionError):
                if agent.running:
                    agent.wait_exit(120.0)
            agent.kill()

    def scrapes(self) -> list[Scrape | None]:
        """Every agent's ``/metrics``, scraped at once (as many Prometheus targets are: a
        busy agent answers slowly, and in turn a round of four took up to 7 s, the
        resolution of the handover gap)."""
        def one(agent: AgentProcess) -> Scrape | None:
            return scrape(agent) if agent.running else None

        with ThreadPoolExecutor(len(self.processes)) as pool:
            return list(pool.map(one, self.processes))

    def read(self, scrapes: Sequence[Scrape | None]) -> float:
        return sum(sum(s.processed.values()) for s in scrapes if s is not None)

    def wait(self, condition: Callable[[], bool], timeout_s: float, what: str, *,
             interval_s: float = 0.5) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                tails = "\n".join(agent.log(3000) for agent in self.processes)
                raise TimeoutError(f"no {what} within {timeout_s:.0f} s\n{tails}")
            time.sleep(interval_s)


def run_configuration(bootstrap: str, fleet: Fleet, count: int, directory: Path,
                      expected: Mapping[tuple[str, Labels], float], *, seed: int = 25,
                      overrides: Mapping[str, Any] | None = None, producers: int = PRODUCERS,
                      produce_seconds: float = 0.0, rate: float = 0.0,
                      timeout_s: float = 3600.0, static: bool = False) -> Result:
    """One configuration on a topic and group (so a state topic) of its own: a random share
    (:data:`KILL_SHARE`) of every model's events produced, ``count`` agents started; the rest
    produced while they read, over about ``produce_seconds`` or at about ``rate`` records a
    second, whichever is slower (both 0: as fast as the producers go); once every agent has saved
    and the first share is read, a random 0 to 3 s later one agent is SIGKILLed and started
    again; then wait until the whole stream is read and measure (module docstring). A
    configuration not done within ``timeout_s`` (a group that churns for ever) is reported
    as not finished, with what was measured until then. ``static``: static members
    (:func:`fleet_settings`)."""
    started = time.monotonic()
    FAILED_SCRAPES.clear()
    rng = random.Random(seed * 100 + count)
    result = Result(count)
    group = topic = f"fleet-{count}-{seed}"
    create_topics(bootstrap, topic, partitions=fleet.partitions)
    first = round(rng.uniform(*KILL_SHARE) * fleet.events)
    result.before = (first * fleet.models, produce_fleet(bootstrap, topic, fleet, 0, first,
                                                         producers=producers))
    processes = [AgentProcess(fleet_settings(bootstrap, topic, group, f"{group}-{i}",
                                             fleet.models, overrides, static=static),
                              directory, f"{group}-{i}")
                 for i in range(count)]
    with Agents(processes) as agents, ThreadPoolExecutor(1) as background:
        logged: dict[str, int] = {}
        pauses: list[list[tuple[float, float]]] = []

        def left() -> float:
            return max(started + timeout_s - time.monotonic(), 1.0)

        try:
            for agent in agents.processes:
                agent.wait_ready(left())
            seconds = max(produce_seconds,
                          (fleet.total - result.before[0]) / rate if rate > 0 else 0.0)
            rest = background.submit(produce_fleet, bootstrap, topic, fleet, first, fleet.events,
                                     producers=producers, seconds=seconds)

            def ready_to_kill() -> bool:
                scrapes = agents.scrapes()
                return all(s is not None and (s.gauge("driftwatch_checkpoint_saves_total") or 0)
                           >= 1 for s in scrapes) and agents.read(scrapes) >= result.before[0]

            agents.wait(ready_to_kill, left(), "save by each agent and first share read")
            time.sleep(rng.uniform(0.0, 3.0))
            victim = rng.choice(agents.processes)
            at_kill = agents.scrapes()
            before = at_kill[agents.processes.index(victim)]
            assert before is not None, victim.log()
            victim.stop(signal.SIGKILL)
            killed_at = time.monotonic()
            with (directory / "kills.log").open("a") as kills:  # for reading the agents' logs
                kills.write(f"{time.time():.3f} SIGKILL {victim.name}\n")
            result.read_at_kill = agents.read(at_kill) / fleet.total
            logged.update({agent.name: len(agent.output()) for agent in agents.processes})
            victim.launch()  # the replacement, as Kubernetes restarts a killed container
            owned = set(before.processed)
            pauses.append(before.pauses)
            # The end and the start of the last round that missed a model.
            missed_at = [killed_at, killed_at]

            def handed_over() -> bool:
                exported: set[str] = set()
                asked = time.monotonic()
                for each in agents.scrapes():
                    if each is not None:
                        exported |= each.processed.keys()
                now = time.monotonic()
                if owned <= exported:
                    result.gap_s = now - killed_at
                    result.gap_round_s = now - missed_at[0]
                    result.gap_asked_s = asked - killed_at
                    result.gap_asked_round_s = asked - missed_at[1]
                    return True
                missed_at[:] = [now, asked]
                return False

            agents.wait(handed_over, left(), "handover of the killed agent's models",
                        interval_s=0.1)
            result.during = (fleet.total - result.before[0], rest.result(timeout=left()))
            final: list[Scrape] = []

            def all_read() -> bool:
                """Every event counted once: the group settled, no model on two agents
                (scraped one after another, a model moving between them in a rebalance
                can be seen on both, or on neither)."""
                scrapes = agents.scrapes()
                final[:] = [s for s in scrapes if s is not None]
                return len(final) == count and agents.read(final) == fleet.total and \
                    not overlap(final)

            agents.wait(all_read, left(), f"{fleet.total} events read")
            for each in final:
                pauses.append(each.pauses)
                result.rss_mib.append((each.gauge("process_resident_memory_bytes") or 0) / 2**20)
                result.scrapes.append((len(each.body) / 1e6, each.wire / 1e6, each.seconds))
            try:
                result.equal = compare(union([Metrics.parse(s.body.decode()) for s in final]),
                                       expected)
            except AssertionError as error:
                result.equal = f"NO: {str(error)[:300]}"
        except (TimeoutError, AssertionError) as error:  # a stage outlasted timeout_s
            now = [s for s in agents.scrapes() if s is not None]
            pauses += [each.pauses for each in now]
            result.rss_mib = [(each.gauge("process_resident_memory_bytes") or 0) / 2**20
                              for each in now]
            result.equal = (f"NOT FINISHED in {timeout_s / 60:.0f} min ("
                            f"{agents.read(now) / fleet.total:.0%} read, {len(overlap(now))} "
                            f"model(s) on two agents): {str(error).splitlines()[0]}")
        highest = [longest_pause(p) for p in pauses if p]
        if highest:  # the killed agent's before the kill, and every agent's at the end
            result.pause_s = max(h[0] for h in highest)
            result.long_pauses = sum(h[1] for h in highest)
            result.pauses = sum(h[2] for h in highest)
        for agent in agents.processes:
            log = agent.output()
            result.restores += restores(log[logged.get(agent.name, 0):])
            result.slowest_restore_s = max(
                [r[2] for r in restores(log)] + [result.slowest_restore_s],
                key=lambda x: -1.0 if math.isnan(x) else x)
            result.assignments += log.count("partitions assigned")
            result.lost += log.count("partitions lost")
    result.seconds = time.monotonic() - started
    return result


# ------------------------------------------------------------------------------------------
# the table


def _rate(records: int, seconds: float) -> str:
    return f"{records} in {seconds:.0f} s ({records / max(seconds, 1e-9):,.0f}/s)"


def row(kind: str, fleet: Fleet, result: Result) -> str:
    slowest = max(result.restores, key=lambda r: r[2], default=None)
    restore = "none logged" if slowest is None else (
        f"{slowest[2]:.2f} ({slowest[0]} models, {slowest[1]} partitions)")
    per_partition = "–" if slowest is None or not slowest[1] else f"{slowest[2] / slowest[1]:.2f}"
    kill = "no kill" if math.isnan(result.read_at_kill) else (
        f"{result.read_at_kill:.0%}" + ("" if result.killed_mid_stream else " (the end)"))
    scrapes = " / ".join(f"{mb:.1f} MB ({z:.1f} gzip), {s:.2f} s"
                         for mb, z, s in result.scrapes)
    cut_off = f" ({sum(FAILED_SCRAPES.values())} cut off)" if FAILED_SCRAPES else ""
    return (f"| {broker_label(kind)} | {result.agents} | {fleet.models} / {fleet.partitions} "
            f"| {_rate(*result.before)} | {_rate(*result.during)} "
            f"| {kill} | {restore} | {per_partition} | {result.slowest_restore_s:.2f} "
            f"| {result.gap_s:.1f} (± {result.gap_round_s:.1f}); asked at "
            f"{result.gap_asked_s:.1f} (± {result.gap_asked_round_s:.1f}) "
            f"| ≤ {result.pause_s:g} | {result.long_pauses:.0f} of {result.pauses:.0f} "
            f"| {' / '.join(f'{r:.0f}' for r in result.rss_mib)} "
            f"| {scrapes}{cut_off} "
            f"| {result.assignments} / {result.lost} | {result.equal} "
            f"| {result.seconds / 60:.1f} |")


HEADER = ("| broker | agents | models / partitions | produced before the agents "
          "| produced while they run | read when one is killed "
          "| slowest restore after the kill, s | per partition, s "
          "| slowest restore of the run, s "
          "| handover gap, s: at the end of the round of scrapes that found every model (± "
          "since the end of the last that missed one); asked at: when that round's requests "
          "went out (± since the last's) | longest loop pause, s "
          f"| pauses > {PAUSE_TARGET_S} s (of all) | RSS per agent, MiB | final scrape per agent "
          "| \"partitions assigned\" / \"lost\" (evicted) log lines "
          "| union of /metrics = reference | minutes |")


def table(models: int, agent_counts: Sequence[int], broker: str, events: int = EVENTS_PER_MODEL,
          producers: int = PRODUCERS, timeout_s: float = 1800.0,
          assignment_strategy: str = "range", per_model: str = "all",
          logs: Path | None = None, static: bool = False,
          session_timeout_ms: int | None = None, rate: float = 0.0, seed: int = 25) -> None:
    fleet = Fleet(models, events)
    settings = Settings.model_validate({"limits": {"max_models": models},
                                        "metrics": {"per_model": per_model}})
    started = time.monotonic()
    expected = reference_state(fleet, settings)
    print(f"{models} models, d = {settings.monitoring.defaults.window_size}, {events} events "
          f"each ({fleet.total} records) over {fleet.partitions} partitions keyed by model, "
          f"{producers} producer processes; reference (pure monitors) built in "
          f"{time.monotonic() - started:.0f} s; the agents with the default group timeouts "
          f"and checkpoint interval, state topic backend, kafka.assignment_strategy "
          f"{assignment_strategy}, metrics.per_model {per_model}"
          f"{', static members (kafka.group_instance_id)' if static else ''}"
          f"{f', kafka.session_timeout_ms {session_timeout_ms}' if session_timeout_ms else ''}"
          "; the rest of the stream produced while they run "
          f"{f'at about {rate:,.0f} records/s' if rate > 0 else 'as fast as the producers go'}"
          "\n", flush=True)
    kafka: dict[str, Any] = {"assignment_strategy": assignment_strategy}
    if session_timeout_ms:
        kafka["session_timeout_ms"] = session_timeout_ms
    print(HEADER)
    print("|---" * (HEADER.count("|") - 1) + "|")
    if logs is not None:
        os.makedirs(logs, exist_ok=True)
    for kind in broker_kinds(broker):
        kept = None if logs is None else tempfile.mkdtemp(prefix=f"fleet-{kind}-", dir=logs)
        with (tempfile.TemporaryDirectory() if kept is None else contextlib.nullcontext(kept)
              ) as directory, open_broker(kind) as opened:
            for count in agent_counts:
                result = run_configuration(
                    opened.bootstrap, fleet, count, Path(directory), expected,
                    producers=producers, timeout_s=timeout_s,
                    overrides={"kafka": kafka, "metrics": {"per_model": per_model}},
                    static=static, rate=rate, seed=seed)
                print(row(kind, fleet, result), flush=True)


def main(quick: bool = False, broker: str = "apache") -> None:
    """Both kinds of traffic (module docstring) at export level ``standard``."""
    models = QUICK_MODELS if quick else MODELS
    for rate in (PROVISIONED_EVENTS_PER_MODEL_S * models, 0.0):
        table(models, QUICK_AGENTS if quick else AGENTS, broker, per_model="standard",
              timeout_s=QUICK_TIMEOUT_S if quick else TIMEOUT_S, rate=rate)
        print()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fleet_kill",
                                     description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_MODELS} models, {QUICK_AGENTS} agents")
    parser.add_argument("--models", type=int)
    parser.add_argument("--events", type=int, default=EVENTS_PER_MODEL)
    parser.add_argument("--agents", type=int, nargs="+")
    parser.add_argument("--producers", type=int, default=PRODUCERS)
    parser.add_argument("--broker", choices=("tansu", "apache", "both"), default="apache")
    parser.add_argument("--minutes", type=float, help="bound on one configuration "
                        f"(default {TIMEOUT_S / 60:.0f}, --quick {QUICK_TIMEOUT_S / 60:.0f})")
    parser.add_argument("--assignment-strategy", default="range",
                        choices=("cooperative-sticky", "range", "roundrobin"),
                        help="the agents' kafka.assignment_strategy (range, the default: eager)")
    parser.add_argument("--per-model", default="all", choices=("all", "standard", "minimal"),
                        help="the agents' metrics.per_model export level (all, the default)")
    parser.add_argument("--static", action="store_true",
                        help="static members: each agent's kafka.group_instance_id is its "
                        "name, kept by its restart after the kill")
    parser.add_argument("--session-timeout-ms", type=int,
                        help="the agents' kafka.session_timeout_ms (default: the setting's)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="records a second of the part of the stream produced while the "
                        "agents run (default 0: as fast as the producers go, which keeps every "
                        "agent catching up; a rate they keep up with is traffic as provisioned)")
    parser.add_argument("--seed", type=int, default=25,
                        help="draws the share read before the kill, the moment and the victim "
                        "(the stream is the same whatever the seed)")
    parser.add_argument("--logs", type=Path, help="keep the agents' settings and logs in a "
                        "new directory under this one (default: deleted after the run)")
    args = parser.parse_args()
    table(args.models or (QUICK_MODELS if args.quick else MODELS),
          args.agents or (QUICK_AGENTS if args.quick else AGENTS), args.broker, args.events,
          args.producers, 60 * args.minutes if args.minutes else
          QUICK_TIMEOUT_S if args.quick else TIMEOUT_S, args.assignment_strategy,
          args.per_model, args.logs, args.static, args.session_timeout_ms, args.rate,
          args.seed)
