"""The state topic: time to save and to restore N models, and bytes per model in it.

For 1, 100 and 1000 models with full default windows (d = 1000, the default watches), spread
over four input partitions, on a real broker (Tansu, memory storage, same machine):

- **save**: :meth:`StateTopicStore.save` of the agent's payload (export excluded, as for the
  file: JSON encoding, one record per model plus one per partition, acks=all, flush);
- **bytes per model**: record keys and values the save wrote, divided by the models;
- **restore all**: what a new owner of all four partitions does on assignment: read the
  topic to its end (one save in it, as after compaction), decode, and rebuild every
  :class:`~driftwatch.core.monitor.Monitor`; **restore 1/4**: the same for one partition (a
  replica of four after a rebalance); the topic here has one partition, so that too reads
  the whole topic;
- the **file** checkpoint of the same monitors, measured in the same run (save with fsyncs;
  read + restore), as the reference.

Then **restore by partition** (:mod:`driftwatch.state.topic_layout`): a topic holding
10 000 models over 8 input partitions (1 250 each); the restore of one input partition
(read, decode, :meth:`Monitor.restore`) from a one-partition topic (what every restore did
before the layout: the whole topic) against an 8-partition topic (its state partition
only), and against an 8-partition topic holding that partition's 1 250 models only (its
cost does not depend on the other partitions' models).

Then **the restore in slices** (issue 25, item 2): the same partition's 1 250 models
restored the way the agent's loop does it now, :meth:`~driftwatch.agent.handover.Handover.step`
slices of :data:`~driftwatch.agent.handover.RESTORE_SLICE_S` between polls, against the
restore in one go (``load``, every :meth:`Monitor.restore` and its first snapshot for the
publish: before, the rebalance callback did this and the loop stood still for all of it):
total time and the longest slice, which is the longest the loop pauses for a restore.

``python -c "import benchmarks.state_topic as b; b.whole_fleet_only()"`` restores all
10 000 models (every input partition: a lone replica after a restart) the same way, at
``metrics.per_model`` ``standard``, on Apache Kafka (``whole_fleet_only("tansu")``: Tansu);
``b.in_loop_only()`` has a real agent's loop restore them (its Kafka source, the polls
between the slices included), with the held polls' old and new longest waits alternately.

``python -m benchmarks state_topic`` (``--quick``: 1 and 100 models; 1 250 models over 8
partitions).
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any

import driftwatch.kafka.source as source_module
from benchmarks.brokers import open_broker
from benchmarks.checkpoint import WINDOW, _monitors
from driftwatch.agent.handover import RESTORE_SLICE_S
from driftwatch.agent.loop import Agent
from driftwatch.agent.partition_states import PartitionStates
from driftwatch.core.monitor import Monitor, MonitorConfig
from driftwatch.demo.broker import EmbeddedBroker
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.settings import Settings
from driftwatch.state.checkpoint import CheckpointStore
from driftwatch.state.topic import StateTopicStore
from tests.integration.helpers import create_topics

MODELS = (1, 100, 1000)
QUICK_MODELS = (1, 100)
FLEET = 10_000
QUICK_FLEET = 1_250
FLEET_PARTITIONS = 8
PARTITIONS = [("events", p) for p in range(4)]
CONFIG = MonitorConfig(window_size=WINDOW)


def _restore(states: dict[str, Any]) -> None:
    for state in states.values():
        Monitor.restore(state, config=CONFIG)


def measure(bootstrap: str, count: int) -> dict[str, float]:
    states = _monitors(count).export_state()
    partitioned = PartitionStates()
    for index, model in enumerate(states):
        partitioned.take(model, PARTITIONS[index % 4], 0)
    positions = {tp: 1500 * count for tp in PARTITIONS}
    payload = partitioned.payload(states, positions)
    store = StateTopicStore({"bootstrap_servers": bootstrap}, f"state-{count}",
                            request_timeout_s=30.0)
    try:
        started = time.perf_counter()
        store.save(payload)
        save = time.perf_counter() - started
        written = store.last_save_bytes
    finally:
        store.close()
    restores = {}
    for name, partitions in (("all", PARTITIONS), ("quarter", PARTITIONS[:1])):
        times = []
        for _ in range(3 if count < 1000 else 1):
            reader = StateTopicStore({"bootstrap_servers": bootstrap}, f"state-{count}",
                                     request_timeout_s=30.0)
            started = time.perf_counter()
            restored = reader.load(partitions)
            _restore(restored.monitors)
            times.append(time.perf_counter() - started)
        restores[name] = statistics.median(times)
    with tempfile.TemporaryDirectory() as directory:
        file_store = CheckpointStore(directory)
        started = time.perf_counter()
        file_store.save({"offsets": {}, "rejected": {}, "monitors": states})
        file_save = time.perf_counter() - started
        started = time.perf_counter()
        checkpoint = file_store.read()
        assert checkpoint is not None
        _restore(checkpoint.payload["monitors"])
        file_restore = time.perf_counter() - started
    return {"save": save, "per_model": written / count, "all": restores["all"],
            "quarter": restores["quarter"], "file_save": file_save,
            "file_restore": file_restore}


def fleet_payloads(total: int, only: int | None = None) -> list[dict[str, Any]]:
    """One save per input partition of ``total`` models spread over :data:`FLEET_PARTITIONS`
    (the same window state under every name: the records are as big as distinct ones);
    ``only``: that partition's save alone."""
    per_partition = total // FLEET_PARTITIONS
    states = _monitors(per_partition).export_state()
    payloads = []
    for partition in range(FLEET_PARTITIONS) if only is None else (only,):
        tp = ("events", partition)
        partitioned = PartitionStates()
        named = {f"p{partition}-{model}": {**state, "model": f"p{partition}-{model}"}
                 for model, state in states.items()}
        for model in named:
            partitioned.take(model, tp, 0)
        payloads.append(partitioned.payload(named, {tp: 1500 * per_partition}))
    return payloads


