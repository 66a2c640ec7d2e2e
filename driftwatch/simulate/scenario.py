"""A drift scenario's shape: its true change points and the schedule derived from them.

:class:`Scenario` is the base of every scenario in :mod:`driftwatch.simulate.scenarios`: a
frozen spec whose :class:`ChangePoint` s alone define the AUC and positive share at every
event, and whose events are drawn from the :class:`~driftwatch.simulate.binormal.BinormalModel`
of that schedule.
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar, Literal, get_args

from driftwatch.core.events import Event
from driftwatch.simulate.binormal import (
    BinormalModel,
    Output,
    _check_calibrated_auc,
    _check_int,
    _check_open_unit,
    _check_output,
    _check_seed,
    _draw,
    _is_real,
    _separation,
)

DriftKind = Literal["auc", "ratio", "concept"]
"""``"auc"``: real drift, the class-conditional scores change. ``"ratio"``: virtual drift,
only the class ratio changes. ``"concept"``: real drift the scores do not show, the labels of
a score band are flipped (P(label | score) changes, the scores' distribution does not)."""


# -- change points and scenarios ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """Where and how a scenario's concept changes.

    Attributes:
        index: the first event drawn from a changed concept (0-based). Detection delay is
            measured from here.
        kind: ``"auc"`` (real drift: the population AUC changes), ``"ratio"`` (virtual
            drift: the positive share changes, the scores' distributions do not) or
            ``"concept"`` (real drift the scores do not show: from ``index`` on the labels
            of the events scored in ``band`` are flipped; always sudden).
        before: the AUC or positive share up to ``index`` (exclusive); for ``"concept"``
            the population AUC of the labels against the scores before the flip.
        after: the AUC or positive share from ``end`` on; for ``"concept"`` the population
            AUC after the flip (:meth:`~driftwatch.simulate.binormal.BinormalModel.flipped_auc`,
            for the scoring model at ``index``). :meth:`Scenario.auc_at` stays the scores'
            model's AUC: the scores do not change.
        end: the first event at which ``after`` holds fully. ``end == index`` for a sudden
            change; for a gradual one the events in ``[index, end)`` interpolate linearly,
            each strictly between ``before`` and ``after``.
        band: ``"concept"`` only: the scores [low, high) whose labels are flipped.
    """

    index: int
    kind: DriftKind
    before: float
    after: float
    end: int
    band: tuple[float, float] | None = field(default=None, repr=False)

    @property
    def sudden(self) -> bool:
        """True when the change happens at a single event."""
        return self.end == self.index


@dataclass(frozen=True, kw_only=True)
class Scenario(ABC):
    """A deterministic synthetic stream: a schedule of AUC and positive share over event
    indices, fully described by a starting point and the :attr:`change_points`.

    Subclasses declare their parameters as fields, check them in :meth:`_check_parameters`
    (raising ``ValueError`` that names the parameter) and list their change points in
    :meth:`_change_points`; the schedule (:meth:`auc_at`, :meth:`positive_share_at`) and the
    events are derived from those change points alone, so the change points a scenario
    reports are by construction the ones its stream contains.

    Parameters:
        length: number of events, ≥ 1.
        auc: population AUC at the start, in (0, 1).
        positive_share: positive share π at the start, in (0, 1).
        rate: events per second of event time, > 0.
        start_ts: ``ts`` of the first event; event ``i`` has ``ts = start_ts + i / rate``.
            The simulator never reads the clock: pass the current time for live-looking ts.
        output: ``"probability"``, ``"latent"`` or ``"calibrated"`` scores (see
            :class:`BinormalModel`; calibrated scores need every AUC of the schedule above
            0.5).

    Cost: :meth:`auc_at` and :meth:`positive_share_at` are O(log c) for c change points;
    :meth:`events` costs O(1) per event.
    """

    name: ClassVar[str]

    length: int = 20_000
    auc: float = 0.9
    positive_share: float = 0.3
    rate: float = 1.0
    start_ts: float = 0.0
    output: Output = "probability"

    def __post_init__(self) -> None:
        _check_int("length", self.length, minimum=1)
        _check_open_unit("auc", self.auc)
        _check_open_unit("positive_share", self.positive_share)
        if not _is_real(self.rate) or not 0.0 < self.rate < math.inf:
            raise ValueError(f"rate must be a positive finite number, got {self.rate!r}")
        if not _is_real(self.start_ts) or not math.isfinite(self.start_ts):
            raise ValueError(f"start_ts must be a finite number, got {self.start_ts!r}")
        _check_output(self.output)
        self._check_parameters()
        self._check_schedule()

    @abstractmethod
    def _check_parameters(self) -> None:
        """Validate the subclass's own parameters, raising ``ValueError`` naming them."""

    @abstractmethod
    def _change_points(self) -> tuple[ChangePoint, ...]:
        """The true change points, in any order."""

    def _middle(self, change_at: int | None) -> int:
        return self.length // 2 if change_at is None else change_at

    def _check_change_at(self, change_at: int | None) -> None:
        value = self._middle(change_at)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < self.length:
            raise ValueError(
                f"change_at must be an int inside the stream, 0 < change_at < length="
                f"{self.length}, got {change_at!r}"
            )

    @cached_property
    def change_points(self) -> tuple[ChangePoint, ...]:
        """The true change points, ordered by index (then kind)."""
        return tuple(sorted(self._change_points(), key=lambda point: (point.index, point.kind)))

    @cached_property
    def _by_kind(self) -> dict[str, tuple[ChangePoint, ...]]:
        return {
            kind: tuple(point for point in self.change_points if point.kind == kind)
            for kind in get_args(DriftKind)
        }

    def _check_schedule(self) -> None:
        # A guard for subclasses: the change points of one kind must chain without overlap,
        # so that the schedule they define is unambiguous.
        for kind, initial in (("auc", self.auc), ("ratio", self.positive_share)):
            previous_end, value = 0, initial
            for point in self._by_kind[kind]:
                if not (previous_end <= point.index <= point.end <= self.length):
                    raise ValueError(f"change points overlap or leave the stream: {point}")
                if point.index == 0 or point.index >= self.length:
                    raise ValueError(f"change point outside the stream: {point}")
                if point.before != value or point.after == point.before:
                    raise ValueError(f"change point does not chain: {point}")
                previous_end, value = point.end, point.after
        concepts = self._by_kind["concept"]
        if len(concepts) > 1:
            raise ValueError(f"at most one concept change per scenario, got {concepts}")
        for point in concepts:
            if not 0 < point.index == point.end < self.length or point.band is None:
                raise ValueError(f"a concept change is sudden, inside the stream and has a "
                                 f"band: {point}")
        _check_calibrated_auc("auc", self.auc, self.output)
        for point in self._by_kind["auc"]:
            _check_calibrated_auc("drop (the AUC after it)", point.after, self.output)

    def _value_at(self, kind: DriftKind, index: int, initial: float) -> float:
        points = self._by_kind[kind]
        k = bisect_right(points, index, key=lambda point: point.index) - 1
        if k < 0:
            return initial
        point = points[k]
        if index >= point.end:
            return point.after
        fraction = (index - point.index + 1) / (point.end - point.index + 1)
        return point.before + (point.after - point.before) * fraction

    def _check_index(self, index: int) -> int:
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < self.length:
            raise ValueError(f"index must be an int in [0, {self.length}), got {index!r}")
        return index

    def auc_at(self, index: int) -> float:
        """The population AUC of the concept event ``index`` is drawn from."""
        return self._value_at("auc", self._check_index(index), self.auc)

    def labels_auc_at(self, index: int) -> float:
        """The population AUC of event ``index``'s labels against the scores: :meth:`auc_at`,
        or from a concept change on, the AUC its flipped labels give (the change point's
        ``after``)."""
        auc = self.auc_at(index)
        for point in self._by_kind["concept"]:
            if index >= point.index:
                auc = point.after
        return auc

    def positive_share_at(self, index: int) -> float:
        """The probability that event ``index`` is positive."""
        return self._value_at("ratio", self._check_index(index), self.positive_share)

    def model_at(self, index: int) -> BinormalModel:
        """The scoring model event ``index`` is drawn from (the ground truth at that point)."""
        return BinormalModel(self.auc_at(index), self.positive_share_at(index), self.output)

    def events(self, seed: int) -> Iterator[Event]:
        """The stream for ``seed`` (a non-negative int): ``length`` events, lazily.

        Events have ``y_pred=None`` (the monitor thresholds the score) and
        ``ts = start_ts + index / rate``. Event ``i`` uses the i-th pair of draws from
        ``random.Random(seed)``, so two scenarios that differ only after a change point give
        identical events before it.
        """
        _check_seed(seed)
        return self._events(seed)

    def _events(self, seed: int) -> Iterator[Event]:
        rng = random.Random(seed)
        output = self.output
        current_auc, half_separation = math.nan, 0.0
        concepts = self._by_kind["concept"]
        flip_at = concepts[0].index if concepts else self.length
        low, high = (concepts[0].band or (0.0, 0.0)) if concepts else (0.0, 0.0)
        for index in range(self.length):
            auc = self._value_at("auc", index, self.auc)
            if auc != current_auc:  # Φ⁻¹ only when the AUC moves
                current_auc, half_separation = auc, _separation(auc) / 2.0
            share = self._value_at("ratio", index, self.positive_share)
            y_true, y_score = _draw(rng, half_separation, share, output)
            if index >= flip_at and low <= y_score < high:  # a concept change: no draw
                y_true = 1 - y_true
            yield Event(y_true, y_score, ts=self.start_ts + index / self.rate)

