"""The false-alarm budget: from "one false alarm per model per N days" to run lengths in blocks.

Operators count alarms per model per day, not per block. A CUSUM whose in-control average run
length (ARL) is fixed in blocks raises more false alarms per day the more blocks a day holds,
that is, the more traffic the model has. driftwatch fixes the budget in **record time**
instead: ``days_per_false_alarm`` D means that a model's budgeted detectors together expect
at most one false alarm per D days, at any traffic.

**Each block spends the record time it covers.** A block that spanned d seconds of record
time gives each of the model's n budgeted detectors an ARL of

    ARL = n · D · 86 400 / d   blocks,

so the expected false alarms of one detector over a stretch of blocks are Σ d_b/(n·D·86 400):
the record time covered divided by n·D days, whatever the blocks' lengths and however the
traffic varies (bursts, daily cycles, a backlog read in seconds, which covers the hours it
covers). No rate is estimated, so nothing lags behind a change of traffic. The sum over the n
detectors is one false alarm per D days. For a CUSUM the per-block hazard is 1/ARL once its
statistic has settled, so the accounting is exact for steady traffic and close to it for
traffic that changes slowly against the run length (measured in ``benchmarks/budget.py``).

Three clamps, each making the test stricter than the budget needs, never looser:

- a block counts at most :data:`MAX_BLOCK_SECONDS` (an hour): a model that comes back from a
  week of silence spends an hour's share on the block that spans the silence, not a week's;
  models closing fewer than one block an hour are tested as if they closed one;
- a block counts at least :data:`MIN_BLOCK_SECONDS` (a second): records whose time does not
  advance (one timestamp for a whole batch) cannot make the run length infinite;
- the ARL is rounded **up** to a grid of :data:`STEPS_PER_DOUBLING` steps per doubling, so
  that a watch asks :func:`~driftwatch.core.sequential.cusum_threshold` for a handful of
  cached thresholds instead of a new one per block.

Without record time (events without ``ts``) each block counts as ``block_seconds``, so the
budget holds per block, not in time (docs/detection.md#record-time).

**In-control means "within the tolerance".** The budget is spent at the worst case the
indifference zone tolerates (a sustained change of half the minimum effect, or nearly all of
it at high traffic, :mod:`driftwatch.core.zone`): while nothing changes at all, the false
alarms are far fewer.
"""

from __future__ import annotations

import math

SECONDS_PER_DAY = 86_400.0

MAX_BLOCK_SECONDS = 3600.0
"""The most record time one block is counted for (see the module docstring)."""

MIN_BLOCK_SECONDS = 1.0
"""The least record time one block is counted for."""

STEPS_PER_DOUBLING = 4
"""ARL grid: 2^(j/4), steps of 19 %; a run length is rounded up to the next grid point."""

MIN_ARL = 10.0
MAX_ARL = 1e12
"""The range of run lengths the CUSUM accepts (its ``arl`` parameter's bounds)."""


def quantized_arl(arl: float) -> float:
    """``arl`` rounded up to the grid 2^(j/:data:`STEPS_PER_DOUBLING`), within
    [:data:`MIN_ARL`, :data:`MAX_ARL`].

    >>> quantized_arl(100.0), quantized_arl(128.0), quantized_arl(129.0)
    (107.63474115247546, 128.0, 152.2185107203483)
    """
    if not arl > 0.0:
        raise ValueError(f"arl must be > 0, got {arl!r}")
    step = math.ceil(math.log2(arl) * STEPS_PER_DOUBLING - 1e-9)
    grid: float = 2.0 ** (step / STEPS_PER_DOUBLING)
    return min(max(grid, MIN_ARL), MAX_ARL)


def counted_seconds(seconds: float | None, block_seconds: float) -> float:
    """The record time a block is counted for: its own span clamped to
    [:data:`MIN_BLOCK_SECONDS`, :data:`MAX_BLOCK_SECONDS`], or ``block_seconds`` (at least
    :data:`MIN_BLOCK_SECONDS`) when its span is unknown (no record time)."""
    if seconds is None:
        return max(block_seconds, MIN_BLOCK_SECONDS)
    return min(max(seconds, MIN_BLOCK_SECONDS), MAX_BLOCK_SECONDS)


def block_arl(days_per_false_alarm: float, detectors: int, seconds: float) -> float:
    """The in-control run length, in blocks, of each of ``detectors`` budgeted detectors for
    a block counted as ``seconds`` of record time, so that together they expect one false
    alarm per ``days_per_false_alarm`` days (quantized up, :func:`quantized_arl`).

    >>> round(block_arl(30.0, 3, 60.0))  # the defaults at high traffic: 129 600, rounded up
    131072
    """
    if detectors < 1:
        raise ValueError(f"detectors must be ≥ 1, got {detectors!r}")
    return quantized_arl(detectors * days_per_false_alarm * SECONDS_PER_DAY / seconds)


def expected_false_alarms(arls: list[float], seconds: float, days: float = 30.0) -> float:
    """Expected false alarms in ``days`` days of detectors with per-block run lengths
    ``arls``, for blocks of ``seconds`` of record time each: Σ (blocks in ``days``)/ARL.
    What ``driftwatch_expected_false_alarms_per_30_days`` shows at the current traffic."""
    blocks = days * SECONDS_PER_DAY / seconds
    return math.fsum(blocks / arl for arl in arls)