def fleet_restore(bootstrap: str, topic: str, state_partitions: int,
                  payloads: list[dict[str, Any]], repeats: int) -> dict[str, float]:
    """Save ``payloads`` to a new topic of ``state_partitions``; restore input partition 3
    (median of ``repeats``), with what the restore read."""
    writer = StateTopicStore({"bootstrap_servers": bootstrap}, topic,
                             partitions=state_partitions, request_timeout_s=60.0)
    try:
        for payload in payloads:
            writer.save(payload)
    finally:
        writer.close()
    times = []
    for _ in range(repeats):
        reader = StateTopicStore({"bootstrap_servers": bootstrap}, topic,
                                 request_timeout_s=60.0)
        started = time.perf_counter()
        restored = reader.load([("events", 3)])
        _restore(restored.monitors)
        times.append(time.perf_counter() - started)
        assert len(restored.monitors) == len(payloads[0]["models"])
    return {"restore": statistics.median(times), "records": reader.last_load_records,
            "megabytes": reader.last_load_bytes / 1e6,
            "models": sum(len(p["models"]) for p in payloads)}


def fleet(bootstrap: str, total: int) -> None:
    """The restore-by-partition table (module docstring)."""
    payloads = fleet_payloads(total)
    rows = [("whole topic (1 state partition: before)", f"fleet-1-{total}", 1, payloads, 1),
            ("its state partition (8)", f"fleet-8-{total}", FLEET_PARTITIONS, payloads, 3),
            ("its state partition (8), its models only", f"fleet-own-{total}",
             FLEET_PARTITIONS, payloads[3:4], 3)]
    print(f"| restore input partition 3 of 8 ({total // FLEET_PARTITIONS} models), "
          "d = 1000 | models in the topic | records read | MB read | restore | "
          "/ whole topic |")
    print("|---|---|---|---|---|---|")
    before = None
    for label, topic, state_partitions, saved, repeats in rows:
        row = fleet_restore(bootstrap, topic, state_partitions, saved, repeats)
        before = before or row["restore"]
        print(f"| {label} | {row['models']:.0f} | {row['records']:.0f} "
              f"| {row['megabytes']:.0f} | {row['restore']:.2f} s "
              f"| {row['restore'] / before:.2f} |")


