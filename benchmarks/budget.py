"""The false-alarm budget in time: false alarms per model per 30 days at any traffic, and delays.

Streams of one model in record time: events arrive as a Poisson process at 1, 10, 100, 1 000
or 10 000 events a second, positives at a class ratio from 1:15 to 15:1, scores from one of
four score models (``benchmarks/score_models.py``: binormal, unequal variances, heavily tied,
skewed) whose AUC follows a scenario:

- **iid**: constant;
- **wobble**: a daily cycle of ± 0.01 AUC (the per-class error rates move with it, through
  the model's parameter), starting at its peak, the worst start for the self-starting
  reference;
- **bursts**: constant, with 10× the traffic for an hour twice a day (06:00 and 18:00);
- **drop δ**: constant for a day, then δ lower for good.

Every stream goes through the default monitor's blocks watches (``MonitorConfig()``: blocks
of ≥ 20 per class spanning a minute of record time, three CUSUMs against the indifference
zone, one false alarm per 30 days of budget) by one of two routes:

- **per event**: the real :class:`~driftwatch.core.monitor.Monitor` fed every event
  (``update_values``), as the agent and ``driftwatch replay`` feed it;
- **per block**: each block drawn whole, for traffic where events are too many to replay
  (10 000 a second for 30 days is 2.6 × 10¹⁰ events): its length and span by the block rule
  (Poisson counts of a minute, or :data:`~driftwatch.core.blocks.BLOCK_LIMIT` events), its
  positives binomial, its AUC normal around the model's AUC with DeLong's variance at its P
  and N, its error counts binomial at the model's per-class rates
  (:func:`~benchmarks.score_models.components`), given to the same
  :class:`~driftwatch.core.block_watches.BlockWatches` the monitor uses. Table C shows both
  routes agree at 100 events a second, where both run.

Tables:

A. False drift alarms per model per 30 days (all default watches together), per rate, ratio
   and scenario; each cell pools the four score models.
B. Median delay of sustained AUC drops (0.05 and 0.10, and 0.01, below the default effect)
   at 1:4 and 1:15, in minutes of record time and in events.
C. Both routes at 100 events a second: false alarms at a short budget with the AUC held at
   the zone's tolerance, and delays.

``python -m benchmarks budget`` (``--quick`` for a smaller run). Seeds start at 9 000 000.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.score_models import AUC_LEVEL, components, parameter, scores, share
from driftwatch.core.block_watches import BlockWatches
from driftwatch.core.blocks import BLOCK_LIMIT, Block
from driftwatch.core.monitor import Alarm, Monitor, MonitorConfig
from driftwatch.core.sequential import normal_cdf
from driftwatch.core.watch_state import WatchState

SEED = 9_000_000
DAY = 86_400.0
MONTH = 30 * DAY
MODELS = ("binormal", "unequal", "tied", "beta")
RATES = (1.0, 10.0, 100.0, 1000.0, 10_000.0)
RATIOS = (1 / 15, 1 / 4, 1.0, 4.0, 15.0)
RATIO_NAMES = {1 / 15: "1:15", 1 / 4: "1:4", 1.0: "1:1", 4.0: "4:1", 15.0: "15:1"}
BURST_HOURS = (6, 18)
BURST_FACTOR = 10.0
PER_EVENT_UP_TO = 10.0
"""Rates up to this are replayed event by event; above it, block by block."""


@dataclass(frozen=True)
class Stream:
    """One simulated model's stream."""

    model: str
    rate: float  # events per second outside bursts
    ratio: float  # positives : negatives
    seconds: float  # record time simulated
    seed: int
    scenario: str = "iid"  # iid, wobble, bursts, drop
    drop: float = 0.0  # AUC lost at ``drop_at`` (scenario drop)
    drop_at: float = DAY
    config: MonitorConfig | None = None  # None: the defaults

    def auc(self, t: np.ndarray) -> np.ndarray:
        """The model's AUC at record times ``t`` (seconds from the start)."""
        level = AUC_LEVEL[self.model]
        if self.scenario == "wobble":
            return level + 0.01 * np.cos(2.0 * math.pi * t / DAY)
        if self.scenario == "drop":
            return np.where(t < self.drop_at, level, level - self.drop)
        return np.full(t.shape, level)

    def segments(self, start: float, end: float) -> Iterator[tuple[float, float, float]]:
        """(from, to, events per second) pieces of [start, end) with constant traffic."""
        if self.scenario != "bursts":
            yield start, end, self.rate
            return
        t = start
        while t < end:
            day = math.floor(t / DAY) * DAY
            edges = sorted({day + h * 3600.0 for h in BURST_HOURS}
                           | {day + h * 3600.0 + 3600.0 for h in BURST_HOURS} | {day + DAY})
            nxt = min(e for e in edges if e > t)
            hour = (t - day) / 3600.0
            burst = any(h <= hour < h + 1 for h in BURST_HOURS)
            upto = min(nxt, end)
            yield t, upto, self.rate * (BURST_FACTOR if burst else 1.0)
            t = upto


