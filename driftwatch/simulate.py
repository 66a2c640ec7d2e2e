"""Seeded synthetic scoring models and drift scenarios with known change points.

A monitor or drift detector can only be judged against a stream whose truth is known: where
the concept changed, what kind of change it was, and what the population AUC and class ratio
were at every event. This module produces such streams. It is pure and deterministic: the same
scenario and seed always give the same events, on any machine, and nothing here reads the
clock, the environment or a file (time arrives as ``ts = start_ts + index / rate``).

**The scoring model** (:class:`BinormalModel`) is the equal-variance binormal model of ROC
analysis. A latent score ``x`` is drawn from N(−μ/2, 1) for negatives and N(+μ/2, 1) for
positives, with

    μ = √2 · Φ⁻¹(AUC),

so that the population AUC, P(x⁺ > x⁻) = Φ(μ / √2), is exactly the requested value (0.5 is
random ranking, values below 0.5 rank backwards). This is the textbook N(0, 1) vs N(μ, 1)
model shifted by −μ/2: a location shift changes no ranking, and centring the two classes on
0 puts the crisp threshold at the midpoint (see :class:`BinormalModel`). With
``output="probability"`` (the default) the latent score goes through the logistic function
σ(x) = 1 / (1 + e⁻ˣ), which is monotone, so scores look like probabilities and every ranking
measure, AUC included, is unchanged. The positive share π (class ratio P:N = π : 1 − π) is
independent of the scores: changing it is a *virtual* drift, changing the AUC a *real* one.

**The scenarios** (:data:`SCENARIOS`) are small frozen specs that know their true
:class:`ChangePoint` s and generate :class:`~driftwatch.core.events.Event` streams:

==============================  ===============================================================
``stationary``                  fixed AUC and class ratio: every alarm is false
``sudden_auc_drop``             the AUC drops by ``drop`` at ``change_at`` (real drift)
``gradual_auc_drop``            the AUC falls linearly over ``width`` events from ``change_at``
``ratio_change``                the class ratio jumps, AUC unchanged (paper 000's Sudden_RC)
``minmaj``                      the minority class becomes the majority, AUC unchanged (MinMaj)
``recurring_ratio``             the class ratio alternates between two values every ``period``
``auc_drop_then_ratio_change``  the AUC drops, later the class ratio changes (real, then
                                virtual drift: a :class:`Composite`; the embedded demo's story)
==============================  ===============================================================

Example:
    >>> stream = generate("sudden_auc_drop", seed=7, length=1000)
    >>> stream.change_points
    (ChangePoint(index=500, kind='auc', before=0.9, after=0.8, end=500),)
    >>> events = list(stream)
    >>> len(events), events[0].ts, events[-1].ts
    (1000, 0.0, 999.0)
    >>> events == list(generate("sudden_auc_drop", seed=7, length=1000))
    True

References:
    D. Brzezinski, J. Stefanowski. Prequential AUC: properties of the area under the ROC
    curve for data streams with concept drift. Knowl. Inf. Syst. 52 (2017) — paper 000 in
    ``papers/``: §5.2 and Table 9 define the virtual drifts MinMaj (1:19 → 19:1, the negative
    class abruptly becomes the minority), Sudden_RC (sudden, recurring ratio changes
    1:1/1:100/1:10/1:1) and Gradual_RC; §5.5 (Fig. 8e–f) shows AUC staying put under them
    while accuracy, κ and κm move.

    D. Brzezinski, J. Stefanowski, R. Susmaga, I. Szczęch. On the dynamics of classification
    measures for imbalanced and streaming data. IEEE TNNLS (2019) — paper 003: the class
    ratios P:N ∈ {1:15, 1:4, 1:1, 4:1, 15:1} (:data:`IMBALANCE_RATIOS`) and the sudden ratio
    change streams of Fig. 4–5.

    J. A. Hanley, B. J. McNeil. The meaning and use of the area under a receiver operating
    characteristic (ROC) curve. Radiology 143 (1982) — the binormal model and the standard
    error of AUC the tests use for their tolerances.
"""

from __future__ import annotations

import heapq
import math
import random
from abc import ABC, abstractmethod
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from functools import cached_property
from statistics import NormalDist
from typing import Any, ClassVar, Literal, get_args

from driftwatch.core.events import Event
from driftwatch.core.join import Label, Prediction

Output = Literal["probability", "latent"]
"""How scores are reported: σ(x) in (0, 1), or the latent binormal score x itself."""

