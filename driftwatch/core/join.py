"""Joins predictions with labels that arrive later, by event id, in bounded memory.

In the deployments driftwatch watches, a model scores an event now and learns the outcome
later: a fraud model's chargebacks come days after the transaction, a churn label months after
the score. The two arrive as separate records, a *prediction* (event id, model, score,
optional crisp prediction, prediction time) and a *label* (event id, label, label time), often
on different topics that are read at different speeds. :class:`Join` pairs them by event id
and emits each pair when its second half arrives, normally the label: the pair then enters
its model's prequential window in the order the truth became known (Brzezinski & Stefanowski 2017,
§3: an example is evaluated when its label is known), and keeps its prediction time, so the label
delay (label time − prediction time) is measured too.

**Time.** A pair's event carries the *label's* time (the moment it entered the window), its
prediction time stays on the pair (:attr:`Joined.prediction_ts`); a pending record ages on the
*other* stream's watermark, never the clock, so a lagging topic expires nothing. Why both:
docs/events.md#the-joins-two-clocks.

**Bounds.** Nothing waits without limit. Pending predictions are bounded per model by count
(``max_pending``) and by age (``max_age``); labels that arrive before their prediction wait
too, bounded by count (``max_pending_labels``, over all models: a label names no model) and
age (``max_label_age``). When a bound is hit, the oldest record (by its own time, then by
arrival) leaves first. A record that leaves unjoined is counted by reason, never silently:
``duplicate``, ``late``, or, unmatched, ``expired`` or ``overflow`` (each reason's meaning:
docs/events.md#why-a-record-leaves-the-join-unjoined).

**Exact restart.** :meth:`Join.export_state` holds every pending record, the recently joined
ids, both watermarks, the arrival counter and the counts; :meth:`Join.from_state` rebuilds an
object that continues exactly as the original would have, so a restart loses no pending
prediction and counts no label twice.

Costs (n pending records of one side, M models): :meth:`Join.add_prediction` O(log n),
:meth:`Join.add_label` O(M + log n), amortized, plus O(log n) per expiry; exporting the state
O(n + remember), restoring it O(n log n + remember). Memory: at most M·``max_pending``
predictions, ``max_pending_labels`` labels and ``remember`` joined ids, whatever the input.
"""

from __future__ import annotations

import heapq
import math
import numbers
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from driftwatch.core.config_error import ConfigError
from driftwatch.core.events import Event, check_label, check_score, valid_event
from driftwatch.core.state import check_state

STATE_VERSION = 1
"""Version of :meth:`Join.export_state`'s format; restore refuses any other."""

STREAMS: tuple[str, ...] = ("prediction", "label")
"""The two sides of the join."""

REASONS: tuple[str, ...] = ("duplicate", "late", "expired", "overflow")
"""Why a record left the join without being joined (module docstring)."""

_STATE_KEYS = frozenset({
    "version", "predictions", "labels", "joined", "prediction_watermark", "label_watermark",
    "arrivals", "matched", "dropped", "models",
})


