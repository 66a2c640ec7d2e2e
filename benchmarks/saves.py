"""How long a save to the state topic stops the loop, and what it writes.

For 1 000 and 10 000 models with full default windows (d = 1 000, the default watches) over 8
input partitions, on a real broker (Tansu, memory storage, same machine):

- **whole save** (every save before issue 25, and still a revoke's and the last one's when
  every model moved): export every model, send, flush; the loop stops for all of it;
- **sliced save** (the loop's save now, :mod:`driftwatch.agent.sliced_save`): the snapshot,
  then at most ``SAVE_SLICE_S`` of exports per loop iteration, sent without waiting, the
  joins and metas as acknowledgements arrive. The loop's longest pause is its longest step
  (the snapshot is one); its wall time is the save's duration, which the loop's own work
  stretches in the agent;
- **all moved** (the first save, or every model took events) and **one in ten moved** (the
  changed-only rule: the others are neither exported nor written);
- bytes: record keys and values written.

``python -m benchmarks saves`` (``--quick``: 1 000 models only).
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Any

from benchmarks.checkpoint import WINDOW, _monitors
from driftwatch.agent.checkpointer import SAVE_SLICE_S
from driftwatch.agent.partition_states import PartitionStates
from driftwatch.agent.sliced_save import SlicedSave
from driftwatch.core.events import Event
from driftwatch.core.monitor import MonitorConfig
from driftwatch.demo.broker import EmbeddedBroker
from driftwatch.pipeline import Monitors, progress
from driftwatch.state.topic import StateTopicStore

MODELS = (1_000, 10_000)
QUICK_MODELS = (1_000,)
PARTITIONS = [("events", p) for p in range(8)]


def _fleet(count: int) -> tuple[Monitors, PartitionStates, dict[Any, int]]:
    """``count`` monitors with full windows (copies of one, as big as distinct ones), homed
    round-robin over :data:`PARTITIONS`."""
    template = _monitors(1).export_state()["model-0"]
    monitors = Monitors(lambda model: MonitorConfig(window_size=WINDOW), count)
    monitors.restore({f"model-{i}": template for i in range(count)})
    partitioned = PartitionStates()
    for index, model in enumerate(monitors.by_model):
        partitioned.take(model, PARTITIONS[index % len(PARTITIONS)], index)
    return monitors, partitioned, {tp: 10 * count for tp in PARTITIONS}


def whole(store: StateTopicStore, monitors: Monitors, partitioned: PartitionStates,
          positions: dict[Any, int]) -> tuple[float, int]:
    """Every model exported and written at once: (loop pause, bytes)."""
    gc.disable()
    try:
        started = time.perf_counter()
        store.save(partitioned.payload({m: mon.export_state()
                                        for m, mon in monitors.by_model.items()}, positions))
        return time.perf_counter() - started, store.last_save_bytes
    finally:
        gc.enable()


def sliced(store: StateTopicStore, monitors: Monitors, partitioned: PartitionStates,
           positions: dict[Any, int]) -> dict[str, float]:
    """The loop's save: the changed models in slices; its longest step, wall time, bytes."""
    by_model = monitors.by_model

    def export(models: Any) -> tuple[dict[str, Any], dict[str, object]]:
        payload = partitioned.payload({m: by_model[m].export_state() for m in models},
                                      positions)
        return payload, {m: progress(by_model[m]) for m in models}

    gc.disable()
    try:
        started = time.perf_counter()
        changed = partitioned.unsaved({m: progress(mon) for m, mon in by_model.items()})
        saving = SlicedSave(store.round(partitioned.payload({}, positions)), positions,
                            list(changed), partitioned.writer, slice_s=SAVE_SLICE_S,
                            clock=time.perf_counter)
        snapshot = time.perf_counter() - started
        while not saving.step(export):
            time.sleep(0.001)  # the loop's own iteration (a poll, a batch)
        wall = time.perf_counter() - started
    finally:
        gc.enable()
    partitioned.saved(saving.exported, saving.writer)
    return {"pause": max(snapshot, saving.longest_step_s), "wall": wall,
            "bytes": saving.saving.written, "models": len(changed)}


def main(quick: bool = False) -> None:
    logging.getLogger("kafka").setLevel(logging.ERROR)
    print(f"| models (d = 1000), 8 partitions | moved | whole save: loop pause | sliced: "
          f"longest pause (slice {SAVE_SLICE_S:.1f} s) | sliced: wall time | models written "
          "| MB written | pause sliced / whole |")
    print("|---|---|---|---|---|---|---|---|")
    with EmbeddedBroker() as broker:
        for count in QUICK_MODELS if quick else MODELS:
            monitors, partitioned, positions = _fleet(count)
            store = StateTopicStore({"bootstrap_servers": broker.bootstrap}, f"saves-{count}",
                                    request_timeout_s=60.0)
            try:
                before, before_bytes = whole(store, monitors, partitioned, positions)
                for moved in ("all", "one in ten"):
                    if moved == "one in ten":
                        for index, monitor in enumerate(monitors.by_model.values()):
                            if index % 10 == 0:
                                monitor.update(Event(1, 0.9, ts=1e6))
                        positions = {tp: offset + count for tp, offset in positions.items()}
                    row = sliced(store, monitors, partitioned, positions)
                    print(f"| {count} | {moved} | {before:.2f} s ({before_bytes / 1e6:.0f} MB) "
                          f"| {row['pause']:.3f} s | {row['wall']:.1f} s "
                          f"| {row['models']:.0f} | {row['bytes'] / 1e6:.1f} "
                          f"| {row['pause'] / before:.3f} |")
            finally:
                store.close()
            del monitors, partitioned
            gc.collect()
