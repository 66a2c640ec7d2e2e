"""Class-ratio normalization per query: driftwatch's line search against enumerating the grid.

For each window size P + N and class ratio, the benchmark times, one query at a time
(``time.perf_counter``, median over the queries):

- ``normalize(M, P, N, x)`` with x the measure's value at a seeded random cell (an observed
  value: every such x ties with some cells, the hardest case for a boundary search);
- ``threshold(M, P, N, u)`` cold, its cache cleared before every query, for seeded u;
- brute force: every one of the (P+1)(N+1) cells evaluated with crisp.py on numpy arrays,
  chunked by rows, and compared with x — the reference, and stronger than Brzezinski et al.'s (2019)
  enumeration in Python loops. Run where it takes at most about a second per query; its
  counts must equal driftwatch's before any time is reported.

Targets (the normalization brief): ≤ 100 µs per normalize at P + N = 1000 and ≤ 5 ms at
P + N = 100 000, memory bounded whatever the window. threshold has no target; a monitor asks
it again at the same P:N and hits its cache.

Run: ``python -m benchmarks.normalization [--quick]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from driftwatch.core import normalization
from driftwatch.core.measures import crisp, registry
from driftwatch.core.normalization import count_at_most, normalize, threshold

SEED = 20190310
MEASURES = ("precision", "kappa", "gmean", "mcc", "f1")
SIZES = (100, 1000, 10_000, 100_000)
RATIOS = ((1, 1), (1, 15), (15, 1))  # P:N
BRUTE_CELLS = 30_000_000
"""Largest grid enumerated (about a second per query at P + N = 10 000)."""


def brute_force_count(measure: str, positives: int, negatives: int, x: float) -> int:
    """#{cells ≤ x} by evaluating every cell, a million at a time (undefined → 0)."""
    f = getattr(crisp, measure)
    fp = np.arange(negatives + 1.0)[None, :]
    rows = max(1, (1 << 20) // (negatives + 1))
    counted = 0
    for start in range(0, positives + 1, rows):
        tp = np.arange(start, min(start + rows, positives + 1), dtype=np.float64)[:, None]
        values = np.asarray(f(tp, fp, positives - tp, negatives - fp))
        counted += int(np.count_nonzero(np.nan_to_num(values, nan=0.0) <= x))
    return counted


def median_us(call: Callable[[float], object], args: list[float], before: Callable[[], None]
              ) -> float:
    times = []
    for arg in args:
        before()
        start = time.perf_counter()
        call(arg)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def split(size: int, ratio: tuple[int, int]) -> tuple[int, int]:
    positives = round(size * ratio[0] / sum(ratio))
    return positives, size - positives


def observed_values(measure: str, positives: int, negatives: int, count: int,
                    rng: np.random.Generator) -> list[float]:
    tp = rng.integers(0, positives + 1, size=count)
    fp = rng.integers(0, negatives + 1, size=count)
    f = registry.CONFUSION_MEASURES[measure]
    values = [f(t, p, positives - t, negatives - p)
              for t, p in zip(tp.tolist(), fp.tolist(), strict=True)]
    return [0.0 if v != v else v for v in values]  # undefined counts as 0 in the grid


def table(quick: bool) -> None:
    queries = 15 if quick else 60
    floors = 3 if quick else 11
    brute_queries = 2 if quick else 3
    brute_cells = 300_000 if quick else BRUTE_CELLS
    rng = np.random.default_rng(SEED)
    print(
        f"Median µs per query; x = the measure at a random cell ({queries} per row), u uniform "
        f"in [0, 1] ({floors} per row, threshold cache cleared before each), seed {SEED}. "
        f"Brute force ({brute_queries} queries) where the grid has at most {brute_cells:,} "
        "cells.\n"
    )
    print("| P + N | P:N | measure | normalize (µs) | threshold, cold (µs) | brute force (µs) "
          "| brute / normalize |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for size in SIZES:
        for ratio in RATIOS:
            positives, negatives = split(size, ratio)
            for measure in MEASURES:
                xs = observed_values(measure, positives, negatives, queries, rng)
                us = rng.uniform(size=floors).tolist()
                norm = median_us(partial(normalize, measure, positives, negatives), xs,
                                 lambda: None)
                cold = median_us(partial(threshold, measure, positives, negatives), us,
                                 normalization._kth_smallest.cache_clear)
                brute, ratio_cell = "—", "—"
                if (positives + 1) * (negatives + 1) <= brute_cells:
                    times = []
                    for x in xs[:brute_queries]:
                        start = time.perf_counter()
                        counted = brute_force_count(measure, positives, negatives, x)
                        times.append(time.perf_counter() - start)
                        # the same counts, or the times mean nothing
                        expected = count_at_most(measure, positives, negatives, x)
                        assert counted == expected, (measure, positives, negatives, x)
                    brute_us = statistics.median(times) * 1e6
                    speedup = brute_us / norm
                    brute = f"{brute_us:,.0f}"
                    ratio_cell = f"{speedup:,.1f}×" if speedup < 10 else f"{speedup:,.0f}×"
                print(f"| {size:,} | {ratio[0]}:{ratio[1]} ({positives}:{negatives}) | "
                      f"{measure} | {norm:,.0f} | {cold:,.0f} | {brute} | {ratio_cell} |")
                sys.stdout.flush()


def main(quick: bool = False) -> None:
    table(quick)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
