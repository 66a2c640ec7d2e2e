"""The prequential window: the last d events, seen by AUC and the crisp measures alike.

Prequential evaluation (Brzezinski & Stefanowski 2017, §3; Bifet et al. 2015, §3) measures a
deployed classifier on the most recent d labelled events only, so the value tracks the classifier's
current performance instead of averaging over its whole history. Every measure driftwatch reports
for a model is computed over the *same* window: one deque of events feeds both the AUC pair count
(:class:`~driftwatch.core.measures.auc.AUCPairs`) and the confusion counts, and an arriving
event evicts the oldest one from both at once. AUC and κ can therefore be compared at any
moment, and a restored checkpoint restores them together.

References:
    Brzezinski, D., Stefanowski, J. (2017). Prequential AUC, Algorithm 1.
    Bifet, A. et al. (2015). Efficient online evaluation of big data stream classifiers
   , §5 (κ, κm, κper and the persistent classifier, §5.4.1).
"""

from __future__ import annotations

import base64
import binascii
import itertools
import numbers
import struct
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from driftwatch.core.events import check_label, check_score
from driftwatch.core.measures import registry
from driftwatch.core.measures.auc import AUCPairs
from driftwatch.core.state import check_state

_WINDOW_MEASURES = registry.WINDOW  # live: measures registered later are looked up too

MEASURE_NAMES: tuple[str, ...] = registry.names("window")
"""The built-in measures :meth:`PrequentialWindow.measures` reports, in its order (measures
registered later follow them: :func:`~driftwatch.core.measures.registry.window_measures`)."""

STATE_VERSION = 1
"""Version of :meth:`PrequentialWindow.export_state`'s plain format (a list per event)."""

COMPACT_STATE_VERSION = 2
"""Version of the compact format (``export_state(compact=True)``): the events' scores as
one base64 string of little-endian doubles and their labels and predictions as one string
of digits, instead of a list per event. What a monitor's state holds: at d = 1 000 it is a
third of the bytes, and decoding it (one ``json`` string, array operations on its bytes)
takes a small part of the plain format's parse and per-event checks, which were most of a
restore's time. Restore reads both versions and refuses any other."""

_STATE_KEYS = frozenset({"version", "size", "threshold", "events", "label_before_window"})
_COMPACT_KEYS = frozenset({"version", "size", "threshold", "scores", "cells",
                           "label_before_window"})
_DIGITS = b"0123"

# Each event falls in one of eight cells, 4·hit + 2·label + prediction (hit: its label equals
# its predecessor's, the persistent classifier's success). The window keeps one count per
# cell in a list and stores each event's cell with it, so the hot path adds and evicts an
# event with one index operation each, for the confusion counts and the persistent hits
# at once, and no branching on the cells.
_TN, _FP, _FN, _TP = 0, 1, 2, 3
_HIT = 4

REBUILD_SHARE = 5
"""A read that finds at least ``size / REBUILD_SHARE`` events pending rebuilds the window
from its events instead of applying them one by one (:meth:`PrequentialWindow._settle`).
Measured (benchmarks/auc.py, catch-up): a rebuild costs as much as applying a fifth of a
window's events one at a time at d = 1 000, a tenth at d = 10 000; reading once per window, it
is 3.6× (d = 1 000) and 5× (d = 10 000) faster than applying each event."""


