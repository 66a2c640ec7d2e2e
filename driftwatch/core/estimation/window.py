"""The estimated measures over the last d predictions, exact and incremental.

:class:`EstimatedWindow` is the label-free twin of
:class:`~driftwatch.core.window.PrequentialWindow`: it holds the last ``size`` predictions
(score, calibrated probability, crisp prediction) and keeps the sums behind the expected
confusion matrix and the expected AUC of :mod:`~driftwatch.core.estimation.expected`, so
that the estimate describes the same d predictions the realized measures will once their
labels are in.

**Exact, in integer fixed point.** Each probability is stored as the integer
w = round(p·2³²) (:data:`SCALE`; within 1.2·10⁻¹⁰ of p, far below any standard error),
and every sum is kept in Python integers: Σw and Σw² per crisp prediction, and the expected
pair count 2·E[U]·SCALE² (ties count ½, hence the 2). Adding and evicting predictions can
therefore never drift, however long the stream (a float running sum under add/remove
would), and the incremental sums equal a recount from scratch bit for bit (tested). The
estimate is then one correctly rounded division of integers.

**Incremental pair count.** A prediction x = (s, w) entering a set changes
2·E[U]·SCALE² by w·(2·Q<ₛ + Q=ₛ) + (SCALE − w)·(2·P>ₛ + P=ₛ), where P and Q are the sums
of w and SCALE − w over the predictions scored below (<), at (=) and above (>) s: x as the
positive of pairs with everything below it, as the negative of pairs with everything above,
half of each with its ties. Leaving takes back what entering would give now. The sums below
and at s come from :class:`~driftwatch.core.estimation.weighted_scores.WeightedScores`.

**Lazy, like the prequential window.** :meth:`EstimatedWindow.update` only queues; the next
read applies what is queued one by one (two edits of the sorted sums each) when it is less
than ``size / REBUILD_SHARE``, and otherwise rebuilds every sum from the last ``size``
predictions (one sort, C-level sums). An agent that reads at scrapes pays a rebuild per
scrape; a replay that reads every few events pays the incremental edits.

The standard errors need every prediction's expected placement, so they are computed at the
read that asks for them (:meth:`EstimatedWindow.estimates`, O(d log d)).
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from math import isqrt
from operator import mul
from typing import Any

import numpy as np

from driftwatch.core.estimation.expected import (
    NAN_ESTIMATE,
    Estimate,
    ExpectedConfusion,
    expected_auc,
)
from driftwatch.core.estimation.weighted_scores import WeightedScores
from driftwatch.core.events import check_label, check_score
from driftwatch.core.state import check_state

SCALE = 1 << 32
"""Probabilities are held as integers w = round(p · SCALE)."""

MAX_SIZE = 1 << 20
"""The largest window: its weights then sum below 2⁵², exact in the floats
:class:`~driftwatch.core.estimation.weighted_scores.WeightedScores` sums."""

REBUILD_SHARE = 5
"""A read that finds at least ``size / REBUILD_SHARE`` predictions queued rebuilds the sums
from scratch instead of applying them one by one (the prequential window's rule)."""

ESTIMATED_MEASURES: tuple[str, ...] = ("auc", "false_negative_rate", "false_positive_rate")
"""What :meth:`EstimatedWindow.estimates` reports, in its order."""

STATE_VERSION = 1
_STATE_KEYS = frozenset({"version", "size", "threshold", "events"})


def weight(probability: float) -> int:
    """The fixed-point weight of a probability in [0, 1] (``ValueError`` naming it else)."""
    if not 0.0 <= probability <= 1.0:  # NaN fails too
        raise ValueError(f"probability must lie in [0, 1], got {probability!r}")
    return round(probability * SCALE)


def _check_size(size: object) -> int:
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) \
            or not 1 <= int(size) <= MAX_SIZE:
        raise ValueError(f"size must be an integer in [1, {MAX_SIZE}], got {size!r}")
    return int(size)