_THETA_GRID = 2001


def _theta_table(model: str) -> tuple[np.ndarray, np.ndarray]:
    level = AUC_LEVEL[model]
    aucs = np.linspace(level - 0.25, min(level + 0.04, 0.995), _THETA_GRID)
    return aucs, np.array([parameter(model, float(a)) for a in aucs])


_TABLES: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def theta(model: str, auc: np.ndarray) -> np.ndarray:
    """θ of ``model`` at AUCs ``auc``, interpolated on a fine grid (bisections per event
    would cost more than the monitor)."""
    table = _TABLES.get(model)
    if table is None:
        table = _TABLES[model] = _theta_table(model)
    return np.interp(auc, *table)


_AUC_STEP = 0.0005


def model_at(model: str, auc: float) -> tuple[float, float, float, float, float]:
    """:func:`~benchmarks.score_models.components` of ``model`` at AUC ``auc``, linear
    between the grid points of :data:`_AUC_STEP` (each computed once)."""
    low = math.floor(auc / _AUC_STEP)
    weight = auc / _AUC_STEP - low
    a = _grid(model, low)
    if weight < 1e-9:
        return a
    b = _grid(model, low + 1)
    return tuple(x + weight * (y - x) for x, y in zip(a, b, strict=True))  # type: ignore[return-value]


_GRID: dict[tuple[str, int], tuple[float, float, float, float, float]] = {}


def _grid(model: str, index: int) -> tuple[float, float, float, float, float]:
    found = _GRID.get((model, index))
    if found is None:
        found = _GRID[(model, index)] = components(model, parameter(model, index * _AUC_STEP))
    return found


# ------------------------------------------------------------------------------------------
# Route 1: every event through the real monitor


def per_event(stream: Stream) -> list[tuple[str, float]]:
    """(measure, record time) of every drift alarm of the monitor on the stream's events."""
    rng = np.random.default_rng(stream.seed)
    monitor = Monitor("bench", stream.config or MonitorConfig())
    update = monitor.update_values
    found: list[tuple[str, float]] = []
    p = share(stream.ratio)
    chunk = max(60.0, min(3600.0, 200_000 / stream.rate))
    t = 0.0
    while t < stream.seconds:
        end = min(t + chunk, stream.seconds)
        for start, stop, rate in stream.segments(t, end):
            n = rng.poisson(rate * (stop - start))
            ts = np.sort(rng.uniform(start, stop, n))
            y = rng.random(n) < p
            s = scores(stream.model, y, theta(stream.model, stream.auc(ts)), rng)
            for label, score, when in zip(y.tolist(), s.tolist(), ts.tolist(), strict=True):
                alarms = update(int(label), score, None, when)
                if alarms:
                    found += [(a.measure, when) for a in alarms if a.level == "drift"]
        t = end
    return found


# ------------------------------------------------------------------------------------------
# Route 2: blocks drawn whole


def _events_between(stream: Stream, start: float, end: float) -> float:
    return sum((b - a) * r for a, b, r in stream.segments(start, end))


def _time_of_events(stream: Stream, start: float, count: float) -> float:
    """The record time at which ``count`` events are expected after ``start``."""
    t = start
    for a, b, r in stream.segments(start, start + 10 * DAY):
        if (b - a) * r >= count:
            return a + count / r
        count -= (b - a) * r
        t = b
    return t