def sliced(bootstrap: str, total: int = FLEET, repeats: int = 3,
           partitions: Sequence[int] = (3,), per_model: str = "all") -> None:
    """The restore-in-slices table (module docstring): input partition 3's models only, in an
    8-partition topic (``python -c "import benchmarks.state_topic as b; b.sliced_only()"``
    runs this part alone); ``partitions``: those input partitions' models (every one: what
    a lone replica restores after a restart, :func:`whole_fleet_only`), exported at
    ``metrics.per_model`` ``per_model`` (the first snapshot of each is part of a restore)."""
    topic = f"sliced-{total}-{len(partitions)}"
    writer = StateTopicStore({"bootstrap_servers": bootstrap}, topic,
                             partitions=FLEET_PARTITIONS, request_timeout_s=60.0)
    try:
        for partition in partitions:
            writer.save(fleet_payloads(total, only=partition)[0])
    finally:
        writer.close()
    models = total // FLEET_PARTITIONS * len(partitions)
    assigned = {TopicPartition("events", p) for p in partitions}
    one_go, whole, longest, slices = [], [], [], []
    for _ in range(repeats):
        if per_model == "all":  # what the rebalance callback did, at the level it had
            reader = StateTopicStore({"bootstrap_servers": bootstrap}, topic,
                                     request_timeout_s=60.0)
            started = time.perf_counter()
            for state in reader.load(sorted(assigned)).monitors.values():
                Monitor.restore(state, config=CONFIG).snapshot()  # the publish that followed
            one_go.append(time.perf_counter() - started)
        agent = Agent(Settings(kafka={"bootstrap_servers": [bootstrap], "topics": ["events"]},
                               checkpoint={"backend": "kafka", "topic": topic},
                               limits={"max_models": max(models, 1000)},
                               metrics={"per_model": per_model}))
        handover = agent.handover
        assert handover is not None and isinstance(agent.checkpointer.store, StateTopicStore)
        agent.checkpointer.store.ensure_topic()  # the first contact's check
        times = []
        handover.queue(assigned)
        while handover.restoring:
            started = time.perf_counter()
            handover.step(RESTORE_SLICE_S)
            times.append(time.perf_counter() - started)
        assert len(agent.monitors.export_state()) == models
        whole.append(sum(times))
        longest.append(max(times))
        slices.append(len(times))
        agent.checkpointer.store.close()
    which = f"input partition {partitions[0]}" if len(partitions) == 1 else \
        f"{len(partitions)} input partitions"
    print(f"| restore {which} ({models} models, d = 1000, metrics.per_model {per_model}), "
          f"median of {repeats} | total | longest loop pause | slices |")
    print("|---|---|---|---|")
    if one_go:
        print(f"| in one go (load, Monitor.restore, first snapshot: in the rebalance "
              "callback, before) "
              f"| {statistics.median(one_go):.2f} s | {statistics.median(one_go):.2f} s | 1 |")
    print(f"| in slices of {RESTORE_SLICE_S} s between polls (Handover.step, now) "
          f"| {statistics.median(whole):.2f} s | {statistics.median(longest):.3f} s "
          f"| {statistics.median(slices):.0f} |")


def restore_checks(count: int = 50, repeats: int = 5) -> tuple[float, float, float]:
    """Per model, best of ``repeats``: decoding the record's JSON, :meth:`Monitor.restore`
    of the window events as JSON gives them back (lists of int, float, int: checked inline),
    and of the same events as tuples (the named validators, which every event took before
    the inline check; the same work otherwise). Both restore the same monitor."""
    states = _monitors(count).export_state()
    encoded = [json.dumps(state) for state in states.values()]
    slow = [{**state, "window": {**state["window"], "events": [
        tuple(event) for event in state["window"]["events"]]}} for state in states.values()]
    for state, other in zip(states.values(), slow, strict=True):
        assert Monitor.restore(other, config=CONFIG).export_state() == \
            Monitor.restore(state, config=CONFIG).export_state()

    def best(run: Any) -> float:
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        return min(times) / count

    decode = best(lambda: [json.loads(text) for text in encoded])
    fast = best(lambda: [Monitor.restore(state, config=CONFIG) for state in states.values()])
    named = best(lambda: [Monitor.restore(state, config=CONFIG) for state in slow])
    return decode, fast, named


def main(quick: bool = False) -> None:
    logging.getLogger("kafka").setLevel(logging.ERROR)
    decode, fast, named = restore_checks()
    print("| per model (d = 1000) | JSON decode | Monitor.restore | the same with the named "
          "validators per event | ratio |")
    print("|---|---|---|---|---|")
    print(f"| 50 models, best of 5 | {decode * 1000:.2f} ms | {fast * 1000:.2f} ms "
          f"| {named * 1000:.2f} ms | {fast / named:.2f} |")
    print()
    print("| models (d = 1000) | save to topic | bytes per model | restore all (4 partitions) "
          "| restore 1 of 4 partitions | file: save (fsync) | file: restore | "
          "restore all / file restore |")
    print("|---|---|---|---|---|---|---|---|")
    with EmbeddedBroker() as broker:
        for count in QUICK_MODELS if quick else MODELS:
            row = measure(broker.bootstrap, count)
            print(f"| {count} | {row['save'] * 1000:.0f} ms | {row['per_model'] / 1000:.1f} kB "
                  f"| {row['all'] * 1000:.0f} ms | {row['quarter'] * 1000:.0f} ms "
                  f"| {row['file_save'] * 1000:.0f} ms | {row['file_restore'] * 1000:.0f} ms "
                  f"| {row['all'] / row['file_restore']:.2f} |")
        print()
        fleet(broker.bootstrap, QUICK_FLEET if quick else FLEET)
        print()
        sliced(broker.bootstrap, repeats=1 if quick else 3)


