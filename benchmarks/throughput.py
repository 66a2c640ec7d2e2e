"""Events per second through one monitor, beside the equivalent River pipeline.

driftwatch: a :class:`~driftwatch.core.monitor.Monitor` at d = 1000 and the default
``sample_every``, computing AUC and every crisp measure at each sample, normalizing the eight
normalizable ones for the class ratio, with two detectors on AUC (Page-Hinkley and ADWIN; a
monitor refuses two detectors of one kind on one measure) and two on crisp measures (ADWIN on
normalized G-mean, DDM on the per-event error).

River 0.26.1: ``RollingROCAUC(window_size=1000)`` and a rolling confusion matrix shared by
its crisp metrics (accuracy, precision, recall, F1, κ, MCC, balanced accuracy, G-mean), read
at the same samples, with the same detectors (``PageHinkley``, ``ADWIN``,
``binary.DDM``). River has no class-ratio normalization, so driftwatch does strictly more.

Both see the same seeded tie-free stream; medians of several interleaved repeats.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from collections.abc import Callable

from river import drift, metrics, utils

from driftwatch.core.events import Event
from driftwatch.core.measures.registry import NORMALIZABLE
from driftwatch.core.monitor import ERROR_STREAM, DetectorSpec, Monitor, MonitorConfig, Watch
from driftwatch.core.normalization import normalize

WINDOW = 1000
EVERY = MonitorConfig().sample_every


def stream(length: int, seed: int = 7) -> list[Event]:
    rng = random.Random(seed)
    events = []
    for _ in range(length):
        y = int(rng.random() < 0.3)
        events.append(Event(y, 1 / (1 + math.exp(-rng.gauss(1.2 if y else -1.2, 1.0)))))
    return events


def driftwatch_pipeline(normalize_all: bool = False) -> Callable[[Event], object]:
    auc = Watch("auc", (
        DetectorSpec("page_hinkley", {"threshold": 1.0, "delta": 0.01}),
        DetectorSpec("adwin", {"clock": 1}),
    ))
    gmean = Watch("gmean", (DetectorSpec("adwin", {"clock": 1}),), normalized=True)
    errors = Watch(ERROR_STREAM, (DetectorSpec("ddm"),))
    monitor = Monitor("bench", MonitorConfig(WINDOW, EVERY, watches=(auc, gmean, errors)))
    window = monitor.window
    count = 0

    def update(event: Event) -> None:
        nonlocal count
        monitor.update(event)
        count += 1
        if count % EVERY == 0:  # every measure read at each sample, as River's side does
            values = window.measures()
            if normalize_all:
                for name in NORMALIZABLE:
                    normalize(name, window.positives, window.negatives, values[name])

    return update


def river_pipeline() -> Callable[[Event], object]:
    auc = metrics.RollingROCAUC(window_size=WINDOW)
    rolling_cm = utils.Rolling(metrics.ConfusionMatrix(), window_size=WINDOW)
    cm = rolling_cm.obj
    crisp = [metric(cm=cm) for metric in (
        metrics.Accuracy, metrics.Precision, metrics.Recall, metrics.F1, metrics.CohenKappa,
        metrics.MCC, metrics.BalancedAccuracy, metrics.GeometricMean,
    )]
    ph_fast = drift.PageHinkley(threshold=1.0, delta=0.01, mode="down")
    adwin_auc = drift.ADWIN(clock=1)
    adwin_gmean = drift.ADWIN(clock=1)
    ddm = drift.binary.DDM()
    count = 0

    def update(event: Event) -> None:
        nonlocal count
        y, score = bool(event.y_true), event.y_score
        pred = score >= 0.5
        auc.update(y, score)
        rolling_cm.update(y, pred)
        ddm.update(pred != y)
        count += 1
        if count % EVERY == 0:
            value = auc.get()
            for detector in (ph_fast, adwin_auc):
                detector.update(value)
            values = [metric.get() for metric in crisp]
            adwin_gmean.update(values[-1])

    return update


def events_per_second(make: Callable[[], Callable[[Event], object]], warmup: list[Event],
                      timed: list[Event]) -> float:
    update = make()
    for event in warmup:
        update(event)
    start = time.perf_counter()
    for event in timed:
        update(event)
    return len(timed) / (time.perf_counter() - start)


def main(quick: bool = False) -> None:
    repeats = 3 if quick else 7
    events = stream(WINDOW + (20_000 if quick else 100_000))
    warmup, timed = events[:WINDOW * 2], events[WINDOW * 2:]
    contenders: dict[str, Callable[[], Callable[[Event], object]]] = {
        "driftwatch": driftwatch_pipeline,
        "driftwatch, all 8 normalized": lambda: driftwatch_pipeline(normalize_all=True),
        "River": river_pipeline,
    }
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):  # interleaved, so all see the same machine load
        for name, make in contenders.items():
            rates[name].append(events_per_second(make, warmup, timed))
    medians = {name: statistics.median(values) for name, values in rates.items()}
    river = medians["River"]
    print(f"One monitor, d = {WINDOW}, sample_every = {EVERY}, {len(timed):,} events, median of "
          f"{repeats} repeats. At every sample both sides read AUC and every crisp measure and "
          "update 2 detectors on AUC and 1 on G-mean; DDM reads the per-event error. "
          "driftwatch normalizes G-mean (and, in the second row, all eight normalizable "
          "measures); River cannot.\n")
    print("| pipeline | events/s | µs/event | ratio to River |")
    print("|---|---|---|---|")
    for name, rate in medians.items():
        print(f"| {name} | {rate:,.0f} | {1e6 / rate:.2f} | {rate / river:.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
