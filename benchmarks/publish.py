"""How long publishing the snapshot stops the loop, and how fresh ``/metrics`` stays.

For 1 000 and 10 000 models with full default windows (d = 1 000, the default settings'
watches), every one moved since the last snapshot (the worst case: each took an event), at
each export level (``metrics.per_model``):

- **whole** (the loop's publish before, and still ``Agent.publish_now()``):
  every moved model's snapshot at once, normalizing every measure whatever the level shows;
  the loop stops for all of it;
- **in slices** (the loop's publish now, :mod:`driftwatch.agent.publish`): a round of at most
  ``PUBLISH_SLICE_S`` of snapshots between two polls, normalizing only what the level exports
  (:func:`~driftwatch.sinks.prometheus.families.normalized_shown`). Reported: the longest
  slice (the loop's pause), the slices, the round's work, and how often ``/metrics`` is then
  refreshed at worst: every ``max(snapshot_interval_s, work / PUBLISH_SHARE)``.

``python -m benchmarks publish`` (``--quick``: 1 000 models only). The monitors are copies of
one restored state, as big and as slow to snapshot as distinct ones.
"""

from __future__ import annotations

import gc
import os
import random
import time

from driftwatch.agent.loop import SNAPSHOT_INTERVAL_S
from driftwatch.agent.publish import PUBLISH_SHARE, SnapshotRound
from driftwatch.core.events import Event
from driftwatch.core.monitor import Monitor
from driftwatch.pipeline import Monitors
from driftwatch.settings import Settings
from driftwatch.sinks.prometheus.families import LEVELS, normalized_shown

MODELS = (1_000, 10_000)
QUICK_MODELS = (1_000,)
WINDOW = 1_000


def _template() -> Monitor:
    """One model of the default settings with a full window and then some."""
    monitor = Monitor("template", Settings().monitoring.monitor_config("template"))
    rng = random.Random(25)
    for i in range(WINDOW + 100):
        label = int(rng.random() < 0.1)
        monitor.update(Event(label, rng.gauss(1.19 * label, 1.0), ts=float(i)))
    return monitor


def _fleet(count: int, level: str, state: dict[str, object]) -> Monitors:
    settings = Settings()
    monitors = Monitors(settings.monitoring.monitor_config, count, normalized_shown(level))
    monitors.restore({f"model-{i:05d}": state | {"model": f"model-{i:05d}"}
                      for i in range(count)})
    return monitors


def _move(monitors: Monitors, step: int) -> None:
    """Every model takes one event: each has moved since its last snapshot."""
    for monitor in monitors.by_model.values():
        monitor.update(Event(step % 2, 0.5, ts=1e6 + step))


def measure(count: int, level: str, state: dict[str, object]) -> dict[str, float]:
    monitors = _fleet(count, level, state)
    whole_monitors = Monitors(lambda model: monitors.by_model[model].config, count)  # all
    whole_monitors.add(monitors.by_model)
    gc.collect()
    gc.disable()
    try:
        _move(monitors, 1)
        started = time.perf_counter()
        whole_monitors.snapshots()
        whole = time.perf_counter() - started
        _move(monitors, 2)
        refreshing = SnapshotRound(iter(list(monitors.by_model)), time.perf_counter)
        longest = 0.0
        while True:
            began = time.perf_counter()
            done = refreshing.step(monitors.refresh)
            longest = max(longest, time.perf_counter() - began)
            if done:
                break
    finally:
        gc.enable()
    return {"whole": whole, "longest": longest, "slices": refreshing.slices,
            "work": refreshing.work,
            "every": max(SNAPSHOT_INTERVAL_S, refreshing.work / PUBLISH_SHARE)}


def main(quick: bool = False) -> None:
    state = _template().export_state()
    print(f"Load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; every model moved "
          "since its last snapshot.\n")
    print("| models (d = 1000) | level | whole: loop pause | in slices: longest pause | "
          "slices | round's work | /metrics refreshed every | pause sliced / whole |")
    print("|---|---|---|---|---|---|---|---|")
    for count in QUICK_MODELS if quick else MODELS:
        for level in LEVELS:
            row = measure(count, level, state)
            print(f"| {count} | {level} | {row['whole']:.2f} s | {row['longest']:.3f} s "
                  f"| {row['slices']:.0f} | {row['work']:.1f} s | {row['every']:.1f} s "
                  f"| {row['longest'] / row['whole']:.3f} |")
            gc.collect()
