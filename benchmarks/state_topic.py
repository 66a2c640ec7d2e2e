"""The state topic: time to save and to restore N models, and bytes per model in it.

For 1, 100 and 1000 models with full default windows (d = 1000, the default watches), spread
over four input partitions, on a real broker (Tansu, memory storage, same machine):

- **save**: :meth:`StateTopicStore.save` of the agent's payload (export excluded, as for the
  file: JSON encoding, one record per model plus one per partition, acks=all, flush);
- **bytes per model**: record keys and values the save wrote, divided by the models;
- **restore all**: what a new owner of all four partitions does on assignment: read the
  topic to its end (one save in it, as after compaction), decode, and rebuild every
  :class:`~driftwatch.core.monitor.Monitor`; **restore 1/4**: the same for one partition (a
  replica of four after a rebalance), which still reads the whole topic;
- the **file** checkpoint of the same monitors, measured in the same run (save with fsyncs;
  read + restore), as the reference.

``python -m benchmarks state_topic`` (``--quick``: 1 and 100 models).
"""

from __future__ import annotations

import json
import logging
import statistics
import tempfile
import time
from typing import Any

from benchmarks.checkpoint import WINDOW, _monitors
from driftwatch.agent.partition_states import PartitionStates
from driftwatch.core.monitor import Monitor, MonitorConfig
from driftwatch.demo.broker import EmbeddedBroker
from driftwatch.state.checkpoint import CheckpointStore
from driftwatch.state.topic import StateTopicStore

MODELS = (1, 100, 1000)
QUICK_MODELS = (1, 100)
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
