"""Per-event cost of PrequentialWindow: update alone, and update plus every measure.

A monitor updates the window on every event but reads the measures only when it samples
(every ``sample_every`` events) or when Prometheus scrapes. The two rows bound the cost: the
update alone (O(log d): validation, the AUC pair count and the confusion counts) and the worst
case of computing all of ``measures()`` (AUC plus the 13 crisp measures) after every event.

Same seeded stream as ``benchmarks/auc.py`` (30 % positives, Gaussian scores), window already
full before timing, median of several repeats.

Run: ``python -m benchmarks.confusion [--quick]``.
"""

from __future__ import annotations

import sys
from functools import partial

from benchmarks.auc import Feed, Stream, events_per_second, make_stream
from driftwatch.core.window import PrequentialWindow

SIZE = 1000


def update_only(warmup: Stream) -> Feed:
    window = PrequentialWindow(size=SIZE)

    def feed(stream: Stream) -> float:
        for y, s in stream:
            window.update(y, s)
        return window.auc

    feed(warmup)
    return feed


def update_and_measures(warmup: Stream) -> Feed:
    window = PrequentialWindow(size=SIZE)

    def feed(stream: Stream) -> float:
        values: dict[str, float] = {}
        for y, s in stream:
            window.update(y, s)
            values = window.measures()
        return values.get("auc", float("nan"))

    feed(warmup)
    return feed


def main(quick: bool = False) -> None:
    timed_events = 5000 if quick else 50000
    repeats = 3 if quick else 7
    stream = make_stream(SIZE + timed_events)
    warmup, timed = stream[:SIZE], stream[SIZE:]
    print(
        f"PrequentialWindow at d = {SIZE}: {timed_events} timed events after a full window, "
        f"median of {repeats} repeats.\n"
    )
    print("| per event | events/s | µs/event |")
    print("|---|---:|---:|")
    rows = {"update": update_only, "update + measures() (all 14)": update_and_measures}
    rates = events_per_second([partial(p, warmup) for p in rows.values()], timed, repeats)
    for label, rate in zip(rows, rates, strict=True):
        print(f"| {label} | {rate:,.0f} | {1e6 / rate:.2f} |")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
