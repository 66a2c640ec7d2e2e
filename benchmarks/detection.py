"""Detection quality of the default configuration, on streams it was not tuned to.

Every stream goes through the real :class:`~driftwatch.core.monitor.Monitor` with
``MonitorConfig()`` (the defaults; only the crisp ``threshold`` varies where a table says so)
and counts the alarms users would get. Four score models, so that no single simulator can be
what the defaults fit:

- **binormal**: negatives N(0, 1), positives N(μ, 1);
- **beta**: negatives Beta(1, a), positives Beta(a, 1) (bounded, skewed, threshold 0.5 central);
- **bimodal**: both classes two-component normal mixtures (a non-binormal ROC curve);
- **tied**: binormal scores rounded to five values (heavily tied, discrete).

Each model's parameter is solved (closed form for AUC, bisection) so that its AUC is exactly the
level asked for (0.70–0.95). Tables:

A. **False alarms on stationary streams** per 10⁶ events, per class ratio 1:15 … 15:1 and per
   stream length (the first L events of each stream, L up to 2 × 10⁶), every model at its own
   AUC level; the nominal bound of the defaults beside it.
B. **Pure class-ratio changes and swaps** (AUC unchanged), with the centred and two off-centre
   crisp thresholds: alarms on any default watch (every one is false).
C. **Sudden AUC drops** of 0.05, 0.10 and 0.20 at every ratio (window d = 1000): share
   detected on the AUC watch and median delay (events after the change), and the first alarm
   on any watch.
D. **Gradual and successive drops**: 0.90 → 0.80 over 10 000 events; 0.90 → 0.80 → 0.70.
E. **Calibration of the standardized inputs**: the block pipeline alone (the monitor's own
   collector, standardizers and CUSUM) at a short target ARL, whose false alarms can be counted
   precisely: measured against nominal run length, per model and ratio.

Seeds start at 7_000_000 (the test suite uses small seeds), so the benchmark is never the data
the tests were written against. ``python -m benchmarks detection`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.score_models import AUC_LEVEL, MODELS, parameter, scores, share
from driftwatch.core.block_rates import RateStandardizer
from driftwatch.core.blocks import AUCStandardizer, BlockCollector
from driftwatch.core.budget import block_arl
from driftwatch.core.detectors import Cusum
from driftwatch.core.events import Event
from driftwatch.core.monitor import (
    DEFAULT_BLOCK_MIN_CLASS,
    DEFAULT_BLOCK_WARMUP,
    DEFAULT_WATCHES,
    Monitor,
    MonitorConfig,
)
from driftwatch.core.monitor_config import DEFAULT_BLOCK_SECONDS, DEFAULT_DAYS_PER_FALSE_ALARM

SEED = 7_000_000
RATIOS = (1 / 15, 1 / 4, 1.0, 4.0, 15.0)  # positives : negatives
RATIO_NAMES = ("1:15", "1:4", "1:1", "4:1", "15:1")


# ------------------------------------------------------------------------------------------
# Score models (benchmarks/score_models.py)


def auc_path(model: str, levels: Sequence[tuple[int, Any]], n: int) -> np.ndarray:
    """Per-event model parameter for piecewise AUC levels [(start, auc), ...]; a level given
    as (start, (a0, a1, end)) ramps linearly (on the parameter scale) from a0 to a1."""
    theta = np.empty(n)
    for i, (start, level) in enumerate(levels):
        end = levels[i + 1][0] if i + 1 < len(levels) else n
        if isinstance(level, tuple):
            a0, a1, ramp_end = level
            p0, p1 = parameter(model, a0), parameter(model, a1)
            ramp = np.clip((np.arange(start, end) - start) / (ramp_end - start), 0.0, 1.0)
            theta[start:end] = p0 + (p1 - p0) * ramp
        else:
            theta[start:end] = parameter(model, level)
    return theta


# ------------------------------------------------------------------------------------------
# Running streams through the monitor


@dataclass(frozen=True)
class Run:
    model: str
    n: int
    seed: int
    shares: tuple[tuple[int, float], ...]  # (start, positive share)
    levels: tuple[tuple[int, Any], ...]  # (start, auc or ramp)
    threshold: float = 0.5


def run(spec: Run) -> list[tuple[str, int]]:
    """(measure, event count) of every alarm of the default monitor on the stream."""
    rng = np.random.default_rng(spec.seed)
    p = np.empty(spec.n)
    for i, (start, s) in enumerate(spec.shares):
        end = spec.shares[i + 1][0] if i + 1 < len(spec.shares) else spec.n
        p[start:end] = s
    monitor = Monitor("bench", MonitorConfig(threshold=spec.threshold))
    found: list[tuple[str, int]] = []
    theta = auc_path(spec.model, spec.levels, spec.n)
    chunk = 200_000
    for start in range(0, spec.n, chunk):
        end = min(spec.n, start + chunk)
        y = rng.random(end - start) < p[start:end]
        s = scores(spec.model, y, theta[start:end], rng)
        for label, score in zip(y.tolist(), s.tolist(), strict=True):
            for alarm in monitor.update(Event(int(label), score)):
                found.append((alarm.measure, alarm.event_count))
    return found


def _map(pool: Any, specs: Sequence[Run]) -> list[list[tuple[str, int]]]:
    return list(pool.map(run, specs, chunksize=1))


# ------------------------------------------------------------------------------------------
# Tables


def _rate(count: int, events: int) -> str:
    return f"{count / events * 1e6:.2f} ({count})"


def nominal_rate(ratio: float) -> float:
    """False alarms per 10⁶ events of the three default watches at the run length the budget
    gives a block whose span is unknown (these streams carry no time: each block counts as
    ``block_seconds``), with the mean block length at this ratio (≥ 2m events: the expected
    events until both classes hold m, estimated by simulation). An upper bound: the budget
    is spent at the zone's tolerance, and these streams do not change at all."""
    rng = np.random.default_rng(SEED - 1)
    m, total, blocks = DEFAULT_BLOCK_MIN_CLASS, 0, 2000
    for _ in range(blocks):
        pos = neg = length = 0
        while pos < m or neg < m:
            y = rng.random() < share(ratio)
            pos += y
            neg += not y
            length += 1
        total += length
    arl = block_arl(DEFAULT_DAYS_PER_FALSE_ALARM, len(DEFAULT_WATCHES), DEFAULT_BLOCK_SECONDS)
    return len(DEFAULT_WATCHES) * 1e6 / (arl * total / blocks)


