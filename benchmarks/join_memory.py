"""Memory of the join: what the Helm chart's formula for ``settings.join`` is sized from.

The join's memory is bounded by its settings, not by the traffic: at most
``max_pending`` predictions per model, ``max_pending_labels`` labels and ``remember``
joined ids, plus each model's label-free signals. Each case runs in a fresh interpreter
(``python -m benchmarks.join_memory --child CASE N``) that imports what ``driftwatch run``
imports, reads the resident set size (VmRSS), fills one part of a
:class:`~driftwatch.core.delayed.DelayedLabels` built from the default ``join`` settings
with N records (event ids of 12 characters, ``tx-000000042``), and reads it again;
per record = the difference / N. Then it does what a checkpoint does with that state
(export, JSON-encode, write) and reads the peak (VmHWM, reset before).

- ``predictions``: N predictions of one model that wait for their label;
- ``labels``: N labels that wait for their prediction;
- ``remembered``: N pairs joined, so N ids are remembered (to recognize replays);
- ``signals``: N models' label-free signals with full windows and references (defaults:
  window 1000, frozen reference of 10 000), per model instead of per record;
  ``signals_previous`` the same with ``reference: previous``.

``python -m benchmarks join_memory`` prints the table; ``main(quick)`` follows the
convention of ``python -m benchmarks``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

CASES = (("predictions", 200_000), ("labels", 200_000), ("remembered", 200_000),
         ("signals", 100), ("signals_previous", 100))
QUICK_CASES = (("predictions", 50_000), ("signals", 10))


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _child(case: str, count: int) -> dict[str, float | str]:
    import gc
    import random
    import time

    import driftwatch.agent.loop  # what `driftwatch run` imports
    import driftwatch.commands.main  # noqa: F401
    from driftwatch.core.join import Label, Prediction
    from driftwatch.settings import Settings
    from driftwatch.state.checkpoint import CheckpointStore

    # Bounds above the count, so that nothing is evicted while measuring.
    bounds = {"max_pending": max(count, 1000), "max_pending_labels": max(count, 1000),
              "remember": max(count, 1000)}
    reference = "previous" if case == "signals_previous" else "frozen"
    settings = Settings.model_validate({"join": {"enabled": True, "kind_field": "kind",
                                                 "score_drift": {"reference": reference},
                                                 **bounds}})
    delayed = settings.join.delayed_labels(lambda model: 0.5)
    rng = random.Random(7)
    ids = [f"tx-{i:09d}" for i in range(count)]  # built before the baseline
    gc.collect()
    before = _status_kib("VmRSS")
    if case == "predictions":
        for i, event_id in enumerate(ids):
            delayed.join.add_prediction(Prediction(event_id, "m", rng.random(), None, float(i)))
    elif case == "labels":
        for i, event_id in enumerate(ids):
            delayed.join.add_label(Label(event_id, i & 1, float(i)))
    elif case == "remembered":
        for i, event_id in enumerate(ids):
            delayed.join.add_prediction(Prediction(event_id, "m", rng.random(), None, float(i)))
            delayed.join.add_label(Label(event_id, i & 1, float(i)))
        assert delayed.join.matched == count
    elif case in ("signals", "signals_previous"):
        # The reference (10 000), then a full window; each label at once, so that nothing
        # stays pending (and only the last `remember` = 1000 ids are remembered).
        for model in range(count):
            for i in range(12_000):
                event_id = f"m{model}-{i:08d}"
                delayed.add_prediction(Prediction(event_id, f"m{model}", rng.random(), None,
                                                  float(i)))
                delayed.add_label(Label(event_id, i & 1, float(i)))
    else:
        raise ValueError(f"unknown case {case!r}")
    gc.collect()
    after = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
        clear_refs.write("5")  # reset VmHWM to the current RSS
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as directory:
        CheckpointStore(directory).save({"offsets": {}, "join": delayed.export_state()})
    return {"case": case, "count": count, "baseline_mib": before / 1024,
            "rss_mib": after / 1024, "per_item_bytes": (after - before) * 1024 / count,
            "save_peak_mib": _status_kib("VmHWM") / 1024,
            "save_s": time.perf_counter() - started}


def measure(case: str, count: int) -> dict[str, float | str]:
    """Run one case with ``count`` records (models, for ``signals``) in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.join_memory", "--child", case, str(count)],
        check=True, capture_output=True, text=True,
    )
    result: dict[str, float | str] = json.loads(out.stdout)
    return result


def main(quick: bool = False) -> None:
    print("DelayedLabels from the default join settings, filled with N records (12-character "
          "event ids) or N models' signals; RSS from /proc/self/status.\n")
    print("| case | N | RSS before | RSS after | per record (per model: signals) "
          "| peak: checkpoint save | save time |")
    print("|---|---|---|---|---|---|---|")
    for case, count in QUICK_CASES if quick else CASES:
        r = measure(case, count)
        per = float(r["per_item_bytes"])
        size = f"{per / 1024 / 1024:.2f} MiB" if case.startswith("signals") else f"{per:.0f} B"
        print(f"| {r['case']} | {r['count']} | {float(r['baseline_mib']):.1f} MiB "
              f"| {float(r['rss_mib']):.1f} MiB | {size} "
              f"| {float(r['save_peak_mib']):.1f} MiB | {float(r['save_s']):.2f} s |")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], int(sys.argv[3]))))
    else:
        main(quick="--quick" in sys.argv)
