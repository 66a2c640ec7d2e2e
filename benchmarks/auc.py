"""Prequential AUC per event: driftwatch's O(log d) pair count against River's RollingROCAUC.

Every event costs one update and one read of the value, the way a monitor uses it. Three
contenders see the same seeded, tie-free stream (30 % positives, Gaussian scores) with the
window already full before timing starts:

- ``AUCPairs`` driven directly with a deque (the pair count alone),
- ``PrequentialWindow`` (the pair count plus validation and the confusion counts),
- ``river.metrics.RollingROCAUC(window_size=d)`` (River 0.26.1; update then get).

The table reports events per second (median of several repeats, ``time.perf_counter``) and
the ratio driftwatch / River. A second table times the window in each of ``AUCPairs``'s two
layouts, forced (plain lists at any size, or ``sortedcontainers.SortedList`` at any size), to
show where the default ``list_limit`` should sit. A last table shows, on a short stream with
tied scores, that River's value is not the exact AUC while driftwatch's is: River 0.26.1
truncates the half credit of a tied pair. The catch-up table times a window read only every
r events (a monitor with blocks watches reads it at alarms, scrapes and checkpoints): the
pending events applied one by one, or the window rebuilt from its last d, which is where
``REBUILD_SHARE`` comes from.

Run: ``python -m benchmarks.auc [--quick]``.
"""

from __future__ import annotations

import math
import random
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import partial

from river.metrics import RollingROCAUC

from driftwatch.core import window as window_module
from driftwatch.core.measures.auc import DEFAULT_LIST_LIMIT, AUCPairs
from driftwatch.core.window import REBUILD_SHARE, PrequentialWindow

SEED = 20170101
POSITIVE_RATE = 0.3

Stream = list[tuple[int, float]]
Feed = Callable[[Stream], float]
"""Feeds a stream to a prepared contender, reading the value after every event."""


def make_stream(length: int, seed: int = SEED) -> Stream:
    """Labels with 30 % positives; scores N(1, 1) for positives, N(0, 1) for negatives."""
    rng = random.Random(seed)
    stream = []
    for _ in range(length):
        y = int(rng.random() < POSITIVE_RATE)
        stream.append((y, rng.gauss(float(y), 1.0)))
    return stream


def events_per_second(
    contenders: Sequence[Callable[[], Feed]], timed: Stream, repeats: int
) -> list[float]:
    """Median rate of each contender over ``repeats`` rounds on freshly prepared instances.

    Each round times every contender once, one after the other, so that slow phases of a
    shared, noisy machine hit all of them alike and the ratios stay meaningful.
    """
    rates: list[list[float]] = [[] for _ in contenders]
    for _ in range(repeats):
        for prepare, contender_rates in zip(contenders, rates, strict=True):
            feed = prepare()
            start = time.perf_counter()
            feed(timed)
            contender_rates.append(len(timed) / (time.perf_counter() - start))
    return [statistics.median(r) for r in rates]


def pairs_contender(size: int, warmup: Stream) -> Feed:
    pairs = AUCPairs()
    held: deque[tuple[int, float]] = deque()

    def feed(stream: Stream) -> float:
        value = float("nan")
        for y, s in stream:
            if len(held) == size:
                old_y, old_s = held.popleft()
                pairs.remove(old_y, old_s)
            pairs.add(y, s)
            held.append((y, s))
            value = pairs.auc
        return value

    feed(warmup)
    return feed


def window_contender(size: int, warmup: Stream, list_limit: int = DEFAULT_LIST_LIMIT) -> Feed:
    window = PrequentialWindow(size=size)
    window._pairs = AUCPairs(list_limit=list_limit)

    def feed(stream: Stream) -> float:
        value = float("nan")
        for y, s in stream:
            window.update(y, s)
            value = window.auc
        return value

    feed(warmup)
    return feed


def river_contender(size: int, warmup: Stream) -> Feed:
    metric = RollingROCAUC(window_size=size)

    def feed(stream: Stream) -> float:
        value = float("nan")
        for y, s in stream:
            metric.update(y, s)
            value = metric.get()
        return value

    feed(warmup)
    return feed


def exact_auc(window: Stream) -> Fraction:
    """Brute force over all pairs, ties counting one half."""
    positives = [s for y, s in window if y]
    negatives = [s for y, s in window if not y]
    credit = sum(2 if p > q else 1 if p == q else 0 for p in positives for q in negatives)
    return Fraction(credit, 2 * len(positives) * len(negatives))


def _timing(quick: bool) -> tuple[int, int]:
    """Timed events per round and rounds: a quick run or a full one."""
    return (3000, 3) if quick else (20000, 7)


def _header(*columns: str) -> None:
    print("| " + " | ".join(columns) + " |")
    print("|" + "---:|" * len(columns))


