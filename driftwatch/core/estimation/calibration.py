"""Calibration: the map from a model's score to the probability that its label is positive.

Estimating performance from scores alone rests on one assumption: the probability p(s) that
an event scored s is positive is known. Two maps are provided:

- :class:`IdentityCalibration`: the scores already are calibrated probabilities, p(s) = s
  (a score outside [0, 1] is then an error, not a probability).
- :class:`IsotonicCalibration`: p is the isotonic (non-decreasing) regression of the labels
  on the scores of a labelled reference (the first N labelled events, or a reference file),
  fitted by the pool-adjacent-violators algorithm (Ayer et al. 1955) and frozen. Between
  the pooled blocks p is linear, outside the reference's range it is constant, which is
  how scikit-learn's ``IsotonicRegression(out_of_bounds="clip")`` interpolates (the tests
  compare the two).

**Exact.** :func:`pav` pools on integer counts: a block is (positives, events), and two
blocks are compared by cross-multiplying integers, so no rounding decides a pooling; each
fitted value is one correctly rounded division.

A calibration is a pure function of the score, and monotone: scores that tie get the same
probability, and the ordering the realized AUC uses is kept (an isotonic map introduces ties
in p, never in the scores the estimate orders by; :mod:`~driftwatch.core.estimation.expected`).

References:
    M. Ayer, H. D. Brunk, G. M. Ewing, W. T. Reid, E. Silverman (1955). An empirical
    distribution function for sampling with incomplete information. *Ann. Math. Statist.*
    26, 641–647 (the pool-adjacent-violators algorithm).
    B. Zadrozny, C. Elkan (2002). Transforming classifier scores into accurate multiclass
    probability estimates. *KDD 2002* (isotonic regression as a calibration map).
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from driftwatch.core.events import check_label, check_score
from driftwatch.core.state import check_state

STATE_VERSION = 1
_STATE_KEYS = frozenset({"version", "kind", "scores", "probabilities"})


class Calibration(Protocol):
    """What an estimator needs of a calibration: the probability of one score, and its
    state as plain data."""

    def probability(self, score: float) -> float:
        """p(score) in [0, 1]; ``ValueError`` naming ``y_score`` if it has none."""
        ...

    def export_state(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class IdentityCalibration:
    """The scores are calibrated probabilities: p(s) = s, for s in [0, 1].

    >>> IdentityCalibration().probability(0.25)
    0.25
    """

    def probability(self, score: float) -> float:
        if not 0.0 <= score <= 1.0:  # NaN fails too
            raise ValueError(f"y_score must be a probability in [0, 1] when the scores are "
                             f"assumed calibrated, got {score!r}")
        return score

    def export_state(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "kind": "identity", "scores": [],
                "probabilities": []}


@dataclass(frozen=True, slots=True)
class IsotonicStep:
    """One step of the isotonic fit (a pooled block of PAV, not a detector's
    :class:`~driftwatch.core.blocks.Block`): the distinct scores ``first`` … ``last`` pooled,
    with ``positives`` of ``events`` labelled 1; its fitted probability is their ratio."""

    first: float
    last: float
    positives: int
    events: int

    @property
    def probability(self) -> float:
        return self.positives / self.events


def pav(y_true: Sequence[object], y_score: Sequence[object]) -> list[IsotonicStep]:
    """The isotonic regression of labels on scores, as pooled blocks in score order.

    Events are grouped by distinct score first (ties share one fitted value), then adjacent
    groups whose rates decrease are pooled until the rates are non-decreasing (adjacent
    groups with equal rates are pooled too, so the blocks' probabilities strictly increase).
    O(n log n) for the sort, O(n) for the pooling. Inputs are validated; a bad one is a
    ``ValueError`` naming it.

    >>> [(b.first, b.last, b.positives, b.events) for b in pav([0, 1, 0, 1], [.1, .2, .3, .4])]
    [(0.1, 0.1, 0, 1), (0.2, 0.3, 1, 2), (0.4, 0.4, 1, 1)]

    Reference: Ayer et al. (1955); Barlow, Bartholomew, Bremner, Brunk (1972), *Statistical
    Inference under Order Restrictions*, §1.2.
    """
    if len(y_true) != len(y_score):
        raise ValueError(f"y_true and y_score differ in length: {len(y_true)} ≠ {len(y_score)}")
    events = sorted((check_score(s, f"y_score[{i}]"), check_label(y, f"y_true[{i}]"))
                    for i, (y, s) in enumerate(zip(y_true, y_score, strict=True)))
    # A stack of [first, last, positives, events]; a new group is pushed, then pooled with
    # the block below it while that block's rate is at least its own (integer comparison).
    stack: list[list[Any]] = []
    i = 0
    while i < len(events):
        score = events[i][0]
        j = i
        positives = 0
        while j < len(events) and events[j][0] == score:
            positives += events[j][1]
            j += 1
        block = [score, score, positives, j - i]
        while stack and stack[-1][2] * block[3] >= block[2] * stack[-1][3]:
            below = stack.pop()
            block = [below[0], block[1], below[2] + block[2], below[3] + block[3]]
        stack.append(block)
        i = j
    return [IsotonicStep(*block) for block in stack]


class IsotonicCalibration:
    """p(s) from an isotonic fit: constant on each pooled block, linear between blocks,
    constant beyond the fitted range (see the module docstring).

    Build it with :meth:`fit` (from labelled events) or :meth:`from_state`. Its knots are the
    first and last score of each block (one knot when they coincide) with the block's
    probability. :meth:`probability` costs one bisection over the knots, O(log k).

    Example: four events; the middle two violate the order and are pooled at ½.

    >>> calibration = IsotonicCalibration.fit([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4])
    >>> calibration.knots
    [(0.1, 0.0), (0.2, 0.5), (0.3, 0.5), (0.4, 1.0)]
    >>> [round(calibration.probability(s), 12) for s in (0.0, 0.15, 0.25, 0.35, 0.9)]
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """

    __slots__ = ("_probabilities", "_scores")

    def __init__(self, scores: Sequence[float], probabilities: Sequence[float]) -> None:
        scores = [check_score(s, "scores") for s in scores]
        probabilities = [float(p) for p in probabilities]
        if not scores or len(scores) != len(probabilities):
            raise ValueError("an isotonic calibration needs as many probabilities as knot "
                             f"scores, at least one: got {len(scores)} and {len(probabilities)}")
        if any(b <= a for a, b in itertools.pairwise(scores)):
            raise ValueError("knot scores must strictly increase")
        if any(not 0.0 <= p <= 1.0 for p in probabilities) or any(
                b < a for a, b in itertools.pairwise(probabilities)):
            raise ValueError("knot probabilities must lie in [0, 1] and never decrease")
        self._scores = scores
        self._probabilities = probabilities

    @classmethod
    def fit(cls, y_true: Sequence[object], y_score: Sequence[object]) -> IsotonicCalibration:
        """The isotonic calibration of these labelled events (:func:`pav`); needs at least
        one event."""
        blocks = pav(y_true, y_score)
        if not blocks:
            raise ValueError("an isotonic calibration needs at least one labelled event")
        scores: list[float] = []
        probabilities: list[float] = []
        for block in blocks:
            for score in (block.first, block.last) if block.last > block.first else (
                    block.first,):
                scores.append(score)
                probabilities.append(block.probability)
        return cls(scores, probabilities)

    @property
    def knots(self) -> list[tuple[float, float]]:
        """The (score, probability) knots, in score order."""
        return list(zip(self._scores, self._probabilities, strict=True))

    def probability(self, score: float) -> float:
        scores, probabilities = self._scores, self._probabilities
        j = bisect_right(scores, score)
        if j == 0:
            return probabilities[0]
        if j == len(scores):
            return probabilities[-1]
        low, high = probabilities[j - 1], probabilities[j]
        if low == high:
            return low
        x0 = scores[j - 1]
        return low + (score - x0) * (high - low) / (scores[j] - x0)

    def export_state(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "kind": "isotonic", "scores": list(self._scores),
                "probabilities": list(self._probabilities)}

    def __repr__(self) -> str:
        return f"IsotonicCalibration({len(self._scores)} knots)"


def calibration_from_state(state: Mapping[str, Any]) -> IdentityCalibration | IsotonicCalibration:
    """The calibration an ``export_state`` describes; ``ValueError`` naming the problem."""
    state = check_state(state, _STATE_KEYS, STATE_VERSION)
    if state["kind"] == "identity":
        return IdentityCalibration()
    if state["kind"] == "isotonic":
        try:
            return IsotonicCalibration(state["scores"], state["probabilities"])
        except TypeError as error:
            raise ValueError(f"state {error}") from error
    raise ValueError(f"state kind must be identity or isotonic, got {state['kind']!r}")