def table_a(pool: Any, length: int, lengths: Sequence[int]) -> None:
    print("### A. False alarms on stationary streams (per 10⁶ events; count in brackets)\n")
    print(f"One stream of {length:,} events per model and ratio (models: "
          + ", ".join(f"{m} at AUC {AUC_LEVEL[m]}" for m in MODELS)
          + "); the first L events of each stream count for length L.\n")
    specs = [Run(model, length, SEED + 100 * i + j, ((0, share(r)),), ((0, AUC_LEVEL[model]),))
             for i, model in enumerate(MODELS) for j, r in enumerate(RATIOS)]
    started = time.perf_counter()
    results = _map(pool, specs)
    print("| events per stream (× 4 models) | " + " | ".join(RATIO_NAMES) + " |")
    print("|---:|" + "---:|" * len(RATIOS))
    for cut in lengths:
        cells = []
        for j in range(len(RATIOS)):
            count = sum(1 for i in range(len(MODELS))
                        for _, at in results[i * len(RATIOS) + j] if at <= cut)
            cells.append(_rate(count, cut * len(MODELS)))
        print(f"| {cut:,} | " + " | ".join(cells) + " |")
    nominal = [f"{nominal_rate(r):.2f}" for r in RATIOS]
    print("| expected at the nominal ARL | " + " | ".join(nominal) + " |")
    by_watch: dict[str, int] = {}
    for found in results:
        for measure, _ in found:
            by_watch[measure] = by_watch.get(measure, 0) + 1
    print(f"\nAlarms by watch: {by_watch or 'none'}; "
          f"{len(specs) * length:,} events in {time.perf_counter() - started:.0f} s.\n")