DriftKind = Literal["auc", "ratio"]
"""``"auc"``: real drift, the class-conditional scores change. ``"ratio"``: virtual drift,
only the class ratio changes."""

IMBALANCE_RATIOS: tuple[str, ...] = ("1:15", "1:4", "1:1", "4:1", "15:1")
"""The class ratios P:N studied in paper 003 (§III): balance, low and moderate imbalance of
either class. Turn one into a positive share with :func:`positive_share_from_ratio`."""

_STANDARD_NORMAL = NormalDist()


# -- validation --------------------------------------------------------------------------------


def _is_real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_open_unit(name: str, value: object) -> float:
    """``value`` as a float strictly inside (0, 1), or ``ValueError`` naming ``name``."""
    if not _is_real(value) or not 0.0 < value < 1.0:  # type: ignore[operator]  # NaN fails too
        raise ValueError(f"{name} must be a number in the open interval (0, 1), got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _check_int(name: str, value: object, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _check_seed(seed: object) -> int:
    # random.Random seeds with abs(seed): -1 and 1 would silently give the same stream.
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return seed


def _check_output(output: object) -> None:
    if output not in get_args(Output):
        raise ValueError(f"output must be one of {get_args(Output)}, got {output!r}")


def positive_share_from_ratio(ratio: str) -> float:
    """The positive share π = P / (P + N) of a class ratio written ``"P:N"``.

    Paper 003 writes class ratios as positives to negatives, so ``"1:15"`` means one positive
    per fifteen negatives. Both sides may be any positive finite numbers (``"1:99"``,
    ``"24:30"``, ``"0.5:1"``).

    Example:
        >>> positive_share_from_ratio("1:15")
        0.0625
        >>> [positive_share_from_ratio(r) for r in IMBALANCE_RATIOS]
        [0.0625, 0.2, 0.5, 0.8, 0.9375]

    Raises:
        ValueError: naming ``ratio`` when it is not ``"P:N"`` with positive finite P and N.
    """
    parts = ratio.split(":") if isinstance(ratio, str) else []
    try:
        positives, negatives = (float(part) for part in parts)
    except ValueError:  # wrong number of parts, or a part that is not a number
        positives = negatives = math.nan
    if not (0.0 < positives < math.inf and 0.0 < negatives < math.inf):
        raise ValueError(f"ratio must look like 'P:N' with positive P and N, got {ratio!r}")
    return positives / (positives + negatives)


# -- the scoring model -------------------------------------------------------------------------


def _separation(auc: float) -> float:
    """μ = √2 · Φ⁻¹(AUC): the distance between the class means, in standard deviations."""
    return math.sqrt(2.0) * _STANDARD_NORMAL.inv_cdf(auc)


def _logistic(x: float) -> float:
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)  # never overflows for x < 0
    return z / (1.0 + z)


def _draw(
    rng: random.Random, half_separation: float, positive_share: float, probability: bool
) -> tuple[int, float]:
    """One (label, score) pair. Always two draws from ``rng``, label first, so streams with
    the same seed stay aligned event by event whatever the parameters."""
    y_true = 1 if rng.random() < positive_share else 0
    latent = rng.gauss(half_separation if y_true else -half_separation, 1.0)
    return y_true, (_logistic(latent) if probability else latent)