@dataclass(frozen=True, slots=True)
class ConfusionCounts:
    """The window's confusion matrix (positive class = label 1)."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def positives(self) -> int:
        """P = TP + FN, the events labelled 1."""
        return self.tp + self.fn

    @property
    def negatives(self) -> int:
        """N = FP + TN, the events labelled 0."""
        return self.fp + self.tn


def _check_size(size: object) -> int:
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
        raise ValueError(f"size must be an integer ≥ 1, got {size!r}")
    return int(size)


class PrequentialWindow:
    """AUC and every crisp measure over the last ``size`` events of a stream.

    Each :meth:`update` appends one labelled, scored event; once ``size`` events are held, the
    oldest is evicted from the AUC pair count and the confusion counts together, so all
    measures always describe the same events. Arguments are validated before anything
    changes: a rejected event raises ``ValueError`` naming the argument and leaves the window
    exactly as it was.

    The window also counts ``persistent_hits``, the events whose label equals the label of the
    event immediately before them *in the stream* (even when that predecessor has already left
    the window): the accuracy numerator of the persistent classifier that κper compares
    against (Bifet et al. 2015, §5.4.1). The first event of a stream has no predecessor, so the
    persistent classifier has nothing to predict from, and it counts as a miss.

    Parameters:
        size: d, the number of most recent events measured (≥ 1).
        threshold: the decision threshold: the crisp prediction for an event that arrives
            without one is ``y_score >= threshold``.

    Costs, with d = ``size``:

    ========================================  ==========
    method / property                         cost
    ========================================  ==========
    :meth:`update`                            O(1), plus O(log d) when read
    ``auc``, ``confusion``, class counts      O(1) once settled
    :meth:`measure`, :meth:`measures`         O(1) once settled
    :meth:`export_state`                      O(d)
    :meth:`from_state`                        O(d log d)
    ========================================  ==========

    An update resolves its event's cell (the crisp prediction and the persistent hit) and
    queues it; the first read after it applies what is queued (:meth:`_settle`). Applying
    one event to a full window is one
    :meth:`~driftwatch.core.measures.auc.AUCPairs.replace` (four bisections of sorted score
    lists: the evicted event's position among its class and rank among the other, and the
    same for the arriving event) and two cell counts; a read after many events rebuilds the
    window from its last d instead, and events that left before any read cost nothing more.
    So a reader every r events pays O(min(r log d, d log d)) per read: never more than
    applying each event at once, and far less when reads are rarer than a window (a monitor
    with blocks watches reads only at alarms, scrapes and checkpoints).

    Examples:
        >>> window = PrequentialWindow(size=3)
        >>> for y_true, y_score in [(1, 0.8), (0, 0.6), (1, 0.4), (0, 0.2)]:
        ...     window.update(y_true, y_score)
        >>> len(window), window.positives, window.negatives
        (3, 1, 2)
        >>> window.auc  # 0.4 is above 0.2 but below 0.6
        0.5
        >>> window.confusion
        ConfusionCounts(tp=0, fp=1, fn=1, tn=1)
        >>> window.measure("accuracy")
        0.3333333333333333
    """

    __slots__ = ("_counts", "_events", "_label_before", "_last", "_pairs", "_pending", "_size",
                 "_threshold")

    def __init__(self, size: int = 1000, threshold: float = 0.5) -> None:
        self._size = _check_size(size)
        self._threshold = check_score(threshold, "threshold")
        # (y_true, y_score, cell) per event, oldest first; the deque is unbounded because
        # eviction has to update the counts, which a maxlen deque would do silently.
        self._events: deque[tuple[int, float, int]] = deque()
        self._pairs = AUCPairs()
        self._counts = [0] * 8  # indexed by cell
        # Label of the event just before the oldest one held (None before any eviction): the
        # oldest event's persistent hit depends on it, and nothing else remembers it.
        self._label_before: int | None = None
        # Label of the newest event taken (of the one before the window when it is empty):
        # the next event is a persistent hit when its label equals this.
        self._last: int | None = None
        # Events taken but not yet applied to the pair count and the cell counts, oldest
        # first, as (y_true, y_score, cell): the last size + 1 of them at most (see _settle).
        self._pending: deque[tuple[int, float, int]] = deque(maxlen=self._size + 1)

    @property
    def size(self) -> int:
        """d, the capacity of the window."""
        return self._size

    @property
    def threshold(self) -> float:
        """The decision threshold: the score at or above which an event without a prediction
        is predicted positive."""
        return self._threshold

    def update(self, y_true: int, y_score: float, y_pred: int | None = None) -> None:
        """Append one event, evicting the oldest if the window is full. O(log d).

        Parameters:
            y_true: the true label, 0 or 1 (``True``/``False`` accepted).
            y_score: the model's score, a finite real number.
            y_pred: the model's crisp prediction, 0 or 1; None derives it from the score as
                ``y_score >= threshold``.

        Raises:
            ValueError: an argument is invalid; the message names it and the window is left
                unchanged.
        """
        # Exact int/float arguments take an inline check; anything else goes through the
        # shared validators, which accept the same values (tests/core/test_window.py). The
        # shortcut skips their ABC isinstance checks, the costly part of validation, on the
        # path nearly every event takes. For a float, x − x is 0.0 exactly when x is finite
        # (inf − inf and NaN − NaN are NaN).
        if type(y_true) is int and 0 <= y_true <= 1:
            label = y_true
        else:
            label = check_label(y_true, "y_true")
        if type(y_score) is float and y_score - y_score == 0.0:
            score = y_score
        else:
            score = check_score(y_score, "y_score")
        self.update_valid(label, score, None if y_pred is None else check_label(y_pred, "y_pred"))

    def update_valid(self, y_true: int, y_score: float, y_pred: int | None = None) -> None:
        """:meth:`update` of arguments that are already what its checks make of them (a 0/1
        ``int`` label and prediction, a finite ``float`` score), without checking them again.

        The monitor's path: its events were checked once, where they entered the core
        (:class:`~driftwatch.core.events.Event`'s constructor, or a decoder that checked the
        record), and the window is not a second boundary. Anything else corrupts the counts.
        """
        if y_pred is None:
            cell = 2 * y_true + 1 if y_score >= self._threshold else 2 * y_true
        else:
            cell = 2 * y_true + y_pred
        if y_true == self._last:
            cell += _HIT
        self._last = y_true
        self._pending.append((y_true, y_score, cell))

    def extend_valid(self, labels: Sequence[int], scores: Sequence[float],
                     previous: int | None = None) -> None:
        """:meth:`update_valid` of each event in turn, predictions derived from the scores,
        in one call: a replay's run of plain records. The queue keeps only its last
        size + 1 events, so only those are resolved and queued: the same queue, in O(d).
        ``previous``: the label of the event just before ``labels`` when earlier events
        were left out for that reason (None: the window's newest)."""
        count = len(labels)
        if not count:
            return
        keep = self._size + 1
        last = self._last if previous is None else previous
        if count > keep:
            last = labels[count - keep - 1]
            labels, scores = labels[count - keep:], scores[count - keep:]
        threshold = self._threshold
        before = [last, *labels[:-1]]
        cells = [2 * y + (s >= threshold) + (_HIT if y == b else 0)
                 for y, s, b in zip(labels, scores, before, strict=True)]
        self._pending.extend(zip(labels, scores, cells, strict=True))
        self._last = labels[-1]

    def _settle(self) -> None:
        """Apply the pending events: every read of the window's counts calls this first.

        An update only resolves its event's cell and queues it, because a monitor reads the
        window far less often than it updates it (its default watches read blocks, not the
        window; the agent reads the window at a scrape, a checkpoint or an alarm). A read then
        brings the window up to date in the cheaper of two ways, with the same result (the
        pair count and the cell counts are functions of the events held, not of their
        history):

        - fewer than ``size / REBUILD_SHARE`` pending: each one evicts the oldest event and
          enters the pair count, O(log d) apiece (:meth:`AUCPairs.replace
          <driftwatch.core.measures.auc.AUCPairs.replace>`);
        - more: the window is rebuilt from its last ``size`` events, O(d log d) in C-level
          sorts and bisections (:meth:`AUCPairs.assign
          <driftwatch.core.measures.auc.AUCPairs.assign>`). Events that left the window
          before any read are never counted at all; the queue keeps only the last
          ``size + 1`` (the first of them is the predecessor the persistent hits need).
        """
        pending = self._pending
        if not pending:
            return
        if len(pending) * REBUILD_SHARE < self._size:
            for event in pending:
                self._apply(event)
            pending.clear()
            return
        events, size = self._events, self._size
        if len(pending) > size:  # nothing held stays; the queue's first event precedes them
            self._label_before = pending.popleft()[0]
            kept = list(pending)
        else:
            evicted = len(events) + len(pending) - size
            if evicted > 0:
                self._label_before = events[evicted - 1][0]
            kept = [*itertools.islice(events, max(evicted, 0), None), *pending]
        pending.clear()
        count = len(kept)
        labels, scores, cells = zip(*kept, strict=True)
        self._hold(kept, np.fromiter(labels, np.int8, count),
                   np.fromiter(scores, np.float64, count), np.fromiter(cells, np.int8, count))

    def _hold(self, events: list[tuple[int, float, int]], labels: npt.NDArray[np.integer],
              scores: npt.NDArray[np.float64], cells: npt.NDArray[np.integer]) -> None:
        """Hold exactly ``events`` (at most ``size``, oldest first; ``labels``, ``scores``
        and ``cells`` are their columns): the cell counts and the pair count rebuilt from
        the columns, O(d log d) in array operations, with no Python step per event."""
        self._events = deque(events)
        self._counts = np.bincount(cells, minlength=8).tolist()
        positive = labels == 1
        self._pairs.assign(scores[positive], scores[~positive])

    def _apply(self, event: tuple[int, float, int]) -> None:
        """One pending event into the pair count and the cell counts, evicting the oldest
        held if the window is full. O(log d)."""
        y_true, y_score, cell = event
        events = self._events
        counts = self._counts
        if len(events) == self._size:
            old_label, old_score, old_cell = events.popleft()
            self._pairs.replace(old_label, old_score, y_true, y_score)
            counts[old_cell] -= 1
            self._label_before = old_label
        else:
            self._pairs.add(y_true, y_score)
        events.append(event)
        counts[cell] += 1

    def __len__(self) -> int:
        return min(len(self._events) + len(self._pending), self._size)

    @property
    def positives(self) -> int:
        """P, the events labelled 1 in the window."""
        self._settle()
        return self._pairs.positives

    @property
    def negatives(self) -> int:
        """N, the events labelled 0 in the window."""
        self._settle()
        return self._pairs.negatives

    @property
    def confusion(self) -> ConfusionCounts:
        """TP, FP, FN, TN over the window."""
        tp, fp, fn, tn, _ = self._tally()
        return ConfusionCounts(tp=tp, fp=fp, fn=fn, tn=tn)

    @property
    def persistent_hits(self) -> int:
        """Events in the window whose label equals their predecessor's in the stream.

        The first event of the stream has no predecessor and counts as a miss.
        """
        self._settle()
        return sum(self._counts[_HIT:])

    @property
    def auc(self) -> float:
        """Prequential AUC over the window, exact with ties; NaN without both classes."""
        self._settle()
        return self._pairs.auc

    def measure(self, name: str) -> float:
        """One window measure of the registry by name (``"auc"``, ``"kappa"``, …). O(1) for
        the built-in ones.

        Raises:
            ValueError: unknown name.
        """
        measure = _WINDOW_MEASURES.get(name)
        if measure is None:
            raise ValueError(f"name must be one of {', '.join(_WINDOW_MEASURES)}; got {name!r}")
        counts = measure.counts
        if counts is None:
            return measure.value(self, self._tally())
        tp, fp, fn, tn, _ = self._tally()
        return counts(tp, fp, fn, tn)

    def measures(self) -> dict[str, float]:
        """Every window measure of the registry, in its order (``"auc"`` first). O(1) for
        the built-in ones."""
        tally = self._tally()
        tp, fp, fn, tn, _ = tally
        values = {}
        for measure in registry.window_measures():
            counts = measure.counts
            values[measure.name] = (measure.value(self, tally) if counts is None
                                    else counts(tp, fp, fn, tn))
        return values

    def _tally(self) -> tuple[int, int, int, int, int]:
        """TP, FP, FN, TN and the persistent hits, from the eight cell counts. O(1) once
        settled."""
        self._settle()
        counts = self._counts
        return (
            counts[_TP] + counts[_HIT + _TP],
            counts[_FP] + counts[_HIT + _FP],
            counts[_FN] + counts[_HIT + _FN],
            counts[_TN] + counts[_HIT + _TN],
            sum(counts[_HIT:]),
        )

    def scores_by_class(self) -> tuple[list[float], list[float]]:
        """The scores of the window's positives and of its negatives, each ascending: the
        pair count's sorted lists, copied at C speed (DeLong's standard error at every
        snapshot reads them; walking the window's events for them took longer than the
        standard error itself)."""
        self._settle()
        return self._pairs.scores()

    def export_state(self, compact: bool = False) -> dict[str, Any]:
        """The window as JSON-serializable plain data; :meth:`from_state` restores it. O(d).

        Keys: ``version``, ``size``, ``threshold``, ``events`` (``[y_true, y_score, y_pred]``
        lists, oldest first, with the prediction as it was resolved on arrival) and
        ``label_before_window``, the label of the stream's event just before the oldest one
        held (None if the oldest held is the stream's first event). That label is the only
        thing outside the window the measures depend on: the oldest event's persistent hit.

        ``compact`` (:data:`COMPACT_STATE_VERSION`, what a monitor saves): ``events`` is
        replaced by ``scores``, the scores' IEEE 754 doubles, little-endian, in base64 (a
        float's every bit, as ``json`` keeps them), and ``cells``, one digit per event,
        2·y_true + y_pred.
        """
        self._settle()
        events = self._events
        if not compact:
            return {
                "version": STATE_VERSION,
                "size": self._size,
                "threshold": self._threshold,
                "events": [[label, score, cell & 1] for label, score, cell in events],
                "label_before_window": self._label_before,
            }
        scores = struct.pack(f"<{len(events)}d", *[score for _, score, _ in events])
        return {
            "version": COMPACT_STATE_VERSION,
            "size": self._size,
            "threshold": self._threshold,
            "scores": base64.b64encode(scores).decode("ascii"),
            "cells": bytes([48 + (cell & 3) for _, _, cell in events]).decode("ascii"),
            "label_before_window": self._label_before,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> PrequentialWindow:
        """Rebuild a window from :meth:`export_state`'s output. O(d log d).

        The restored window holds the same events, counts and values, and behaves identically
        on any continuation of the stream.

        Raises:
            ValueError: the state is malformed; the message says which part.
        """
        compact = isinstance(state, Mapping) and state.get("version") == COMPACT_STATE_VERSION
        state = check_state(state, _COMPACT_KEYS if compact else _STATE_KEYS,
                            COMPACT_STATE_VERSION if compact else STATE_VERSION, exact=True)
        try:
            window = cls(size=state["size"], threshold=state["threshold"])
        except ValueError as error:
            raise ValueError(f"state {error}") from error
        if compact:
            window._restore_compact(state["scores"], state["cells"],
                                    state["label_before_window"])
            return window
        events = state["events"]
        if isinstance(events, str | bytes) or not isinstance(events, Sequence):
            raise ValueError(f"state events must be a list, got {type(events).__name__}")
        if len(events) > window.size:
            raise ValueError(
                f"state events: {len(events)} events do not fit a window of size {window.size}"
            )
        before = state["label_before_window"]
        if before is not None:
            if not events:
                raise ValueError("state label_before_window must be None for an empty window")
            before = check_label(before, "state label_before_window")
        window._label_before = before
        window._last = before
        update = window.update_valid
        for i, event in enumerate(events):
            # The events JSON gives back: [int 0/1, finite float, int 0/1] lists, validated
            # inline (the validators' ABC checks were half of a restore's time, and a restore
            # runs in the rebalance callback); anything else takes the named checks below.
            if type(event) is list and len(event) == 3:
                y_true, y_score, y_pred = event
                if type(y_true) is int and type(y_pred) is int and type(y_score) is float \
                        and 0 <= y_true <= 1 and 0 <= y_pred <= 1 and y_score - y_score == 0.0:
                    update(y_true, y_score, y_pred)
                    continue
            if isinstance(event, str | bytes) or not isinstance(event, Sequence) or len(event) != 3:
                raise ValueError(
                    f"state events[{i}] must be [y_true, y_score, y_pred], got {event!r}"
                )
            y_true, y_score, y_pred = event
            # Validate with the element's own name; update() would name only the argument.
            check_label(y_true, f"state events[{i}] y_true")
            check_score(y_score, f"state events[{i}] y_score")
            check_label(y_pred, f"state events[{i}] y_pred")
            window.update(y_true, y_score, y_pred)
        return window

    def _restore_compact(self, encoded: object, cells: object, before: object) -> None:
        """Queue the events of a compact state (see :meth:`export_state`), checked whole:
        scores that decode to finite doubles, one digit 0–3 per score, no more than fit."""
        if not isinstance(encoded, str):
            raise ValueError(f"state scores must be a base64 string, got {encoded!r:.80}")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError) as error:
            raise ValueError(f"state scores are not base64: {error}") from error
        if len(raw) % 8:
            raise ValueError(f"state scores: {len(raw)} bytes, not whole doubles")
        count = len(raw) // 8
        scores = np.frombuffer(raw, "<f8")
        if not np.isfinite(scores).all():
            raise ValueError("state scores: a score is not finite")
        if not isinstance(cells, str) or not cells.isascii() or len(cells) != count or \
                cells.encode("ascii").translate(None, _DIGITS):
            raise ValueError(f"state cells must be {count} digits 0 to 3, one per score, "
                             f"got {cells!r:.80}")
        if count > self._size:
            raise ValueError(
                f"state events: {count} events do not fit a window of size {self._size}")
        if before is not None:
            if not count:
                raise ValueError("state label_before_window must be None for an empty window")
            before = check_label(before, "state label_before_window")
        # Each event's cell, its persistent hit included, by array operations: a restore
        # rebuilds thousands of windows, and a Python step per event was most of it.
        codes = np.frombuffer(cells.encode("ascii"), np.uint8) - 48
        labels = codes >> 1
        hits = np.empty(count, bool)
        if count:
            hits[0] = before is not None and labels[0] == before
            np.equal(labels[1:], labels[:-1], out=hits[1:])
        cell_codes = codes + _HIT * hits
        label_list = labels.tolist()
        self._label_before = before
        self._last = label_list[-1] if count else before
        # A new window and events that fit it: held as a read would settle them.
        self._hold(list(zip(label_list, scores.tolist(), cell_codes.tolist(), strict=True)),
                   labels, scores, cell_codes)

    def __repr__(self) -> str:
        self._settle()
        return (
            f"PrequentialWindow(size={self._size}, threshold={self._threshold}): "
            f"{len(self._events)} events, P={self.positives}, N={self.negatives}"
        )