def speed_table(quick: bool) -> None:
    sizes = (100, 1000, 10000)
    timed_events, repeats = _timing(quick)
    print(
        f"Per-event update + value, tie-free stream ({POSITIVE_RATE:.0%} positives, seed {SEED}), "
        f"{timed_events} timed events after a full window, median of {repeats} repeats.\n"
    )
    _header("d", "AUCPairs (events/s)", "PrequentialWindow (events/s)",
            "River RollingROCAUC (events/s)", "AUCPairs / River", "window / River")
    for size in sizes:
        stream = make_stream(size + timed_events)
        warmup, timed = stream[:size], stream[size:]
        contenders = [
            partial(contender, size, warmup)
            for contender in (pairs_contender, window_contender, river_contender)
        ]
        # The contenders must agree on the value before their speeds mean anything.
        values = [prepare()(timed) for prepare in contenders]
        assert abs(values[0] - values[2]) < 1e-9 and values[0] == values[1], values
        pairs_rate, window_rate, river_rate = events_per_second(contenders, timed, repeats)
        print(
            f"| {size} | {pairs_rate:,.0f} | {window_rate:,.0f} | {river_rate:,.0f} "
            f"| {pairs_rate / river_rate:.2f} | {window_rate / river_rate:.2f} |"
        )
        sys.stdout.flush()


def layout_table(quick: bool) -> None:
    sizes = (1000, 10000) if quick else (1000, 10000, 30000, 100000)
    timed_events, repeats = _timing(quick)
    print(
        f"\nPrequentialWindow per event in each layout of its pair count, same stream, "
        f"{timed_events} timed events after a full window, median of {repeats} repeats. "
        f"The default keeps a class in a plain list up to {DEFAULT_LIST_LIMIT:,} scores.\n"
    )
    _header("d", "largest class", "plain lists (events/s)", "SortedList (events/s)",
            "default (events/s)", "lists / SortedList")
    for size in sizes:
        stream = make_stream(size + timed_events)
        warmup, timed = stream[:size], stream[size:]
        largest = max(sum(y for y, _ in warmup), sum(1 - y for y, _ in warmup))
        contenders = [
            partial(window_contender, size, warmup, list_limit)
            for list_limit in (2 * size, 2, DEFAULT_LIST_LIMIT)
        ]
        lists_rate, sorted_rate, default_rate = events_per_second(contenders, timed, repeats)
        print(
            f"| {size} | {largest} | {lists_rate:,.0f} | {sorted_rate:,.0f} | {default_rate:,.0f} "
            f"| {lists_rate / sorted_rate:.2f} |"
        )
        sys.stdout.flush()


def sparse_read_contender(size: int, warmup: Stream, every: int, share: float) -> Feed:
    """A window read (``auc``) once every ``every`` events, catching up with the rebuild
    share ``share`` (0: always one by one; infinite: always a rebuild)."""
    window = PrequentialWindow(size=size)

    def feed(stream: Stream) -> float:
        saved = window_module.REBUILD_SHARE
        window_module.REBUILD_SHARE = share  # type: ignore[assignment]
        try:
            value = float("nan")
            for start in range(0, len(stream), every):
                for y, s in stream[start:start + every]:
                    window.update_valid(y, s)
                value = window.auc
            return value
        finally:
            window_module.REBUILD_SHARE = saved

    feed(warmup)
    return feed


def catch_up_table(quick: bool) -> None:
    timed_events, repeats = _timing(quick)
    print(
        f"\nPrequentialWindow read once every r events, the r pending events applied one by one "
        f"or the window rebuilt from its last d (events/s; {timed_events} timed events after a "
        f"full window, median of {repeats} repeats). The default rebuilds when at least "
        f"d / {REBUILD_SHARE} events are pending.\n"
    )
    _header("d", "r", "r / d", "one by one", "rebuild", "default", "rebuild / one by one")
    for size in (1000, 10000):
        for share in (0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0):
            every = max(1, int(size * share))
            stream = make_stream(size + max(timed_events, 4 * every), seed=SEED + every)
            warmup, timed = stream[:size], stream[size:]
            contenders = [partial(sparse_read_contender, size, warmup, every, rebuild)
                          for rebuild in (0.0, math.inf, REBUILD_SHARE)]
            one, rebuilt, default = events_per_second(contenders, timed, repeats)
            print(f"| {size} | {every} | {share:g} | {one:,.0f} | {rebuilt:,.0f} | "
                  f"{default:,.0f} | {rebuilt / one:.2f} |")
            sys.stdout.flush()


def ties_table() -> None:
    size = 10
    rng = random.Random(SEED)
    stream = [(int(rng.random() < 0.5), rng.choice((0.2, 0.5, 0.8))) for _ in range(30)]
    window = PrequentialWindow(size=size)
    river = RollingROCAUC(window_size=size)
    for y, s in stream:
        window.update(y, s)
        river.update(y, s)
    exact = exact_auc(stream[-size:])
    print(f"\nExactness on tied scores (scores in {{0.2, 0.5, 0.8}}, seed {SEED}, d = {size}):\n")
    print("| window | exact (brute force) | PrequentialWindow | River RollingROCAUC |")
    print("|---|---:|---:|---:|")
    print(
        f"| last {size} of {len(stream)} events | {exact} = {float(exact):.4f} "
        f"| {window.auc:.4f} | {river.get():.4f} |"
    )
    one_tie = RollingROCAUC(window_size=2)
    one_tie.update(1, 0.5)
    one_tie.update(0, 0.5)
    pairs = AUCPairs()
    pairs.add(1, 0.5)
    pairs.add(0, 0.5)
    print(f"| {{(+, 0.5), (−, 0.5)}} | 1/2 = 0.5000 | {pairs.auc:.4f} | {one_tie.get():.4f} |")


def main(quick: bool = False) -> None:
    speed_table(quick)
    layout_table(quick)
    catch_up_table(quick)
    ties_table()


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