def _check_time(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number of seconds, got {value!r}")
    return float(value)


def _check_id(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def _check_count(value: object, name: str) -> int:
    """A bound of the join (constructor parameter ``name``): ConfigError located there."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ConfigError((name,), f"must be an integer ≥ 1, got {value!r}")
    return int(value)


def _check_age(value: object, name: str) -> float:
    """An age bound of the join (constructor parameter ``name``): ConfigError located there."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not float(value) > 0:
        raise ConfigError((name,), f"must be a number of seconds > 0 (inf allowed), got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Prediction:
    """A model's score for an event whose label is not known yet.

    Attributes:
        event_id: the key the label will carry.
        model: the model that scored the event.
        y_score: the score, any finite real.
        y_pred: the crisp prediction, or None to derive it from the score and the model's
            threshold.
        ts: prediction time, seconds since the epoch.
    """

    event_id: str
    model: str
    y_score: float
    y_pred: int | None
    ts: float

    def __post_init__(self) -> None:
        _check_id(self.event_id, "event_id")
        _check_id(self.model, "model")
        object.__setattr__(self, "y_score", check_score(self.y_score, "y_score"))
        if self.y_pred is not None:
            object.__setattr__(self, "y_pred", check_label(self.y_pred, "y_pred"))
        object.__setattr__(self, "ts", _check_time(self.ts, "ts"))


@dataclass(frozen=True, slots=True)
class Label:
    """The outcome of an event: its true class, known at time ``ts``."""

    event_id: str
    y_true: int
    ts: float

    def __post_init__(self) -> None:
        _check_id(self.event_id, "event_id")
        object.__setattr__(self, "y_true", check_label(self.y_true, "y_true"))
        object.__setattr__(self, "ts", _check_time(self.ts, "ts"))


@dataclass(frozen=True, slots=True)
class Joined:
    """A prediction with its label: one event for its model's window."""

    model: str
    event_id: str
    y_true: int
    y_score: float
    y_pred: int | None
    prediction_ts: float
    label_ts: float

    @property
    def delay(self) -> float:
        """Label delay, label time − prediction time (negative if the clocks disagree)."""
        return self.label_ts - self.prediction_ts

    def event(self) -> Event:
        """The window's event; its time is the label time, when the pair entered the window
        (module docstring: an alarm it raises is stamped with the moment it was known). Its
        values were checked when the prediction and the label were built, so not again."""
        return valid_event(self.y_true, self.y_score, self.y_pred, self.label_ts)


def _joined(prediction: Prediction, label: Label) -> Joined:
    return Joined(prediction.model, prediction.event_id, label.y_true, prediction.y_score,
                  prediction.y_pred, prediction.ts, label.ts)


class Join:
    """Joins predictions and labels by event id; see the module docstring for the rules.

    Event ids are unique across models: a second prediction with a pending or recently
    joined id is a duplicate, whichever model sent it.

    Parameters:
        max_pending: pending predictions kept per model (≥ 1).
        max_age: seconds a prediction waits for its label, on the labels' clock (> 0, may be
            ``math.inf``).
        max_pending_labels: labels kept waiting for their prediction, over all models.
        max_label_age: seconds a label waits for its prediction, on the predictions' clock.
        remember: recently joined event ids kept to recognize duplicates.

    Examples:
        >>> join = Join(max_pending=2)
        >>> join.add_prediction(Prediction("a", "fraud", 0.9, None, ts=100.0))
        >>> join.add_label(Label("b", 1, ts=150.0))  # before its prediction: it waits
        >>> join.add_prediction(Prediction("b", "fraud", 0.2, None, ts=120.0))
        Joined(model='fraud', event_id='b', y_true=1, y_score=0.2, y_pred=None, \
prediction_ts=120.0, label_ts=150.0)
        >>> join.add_label(Label("a", 0, ts=400.0)).delay
        300.0
        >>> join.add_label(Label("a", 0, ts=401.0))  # replayed: counted, not joined again
        >>> join.matched, join.dropped[("label", "duplicate")]
        (2, 1)
    """

    __slots__ = (
        "_arrivals", "_joined", "_label_heap", "_label_watermark", "_labels", "_model_heaps",
        "_pending_counts", "_prediction_watermark", "_predictions", "dropped", "matched",
        "max_age", "max_label_age", "max_pending", "max_pending_labels", "remember",
    )

    def __init__(self, *, max_pending: int = 100_000, max_age: float = 30 * 86_400.0,
                 max_pending_labels: int = 100_000, max_label_age: float = 3_600.0,
                 remember: int = 100_000) -> None:
        self.max_pending = _check_count(max_pending, "max_pending")
        self.max_age = _check_age(max_age, "max_age")
        self.max_pending_labels = _check_count(max_pending_labels, "max_pending_labels")
        self.max_label_age = _check_age(max_label_age, "max_label_age")
        self.remember = _check_count(remember, "remember")
        self.matched = 0
        self.dropped: dict[tuple[str, str], int] = {
            (stream, reason): 0 for stream in STREAMS for reason in REASONS
        }
        # Pending records by event id, each with its arrival number; the heaps hold
        # (time, arrival, id) and drop entries lazily: an entry is live while the dict holds
        # that id with that arrival number.
        self._predictions: dict[str, tuple[Prediction, int]] = {}
        self._model_heaps: dict[str, list[tuple[float, int, str]]] = {}
        self._pending_counts: dict[str, int] = {}
        self._labels: dict[str, tuple[Label, int]] = {}
        self._label_heap: list[tuple[float, int, str]] = []
        self._joined: OrderedDict[str, None] = OrderedDict()
        self._prediction_watermark = -math.inf
        self._label_watermark = -math.inf
        self._arrivals = 0

    # --- reading -------------------------------------------------------------------------

    def pending(self, model: str) -> int:
        """Predictions of ``model`` waiting for their label."""
        return self._pending_counts.get(model, 0)

    @property
    def pending_by_model(self) -> dict[str, int]:
        """Pending predictions per model seen so far (0 for a model with none)."""
        return dict(self._pending_counts)

    @property
    def pending_labels(self) -> int:
        """Labels waiting for their prediction."""
        return len(self._labels)

    @property
    def prediction_watermark(self) -> float:
        """The latest prediction time seen (−inf before any)."""
        return self._prediction_watermark

    @property
    def label_watermark(self) -> float:
        """The latest label time seen (−inf before any)."""
        return self._label_watermark

    # --- adding --------------------------------------------------------------------------

    def add_prediction(self, prediction: Prediction) -> Joined | None:
        """Add a prediction; return the joined pair if its label was waiting, else None."""
        event_id = prediction.event_id
        result = None
        if event_id in self._predictions or event_id in self._joined:
            self.dropped[("prediction", "duplicate")] += 1
        elif event_id in self._labels:
            label, _ = self._labels.pop(event_id)
            result = self._match(prediction, label)
        elif prediction.ts + self.max_age < self._label_watermark:
            self.dropped[("prediction", "late")] += 1
        else:
            self._pend_prediction(prediction, self._next_arrival())
        if prediction.ts > self._prediction_watermark:
            self._prediction_watermark = prediction.ts
            self._expire_labels()
        return result

    def add_label(self, label: Label) -> Joined | None:
        """Add a label; return the joined pair if its prediction was waiting, else None."""
        event_id = label.event_id
        result = None
        if event_id in self._labels or event_id in self._joined:
            self.dropped[("label", "duplicate")] += 1
        elif event_id in self._predictions:
            prediction = self._remove_prediction(event_id)
            result = self._match(prediction, label)
        elif label.ts + self.max_label_age < self._prediction_watermark:
            self.dropped[("label", "late")] += 1
        else:
            self._pend_label(label, self._next_arrival())
        if label.ts > self._label_watermark:
            self._label_watermark = label.ts
            self._expire_predictions()
        return result

    # --- internals -----------------------------------------------------------------------

    def _next_arrival(self) -> int:
        self._arrivals += 1
        return self._arrivals

    def _match(self, prediction: Prediction, label: Label) -> Joined:
        self.matched += 1
        self._joined[prediction.event_id] = None
        if len(self._joined) > self.remember:
            self._joined.popitem(last=False)
        return _joined(prediction, label)

    def _pend_prediction(self, prediction: Prediction, arrival: int) -> None:
        model = prediction.model
        self._predictions[prediction.event_id] = (prediction, arrival)
        heap = self._model_heaps.setdefault(model, [])
        heapq.heappush(heap, (prediction.ts, arrival, prediction.event_id))
        self._pending_counts[model] = self._pending_counts.get(model, 0) + 1
        if self._pending_counts[model] > self.max_pending:
            self._drop_prediction(self._oldest_prediction(model), "overflow")

    def _pend_label(self, label: Label, arrival: int) -> None:
        self._labels[label.event_id] = (label, arrival)
        heapq.heappush(self._label_heap, (label.ts, arrival, label.event_id))
        if len(self._labels) > self.max_pending_labels:
            self._drop_label(self._oldest_label(), "overflow")
        self._compact_labels()

    def _oldest_prediction(self, model: str) -> str:
        """The live oldest entry of the model's heap (stale entries above it are popped)."""
        heap = self._model_heaps[model]
        while True:
            _, arrival, event_id = heap[0]
            held = self._predictions.get(event_id)
            if held is not None and held[1] == arrival:
                return event_id
            heapq.heappop(heap)

    def _oldest_label(self) -> str:
        heap = self._label_heap
        while True:
            _, arrival, event_id = heap[0]
            held = self._labels.get(event_id)
            if held is not None and held[1] == arrival:
                return event_id
            heapq.heappop(heap)

    def _remove_prediction(self, event_id: str) -> Prediction:
        prediction, _ = self._predictions.pop(event_id)
        model = prediction.model
        self._pending_counts[model] -= 1
        heap = self._model_heaps[model]
        # Lazy deletion leaves matched entries in the heap; rebuild it when they are the
        # majority, so its size stays within twice the live count (amortized O(1)).
        if len(heap) > 2 * self._pending_counts[model] + 16:
            live = [entry for entry in heap if self._live_prediction(entry)]
            heapq.heapify(live)
            self._model_heaps[model] = live
        return prediction

    def _live_prediction(self, entry: tuple[float, int, str]) -> bool:
        held = self._predictions.get(entry[2])
        return held is not None and held[1] == entry[1]

    def _compact_labels(self) -> None:
        if len(self._label_heap) > 2 * len(self._labels) + 16:
            live = [e for e in self._label_heap
                    if (held := self._labels.get(e[2])) is not None and held[1] == e[1]]
            heapq.heapify(live)
            self._label_heap = live

    def _drop_prediction(self, event_id: str, reason: str) -> None:
        # Only ever called with the oldest live entry, which is the top of its heap.
        heapq.heappop(self._model_heaps[self._predictions[event_id][0].model])
        self._remove_prediction(event_id)
        self.dropped[("prediction", reason)] += 1

    def _drop_label(self, event_id: str, reason: str) -> None:
        heapq.heappop(self._label_heap)  # the oldest live entry, as for predictions
        del self._labels[event_id]
        self.dropped[("label", reason)] += 1

    def _expire_predictions(self) -> None:
        deadline = self._label_watermark - self.max_age
        for model, count in list(self._pending_counts.items()):
            while count:
                event_id = self._oldest_prediction(model)
                if not self._predictions[event_id][0].ts < deadline:
                    break
                self._drop_prediction(event_id, "expired")
                count -= 1

    def _expire_labels(self) -> None:
        deadline = self._prediction_watermark - self.max_label_age
        while self._labels:
            event_id = self._oldest_label()
            if not self._labels[event_id][0].ts < deadline:
                break
            self._drop_label(event_id, "expired")
        self._compact_labels()

    # --- state ---------------------------------------------------------------------------

    def export_state(self) -> dict[str, Any]:
        """The pending records, joined ids, watermarks and counts, as JSON-ready values."""
        return {
            "version": STATE_VERSION,
            "predictions": [
                [p.event_id, p.model, p.y_score, p.y_pred, p.ts, arrival]
                for p, arrival in self._predictions.values()
            ],
            "labels": [[lab.event_id, lab.y_true, lab.ts, arrival]
                       for lab, arrival in self._labels.values()],
            "joined": list(self._joined),
            "prediction_watermark": _finite_or_none(self._prediction_watermark),
            "label_watermark": _finite_or_none(self._label_watermark),
            "arrivals": self._arrivals,
            "matched": self.matched,
            "dropped": {f"{stream}/{reason}": n for (stream, reason), n in self.dropped.items()},
            "models": list(self._pending_counts),
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any], **limits: Any) -> Join:
        """Rebuild a join from :meth:`export_state` with the given bounds (the constructor's
        keyword arguments).

        Raises ``ValueError`` naming the problem for a state this version cannot read. If the
        bounds are now smaller than the restored pending records, the oldest leave at once
        and are counted as ``overflow``.
        """
        state = check_state(state, _STATE_KEYS, STATE_VERSION)
        join = cls(**limits)
        try:
            join._restore(state)
        except (TypeError, ValueError, KeyError) as error:
            raise ValueError(f"state {error}") from error
        return join

    def _restore(self, state: Mapping[str, Any]) -> None:
        self._arrivals = int(state["arrivals"])
        self.matched = int(state["matched"])
        for key, n in state["dropped"].items():
            stream, reason = key.split("/")
            if (stream, reason) not in self.dropped:
                raise ValueError(f"has an unknown drop reason {key!r}")
            self.dropped[(stream, reason)] = int(n)
        self._prediction_watermark = _none_or_finite(state["prediction_watermark"])
        self._label_watermark = _none_or_finite(state["label_watermark"])
        for model in state["models"]:
            self._pending_counts.setdefault(_check_id(model, "model"), 0)
            self._model_heaps.setdefault(model, [])
        for event_id in state["joined"]:
            self._joined[_check_id(event_id, "joined id")] = None
        while len(self._joined) > self.remember:
            self._joined.popitem(last=False)
        # Pending records re-enter in arrival order, so the count bounds of the restoring
        # object apply to them as they would have on arrival.
        records = sorted(
            [(int(r[5]), Prediction(r[0], r[1], r[2], r[3], r[4])) for r in state["predictions"]]
            + [(int(r[3]), Label(r[0], r[1], r[2])) for r in state["labels"]],
            key=lambda pair: pair[0],
        )
        for arrival, record in records:
            if arrival > self._arrivals:
                raise ValueError(f"has a record from arrival {arrival} > {self._arrivals}")
            if record.event_id in self._predictions or record.event_id in self._labels:
                raise ValueError(f"holds event id {record.event_id!r} twice")
            if isinstance(record, Prediction):
                self._pend_prediction(record, arrival)
            else:
                self._pend_label(record, arrival)


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _none_or_finite(value: object) -> float:
    return -math.inf if value is None else _check_time(value, "watermark")