class EstimatedWindow:
    """Expected confusion matrix and expected AUC of the last ``size`` predictions.

    Parameters:
        size: d, the number of most recent predictions estimated over (≥ 1).
        threshold: the crisp prediction of a prediction that comes without one is
            ``y_score >= threshold``.
        load: the chunk load of the sorted sums (default ``max(32, isqrt(size))``).

    Costs, with d = ``size``:

    ========================================  ==============================================
    method / property                         cost
    ========================================  ==============================================
    :meth:`update`                            O(1), plus the edits when read
    ``auc``, ``confusion`` after r updates    O(min(r·√d, d log d)) (module docstring)
    :meth:`estimates`                         O(d log d) (the AUC's standard error)
    :meth:`export_state` / :meth:`from_state` O(d) / O(d log d)
    ========================================  ==============================================

    Example: the scores calibrated; 0.6, 0.2, 0.2 are held, so E[U] = 2 · 0.6 · 0.8 (0.6
    above each 0.2) + ½ · 2 · 0.2 · 0.8 (the tie) = 1.12, and E[P·N] = S(n − S) − Σpq =
    1 · 2 − 0.56 = 1.44.

    >>> window = EstimatedWindow(size=3)
    >>> for score in (0.9, 0.6, 0.2, 0.2):
    ...     window.update(score, score)
    >>> len(window), round(window.auc, 6)  # 1.12 / 1.44
    (3, 0.777778)
    >>> round(window.confusion.tp, 9), round(window.confusion.fn, 9)  # within 2⁻³² per p
    (0.6, 0.4)
    """

    __slots__ = ("_events", "_pairs2", "_pending", "_size", "_sorted", "_sums", "_threshold")

    def __init__(self, size: int = 1000, threshold: float = 0.5, *,
                 load: int | None = None) -> None:
        self._size = _check_size(size)
        self._threshold = check_score(threshold, "threshold")
        # (y_score, weight, y_pred) per prediction held, oldest first.
        self._events: deque[tuple[float, int, int]] = deque()
        self._pending: deque[tuple[float, int, int]] = deque(maxlen=self._size)
        self._sorted = WeightedScores(max(32, isqrt(self._size)) if load is None else load)
        # Σw, Σw² and the count, for predicted 0 then predicted 1.
        self._sums = [0, 0, 0, 0, 0, 0]
        self._pairs2 = 0  # 2·E[U]·SCALE²

    @property
    def size(self) -> int:
        return self._size

    @property
    def threshold(self) -> float:
        return self._threshold

    def update(self, y_score: float, probability: float, y_pred: int | None = None) -> None:
        """Queue one prediction (evicting the oldest once the window is full, at the next
        read). ``probability`` is the calibrated P(label = 1 | score). A bad argument is a
        ``ValueError`` naming it, and the window is unchanged."""
        score = y_score if type(y_score) is float and y_score - y_score == 0.0 \
            else check_score(y_score, "y_score")
        w = weight(probability)
        pred = None if y_pred is None else check_label(y_pred, "y_pred")
        self.update_valid(score, w, pred)

    def update_valid(self, y_score: float, w: int, y_pred: int | None = None) -> None:
        """:meth:`update` of a finite float score, a fixed-point weight (:func:`weight`) and a
        0/1 prediction or None, not checked again: the estimator's path, whose values were
        checked where they entered. Anything else corrupts the sums."""
        if y_pred is None:
            y_pred = 1 if y_score >= self._threshold else 0
        self._pending.append((y_score, w, y_pred))

    def extend_valid(self, scores: Sequence[float], weights: Sequence[int],
                     preds: Sequence[int]) -> None:
        """:meth:`update_valid` of each prediction in turn (checked scores, weights and 0/1
        predictions, in three columns), in one call: the same queue."""
        self._pending.extend(zip(scores, weights, preds, strict=True))

    def __len__(self) -> int:
        return min(len(self._events) + len(self._pending), self._size)

    def _settle(self) -> None:
        pending = self._pending
        if not pending:
            return
        if len(pending) * REBUILD_SHARE < self._size:
            for event in pending:
                if len(self._events) == self._size:
                    self._edit(self._events.popleft(), -1)
                self._edit(event, 1)
                self._events.append(event)
            pending.clear()
            return
        kept = [*itertools.islice(self._events, max(len(self._events) + len(pending)
                                                    - self._size, 0), None), *pending]
        pending.clear()
        self._rebuild(kept)

    def _edit(self, event: tuple[float, int, int], sign: int) -> None:
        """Add (``sign`` 1) or remove (−1) one prediction from every sum."""
        score, w, pred = event
        sums = self._sums
        base = 3 * pred
        sums[base] += sign * w
        sums[base + 1] += sign * w * w
        sums[base + 2] += sign
        # Counts and weights below the score and tied with it, then the change the module
        # docstring gives, with Q = SCALE·count − weight the complement sums.
        if sign > 0:
            count_below, weight_below, count_tied, weight_tied = self._sorted.add(score, w)
            above = self._sorted.weight - w - weight_below - weight_tied
        else:
            count_below, weight_below, count_tied, weight_tied = self._sorted.remove(score, w)
            above = self._sorted.weight - weight_below - weight_tied
        self._pairs2 += sign * (
            w * (2 * (SCALE * count_below - weight_below) + SCALE * count_tied - weight_tied)
            + (SCALE - w) * (2 * above + weight_tied))

    def _rebuild(self, events: list[tuple[float, int, int]]) -> None:
        """Every sum from scratch: one numpy sort and prefix sums (integers below 2⁵³), then
        the pair count Σₖ wₖ·(Q<ₖ + Q≤ₖ) − Σₖ wₖ(SCALE − wₖ) (Q the complement sums in score
        order, read at each score's first and last tie) in exact Python integers."""
        self._events = deque(events)
        table = np.fromiter(itertools.chain.from_iterable(events), np.float64,
                            3 * len(events)).reshape(-1, 3)  # weights < 2⁵³: exact
        order = np.argsort(table[:, 0], kind="stable")
        scores = table[order, 0]
        weights = table[order, 1].astype(np.int64)
        predicted = table[order, 2] > 0.5
        complements = np.concatenate(([0], np.cumsum(SCALE - weights)))
        placements = (complements[scores.searchsorted(scores, "left")]
                      + complements[scores.searchsorted(scores, "right")])
        self._sorted.assign_sorted(scores.tolist(), weights.tolist())
        w_list = weights.tolist()
        squares = sum(map(mul, w_list, w_list))
        total = int(weights.sum())
        self._pairs2 = sum(map(mul, w_list, placements.tolist())) - (SCALE * total - squares)
        sums = [0, 0, 0, 0, 0, 0]
        for pred, chosen in ((0, ~predicted), (1, predicted)):
            chosen_weights = weights[chosen].tolist()
            sums[3 * pred:3 * pred + 3] = [sum(chosen_weights),
                                           sum(map(mul, chosen_weights, chosen_weights)),
                                           len(chosen_weights)]
        self._sums = sums

    @property
    def auc(self) -> float:
        """The expected AUC E[U]/E[P·N] over the window, exact; NaN when E[P·N] is 0."""
        self._settle()
        total = self._sums[0] + self._sums[3]
        squares = self._sums[1] + self._sums[4]
        n = self._sums[2] + self._sums[5]
        pairs = total * (n * SCALE - total) - (SCALE * total - squares)  # E[P·N]·SCALE²
        if pairs <= 0:
            return math.nan
        return self._pairs2 / (2 * pairs)

    @property
    def confusion(self) -> ExpectedConfusion:
        """The expected confusion matrix and its variances, exact sums (O(1) once read)."""
        self._settle()
        w0, squares0, n0, w1, squares1, n1 = self._sums
        return ExpectedConfusion(
            tp=w1 / SCALE, fp=(n1 * SCALE - w1) / SCALE, fn=w0 / SCALE,
            tn=(n0 * SCALE - w0) / SCALE,
            var_positive_predictions=(SCALE * w1 - squares1) / SCALE ** 2,
            var_negative_predictions=(SCALE * w0 - squares0) / SCALE ** 2)

    def estimates(self) -> dict[str, Estimate]:
        """Each of :data:`ESTIMATED_MEASURES`: value, standard error and bias. O(d log d)."""
        confusion = self.confusion
        auc = NAN_ESTIMATE
        if self._events:
            scores = np.fromiter((e[0] for e in self._events), float, len(self._events))
            weights = np.fromiter((e[1] for e in self._events), float, len(self._events))
            spread = expected_auc(scores, weights / SCALE)
            auc = Estimate(self.auc, spread.standard_error, spread.bias)
        return {"auc": auc, "false_negative_rate": confusion.false_negative_rate,
                "false_positive_rate": confusion.false_positive_rate}

    def reweigh(self, probability: Callable[[float], float]) -> None:
        """Recompute every held prediction's probability with ``probability(score)`` (a new
        calibration) and rebuild. O(d log d). All or nothing: a score the new calibration
        refuses raises its ``ValueError`` and leaves the window as it was."""
        self._settle()
        events = [(s, weight(probability(s)), pred) for s, _, pred in self._events]
        self._rebuild(events)

    def events(self) -> list[tuple[float, int, int]]:
        """The predictions held, oldest first, as (y_score, weight, y_pred). O(d)."""
        self._settle()
        return list(self._events)

    def export_state(self) -> dict[str, Any]:
        """The window as JSON-ready data (the weights are exact integers)."""
        return {"version": STATE_VERSION, "size": self._size, "threshold": self._threshold,
                "events": [list(e) for e in self.events()]}

    @classmethod
    def from_state(cls, state: Mapping[str, Any], *, size: int | None = None,
                   threshold: float | None = None) -> EstimatedWindow:
        """The window an :meth:`export_state` describes (with another ``size`` it keeps the
        newest predictions that fit; another ``threshold`` applies to later predictions).
        A state this version cannot read is a ``ValueError`` naming the problem."""
        state = check_state(state, _STATE_KEYS, STATE_VERSION)
        window = cls(state["size"] if size is None else size,
                     state["threshold"] if threshold is None else threshold)
        try:
            events = []
            for score, w, pred in state["events"]:
                if isinstance(w, bool) or not isinstance(w, int) or not 0 <= w <= SCALE:
                    raise ValueError(f"weight must be an integer in [0, {SCALE}], got {w!r}")
                events.append((check_score(score, "y_score"), w, check_label(pred, "y_pred")))
        except (TypeError, ValueError) as error:
            raise ValueError(f"state events: {error}") from error
        window._rebuild(events[-window._size:])
        return window

    def _check(self) -> None:
        """Recount every sum from the held predictions and compare; for tests. O(d log d)."""
        self._settle()
        pairs2, sums = self._pairs2, list(self._sums)
        self._sorted._check()
        held = sorted(self._sorted.items())
        self._rebuild(list(self._events))
        assert held == sorted(self._sorted.items()), "sorted sums differ from the predictions"
        assert (pairs2, sums) == (self._pairs2, self._sums), "incremental sums drifted"