def per_block(stream: Stream) -> list[tuple[str, float]]:
    """(measure, record time) of every drift alarm of the monitor's blocks watches on blocks
    drawn whole (see the module docstring)."""
    rng = np.random.default_rng(stream.seed)
    config = stream.config or MonitorConfig()
    states = [WatchState(w, config) for w in config.watches if w.feed == "blocks"]
    watches = BlockWatches(states, config)
    found: list[tuple[str, float]] = []
    m, seconds = config.block_min_class, config.block_seconds
    p = share(stream.ratio)
    start = 0.0

    def alarm(measure: str, detector: str, level: str, value: float, ts: float | None,
              reference: float) -> Alarm:
        return Alarm("bench", measure, detector, level, value, math.nan, 0, 0, 0,  # type: ignore[arg-type]
                     ts, reference)

    while start < stream.seconds:
        expected = _events_between(stream, start, start + seconds)
        n = int(rng.poisson(expected)) + 1
        if n >= BLOCK_LIMIT:
            n = BLOCK_LIMIT
            end = _time_of_events(stream, start, float(rng.gamma(BLOCK_LIMIT)))
        else:
            rate = next(stream.segments(start + seconds, start + seconds + 1.0))[2]
            end = start + seconds + float(rng.exponential(1.0 / rate))
        positives = int(rng.binomial(n, p))
        while positives < m or n - positives < m:  # rare above 10 events a second
            n += 1
            positives += rng.random() < p
            end += float(rng.exponential(1.0 / stream.rate))
        negatives = n - positives
        auc, s10, s01, fnr, fpr = block_model(stream, start, end)
        sd = math.sqrt(s10 / positives + s01 / negatives)
        block_auc = min(max(rng.normal(auc, sd), 0.0), 1.0)
        block = Block(n, positives, negatives, block_auc, s10, s01,
                      int(rng.binomial(positives, fnr)), int(rng.binomial(negatives, fpr)),
                      end - start)
        for a in watches.close(block, end, alarm):
            if a.level == "drift":
                found.append((a.measure, end))
        start = end
    return found


def block_model(stream: Stream, start: float, end: float
                ) -> tuple[float, float, float, float, float]:
    """The mean AUC, component variances and per-class error rates of a block spanning
    [start, end): the model at the block's middle, or, for a block the drop cuts, the
    mixture of both sides by their share of the span (exact for the AUC and the rates when
    the drop moves the positives' scores only, as θ does in these models; the components
    are the earlier side's)."""
    model = stream.model
    if stream.scenario == "drop" and start < stream.drop_at < end:
        before = model_at(model, AUC_LEVEL[model])
        after = model_at(model, AUC_LEVEL[model] - stream.drop)
        w = (end - stream.drop_at) / (end - start)
        return (before[0] + w * (after[0] - before[0]), before[1], before[2],
                before[3] + w * (after[3] - before[3]), before[4] + w * (after[4] - before[4]))
    middle = np.array([0.5 * (start + end)])
    return model_at(model, float(stream.auc(middle)[0]))


def route(stream: Stream) -> list[tuple[str, float]]:
    """The stream's drift alarms by the route its traffic allows."""
    return per_event(stream) if stream.rate <= PER_EVENT_UP_TO else per_block(stream)


# ------------------------------------------------------------------------------------------
# Tables


def _pool() -> Any:
    return multiprocessing.get_context("fork").Pool(2)


def _per_30_days(alarms: int, seconds: float) -> str:
    return f"{alarms * MONTH / seconds:.2f} ({alarms})"


SCENARIOS = {
    "iid": ("iid", 0.0),
    "wobble ± 0.01": ("wobble", 0.0),
    "bursts 10× 2 h/day": ("bursts", 0.0),
    "sustained −0.01": ("drop", 0.01),
}
"""Table A's rows: (scenario, drop); the sustained drop starts after the first day."""