def sliced_only() -> None:
    """The restore-in-slices table alone, on its own embedded broker."""
    logging.getLogger("kafka").setLevel(logging.ERROR)
    with EmbeddedBroker() as broker:
        sliced(broker.bootstrap)


def whole_fleet_only(broker: str = "apache", repeats: int = 1) -> None:
    """The restore of all 10 000 models (8 input partitions) in slices at export level
    ``standard``, what a lone replica restarted does, on ``broker`` (``apache``: Apache
    Kafka, what the fleet benchmark runs; ``tansu``): ``python -c "import
    benchmarks.state_topic as b; b.whole_fleet_only()"``."""
    logging.getLogger("kafka").setLevel(logging.ERROR)
    with open_broker(broker) as opened:
        sliced(opened.bootstrap, repeats=repeats, partitions=range(FLEET_PARTITIONS),
               per_model="standard")


def in_loop(bootstrap: str, topic: str, held_poll_s: float) -> float:
    """Seconds from assignment to resumption (:attr:`~driftwatch.agent.handover.Handover.
    last_restore_seconds_per_partition`, what the "restored" log line says) of every input
    partition of the 10 000 models saved in ``topic``, restored by a real agent's loop
    (:class:`~driftwatch.kafka.source.KafkaSource`, its polls between the slices waiting at
    most ``held_poll_s``), at ``metrics.per_model`` ``standard``."""
    source_module.HELD_POLL_TIMEOUT_S = held_poll_s
    agent = Agent(Settings(kafka={"bootstrap_servers": [bootstrap], "topics": ["events"],
                                  "group_id": f"in-loop-{time.time_ns()}"},
                           checkpoint={"backend": "kafka", "topic": topic},
                           metrics={"per_model": "standard", "port": 0},
                           limits={"max_models": FLEET}))
    handover = agent.handover
    assert handover is not None
    stop = threading.Event()
    thread = threading.Thread(target=agent.run, args=(stop,))
    thread.start()
    try:
        deadline = time.monotonic() + 600
        while handover.last_restore_seconds_per_partition is None and thread.is_alive() \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        restored = len(agent.monitors.by_model)
    finally:
        stop.set()
        thread.join()
    per_partition = handover.last_restore_seconds_per_partition
    assert per_partition is not None and restored == FLEET, (per_partition, restored)
    return per_partition * FLEET_PARTITIONS


def _in_loop_process(bootstrap: str, topic: str, held_poll_s: float,
                     results: Any) -> None:
    logging.getLogger("kafka").setLevel(logging.ERROR)
    results.put(in_loop(bootstrap, topic, held_poll_s))


def in_loop_only(broker: str = "apache", runs: int = 2) -> None:
    """The restore of all 10 000 models by a real agent's loop, the held polls between its
    slices waiting at most 20 ms (before) and :data:`~driftwatch.kafka.source.
    HELD_POLL_TIMEOUT_S` (now), alternately, each in a process of its own (a process that
    restored once is slower the next time: its heap holds the first agent's monitors):
    ``python -c "import benchmarks.state_topic as b; b.in_loop_only()"``."""
    logging.getLogger("kafka").setLevel(logging.ERROR)
    now = source_module.HELD_POLL_TIMEOUT_S
    context = multiprocessing.get_context("spawn")
    with open_broker(broker) as opened:
        create_topics(opened.bootstrap, "events", partitions=FLEET_PARTITIONS)
        writer = StateTopicStore({"bootstrap_servers": opened.bootstrap}, "in-loop",
                                 partitions=FLEET_PARTITIONS, request_timeout_s=60.0)
        try:
            for payload in fleet_payloads(FLEET):
                writer.save(payload)
        finally:
            writer.close()
        print(f"| restore of 8 input partitions (10 000 models, d = 1000, standard) in the "
              f"agent's loop, assignment to resumption | held polls wait ≤ 20 ms (before) "
              f"| ≤ {now * 1000:g} ms (now) |")
        print("|---|---|---|")
        for run in range(runs):
            took = []
            for held_poll_s in (0.02, now):
                results = context.Queue()
                process = context.Process(target=_in_loop_process, args=(
                    opened.bootstrap, "in-loop", held_poll_s, results))
                process.start()
                took.append(results.get(timeout=900))
                process.join()
            print(f"| run {run + 1} | {took[0]:.2f} s | {took[1]:.2f} s |", flush=True)
