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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from benchmarks.score_models import AUC_LEVEL, components, parameter, scores, share
from driftwatch.core.block_watches import BlockWatches
from driftwatch.core.blocks import BLOCK_LIMIT, Block
from driftwatch.core.monitor import Alarm, Monitor, MonitorConfig
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


def _cumulative(stream: Stream, start: float, horizon: float
                ) -> list[tuple[float, float, float]]:
    return list(stream.segments(start, start + horizon))


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
    model = stream.model

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
