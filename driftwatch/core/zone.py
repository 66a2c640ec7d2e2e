"""The indifference zone: test "worse by at least the minimum effect", not "changed at all".

A z-score CUSUM on ever more precise blocks proves ever smaller changes (why that is useless:
docs/detection.md#why-an-indifference-zone). A blocks watch therefore tests Wald's
indifference zone in the measure's units, with the minimum effect δ (``min_effect_auc``,
``min_effect_rate``) and s_b a block's standard deviation in those units:

- **in control: worse by at most the tolerance τ = max(δ/2, δ − s_b)**. Each block's
  evidence is its z-score against the reference *moved by τ in the bad direction*, u (N(0, 1)
  when the measure sits exactly τ worse than its reference); the CUSUM's threshold is set
  for the budget's run length at that worst tolerated case (:mod:`driftwatch.core.budget`),
  so any sustained change up to τ, a daily wobble of the model included, raises no more
  false alarms than the budget. Where blocks are imprecise (low traffic, s_b ≥ δ/2) the
  tolerance is half the effect; as they become precise it rises towards δ, one block
  standard deviation short of it: at high traffic changes just below δ stay quiet too;
- **the allowance** k_b = max(k, (δ − τ)/s_b): the CUSUM's increments are zero at a change of
  max(τ + k·s_b, δ). At low traffic (s_b > δ) that is the usual k = 0.5 beyond the
  tolerance: the delays of a plain CUSUM, a little longer; from s_b ≤ δ it is δ itself,
  so a sustained change below δ has negative drift, and one well above δ alarms within a
  block or a few.

Each block adds its log-likelihood ratio of "worse by τ + 2·k_b·s_b" against "worse by τ",
2·k_b·(u − k_b) nats, to the CUSUM, and the alarm threshold is 2·k_b·h(ARL, k_b) nats, with h
the exact threshold of a CUSUM with allowance k_b
(:func:`~driftwatch.core.sequential.cusum_threshold`). For blocks of equal information this is
Page's CUSUM exactly, with the exact in-control run length at the tolerance; when the
information per block changes with the traffic, the log-likelihood scale weighs each block by
what it knows (the weighted CUSUM). k_b is rounded up to a grid of :data:`ALLOWANCE_STEPS`
steps per doubling, which moves the boundary up by at most 9 % of k_b·s_b and lets the
thresholds be cached.

With δ = 0 the zone is empty: u is the plain z-score and k_b = k, the CUSUM of old.

References:
    A. Wald (1947). *Sequential Analysis*, Wiley (the indifference zone between the
    hypotheses of a sequential test).
    E. S. Page (1954). Continuous inspection schemes. *Biometrika* 41, 100–115.
    D. M. Hawkins, D. H. Olwell (1998). *Cumulative Sum Charts and Charting for Quality
    Improvement*, Springer (§ 6.3, the weighted CUSUM for unequal sample sizes).
"""

from __future__ import annotations

import math

from driftwatch.core.sequential import cusum_threshold

ALLOWANCE_STEPS = 8
"""Allowance grid: 0.5 · 2^(j/8), steps of 9 %; an allowance above k is rounded up to it."""


def tolerance(effect: float, sd: float) -> float:
    """The largest sustained change the zone holds to the budget, for a block of standard
    deviation ``sd`` (the measure's units): half the ``effect``, or one block standard
    deviation short of it when that is more.

    >>> tolerance(0.02, 0.03), tolerance(0.02, 0.004), tolerance(0.0, 0.004)
    (0.01, 0.016, 0.0)
    """
    return max(effect / 2.0, effect - sd)


def allowance(k: float, room: float) -> float:
    """The block's allowance k_b = max(``k``, ``room`` rounded up to the grid); ``room`` is
    (δ − τ)/s_b, the distance from the tolerance to the minimum effect in block standard
    deviations. Not capped: past about 7.5 the threshold is 0 for any run length up to
    10¹² (:func:`~driftwatch.core.sequential.cusum_threshold`), and a cap would pull the
    boundary at high traffic below δ.

    >>> allowance(0.5, 0.3), allowance(0.5, 1.0), round(allowance(0.5, 1.05), 4)
    (0.5, 1.0, 1.0905)
    """
    if not room > k:
        return k
    step = math.ceil(math.log2(room / 0.5) * ALLOWANCE_STEPS - 1e-9)
    grid: float = 2.0 ** (step / ALLOWANCE_STEPS)
    return 0.5 * grid


def step(total: float, evidence: float, k: float, arl: float) -> tuple[float, bool]:
    """One block of the zone's CUSUM: the new statistic (nats) and whether it crossed.

    ``total`` is the statistic before the block, ``evidence`` the block's u, ``k`` its
    allowance k_b and ``arl`` the one-sided in-control run length the threshold is set for.
    """
    scale = 2.0 * k if k > 0.0 else 1.0  # k = 0 (no zone, no allowance): plain units
    total = max(0.0, total + scale * (evidence - k))
    return total, total > scale * cusum_threshold(arl, k)
