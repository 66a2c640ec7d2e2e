"""The drift scenarios: stationary, AUC drops (real drift), class-ratio changes (virtual
drift) and their composition, each a :class:`~driftwatch.simulate.scenario.Scenario` with its
true change points; the table and the papers they come from are in the package docstring of
:mod:`driftwatch.simulate`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from driftwatch.simulate.binormal import BinormalModel, Output, _check_open_unit, _is_real
from driftwatch.simulate.scenario import ChangePoint, Scenario


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

    Why: Brzezinski & Stefanowski's (2017) Sudden_RC (§5.2, Table 9) and Brzezinski et al.'s (2019)
    Fig. 4–5 streams. AUC, recall and specificity must stay put while precision, F1 and κ move; a
    detector on the raw crisp measures raises an alarm that class-ratio normalization should
    suppress.

    Parameters:
        positive_share_after: the positive share from ``change_at`` on, in (0, 1) and
            different from ``positive_share``. Default 1/16 (P:N = 1:15).
        change_at: index of the first event with the new ratio; None (default) is
            ``length // 2``.

    Example:
        >>> from driftwatch.simulate import positive_share_from_ratio
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

    Why: Brzezinski & Stefanowski's (2017) MinMaj stream (§5.2, Table 9: 1:19 → 19:1, hence the
    default
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

    Why: Brzezinski & Stefanowski's (2017) Sudden_RC is a recurring virtual drift (Table 9, "Rec.
    virt."). A monitor must not mistake each return of a known ratio for a new concept, and a
    detector restarted after each alarm shows how quickly it settles.

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
        # A concept change starts from the scores' AUC and leaves it as it was.
        value = {"auc": self.auc, "ratio": self.positive_share}
        previous_end = {"auc": 0, "ratio": 0, "concept": 0}
        points = sorted((p for part in parts for p in part.change_points),
                        key=lambda point: (point.index, point.kind))
        for point in points:
            chained = "auc" if point.kind == "concept" else point.kind
            if not previous_end[point.kind] <= point.index < self.length \
                    or point.end > self.length:
                raise ValueError(
                    f"parts must change inside the stream (length={self.length}) without "
                    f"overlapping changes of one kind, got {point}"
                )
            if point.before != value[chained]:
                raise ValueError(
                    f"parts must chain: {point} starts from {point.before}, but the "
                    f"{chained} is {value[chained]} there"
                )
            previous_end[point.kind] = point.end
            if point.kind != "concept":
                value[point.kind] = point.after

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


@dataclass(frozen=True, kw_only=True)
class ConceptChange(Scenario):
    """Real drift the scores do not show: from ``change_at`` on, the label of every event
    scored in [``band_low``, ``band_high``) is flipped. The scores are drawn as before
    (the same draws: the flip takes none), so their distribution does not move; what a score
    means, P(label | score), does, and the AUC of the labels against the scores falls to
    the change point's ``after``
    (:meth:`~driftwatch.simulate.binormal.BinormalModel.flipped_auc`).

    Why: an estimate of performance from the scores alone (``docs/estimation.md``) cannot
    see this; only the labels can, once they come, and the estimate's self-check is what
    must catch it. With ``output="calibrated"`` the scores are calibrated probabilities up
    to the change, and inside the band they are calibrated for the other class after it.

    Parameters:
        band_low, band_high: the band of reported scores whose labels flip, low < high (in
            (0, 1) unless the output is latent). Default [0.5, 0.9): for calibrated scores
            of AUC 0.8 at π = 0.3, the labels' AUC falls to 0.70.
        change_at: index of the first event with flipped labels; None (default) is
            ``length // 2``.

    Example:
        >>> point, = ConceptChange(length=100, auc=0.8, output="calibrated").change_points
        >>> point.index, point.kind, point.before, round(point.after, 3), point.band
        (50, 'concept', 0.8, 0.699, (0.5, 0.9))
    """

    name: ClassVar[str] = "concept_change"

    band_low: float = 0.5
    band_high: float = 0.9
    change_at: int | None = None

    def _check_parameters(self) -> None:
        self._check_change_at(self.change_at)
        model = self._model()
        low = model._latent_cut(self.band_low, "band_low")
        if not low < model._latent_cut(self.band_high, "band_high"):
            raise ValueError(f"band_high must be above band_low={self.band_low!r}, "
                             f"got {self.band_high!r}")

    def _model(self) -> BinormalModel:
        return BinormalModel(self.auc, self.positive_share, self.output)

    def _change_points(self) -> tuple[ChangePoint, ...]:
        index = self._middle(self.change_at)
        after = self._model().flipped_auc(self.band_low, self.band_high)
        return (ChangePoint(index, "concept", self.auc, after, index,
                            band=(float(self.band_low), float(self.band_high))),)


@dataclass(frozen=True, kw_only=True)
class CovariateShiftThenConceptChange(Composite):
    """With calibrated scores: a covariate shift, then a concept change (the delayed-labels
    demo's story, ``driftwatch demo --delayed-labels``).

    At ``change_at`` the AUC falls by ``drop``: the scores' distribution moves (more events
    land in the uncertain middle) while P(label | score) stays the score itself, so an
    estimate from calibrated scores falls with the realized AUC, before any label says so.
    At ``concept_at`` the labels of the scores in [``band_low``, ``band_high``) flip
    (:class:`ConceptChange`): the scores do not move, the estimate stays where it was, and
    only the labels, once they arrive, show the drop. A :class:`Composite` of a
    :class:`SuddenAucDrop` and a :class:`ConceptChange` (its ``parts``).

    Parameters:
        output: ``"calibrated"`` by default (the story is about calibrated scores).
        drop: the covariate shift's AUC drop, default 0.1 (0.9 → 0.8).
        change_at: the covariate shift; None (default) is ``length // 3``.
        band_low, band_high: the concept change's band, default [0.5, 0.9) (0.8 → 0.70 with
            the defaults).
        concept_at: the concept change, after ``change_at``; None (default) is
            ``2 * length // 3``.

    Example:
        >>> scenario = CovariateShiftThenConceptChange(length=300)
        >>> [(p.index, p.kind, p.before, round(p.after, 2)) for p in scenario.change_points]
        [(100, 'auc', 0.9, 0.8), (200, 'concept', 0.8, 0.7)]
    """

    name: ClassVar[str] = "covariate_shift_then_concept_change"

    parts: tuple[Scenario, ...] = field(default=(), init=False, repr=False, compare=False)
    output: Output = "calibrated"
    drop: float = 0.1
    change_at: int | None = None
    band_low: float = 0.5
    band_high: float = 0.9
    concept_at: int | None = None

    def _check_parameters(self) -> None:
        _check_drop(self.auc, self.drop)
        shift_at = self.length // 3 if self.change_at is None else self.change_at
        concept_at = 2 * self.length // 3 if self.concept_at is None else self.concept_at
        if not isinstance(shift_at, int) or isinstance(shift_at, bool) \
                or not 0 < shift_at < self.length:
            raise ValueError(
                f"change_at must be an int inside the stream, 0 < change_at < length="
                f"{self.length}, got {shift_at!r}"
            )
        if not isinstance(concept_at, int) or isinstance(concept_at, bool) \
                or not shift_at < concept_at < self.length:
            raise ValueError(
                f"concept_at must be an int after the shift, change_at={shift_at} < "
                f"concept_at < length={self.length}, got {concept_at!r}"
            )
        length, share, after = self.length, self.positive_share, self.auc - self.drop
        if self.output == "calibrated" and not after > 0.5:
            raise ValueError(f"drop must leave the AUC above 0.5 with output 'calibrated', "
                             f"got {self.drop!r}")
        parts = (
            SuddenAucDrop(length=length, auc=self.auc, positive_share=share, drop=self.drop,
                          change_at=shift_at, output=self.output),
            ConceptChange(length=length, auc=after, positive_share=share,
                          band_low=self.band_low, band_high=self.band_high,
                          change_at=concept_at, output=self.output),
        )
        object.__setattr__(self, "parts", parts)  # frozen: derived once, here
        super()._check_parameters()