def table_a(pool: Any, days: float, rates: Sequence[float]) -> dict[tuple[float, str], float]:
    """False alarms per model per 30 days; returns the worst cell per (rate, scenario)."""
    print("### A. False drift alarms per model per 30 days, all default watches together\n")
    print(f"Each cell: {len(MODELS)} score models × {days:g} days of record time "
          f"({len(MODELS) * days:g} model-days; "
          + ", ".join(f"{m} at AUC {AUC_LEVEL[m]}" for m in MODELS)
          + "), alarms per 30 days (count). Rates up to "
          f"{PER_EVENT_UP_TO:g} events/s replay every event through the monitor, above it "
          "blocks are drawn whole (table C). The sustained −0.01 row drops the AUC by 0.01, "
          "half the default minimum effect, after the first day (a quarter of the stream in "
          "--quick), and keeps it there.\n")
    jobs, keys = [], []
    for i, rate in enumerate(rates):
        for j, (name, (scenario, drop)) in enumerate(SCENARIOS.items()):
            for r, ratio in enumerate(RATIOS):
                for mi, model in enumerate(MODELS):
                    seed = SEED + 100_000 * i + 10_000 * j + 100 * r + mi
                    jobs.append(Stream(model, rate, ratio, days * DAY, seed, scenario, drop,
                                       drop_at=min(DAY, days * DAY / 4)))
                    keys.append((rate, name, ratio))
    started = time.perf_counter()
    counts: dict[tuple[float, str, float], int] = {}
    for key, found in zip(keys, pool.imap(route, jobs, chunksize=1), strict=True):
        counts[key] = counts.get(key, 0) + len(found)
    print("| events/s | scenario | " + " | ".join(RATIO_NAMES[r] for r in RATIOS) + " |")
    print("|---:|---|" + "---:|" * len(RATIOS))
    worst: dict[tuple[float, str], float] = {}
    seconds = len(MODELS) * days * DAY
    for rate in rates:
        for name in SCENARIOS:
            cells = [_per_30_days(counts[(rate, name, ratio)], seconds) for ratio in RATIOS]
            worst[(rate, name)] = max(counts[(rate, name, r)] for r in RATIOS) * MONTH / seconds
            print(f"| {rate:,.0f} | {name} | " + " | ".join(cells) + " |")
    print(f"\n{len(jobs)} streams in {time.perf_counter() - started:.0f} s.\n")
    return worst


def _delay(stream: Stream) -> tuple[float | None, float | None, int]:
    """(first AUC alarm, first alarm on any watch) after the drop, in seconds, and alarms
    before it."""
    found = route(stream)
    after = [t - stream.drop_at for m, t in found if t > stream.drop_at and m == "auc"]
    any_watch = [t - stream.drop_at for _, t in found if t > stream.drop_at]
    early = sum(1 for _, t in found if t <= stream.drop_at)
    return (min(after) if after else None, min(any_watch) if any_watch else None, early)


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def table_b(pool: Any, runs: int, rates: Sequence[float]
            ) -> dict[tuple[float, float, float], tuple[float | None, int]]:
    """Median delays of sustained drops; returns (median seconds, detected) per cell."""
    print("### B. Sustained AUC drops: median delay to the first AUC alarm\n")
    print(f"binormal model, AUC 0.90 → 0.90 − drop after a day of record time, {runs} runs "
          "per cell; cells: median delay in minutes of record time (in events), runs "
          "detected (the 0.01 drop, below the default effect, is table A's last row).\n")
    drops = (0.05, 0.10)
    ratios = (1 / 4, 1 / 15)
    jobs, keys = [], []
    for i, rate in enumerate(rates):
        horizon = 4 * DAY if rate < 10 else 6 * 3600.0
        for j, drop in enumerate(drops):
            for r, ratio in enumerate(ratios):
                for run in range(runs):
                    seed = SEED + 500_000 + 10_000 * i + 1000 * j + 100 * r + run
                    jobs.append(Stream("binormal", rate, ratio, DAY + horizon, seed, "drop",
                                       drop))
                    keys.append((rate, drop, ratio))
    results: dict[tuple[float, float, float], list[tuple[float | None, float | None, int]]] = {}
    for key, got in zip(keys, pool.imap(_delay, jobs, chunksize=1), strict=True):
        results.setdefault(key, []).append(got)
    header = [f"{d:.2f} at {RATIO_NAMES[r]}" for d in drops for r in ratios]
    print("| events/s | " + " | ".join(header) + " |")
    print("|---:|" + "---:|" * len(header))
    summary: dict[tuple[float, float, float], tuple[float | None, int]] = {}
    for rate in rates:
        cells = []
        for drop in drops:
            for ratio in ratios:
                got = results[(rate, drop, ratio)]
                delays = [d for d, _, _ in got if d is not None]
                median = _median(delays)
                summary[(rate, drop, ratio)] = (median, len(delays))
                text = "–" if median is None else \
                    f"{median / 60:.1f} min ({median * rate:,.0f})"
                early = sum(e for _, _, e in got)
                note = f" [{early} before]" if early else ""
                cells.append(f"{text}, {len(delays)}/{len(got)}{note}")
        print(f"| {rate:,.0f} | " + " | ".join(cells) + " |")
    print()
    return summary