def table_b(pool: Any, runs: int, length: int) -> None:
    print("### B. Pure class-ratio changes (AUC unchanged): alarms on any default watch\n")
    half = length // 2
    changes = {
        "1:1 → 1:9 (0.5 → 0.1 positives)": ((0, 0.5), (half, 0.1)),
        "swap 5 % → 95 % positives": ((0, 0.05), (half, 0.95)),
        "swap 95 % → 5 % positives": ((0, 0.95), (half, 0.05)),
        "recurring 1:4 ↔ 4:1 every 20 000": tuple(
            (s, 0.2 if (s // 20_000) % 2 == 0 else 0.8) for s in range(0, length, 20_000)
        ),
    }
    thresholds = {"binormal": (0.5, 1.5, -0.5), "beta": (0.5, 0.3, 0.8)}
    print(f"{runs} runs of {length:,} events per cell; thresholds: binormal (negatives "
          "N(0, 1), positives N(1.81, 1)) 0.5 / 1.5 / −0.5, beta 0.5 (centred) / 0.3 / 0.8; "
          "cells: alarms (runs with ≥ 1).\n")
    specs = []
    for change in changes.values():
        for model, ts in thresholds.items():
            for t in ts:
                specs += [Run(model, length, SEED + 50_000 + r, change, ((0, 0.9),), t)
                          for r in range(runs)]
    results = _map(pool, specs)
    header = [f"{m} t={t:g}" for m, ts in thresholds.items() for t in ts]
    print("| change | " + " | ".join(header) + " |")
    print("|---|" + "---:|" * len(header))
    k = 0
    for name in changes:
        cells = []
        for _ in header:
            chunk = results[k:k + runs]
            k += runs
            cells.append(f"{sum(map(len, chunk))} ({sum(1 for c in chunk if c)})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()


def _delays(found: list[tuple[str, int]], change: int, horizon: int,
            measure: str | None) -> int | None:
    hits = [at - change for m, at in found
            if change < at <= change + horizon and (measure is None or m == measure)]
    return min(hits) if hits else None


def _median(values: Iterable[int | None]) -> str:
    got = [v for v in values if v is not None]
    return f"{statistics.median(got):,.0f}" if got else "–"


def table_c(pool: Any, runs: int, other_runs: int, before: int, after: int) -> None:
    print("### C. Sudden AUC drops (binormal, AUC 0.90 → 0.90 − drop, d = 1000)\n")
    print(f"{runs} runs per cell, change after {before:,} events, {after:,} events after it. "
          "Cells: median delay (events) to the first AUC alarm, detected share; then the first "
          "alarm on any watch. False alarms before the change in brackets if any.\n")
    drops = (0.05, 0.10, 0.20)
    specs = [Run("binormal", before + after, SEED + 200_000 + 1000 * i + 100 * j + r,
                 ((0, share(ratio)),), ((0, 0.9), (before, 0.9 - drop)))
             for i, drop in enumerate(drops) for j, ratio in enumerate(RATIOS)
             for r in range(runs)]
    results = _map(pool, specs)
    print("| drop | watch | " + " | ".join(RATIO_NAMES) + " |")
    print("|---:|---|" + "---:|" * len(RATIOS))
    k = 0
    for drop in drops:
        auc_cells, any_cells = [], []
        for _ in RATIOS:
            chunk = results[k:k + runs]
            k += runs
            auc_delays = [_delays(c, before, after, "auc") for c in chunk]
            any_delays = [_delays(c, before, after, None) for c in chunk]
            early = sum(1 for c in chunk for _, at in c if at <= before)
            detected = sum(d is not None for d in auc_delays)
            note = f" [{early}]" if early else ""
            auc_cells.append(f"{_median(auc_delays)}, {detected}/{runs}{note}")
            any_cells.append(_median(any_delays))
        print(f"| {drop:.2f} | AUC | " + " | ".join(auc_cells) + " |")
        print(f"| {drop:.2f} | any | " + " | ".join(any_cells) + " |")
    print(f"\nThe other score models, AUC level → level − 0.10, {other_runs} runs per cell "
          "(median delay to the first AUC alarm, detected share):\n")
    print("| model | " + " | ".join(RATIO_NAMES) + " |")
    print("|---|" + "---:|" * len(RATIOS))
    others = [m for m in MODELS if m != "binormal"]
    specs = [Run(model, before + after, SEED + 250_000 + 1000 * i + 100 * j + r,
                 ((0, share(ratio)),),
                 ((0, AUC_LEVEL[model]), (before, AUC_LEVEL[model] - 0.1)))
             for i, model in enumerate(others) for j, ratio in enumerate(RATIOS)
             for r in range(other_runs)]
    results = _map(pool, specs)
    k = 0
    for model in others:
        cells = []
        for _ in RATIOS:
            chunk = results[k:k + other_runs]
            k += other_runs
            delays = [_delays(c, before, after, "auc") for c in chunk]
            cells.append(f"{_median(delays)}, {sum(d is not None for d in delays)}/{other_runs}")
        level = AUC_LEVEL[model]
        print(f"| {model} {level:.2f} → {level - 0.1:.2f} | " + " | ".join(cells) + " |")
    print()


def table_d(pool: Any, runs: int) -> None:
    print("### D. Gradual and successive drops (binormal, d = 1000)\n")
    ratios = (1 / 15, 1 / 4, 1.0, 4.0, 15.0)
    gradual = [Run("binormal", 80_000, SEED + 300_000 + 100 * j + r, ((0, share(ratio)),),
                   ((0, 0.9), (30_000, (0.9, 0.8, 40_000))))
               for j, ratio in enumerate(ratios) for r in range(runs)]
    successive = [Run("binormal", 120_000, SEED + 400_000 + 100 * j + r, ((0, share(ratio)),),
                      ((0, 0.9), (40_000, 0.8), (80_000, 0.7)))
                  for j, ratio in enumerate(ratios) for r in range(runs)]
    results = _map(pool, gradual + successive)
    print(f"{runs} runs per cell. Gradual: 0.90 → 0.80 linearly over events 30 000–40 000 "
          "(delay from its start); successive: 0.90 → 0.80 at 40 000, → 0.70 at 80 000. "
          "Cells: median delay on the AUC watch, detected share.\n")
    print("| change | " + " | ".join(RATIO_NAMES) + " |")
    print("|---|" + "---:|" * len(ratios))
    rows = {"gradual 0.90 → 0.80 (AUC)": [], "successive: 1st drop (AUC)": [],
            "successive: 2nd drop (AUC)": [], "successive: alarms, any watch (mean)": []}
    for j in range(len(ratios)):
        g = results[j * runs:(j + 1) * runs]
        s = results[len(gradual) + j * runs:len(gradual) + (j + 1) * runs]
        d = [_delays(c, 30_000, 50_000, "auc") for c in g]
        rows["gradual 0.90 → 0.80 (AUC)"].append(
            f"{_median(d)}, {sum(x is not None for x in d)}/{runs}")
        d1 = [_delays(c, 40_000, 40_000, "auc") for c in s]
        d2 = [_delays(c, 80_000, 40_000, "auc") for c in s]
        rows["successive: 1st drop (AUC)"].append(
            f"{_median(d1)}, {sum(x is not None for x in d1)}/{runs}")
        rows["successive: 2nd drop (AUC)"].append(
            f"{_median(d2)}, {sum(x is not None for x in d2)}/{runs}")
        rows["successive: alarms, any watch (mean)"].append(
            f"{statistics.mean(len(c) for c in s):.1f}")
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()


def calibrate(args: tuple[str, float, int, float, int]) -> tuple[list[int], int]:
    """Alarms per watch of the block pipeline at a short target ARL, and the blocks fed."""
    model, ratio, blocks, arl, seed = args
    rng = np.random.default_rng(seed)
    theta = parameter(model, AUC_LEVEL[model])
    collector = BlockCollector(DEFAULT_BLOCK_MIN_CLASS)
    watches = [(AUCStandardizer(DEFAULT_BLOCK_WARMUP), Cusum(arl=arl, direction="down")),
               (RateStandardizer(DEFAULT_BLOCK_WARMUP), Cusum(arl=arl, direction="up")),
               (RateStandardizer(DEFAULT_BLOCK_WARMUP), Cusum(arl=arl, direction="up"))]
    alarms, fed, closed = [0, 0, 0], 0, 0
    while closed < blocks:
        y = rng.random(100_000) < share(ratio)
        s = scores(model, y, np.full(y.size, theta), rng)
        for label, score in zip(y.tolist(), s.tolist(), strict=True):
            block = collector.add(int(label), score, (score >= 0.5) != label)
            if block is None:
                continue
            closed += 1
            inputs = ((block,), (block.false_negatives, block.positives),
                      (block.false_positives, block.negatives))
            for i, ((standardizer, cusum), x) in enumerate(zip(watches, inputs, strict=True)):
                z = standardizer.update(*x)  # type: ignore[arg-type]
                if z is None:
                    continue
                fed += i == 0
                if cusum.update(z).name == "DRIFT":
                    alarms[i] += 1
                    standardizer.reset()
                    cusum.reset()
            if closed >= blocks:
                break
    return alarms, fed


def table_e(pool: Any, blocks: int, arl: float) -> None:
    print("### E. Calibration: the block pipeline alone at a short target ARL\n")
    print(f"CUSUM (k 0.5) at target ARL {arl:g} blocks, {blocks:,} blocks per cell, "
          "self-starting reference restarted after each alarm as in the monitor. Cells: "
          "false alarms on AUC / false-negative rate / false-positive rate against the "
          "number expected at the nominal ARL (measured ÷ expected).\n")
    ratios = (1 / 15, 1.0, 15.0)
    jobs = [(model, ratio, blocks, arl, SEED + 500_000 + 10 * i + j)
            for i, model in enumerate(MODELS) for j, ratio in enumerate(ratios)]
    results = list(pool.map(calibrate, jobs, chunksize=1))
    print("| model (AUC) | " + " | ".join(("1:15", "1:1", "15:1")) + " |")
    print("|---|" + "---:|" * len(ratios))
    totals = [0, 0, 0]
    expected_total = 0.0
    for i, model in enumerate(MODELS):
        cells = []
        for j in range(len(ratios)):
            alarms, fed = results[i * len(ratios) + j]
            expected = fed / arl
            expected_total += expected
            totals = [a + b for a, b in zip(totals, alarms, strict=True)]
            cells.append(" / ".join(map(str, alarms)) + f" vs {expected:.1f}")
        print(f"| {model} ({AUC_LEVEL[model]}) | " + " | ".join(cells) + " |")
    ratio_text = " / ".join(f"{t / expected_total:.2f}" for t in totals)
    print(f"\nAll cells: measured ÷ expected = {ratio_text} (AUC / FNR / FPR).\n")


def main(quick: bool = False, tables: str = "ABCDE") -> None:
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(2) as pool:
        if "A" in tables:
            length = 100_000 if quick else 2_000_000
            cuts = (50_000, 100_000) if quick else (50_000, 200_000, 1_000_000, 2_000_000)
            table_a(pool, length, cuts)
        if "B" in tables:
            table_b(pool, runs=1 if quick else 3, length=40_000 if quick else 200_000)
        if "C" in tables:
            table_c(pool, runs=3 if quick else 15, other_runs=2 if quick else 8, before=10_000,
                    after=20_000)
        if "D" in tables:
            table_d(pool, runs=2 if quick else 10)
        if "E" in tables:
            table_e(pool, blocks=2_000 if quick else 20_000, arl=500.0)
    print(f"Total wall time {time.perf_counter() - started:.0f} s on 2 processes.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tables", default="ABCDE")
    args = parser.parse_args()
    main(quick=args.quick, tables=args.tables)
