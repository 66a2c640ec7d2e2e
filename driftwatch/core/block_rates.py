"""The per-class error rates of blocks, standardized: z-scores of error counts.

The false-negative rate FN/P on positives and the false-positive rate FP/N on negatives (the
rates of the Linear Four Rates test, Wang and Abraham 2015): the class ratio cannot move
them, unlike the overall error, which mixes them in the proportion of the classes. A block's
error count is compared with its predictive distribution given the reference blocks (those
since the last restart, self-starting as in :mod:`driftwatch.core.blocks`), the
beta-binomial with Jeffreys' prior (so the reference's sampling error is folded in), and
turned into a z-score by the mid-p probability integral transform
z = Φ⁻¹(P(X < x) + ½·P(X = x)), which is close to N(0, 1) and never heavier-tailed for
discrete counts, even when errors are rare. Where the predictive distribution is wide
(thousands of errors a block, at high traffic) its normal approximation takes over.

Against the indifference zone (:mod:`driftwatch.core.zone`) the predictive distribution's
mean moves by the tolerance, its concentration kept (:meth:`RateScore.evidence`).

References:
    H. Wang, Z. Abraham (2015). Concept drift detection for streaming data. *IJCNN 2015*
    (the Linear Four Rates test: per-class rates instead of one error).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from driftwatch.core.sequential import normal_quantile
from driftwatch.core.zone import tolerance

_Z_LIMIT = 1e-300  # mid-p tails are clamped at 1e-300: |z| ≤ 37
_SATURATED = 37.0  # |mid-p z| at the clamp: take the normal approximation
_RATE_LIMIT = 1e-9  # a shifted reference rate stays inside (0, 1)
_NORMAL_VARIANCE = 2500.0
"""Above this predictive variance of a block's error count (a standard deviation of 50
errors, only in blocks of thousands of events) its z-score is the normal approximation:
the beta-binomial's skewness is then below 0.02, so the mid-p z differs by less than 0.03
up to |z| = 3, and summing its thousands of terms would cost milliseconds per block."""


class RateScore:
    """A block's error count against the reference counts: ``errors`` of ``trials`` in the
    block, ``reference_errors`` of ``reference_trials`` before it."""

    __slots__ = ("errors", "reference_errors", "reference_trials", "trials")

    def __init__(self, errors: int, trials: int, reference_errors: int,
                 reference_trials: int) -> None:
        self.errors, self.trials = errors, trials
        self.reference_errors, self.reference_trials = reference_errors, reference_trials

    def z(self) -> float:
        """The mid-p z-score under the beta-binomial predictive distribution (Jeffreys'
        prior): close to N(0, 1) while the rate holds, large when errors are many."""
        e, t = self.reference_errors, self.reference_trials
        return count_z(self.errors, self.trials, e + 0.5, t - e + 0.5)

    def tolerance(self, effect: float) -> float:
        """The zone's tolerance for this block (:func:`~driftwatch.core.zone.tolerance`),
        from the predictive standard deviation of its rate at the reference rate."""
        e, t, n = self.reference_errors, self.reference_trials, self.trials
        concentration = t + 1.0
        rate = (e + 0.5) / concentration
        return tolerance(effect, _rate_sd(rate, n, concentration))

    def evidence(self, side: int, effect: float) -> tuple[float, float]:
        """(u, room) for a rise (``side`` +1) or fall (−1) of the rate against the zone of
        minimum ``effect``: u is the mid-p z-score under the predictive distribution whose
        mean is the reference rate moved by the tolerance (:meth:`tolerance`) towards that
        side (its concentration, the reference's trials, kept), positive when the block is
        worse than that; room is (``effect`` − tolerance) over the predictive standard
        deviation of the block's rate. Where the mid-p value reaches its clamp (|z| ≥ 37,
        far beyond any threshold but the zone's at high traffic), the normal approximation
        of the same distribution gives u instead."""
        if effect == 0.0:
            return side * self.z(), 0.0
        e, t, x, n = self.reference_errors, self.reference_trials, self.errors, self.trials
        concentration = t + 1.0
        tolerated = self.tolerance(effect)
        rate = (e + 0.5) / concentration + side * tolerated
        rate = min(max(rate, _RATE_LIMIT), 1.0 - _RATE_LIMIT)
        u = side * count_z(x, n, rate * concentration, (1.0 - rate) * concentration)
        sd = _rate_sd(rate, n, concentration)
        if abs(u) >= _SATURATED:
            normal = side * (x / n - rate) / sd
            u = max(u, normal) if u > 0.0 else min(u, normal)
        return u, (effect - tolerated) / sd


def _rate_sd(rate: float, trials: int, concentration: float) -> float:
    """The standard deviation of a block's rate under the beta-binomial predictive
    distribution of mean ``rate``: Var(X/n) = p(1 − p)/n · (n + c)/(1 + c)."""
    return math.sqrt(rate * (1.0 - rate) / trials * (trials + concentration)
                     / (1.0 + concentration))


class RateStandardizer:
    """Self-starting z-scores of a per-class error rate (errors out of trials per block).

    The first ``warmup`` blocks after a :meth:`reset` only count; from then on
    :meth:`score` scores a block's error count against the beta-binomial predictive
    distribution given the reference counts, by the mid-p transform (module docstring), and
    :meth:`add` counts it into the reference.
    """

    __slots__ = ("_blocks", "_errors", "_trials", "warmup")

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self.reset()

    def reset(self) -> None:
        self._blocks = 0
        self._errors = 0
        self._trials = 0

    @property
    def reference(self) -> float:
        """The reference rate (NaN before any block)."""
        return self._errors / self._trials if self._trials else math.nan

    def score(self, errors: int, trials: int) -> RateScore | None:
        """The block against the reference, or None while warming up."""
        if self._blocks < self.warmup:
            return None
        return RateScore(errors, trials, self._errors, self._trials)

    def add(self, errors: int, trials: int) -> None:
        self._blocks += 1
        self._errors += errors
        self._trials += trials

    def update(self, errors: int, trials: int) -> float | None:
        """:meth:`score` then :meth:`add`: the block's z-score (None while warming up)."""
        scored = self.score(errors, trials)
        self.add(errors, trials)
        return None if scored is None else scored.z()

    def export_state(self) -> list[int]:
        return [self._blocks, self._errors, self._trials]

    def restore(self, state: Sequence[int]) -> None:
        self._blocks, self._errors, self._trials = (int(x) for x in state)


def beta_binomial_pmf(n: int, a: float, b: float, last: int | None = None) -> list[float]:
    """P(X = x) for x = 0..``last`` (default n), X ~ BetaBinomial(n, a, b)."""
    base = math.lgamma(n + 1) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) \
        - math.lgamma(n + a + b)
    return [
        math.exp(base - math.lgamma(x + 1) - math.lgamma(n - x + 1)
                 + math.lgamma(x + a) + math.lgamma(n - x + b))
        for x in range(n + 1 if last is None else last + 1)
    ]


