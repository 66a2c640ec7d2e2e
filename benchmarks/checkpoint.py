"""The cost of a checkpoint save, which sets the default checkpoint (and so commit) interval.

For 1, 100 and 1000 models with full default windows (d = 1000, the default watches), the
agent's save is timed as the loop does it (``Checkpointer.save``): export every monitor's
state, check and encode it as JSON, write a temporary file, fsync it, rename it over the
checkpoint, fsync the directory. The loop stops for that long, and after a crash the records since
the last save are read again, so the interval trades the share of time spent saving against
the re-delivery window:

    share of loop time = save seconds / interval        re-delivery <= interval (+ save)

The table prints both for the default interval (5 s) and the stretch the agent applies when a
save is long (interval = max(5 s, 10 x save), so saves take at most 10 % of the time), and the
cost of restoring (read + JSON decode) at start. ``python -m benchmarks checkpoint``.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time

from driftwatch.agent.checkpointer import Checkpointer
from driftwatch.core.events import Event
from driftwatch.core.monitor import MonitorConfig
from driftwatch.pipeline import Monitors
from driftwatch.state.checkpoint import CheckpointStore

MODELS = (1, 100, 1000)
QUICK_MODELS = (1, 100)
WINDOW = 1000
INTERVAL_S = 5.0


def _monitors(count: int) -> Monitors:
    rng = random.Random(5)
    monitors = Monitors(lambda model: MonitorConfig(window_size=WINDOW), count)
    events = []
    for i in range(WINDOW + 500):
        label = int(rng.random() < 0.3)
        score = min(1.0, max(0.0, rng.gauss(0.6 if label else 0.4, 0.2)))
        events.append(Event(label, score, ts=float(i)))
    for index in range(count):
        monitor = monitors.get(f"model-{index}")
        assert monitor is not None
        for event in events:
            monitor.update(event)
    return monitors


def measure(count: int, repeats: int) -> dict[str, float]:
    monitors = _monitors(count)
    with tempfile.TemporaryDirectory() as directory:
        store = CheckpointStore(directory)
        checkpointer = Checkpointer(store, INTERVAL_S)
        saves = []
        for _ in range(repeats):
            started = time.perf_counter()
            assert checkpointer.save(lambda: {"offsets": {"events:0": 1}, "rejected": {},
                                              "monitors": monitors.export_state()}, {})
            saves.append(time.perf_counter() - started)
        size = store.path.stat().st_size
        started = time.perf_counter()
        store.read()
        load = time.perf_counter() - started
    save = statistics.median(saves)
    interval = max(INTERVAL_S, save / Checkpointer.MAX_SAVE_SHARE)
    return {"models": count, "save": save, "bytes": size, "load": load, "interval": interval,
            "share": save / interval}


def main(quick: bool = False) -> None:
    print("| models (d = 1000) | save (export + JSON + write + fsyncs) | size | restore "
          "| interval used | time spent saving | re-delivery after a kill |")
    print("|---|---|---|---|---|---|---|")
    for count in QUICK_MODELS if quick else MODELS:
        row = measure(count, repeats=3 if count >= 1000 else 5)
        print(f"| {count} | {row['save'] * 1000:.0f} ms | {row['bytes'] / 1e6:.2f} MB "
              f"| {row['load'] * 1000:.0f} ms | {row['interval']:.1f} s "
              f"| {row['share']:.1%} | <= {row['interval'] + row['save']:.1f} s of records |")


if __name__ == "__main__":
    main()