@dataclass(frozen=True, slots=True)
class BinormalModel:
    """A scoring model with a chosen population AUC and positive share.

    Negatives score x ~ N(−μ/2, 1), positives x ~ N(+μ/2, 1), μ = √2 · Φ⁻¹(``auc``), so
    P(x⁺ > x⁻) = Φ(μ/√2) = ``auc`` exactly. A label is positive with probability
    ``positive_share``; the scores do not depend on it, which is what makes a class-ratio
    change a purely virtual drift.

    **What the default threshold 0.5 means.** Events carry no ``y_pred``, so the monitor
    predicts positive when ``y_score >= threshold`` (default 0.5). With
    ``output="probability"`` the score is σ(x), and σ(x) ≥ 0.5 exactly when x ≥ 0, the
    midpoint between the class means. There recall = specificity = Φ(μ/2): the
    equal-error-rate point of the ROC curve, and the minimum-error (Bayes) threshold when the
    classes are balanced. For AUC 0.9 that is Φ(0.906) ≈ 0.818. Because the scores ignore π,
    the threshold stays put when the class ratio drifts, as it does for a deployed model that
    is not retrained: recall, specificity, balanced accuracy and G-mean keep their values, and
    so does accuracy (= π·recall + (1 − π)·specificity, with the two equal), while precision,
    F1, κ, κm and MCC move with π. To make accuracy react to the class ratio too, monitor with
    another threshold; :meth:`recall` and :meth:`specificity` give the population values for
    any threshold. With ``output="latent"`` the same midpoint is the threshold 0.0.

    Parameters:
        auc: population AUC, in (0, 1).
        positive_share: probability that an event is positive, π, in (0, 1).
        output: ``"probability"`` reports σ(x), ``"latent"`` reports x.

    Example:
        >>> model = BinormalModel(auc=0.9, positive_share=0.3)
        >>> round(model.separation, 4), round(model.recall(), 4), round(model.specificity(), 4)
        (1.8124, 0.8176, 0.8176)
        >>> rng = random.Random(0)
        >>> [(y, round(s, 3)) for y, s in (model.draw(rng) for _ in range(3))]
        [(0, 0.299), (1, 0.466), (0, 0.087)]

    Reference:
        Hanley & McNeil (1982), the binormal ROC model; see the module docstring.
    """

    auc: float = 0.9
    positive_share: float = 0.3
    output: Output = "probability"

    def __post_init__(self) -> None:
        _check_open_unit("auc", self.auc)
        _check_open_unit("positive_share", self.positive_share)
        _check_output(self.output)

    @property
    def separation(self) -> float:
        """μ = √2 · Φ⁻¹(auc), the distance between the class means (the ROC "d′")."""
        return _separation(self.auc)

    def draw(self, rng: random.Random) -> tuple[int, float]:
        """Draw one ``(y_true, y_score)`` pair from ``rng`` (two draws: label, then score)."""
        return _draw(rng, self.separation / 2.0, self.positive_share, self.output == "probability")

    def _latent_cut(self, threshold: float) -> float:
        """The decision threshold on the latent scale, x_t (the logit of a probability)."""
        if self.output == "latent":
            if not _is_real(threshold) or not math.isfinite(threshold):
                raise ValueError(f"threshold must be a finite number, got {threshold!r}")
            return float(threshold)
        threshold = _check_open_unit("threshold", threshold)
        return math.log(threshold / (1.0 - threshold))

    def recall(self, threshold: float = 0.5) -> float:
        """Population P(y_score ≥ threshold | positive) = Φ(μ/2 − x_t), x_t the latent cut."""
        return _STANDARD_NORMAL.cdf(self.separation / 2.0 - self._latent_cut(threshold))

    def specificity(self, threshold: float = 0.5) -> float:
        """Population P(y_score < threshold | negative) = Φ(x_t + μ/2)."""
        return _STANDARD_NORMAL.cdf(self._latent_cut(threshold) + self.separation / 2.0)