SHORT_BUDGET = MonitorConfig(days_per_false_alarm=1.0, min_effect_auc=0.0, min_effect_rate=0.0)
"""The budget's accounting laid bare: one false alarm per model per day, no indifference
zone, so the budget is spent while nothing changes and the alarms are many enough to count."""


def _alarms(stream: Stream) -> int:
    return len(route(stream))


def _both_routes(stream: Stream) -> tuple[int, int]:
    return len(per_event(stream)), len(per_block(stream))


def table_c(pool: Any, days: float, runs: int) -> None:
    print("### C. Both routes at 100 events/s: every event through the monitor, and blocks "
          "drawn whole\n")
    print(f"False alarms with the budget set to one per model per day and no indifference "
          f"zone ({days:g} model-days per model, ratio and route; expected: one per day):\n")
    print("| model | ratio | per event: alarms per day | per block: alarms per day |")
    print("|---|---|---:|---:|")
    ratios = (1 / 4, 1 / 15)
    jobs = [Stream(model, 100.0, ratio, days * DAY, SEED + 700_000 + 10 * i + r,
                   config=SHORT_BUDGET)
            for i, model in enumerate(MODELS) for r, ratio in enumerate(ratios)]
    counts = pool.map(_both_routes, jobs, chunksize=1)
    for stream, (event_count, block_count) in zip(jobs, counts, strict=True):
        print(f"| {stream.model} | {RATIO_NAMES[stream.ratio]} | {event_count / days:.2f} "
              f"({event_count}) | {block_count / days:.2f} ({block_count}) |")
    total_event = sum(c for c, _ in counts)
    total_block = sum(c for _, c in counts)
    print(f"\nAll: {total_event} alarms per event, {total_block} per block, in "
          f"{len(jobs) * days:g} model-days each (expected {len(jobs) * days:g}).\n")
    print(f"Median delay of a 0.05 AUC drop after a day (binormal, defaults, {runs} runs per "
          "cell), minutes of record time:\n")
    print("| ratio | per event | per block |")
    print("|---|---:|---:|")
    delay_jobs = [(route_name, Stream("binormal", 100.0, ratio, DAY + 3600.0,
                                      SEED + 800_000 + 100 * r + run, "drop", 0.05))
                  for route_name in ("event", "block") for r, ratio in enumerate(ratios)
                  for run in range(runs)]
    delays = pool.map(_routed_delay, delay_jobs, chunksize=1)
    found: dict[tuple[str, float], list[float]] = {}
    for (route_name, stream), got in zip(delay_jobs, delays, strict=True):
        found.setdefault((route_name, stream.ratio), [])
        if got is not None:
            found[(route_name, stream.ratio)].append(got)
    for ratio in ratios:
        cells = []
        for route_name in ("event", "block"):
            got = found[(route_name, ratio)]
            median = _median(got)
            cells.append("–" if median is None else
                         f"{median / 60:.2f} ({len(got)}/{runs} detected)")
        print(f"| {RATIO_NAMES[ratio]} | " + " | ".join(cells) + " |")
    print()


def _routed_delay(job: tuple[str, Stream]) -> float | None:
    route_name, stream = job
    found = per_event(stream) if route_name == "event" else per_block(stream)
    after = [t - stream.drop_at for m, t in found if t > stream.drop_at and m == "auc"]
    return min(after) if after else None


def table_d(pool: Any, days: float, rates: Sequence[float]) -> None:
    print("### D. The budget's accounting: the same false alarms per day at any traffic\n")
    print(f"The budget set to one false alarm per model per day and no indifference zone, "
          f"so it is spent while nothing changes: alarms per model per day over "
          f"{len(MODELS)} models × {days:g} days per cell (expected 1.00; the per-class "
          "rates' mid-p z-scores are conservative where errors are few, so fewer is "
          "expected there).\n")
    scenarios = ("iid", "bursts")
    ratios = (1 / 4, 1 / 15)
    jobs, keys = [], []
    for i, rate in enumerate(rates):
        for j, scenario in enumerate(scenarios):
            for r, ratio in enumerate(ratios):
                for mi, model in enumerate(MODELS):
                    jobs.append(Stream(model, rate, ratio, days * DAY,
                                       SEED + 900_000 + 10_000 * i + 1000 * j + 100 * r + mi,
                                       scenario, config=SHORT_BUDGET))
                    keys.append((rate, scenario, ratio))
    counts: dict[tuple[float, str, float], int] = {}
    for key, count in zip(keys, pool.imap(_alarms, jobs, chunksize=1), strict=True):
        counts[key] = counts.get(key, 0) + count
    header = [f"{s}, {RATIO_NAMES[r]}" for s in scenarios for r in ratios]
    print("| events/s | " + " | ".join(header) + " |")
    print("|---:|" + "---:|" * len(header))
    for rate in rates:
        cells = [f"{counts[(rate, s, r)] / (len(MODELS) * days):.2f}"
                 for s in scenarios for r in ratios]
        print(f"| {rate:,.0f} | " + " | ".join(cells) + " |")
    print()


