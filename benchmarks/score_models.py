"""Seeded score models for the detection and budget benchmarks, each at an AUC asked for.

Every model has one parameter θ, solved (closed form, or bisection) so that its AUC is exactly
the level asked for; the class-conditional score distributions are:

- **binormal**: negatives N(0, 1), positives N(θ, 1);
- **unequal**: negatives N(0, 1), positives N(θ, 2²) (unequal variances: a ROC curve that
  crosses the chance line at high false-positive rates);
- **beta**: negatives Beta(1, a), positives Beta(a, 1) with a = θ (bounded, skewed; the
  threshold 0.5 central);
- **bimodal**: both classes two-component normal mixtures (a non-binormal ROC curve);
- **tied**: binormal scores rounded to five values (heavily tied, discrete).

:func:`components` gives a model's AUC, DeLong's component variances and the per-class error
rates at the crisp threshold 0.5, by a large fixed Monte Carlo sample: what a block of P
positives and N negatives of that model has on average, for simulating blocks without their
events (``benchmarks/budget.py``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from driftwatch.core.sequential import normal_cdf, normal_quantile

MODELS = ("binormal", "beta", "bimodal", "tied")
"""The detection benchmark's four models."""

AUC_LEVEL = {"binormal": 0.9, "beta": 0.8, "bimodal": 0.95, "tied": 0.7, "unequal": 0.85}

_UNEQUAL_SD = 2.0


def _bisect(f: Callable[[float], float], target: float, low: float, high: float) -> float:
    for _ in range(100):
        mid = 0.5 * (low + high)
        if f(mid) < target:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


_NEG_MIX = ((0.7, 0.0, 1.0), (0.3, 2.0, 1.0))  # weight, mean, sd
_POS_MIX = ((0.5, 0.0, 1.0), (0.5, 2.5, 0.6))  # shifted by t
_TIED_EDGES = np.array([-0.5, 0.5, 1.5, 2.5])  # five values: ≤ −0.5, …, > 2.5


def _mixture_auc(t: float) -> float:
    return sum(
        wp * wn * normal_cdf((mp + t - mn) / math.hypot(sp, sn))
        for wp, mp, sp in _POS_MIX for wn, mn, sn in _NEG_MIX
    )


def _bins(mu: float) -> np.ndarray:
    cdf = np.array([normal_cdf(e - mu) for e in _TIED_EDGES])
    return np.diff(np.concatenate(([0.0], cdf, [1.0])))


def _tied_auc(mu: float) -> float:
    pos, neg = _bins(mu), _bins(0.0)
    below = np.concatenate(([0.0], np.cumsum(neg)[:-1]))
    return float(np.sum(pos * (below + 0.5 * neg)))


def _beta_auc(a: float) -> float:
    # X ~ Beta(a, 1), Y ~ Beta(1, a): P(X > Y) = 1 − a·B(a, a + 1).
    return 1.0 - a * math.exp(math.lgamma(a) + math.lgamma(a + 1) - math.lgamma(2 * a + 1))


def parameter(model: str, auc: float) -> float:
    """θ of ``model`` whose AUC is ``auc``."""
    if model == "binormal":
        return math.sqrt(2.0) * normal_quantile(auc)
    if model == "unequal":
        return math.hypot(1.0, _UNEQUAL_SD) * normal_quantile(auc)
    if model == "beta":
        return _bisect(_beta_auc, auc, 1.0, 200.0)
    if model == "bimodal":
        return _bisect(_mixture_auc, auc, -10.0, 10.0)
    return _bisect(_tied_auc, auc, -5.0, 10.0)


def scores(model: str, y: np.ndarray, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Scores for labels ``y`` with the model parameter ``theta`` per event."""
    n = y.size
    if model == "binormal":
        return rng.normal(0.0, 1.0, n) + theta * y
    if model == "unequal":
        z = rng.normal(0.0, 1.0, n)
        return np.where(y, theta + _UNEQUAL_SD * z, z)
    if model == "tied":
        return np.searchsorted(_TIED_EDGES, rng.normal(0.0, 1.0, n) + theta * y) * 0.25
    if model == "beta":
        u = rng.random(n)
        pos = u ** (1.0 / theta)  # Beta(a, 1) by inversion
        neg = 1.0 - u ** (1.0 / theta)  # Beta(1, a)
        return np.where(y, pos, neg)
    comp = rng.random(n)
    z = rng.normal(0.0, 1.0, n)
    neg = np.where(comp < _NEG_MIX[0][0], z * _NEG_MIX[0][2] + _NEG_MIX[0][1],
                   z * _NEG_MIX[1][2] + _NEG_MIX[1][1])
    pos = np.where(comp < _POS_MIX[0][0], z * _POS_MIX[0][2] + _POS_MIX[0][1],
                   z * _POS_MIX[1][2] + _POS_MIX[1][1]) + theta
    return np.where(y, pos, neg)


def share(ratio: float) -> float:
    """The positive share of a positives : negatives ratio."""
    return ratio / (1.0 + ratio)


@functools.lru_cache(maxsize=4096)
def components(model: str, theta: float, threshold: float = 0.5,
               sample: int = 200_000) -> tuple[float, float, float, float, float]:
    """(AUC, S₁₀, S₀₁, false-negative rate, false-positive rate) of ``model`` at ``theta``:
    the AUC and DeLong's component variances of the placement values, and the per-class
    error rates at ``threshold``, from ``sample`` scores per class (a fixed seed, so the
    values move smoothly with θ)."""
    rng = np.random.default_rng(20_240_601)
    pos = np.sort(scores(model, np.ones(sample, bool), np.full(sample, theta), rng))
    neg = np.sort(scores(model, np.zeros(sample, bool), np.full(sample, theta), rng))
    v10 = (np.searchsorted(neg, pos, "left") + np.searchsorted(neg, pos, "right")) / (2 * sample)
    v01 = 1.0 - (np.searchsorted(pos, neg, "left")
                 + np.searchsorted(pos, neg, "right")) / (2 * sample)
    fnr = float(np.mean(pos < threshold))
    fpr = float(np.mean(neg >= threshold))
    return float(v10.mean()), float(v10.var(ddof=1)), float(v01.var(ddof=1)), fnr, fpr