def count_z(x: int, n: int, a: float, b: float) -> float:
    """The z-score of ``x`` under BetaBinomial(n, a, b): :func:`midp_z`, or the normal
    approximation (x − mean)/sd where the variance exceeds :data:`_NORMAL_VARIANCE`."""
    c = a + b
    variance = n * a * b * (n + c) / (c * c * (1.0 + c))
    if variance > _NORMAL_VARIANCE:
        return (x - n * a / c) / math.sqrt(variance)
    return midp_z(x, n, a, b)


def midp_z(x: int, n: int, a: float, b: float) -> float:
    """Φ⁻¹ of the mid-p value P(X < x) + ½·P(X = x) of ``x`` under BetaBinomial(n, a, b):
    large when ``x`` errors are many for the predictive distribution.

    The smaller tail is summed, from P(X = x) (one evaluation of the log-pmf) outwards by
    the ratio of successive terms, until the terms no longer count: a few standard
    deviations' worth of multiplications instead of x + 1 log-gamma terms, and both tails
    accurate down to 10⁻³⁰⁰ (|z| ≤ 37), where 1 − (a sum of the lower terms) loses the upper
    tail below 10⁻¹⁵ (``tests/core/test_blocks.py`` checks it against scipy's tails).
    """
    log_px = (math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1)
              + math.lgamma(x + a) + math.lgamma(n - x + b) + math.lgamma(a + b)
              - math.lgamma(a) - math.lgamma(b) - math.lgamma(n + a + b))
    total, term = 0.5, 1.0  # the tail in units of P(X = x), half of it counted
    if x * (a + b) <= n * a:  # x at or below the mean: the lower tail
        for j in range(x, 0, -1):  # P(X = j − 1)/P(X = j)
            term *= j * (n - j + b) / ((n - j + 1) * (j - 1 + a))
            total += term
            if term < 1e-17 * total:
                break
        u = math.exp(log_px + math.log(total))
        return normal_quantile(min(max(u, _Z_LIMIT), 1.0 - 1e-16))
    for j in range(x, n):  # P(X = j + 1)/P(X = j)
        term *= (n - j) * (j + a) / ((j + 1) * (n - j - 1 + b))
        total += term
        if term < 1e-17 * total:
            break
    upper = math.exp(log_px + math.log(total))
    return -normal_quantile(min(max(upper, _Z_LIMIT), 1.0 - 1e-16))