def table_e() -> None:
    """Where the indifference zone's boundary lies: the exact run length of the AUC watch's
    CUSUM under sustained drops, from a block's standard error at each rate (no
    simulation)."""
    from driftwatch.core.budget import block_arl
    from driftwatch.core.sequential import cusum_arl, cusum_threshold
    from driftwatch.core.zone import allowance, tolerance

    config = MonitorConfig()
    effect = config.min_effect("auc")
    m, seconds = config.block_min_class, config.block_seconds
    drops = (0.0, 0.01, 0.0125, 0.015, 0.0175, 0.02, 0.025)
    print("### E. Where the zone's boundary lies: days until the AUC watch alarms\n")
    print(f"The AUC watch's mean run length, in days of record time, under a sustained drop "
          f"(exact: the CUSUM's integral equation at the block's standard error, binormal "
          f"AUC 0.90; blocks of ≥ {m} per class and ≥ {seconds:g} s, their events at the "
          f"mean; the AUC watch's third of the budget). The minimum effect is {effect:g}; the "
          "tolerance, where the watch spends its 90 days of budget, is half of it or one "
          "block standard error short of it, whichever is more. A drop below the tolerance "
          "takes longer than the budget, one above the effect minutes to hours.\n")
    print("| events/s | ratio | block s.e. | tolerance | " + " | ".join(f"{d:g}" for d in drops)
          + " |")
    print("|---:|---|---:|---:|" + "---:|" * len(drops))
    _, s10, s01, _, _ = model_at("binormal", 0.9)
    for rate in RATES:
        for ratio in (1 / 4, 1 / 15):
            p = share(ratio)
            events = max(rate * seconds, m / min(p, 1 - p) * 1.1)
            positives, negatives = events * p, events * (1 - p)
            sd = math.sqrt(s10 / positives + s01 / negatives)
            block_seconds = events / rate
            arl = block_arl(config.days_per_false_alarm, 3, block_seconds)
            tolerated = tolerance(effect, sd)
            k = allowance(0.5, (effect - tolerated) / sd)
            h = cusum_threshold(arl, k)
            cells = []
            for drop in drops:
                shift = (drop - tolerated) / sd
                if k - shift > 6.0:  # drift of −6 block deviations: beyond any horizon
                    blocks = math.inf
                elif h > 0.0:
                    blocks = cusum_arl(h, k, shift)
                else:  # an alarm is one block above the allowance
                    above = normal_cdf(shift - k)
                    blocks = 1.0 / above if above > 0.0 else math.inf
                days = blocks * block_seconds / DAY
                cells.append(f"{days:.3g}" if 0 < days < 1e6 else "> 10⁶")
            print(f"| {rate:,.0f} | {RATIO_NAMES[ratio]} | {sd:.4f} | {tolerated:.4f} | "
                  + " | ".join(cells) + " |")
    print()


def main(quick: bool = False, tables: str = "ABCDE") -> None:
    started = time.perf_counter()
    rates = RATES
    with _pool() as pool:
        if "D" in tables:
            table_d(pool, days=2.0 if quick else 10.0, rates=rates)
        if "A" in tables:
            table_a(pool, days=1.0 if quick else 7.5, rates=rates)
        if "B" in tables:
            table_b(pool, runs=4 if quick else 20, rates=rates)
        if "C" in tables:
            table_c(pool, days=0.5 if quick else 2.5, runs=4 if quick else 12)
    if "E" in tables:
        table_e()
    print(f"Total wall time {time.perf_counter() - started:.0f} s on 2 processes.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tables", default="ABCDE")
    args = parser.parse_args()
    main(quick=args.quick, tables=args.tables)
