"""Memory per model: what the Helm chart's resource requests are sized from.

Each measurement runs in a fresh interpreter (``python -m benchmarks.memory --child N D``):

1. import everything ``driftwatch run`` imports (agent, Kafka client, Prometheus client,
   settings) and read the resident set size (VmRSS);
2. create N ``Monitor("m<i>", MonitorConfig(window_size=D))`` (the default watches; 1000 is
   the default window) and feed each max(3 000, 3D) events of a binormal stream with AUC 0.8
   and 10 % positives, so the window is full and every detector has taken samples, with a
   read of the window one window before the end (so d events are pending, the most a window
   queues between two reads); read RSS again. Per model = (RSS after - RSS before) / N;
3. do the agent's periodic work once: every monitor's snapshot (what a scrape reads) and a
   checkpoint (export state, JSON-encode, write); read the peak (VmHWM, reset before);
4. a restart: drop the monitors, restore them from that checkpoint, read the peak again.

``python -m benchmarks.memory`` prints the table; ``main(quick)`` follows the convention of
``python -m benchmarks``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

EVENTS_PER_MODEL = 3000
CASES = ((10, 1000), (100, 1000), (1000, 1000), (10, 10_000))
"""(models, window size) pairs; the last shows how memory scales with the window."""
QUICK_CASES = ((100, 1000),)


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> None:
    """Reset VmHWM to the current RSS (Linux: write 5 to /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
        clear_refs.write("5")


def _child(count: int, window: int) -> dict[str, float]:
    import gc
    import random
    import time

    import driftwatch.agent.loop  # what `driftwatch run` imports
    import driftwatch.commands.main  # noqa: F401
    from driftwatch.agent.loop import Monitors
    from driftwatch.core.events import Event
    from driftwatch.core.monitor import Monitor, MonitorConfig
    from driftwatch.state.checkpoint import CheckpointStore

    rng = random.Random(7)
    # One shared stream (binormal, AUC ~0.8, 10 % positives): the events are built before
    # the baseline so that only the monitors' own memory is counted.
    events = []
    for _ in range(max(EVENTS_PER_MODEL, 3 * window)):
        label = int(rng.random() < 0.1)
        events.append(Event(label, rng.gauss(1.19 if label else 0.0, 1.0)))
    gc.collect()
    before = _status_kib("VmRSS")

    config = MonitorConfig(window_size=window)
    monitors = Monitors(lambda model: config, max_models=count)
    for i in range(count):
        monitor = monitors.get(f"m{i}")
        assert isinstance(monitor, Monitor)
        # A read (a scrape) a window before the end, then a window of events before the next
        # one: the most a window holds pending between two reads (its last d + 1 events).
        for event in events[:-window]:
            monitor.update(event)
        monitor.window.auc  # noqa: B018
        for event in events[-window:]:
            monitor.update(event)
    assert all(m.window.size == config.window_size for m in monitors._monitors.values())
    gc.collect()
    after = _status_kib("VmRSS")

    _reset_peak()
    started = time.perf_counter()
    monitors.snapshots()
    with tempfile.TemporaryDirectory() as directory:
        store = CheckpointStore(directory)
        path = store.save({"offsets": {}, "monitors": monitors.export_state()})
        periodic_s = time.perf_counter() - started
        save_peak = _status_kib("VmHWM")
        checkpoint_bytes = os.path.getsize(path)
        # A restart: the old monitors are gone, the checkpoint is read and restored.
        del monitors
        gc.collect()
        _reset_peak()
        restore_started = time.perf_counter()
        checkpoint = store.read()
        assert checkpoint is not None
        restored = Monitors(lambda model: config, max_models=count)
        restored.restore(checkpoint.payload["monitors"])
        del checkpoint
        restore_s = time.perf_counter() - restore_started
        restore_peak = _status_kib("VmHWM")
    return {
        "models": count,
        "window": window,
        "baseline_mib": before / 1024,
        "rss_mib": after / 1024,
        "per_model_kib": (after - before) / count,
        "save_peak_mib": save_peak / 1024,
        "restore_peak_mib": restore_peak / 1024,
        "checkpoint_kib": checkpoint_bytes / 1024,
        "restore_s": restore_s,
        "snapshot_and_save_s": periodic_s,
    }


def measure(count: int, window: int = 1000) -> dict[str, float]:
    """Run one measurement with ``count`` models of window ``window`` in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", "--child", str(count), str(window)],
        check=True, capture_output=True, text=True,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main(quick: bool = False) -> None:
    print(f"Monitor(MonitorConfig(window_size=d)), max({EVENTS_PER_MODEL}, 3d) events each; "
          "RSS from /proc/self/status.\n")
    print("| models | d | RSS before | RSS after | per model | peak: scrape + checkpoint save "
          "| checkpoint file | peak: restore | restore time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for count, window in QUICK_CASES if quick else CASES:
        r = measure(count, window)
        print(f"| {r['models']:.0f} | {r['window']:.0f} | {r['baseline_mib']:.1f} MiB "
              f"| {r['rss_mib']:.1f} MiB "
              f"| {r['per_model_kib']:.0f} KiB | {r['save_peak_mib']:.1f} MiB "
              f"| {r['checkpoint_kib']:.0f} KiB | {r['restore_peak_mib']:.1f} MiB "
              f"| {r['restore_s']:.2f} s |")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(_child(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        main(quick="--quick" in sys.argv)