# -- change points and scenarios ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """Where and how a scenario's concept changes.

    Attributes:
        index: the first event drawn from a changed concept (0-based). Detection delay is
            measured from here.
        kind: ``"auc"`` (real drift: the population AUC changes) or ``"ratio"`` (virtual
            drift: the positive share changes, the scores' distributions do not).
        before: the AUC or positive share up to ``index`` (exclusive).
        after: the AUC or positive share from ``end`` on.
        end: the first event at which ``after`` holds fully. ``end == index`` for a sudden
            change; for a gradual one the events in ``[index, end)`` interpolate linearly,
            each strictly between ``before`` and ``after``.
    """

    index: int
    kind: DriftKind
    before: float
    after: float
    end: int

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
        output: ``"probability"`` or ``"latent"`` scores (see :class:`BinormalModel`).

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
        probability = self.output == "probability"
        current_auc, half_separation = math.nan, 0.0
        for index in range(self.length):
            auc = self._value_at("auc", index, self.auc)
            if auc != current_auc:  # Φ⁻¹ only when the AUC moves
                current_auc, half_separation = auc, _separation(auc) / 2.0
            share = self._value_at("ratio", index, self.positive_share)
            y_true, y_score = _draw(rng, half_separation, share, probability)
            yield Event(y_true, y_score, ts=self.start_ts + index / self.rate)


@dataclass(frozen=True, kw_only=True)
class Stationary(Scenario):
    """Fixed AUC and class ratio: no drift at all.

    Why: the false-alarm baseline. Every alarm a detector raises here is false, and the
    windowed AUC must stay within sampling error of ``auc``.

    Example:
        >>> Stationary(length=100).change_points
        ()
    """

    name: ClassVar[str] = "stationary"

    def _check_parameters(self) -> None:
        pass

    def _change_points(self) -> tuple[ChangePoint, ...]:
        return ()


def _check_drop(auc: float, drop: object) -> float:
    if not _is_real(drop) or not 0.0 < drop < auc:  # type: ignore[operator]
        raise ValueError(
            f"drop must be a number with 0 < drop < auc={auc} (the AUC after it stays in "
            f"(0, 1)), got {drop!r}"
        )
    return float(drop)  # type: ignore[arg-type]


@dataclass(frozen=True, kw_only=True)
class SuddenAucDrop(Scenario):
    """Real drift: the AUC falls from ``auc`` to ``auc − drop`` at one event.

    Why: the alert driftwatch exists for. The class ratio does not change, so every measure's
    movement is due to worse ranking. The detection delay is measured from ``change_at``.

    Parameters:
        drop: how much the AUC falls, 0 < drop < auc.
        change_at: index of the first event with the lower AUC, 0 < change_at < length;
            None (default) is the middle of the stream, ``length // 2``.

    Example:
        >>> SuddenAucDrop(length=100, auc=0.85, drop=0.2, change_at=30).change_points
        (ChangePoint(index=30, kind='auc', before=0.85, after=0.6499999999999999, end=30),)
    """

    name: ClassVar[str] = "sudden_auc_drop"

    drop: float = 0.1
    change_at: int | None = None

    def _check_parameters(self) -> None:
        _check_drop(self.auc, self.drop)
        self._check_change_at(self.change_at)

    def _change_points(self) -> tuple[ChangePoint, ...]:
        index = self._middle(self.change_at)
        return (ChangePoint(index, "auc", self.auc, self.auc - self.drop, index),)


@dataclass(frozen=True, kw_only=True)
class GradualAucDrop(Scenario):
    """Real drift: the AUC falls linearly from ``auc`` to ``auc − drop`` over ``width`` events.

    Event ``change_at + k`` (0 ≤ k < width) is drawn with AUC
    ``auc − drop · (k + 1) / (width + 1)``, so every event of the transition lies strictly
    between the two concepts; from ``change_at + width`` (the change point's ``end``) on the
    AUC is ``auc − drop``. The change point is the start of the transition.

    Why: slow degradation (a feature decaying, a population shifting) is harder to detect
    than a jump, and detectors tuned on sudden drifts can miss it.

    Parameters:
        drop: how much the AUC falls in total, 0 < drop < auc.
        change_at: first event of the transition; None (default) is ``length // 2``.
        width: number of transition events, ≥ 1, with ``change_at + width ≤ length``;
            None (default) is ``max(1, length // 10)``.

    Example:
        >>> scenario = GradualAucDrop(length=100, change_at=40, width=9)
        >>> scenario.change_points
        (ChangePoint(index=40, kind='auc', before=0.9, after=0.8, end=49),)
        >>> [round(scenario.auc_at(i), 2) for i in (39, 40, 44, 48, 49)]
        [0.9, 0.89, 0.85, 0.81, 0.8]
    """

    name: ClassVar[str] = "gradual_auc_drop"

    drop: float = 0.1
    change_at: int | None = None
    width: int | None = None

    def _width(self) -> int:
        return max(1, self.length // 10) if self.width is None else self.width

    def _check_parameters(self) -> None:
        _check_drop(self.auc, self.drop)
        self._check_change_at(self.change_at)
        start, width = self._middle(self.change_at), self._width()
        if not isinstance(width, int) or isinstance(width, bool) or width < 1:
            raise ValueError(f"width must be an int >= 1, got {self.width!r}")
        if start + width > self.length:
            raise ValueError(
                f"width must fit in the stream, change_at + width <= length={self.length}, "
                f"got change_at={start}, width={width}"
            )

    def _change_points(self) -> tuple[ChangePoint, ...]:
        start = self._middle(self.change_at)
        return (ChangePoint(start, "auc", self.auc, self.auc - self.drop, start + self._width()),)


@dataclass(frozen=True, kw_only=True)
class RatioChange(Scenario):
    """Virtual drift: the positive share jumps from ``positive_share`` to
    ``positive_share_after`` at one event; the scores' distributions, hence the AUC, do not
    change.

    Why: paper 000's Sudden_RC (§5.2, Table 9) and paper 003's Fig. 4–5 streams. AUC,
    recall and specificity must stay put while precision, F1 and κ move; a detector on the
    raw crisp measures raises an alarm that class-ratio normalization should suppress.

    Parameters:
        positive_share_after: the positive share from ``change_at`` on, in (0, 1) and
            different from ``positive_share``. Default 1/16 (P:N = 1:15).
        change_at: index of the first event with the new ratio; None (default) is
            ``length // 2``.

    Example:
        >>> RatioChange(length=100, positive_share=0.5,
        ...             positive_share_after=positive_share_from_ratio("1:4")).change_points
        (ChangePoint(index=50, kind='ratio', before=0.5, after=0.2, end=50),)
    """

    name: ClassVar[str] = "ratio_change"

    positive_share_after: float = 1 / 16
    change_at: int | None = None

    def _check_parameters(self) -> None:
        after = _check_open_unit("positive_share_after", self.positive_share_after)
        if after == self.positive_share:
            raise ValueError(
                f"positive_share_after must differ from positive_share={self.positive_share}, "
                f"got {self.positive_share_after!r}"
            )
        self._check_change_at(self.change_at)

    def _change_points(self) -> tuple[ChangePoint, ...]:
        index = self._middle(self.change_at)
        return (ChangePoint(index, "ratio", self.positive_share, self.positive_share_after, index),)


@dataclass(frozen=True, kw_only=True)
class MinMaj(Scenario):
    """Virtual drift: the minority class abruptly becomes the majority, π → 1 − π; the AUC
    does not change.

    Why: paper 000's MinMaj stream (§5.2, Table 9: 1:19 → 19:1, hence the default
    ``positive_share=0.05``). In its Fig. 8f accuracy, κ and κm react to the swap while AUC
    shows the ranking did not change; a monitor should report the same.

    Parameters:
        positive_share: π before the swap (default 0.05, P:N = 1:19); anything but 0.5.
        change_at: index of the first event after the swap; None (default) is
            ``length // 2``.

    Example:
        >>> MinMaj(length=100).change_points
        (ChangePoint(index=50, kind='ratio', before=0.05, after=0.95, end=50),)
    """

    name: ClassVar[str] = "minmaj"

    positive_share: float = 0.05
    change_at: int | None = None

    def _check_parameters(self) -> None:
        if self.positive_share == 0.5:
            raise ValueError(
                "positive_share must not be 0.5: balanced classes have no minority to swap"
            )
        self._check_change_at(self.change_at)

    def _change_points(self) -> tuple[ChangePoint, ...]:
        index = self._middle(self.change_at)
        return (ChangePoint(index, "ratio", self.positive_share, 1.0 - self.positive_share, index),)


@dataclass(frozen=True, kw_only=True)
class RecurringRatio(Scenario):
    """Virtual drift, recurring: the positive share alternates between ``positive_share`` and
    ``positive_share_alternate`` every ``period`` events (changes at period, 2·period, …).

    Why: paper 000's Sudden_RC is a recurring virtual drift (Table 9, "Rec. virt."). A
    monitor must not mistake each return of a known ratio for a new concept, and a detector
    restarted after each alarm shows how quickly it settles.

    Parameters:
        positive_share_alternate: the other positive share, in (0, 1) and different from
            ``positive_share``. Default 1/16 (P:N = 1:15).
        period: events per segment, 1 ≤ period < length; None (default) is
            ``max(1, length // 4)``.

    Example:
        >>> [(p.index, p.after) for p in RecurringRatio(length=100, period=30).change_points]
        [(30, 0.0625), (60, 0.3), (90, 0.0625)]
    """

    name: ClassVar[str] = "recurring_ratio"

    positive_share_alternate: float = 1 / 16
    period: int | None = None

    def _period(self) -> int:
        return max(1, self.length // 4) if self.period is None else self.period

    def _check_parameters(self) -> None:
        alternate = _check_open_unit("positive_share_alternate", self.positive_share_alternate)
        if alternate == self.positive_share:
            raise ValueError(
                f"positive_share_alternate must differ from positive_share="
                f"{self.positive_share}, got {self.positive_share_alternate!r}"
            )
        period = self._period()
        if not isinstance(period, int) or isinstance(period, bool) or period < 1:
            raise ValueError(f"period must be an int >= 1, got {self.period!r}")
        if period >= self.length:
            raise ValueError(
                f"period must be shorter than length={self.length} so the ratio changes at "
                f"least once, got {period}"
            )

    def _change_points(self) -> tuple[ChangePoint, ...]:
        shares = (self.positive_share, self.positive_share_alternate)
        period = self._period()
        return tuple(
            ChangePoint(index, "ratio", shares[k % 2], shares[(k + 1) % 2], index)
            for k, index in enumerate(range(period, self.length, period))
        )


@dataclass(frozen=True, kw_only=True)
class Composite(Scenario):
    """Several drifts in one stream: the change points of its parts, taken together.

    Each part is a scenario describing one drift (or several). The composite keeps only their
    change points and draws every event from the schedule they make together, starting from
    its own ``auc`` and ``positive_share``; the parts' other parameters (length, rate, output,
    and the starting value of the kind a part does not change) play no role. Changes of one
    kind must chain (each starts from the value the previous one of its kind left, so a second
    AUC drop starts where the first ended) and must not overlap; changes of different kinds
    are independent and may coincide.

    Why: a deployed model meets several drifts, real and virtual, one after the other, and a
    monitor must react to the real ones and stay quiet through the virtual ones in one run.
    :class:`AucDropThenRatioChange` is the registered example.

    Parameters:
        parts: the scenarios whose change points make this one, a non-empty tuple.

    Example:
        >>> Composite(length=100, parts=(
        ...     SuddenAucDrop(length=100, drop=0.25, change_at=30),
        ...     RatioChange(length=100, positive_share_after=0.1, change_at=60),
        ... )).change_points  # doctest: +NORMALIZE_WHITESPACE
        (ChangePoint(index=30, kind='auc', before=0.9, after=0.65, end=30),
         ChangePoint(index=60, kind='ratio', before=0.3, after=0.1, end=60))
    """

    name: ClassVar[str] = "composite"

    parts: tuple[Scenario, ...] = ()

    def _check_parameters(self) -> None:
        parts = self.parts
        if (not isinstance(parts, tuple) or not parts
                or not all(isinstance(part, Scenario) for part in parts)):
            raise ValueError(f"parts must be a non-empty tuple of scenarios, got {parts!r}")
        # The base class checks the merged schedule too; checking here names the parameter.
        value = {"auc": self.auc, "ratio": self.positive_share}
        previous_end = {"auc": 0, "ratio": 0}
        points = sorted((p for part in parts for p in part.change_points),
                        key=lambda point: (point.index, point.kind))
        for point in points:
            if not previous_end[point.kind] <= point.index < self.length \
                    or point.end > self.length:
                raise ValueError(
                    f"parts must change inside the stream (length={self.length}) without "
                    f"overlapping changes of one kind, got {point}"
                )
            if point.before != value[point.kind]:
                raise ValueError(
                    f"parts must chain: {point} starts from {point.before}, but the "
                    f"{point.kind} is {value[point.kind]} there"
                )
            value[point.kind], previous_end[point.kind] = point.after, point.end

    def _change_points(self) -> tuple[ChangePoint, ...]:
        return tuple(point for part in self.parts for point in part.change_points)


@dataclass(frozen=True, kw_only=True)
class AucDropThenRatioChange(Composite):
    """Real drift, then virtual drift: the AUC drops by ``drop`` at ``change_at``; later the
    positive share jumps to ``positive_share_after`` at ``ratio_change_at``, the AUC unchanged.

    A :class:`Composite` of a :class:`SuddenAucDrop` and a :class:`RatioChange` (its
    ``parts``, built from the parameters).

    Why: the story of the embedded demo (``driftwatch demo``). A monitor should raise an AUC
    alarm after the first change and none after the second, while the measures that depend on
    the class ratio (precision, F1, κ) move at both. The defaults leave room for that. With
    the default monitor (a CUSUM on the AUC of blocks of ≥ 20 events per class) a drop of 0.2
    is found a few hundred events after it (a median of 170–400 at 1:1 and 1:4 in
    ``benchmarks/detection.py``, table C; 242 in the demo), with one AUC alarm per drop, and
    the ratio changes 10 000 events after the drop (with the default length), so an AUC
    alarm after it would be a false one (tests/test_demo.py checks this for a few seeds). A
    drop of 0.1, the other scenarios' default, takes about 400–600 events.

    Parameters:
        drop: how much the AUC falls, 0 < drop < auc; default 0.2 (0.9 → 0.7).
        change_at: index of the first event with the lower AUC; None (default) is
            ``length // 4``.
        positive_share_after: the positive share from ``ratio_change_at`` on, in (0, 1) and
            different from ``positive_share``. Default 1/16 (P:N = 1:15).
        ratio_change_at: index of the first event with the new ratio,
            change_at < ratio_change_at < length; None (default) is ``3 * length // 4``.

    Example:
        >>> AucDropThenRatioChange(length=100).change_points  # doctest: +NORMALIZE_WHITESPACE
        (ChangePoint(index=25, kind='auc', before=0.9, after=0.7, end=25),
         ChangePoint(index=75, kind='ratio', before=0.3, after=0.0625, end=75))
    """

    name: ClassVar[str] = "auc_drop_then_ratio_change"

    parts: tuple[Scenario, ...] = field(default=(), init=False, repr=False, compare=False)
    drop: float = 0.2
    change_at: int | None = None
    positive_share_after: float = 1 / 16
    ratio_change_at: int | None = None

    def _drop_at(self) -> int:
        return self.length // 4 if self.change_at is None else self.change_at

    def _ratio_at(self) -> int:
        return 3 * self.length // 4 if self.ratio_change_at is None else self.ratio_change_at

    def _check_parameters(self) -> None:
        _check_drop(self.auc, self.drop)
        drop_at, ratio_at = self._drop_at(), self._ratio_at()
        if not isinstance(drop_at, int) or isinstance(drop_at, bool) \
                or not 0 < drop_at < self.length:
            raise ValueError(
                f"change_at must be an int inside the stream, 0 < change_at < length="
                f"{self.length}, got {drop_at!r}"
            )
        if not isinstance(ratio_at, int) or isinstance(ratio_at, bool) \
                or not drop_at < ratio_at < self.length:
            raise ValueError(
                f"ratio_change_at must be an int after the drop, change_at={drop_at} < "
                f"ratio_change_at < length={self.length}, got {ratio_at!r}"
            )
        after = _check_open_unit("positive_share_after", self.positive_share_after)
        if after == self.positive_share:
            raise ValueError(
                f"positive_share_after must differ from positive_share={self.positive_share}, "
                f"got {self.positive_share_after!r}"
            )
        length, share = self.length, self.positive_share
        parts = (
            SuddenAucDrop(length=length, auc=self.auc, positive_share=share, drop=self.drop,
                          change_at=drop_at),
            RatioChange(length=length, auc=self.auc - self.drop, positive_share=share,
                        positive_share_after=after, change_at=ratio_at),
        )
        object.__setattr__(self, "parts", parts)  # frozen: derived once, here
        super()._check_parameters()


SCENARIOS: dict[str, type[Scenario]] = {
    cls.name: cls
    for cls in (Stationary, SuddenAucDrop, GradualAucDrop, RatioChange, MinMaj, RecurringRatio,
                AucDropThenRatioChange)
}
"""Scenario classes by name. Each class is its own factory: call it with keyword parameters
(all have defaults: 20 000 events, AUC 0.9, π 0.3, changes in the middle, AUC drops of 0.1;
:class:`AucDropThenRatioChange` changes at a quarter and three quarters, with a drop of 0.2),
or use :func:`generate`. :class:`Composite` is not registered: its parts are scenarios, not
numbers."""


@dataclass(frozen=True, slots=True)
class SimulatedStream:
    """A scenario bound to a seed: iterable (again and again, always the same events).

    Example:
        >>> stream = SimulatedStream(Stationary(length=3), seed=1)
        >>> len(stream), [event.y_true for event in stream]
        (3, [1, 1, 0])
    """

    scenario: Scenario
    seed: int

    def __post_init__(self) -> None:
        _check_seed(self.seed)

    def __iter__(self) -> Iterator[Event]:
        return self.scenario.events(self.seed)

    def __len__(self) -> int:
        return self.scenario.length

    @property
    def change_points(self) -> tuple[ChangePoint, ...]:
        """The scenario's true change points."""
        return self.scenario.change_points


def generate(name: str, *, seed: int, length: int | None = None, **params: Any) -> SimulatedStream:
    """The seeded stream of scenario ``name`` (a key of :data:`SCENARIOS`).

    ``length`` (default: the scenario's, 20 000) and ``params`` go to the scenario class;
    change points that are not given are placed relative to ``length``, so any length works
    with the defaults.

    Example:
        >>> stream = generate("minmaj", seed=3, length=2000, positive_share=0.1)
        >>> stream.change_points
        (ChangePoint(index=1000, kind='ratio', before=0.1, after=0.9, end=1000),)
        >>> labels = [event.y_true for event in stream]
        >>> sum(labels[:1000]), sum(labels[1000:])
        (88, 896)

    Raises:
        ValueError: naming ``name`` when the scenario is unknown, the parameter when it is
            unknown to the scenario or out of range, ``seed`` when it is not an int ≥ 0.
    """
    try:
        factory = SCENARIOS[name]
    except (KeyError, TypeError):
        raise ValueError(f"name must be one of {sorted(SCENARIOS)}, got {name!r}") from None
    accepted = sorted(field.name for field in fields(factory) if field.init)
    for parameter in params:
        if parameter not in accepted:
            raise ValueError(
                f"unknown parameter {parameter!r} for scenario {name!r}; accepted: {accepted}"
            )
    if length is not None:
        params["length"] = length
    return SimulatedStream(factory(**params), seed=_check_seed(seed))


# -- delayed labels: the two-stream form --------------------------------------------------------

DelayDistribution = Literal["fixed", "exponential", "lognormal"]
DELAY_DISTRIBUTIONS: tuple[DelayDistribution, ...] = get_args(DelayDistribution)


def delayed_labels(
    events: Iterable[Event],
    *,
    seed: int,
    model: str = "default",
    delay: DelayDistribution = "exponential",
    mean_delay: float = 3600.0,
    sigma: float = 1.0,
    unlabelled: float = 0.0,
    id_prefix: str = "e",
) -> Iterator[Prediction | Label]:
    """The predictions and labels of a labelled stream, as a deployed model would see them.

    Event i becomes a :class:`~driftwatch.core.join.Prediction` at its time ``ts`` (event id
    ``f"{id_prefix}{i}"``) and, unless it is one of the ``unlabelled`` share, a
    :class:`~driftwatch.core.join.Label` at ``ts`` + a delay drawn from ``delay``: ``"fixed"``
    (always ``mean_delay``), ``"exponential"`` (mean ``mean_delay``) or ``"lognormal"``
    (mean ``mean_delay``, log-scale spread ``sigma``: heavy-tailed, like chargebacks). The
    records come in time order (a label and a prediction at the same time: the label
    first), so labels overtake each other as their delays differ. Events without ``ts`` are
    placed at their index (one per second).

    Lazy: the only records held are the labels not yet due, about rate × mean delay.

    Example:
        >>> stream = generate("stationary", seed=1, length=4)
        >>> records = delayed_labels(stream, seed=2, delay="fixed", mean_delay=1.5)
        >>> [(type(r).__name__, r.event_id, r.ts) for r in records]  # doctest: +ELLIPSIS
        [('Prediction', 'e0', 0.0), ('Prediction', 'e1', 1.0), ('Label', 'e0', 1.5), ...]

    Raises:
        ValueError: naming the parameter that is out of range.
    """
    rng = random.Random(_check_seed(seed))
    if delay not in DELAY_DISTRIBUTIONS:
        raise ValueError(f"delay must be one of {list(DELAY_DISTRIBUTIONS)}, got {delay!r}")
    if not _is_real(mean_delay) or not 0.0 <= mean_delay < math.inf:
        raise ValueError(f"mean_delay must be a finite number of seconds ≥ 0, got {mean_delay!r}")
    if not _is_real(sigma) or not 0.0 < sigma <= 5.0:
        raise ValueError(f"sigma must be in (0, 5], got {sigma!r}")
    if not _is_real(unlabelled) or not 0.0 <= unlabelled <= 1.0:
        raise ValueError(f"unlabelled must be in [0, 1], got {unlabelled!r}")
    mu = math.log(mean_delay) - sigma * sigma / 2.0 if mean_delay > 0 else -math.inf

    def draw() -> float:
        if delay == "fixed" or mean_delay == 0:
            return float(mean_delay)
        if delay == "exponential":
            return rng.expovariate(1.0 / mean_delay)
        return rng.lognormvariate(mu, sigma)

    due: list[tuple[float, int, Label]] = []  # labels by time, then event index
    for i, event in enumerate(events):
        ts = float(i) if event.ts is None else event.ts
        while due and due[0][0] <= ts:
            yield heapq.heappop(due)[2]
        event_id = f"{id_prefix}{i}"
        yield Prediction(event_id, model, event.y_score, event.y_pred, ts)
        if rng.random() >= unlabelled:
            label_ts = ts + draw()
            heapq.heappush(due, (label_ts, i, Label(event_id, event.y_true, label_ts)))
    while due:
        yield heapq.heappop(due)[2]
