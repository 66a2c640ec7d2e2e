"""What a monitor computes and watches: its configuration, checked whole when built.

A :class:`MonitorConfig` holds the window's size, the sampling step, the crisp threshold, the
block settings and one :class:`Watch` per measure, each naming its :class:`DetectorSpec` s.
Its invariants are checked here, with the values they are about (a detector's parameters by
the detector): a configuration that exists builds a :class:`~driftwatch.core.monitor.Monitor`,
and one that does not raises :class:`~driftwatch.core.config_error.ConfigError` at the key it
is about, which the settings turn into ``path.key (ENV): message`` lines without reading the
text.

The defaults (:data:`DEFAULT_WATCHES`: block AUC and the two per-class error rates, each by a
CUSUM) are argued where they are defined.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from driftwatch.core.config_error import ConfigError, Problem
from driftwatch.core.detectors import registry
from driftwatch.core.detectors.base import Detector
from driftwatch.core.estimation.config import EstimationConfig
from driftwatch.core.measures import registry as measure_registry

ERROR_STREAM = "error_stream"
"""Pseudo-measure: the per-event crisp error (1 when the prediction is wrong), DDM's input."""

FALSE_NEGATIVE_RATE = "false_negative_rate"
"""Block pseudo-measure: FN/P over a block's positives (the class ratio cannot move it)."""

FALSE_POSITIVE_RATE = "false_positive_rate"
"""Block pseudo-measure: FP/N over a block's negatives."""

MEASURES: tuple[str, ...] = measure_registry.names("window")
"""The built-in measures a monitor reports, in a stable order (and after them any measure
registered later: :func:`~driftwatch.core.measures.registry.window_measures`)."""

BLOCK_MEASURES: tuple[str, ...] = ("auc", FALSE_NEGATIVE_RATE, FALSE_POSITIVE_RATE)
"""What a block watch can watch (``feed="blocks"``)."""

WATCHABLE: tuple[str, ...] = measure_registry.watchable_names()
"""The built-in names a :class:`Watch` may watch: the window's measures, ``error_stream`` and
the two block rates (a measure registered later is watchable too)."""

Direction = Literal["down", "up", "both"]
Feed = Literal["window", "blocks"]
FEEDS: tuple[Feed, ...] = ("window", "blocks")


@dataclass(frozen=True, slots=True)
class DetectorSpec:
    """A detector to build from the registry: its name and constructor parameters."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Watch:
    """How one measure is watched.

    Attributes:
        measure: a name from :data:`WATCHABLE`.
        detectors: the detectors fed with this measure's samples.
        feed: ``"window"``: the detectors get the window's value every ``sample_every``
            events (autocorrelated; for Page-Hinkley, ADWIN, DDM); ``"blocks"``: they get one
            z-score per closed block (independent and standardized; for ``cusum``), for the
            measures of :data:`BLOCK_MEASURES` only.
        normalized: feed the class-ratio-normalized value instead of the raw one (only for
            measures Brzezinski et al. 2019 normalize).
        direction: the change that matters; None means the measure's bad direction (a drop,
            or a rise for error). Passed to every detector that takes a ``direction``.
        floor: a floor on the normalized scale (e.g. 0.8: "above 80 % of all confusion
            matrices at this class ratio"); turned into a raw threshold at every sample and
            raising a ``threshold`` alarm when the measure falls below it.

    An invalid combination raises :class:`~driftwatch.core.config_error.ConfigError` at the
    key it is about (``floor``, ``detectors.1``, ...). A detector appears once per watch:
    metrics and alarms are labelled by measure and detector, so a second ``page_hinkley`` on
    the same measure would write to the first one's series.
    """

    measure: str
    detectors: tuple[DetectorSpec, ...] = ()
    normalized: bool = False
    direction: Direction | None = None
    floor: float | None = None
    feed: Feed = "window"

    def __post_init__(self) -> None:
        if (reason := measure_registry.unwatchable_reason(self.measure)) is not None:
            raise ConfigError(("measure",), reason)
        measure = measure_registry.get(self.measure)
        if self.feed not in FEEDS:
            raise ConfigError(("feed",), f"must be window or blocks, got {self.feed!r}")
        if self.direction not in (None, "down", "up", "both"):
            raise ConfigError(("direction",),
                              f"must be down, up or both, got {self.direction!r}")
        self._check_detector_names()
        if self.feed == "blocks":
            self._check_blocks()
            return
        if measure.kind == "block":
            raise ConfigError(("feed",),
                              f"{self.measure} is measured on blocks only; set feed: blocks")
        normalizable = measure.normalizable
        if self.normalized and not normalizable:
            names = ", ".join(m.name for m in measure_registry.measures() if m.normalizable)
            raise ConfigError(
                ("normalized",), f"{self.measure} has no class-ratio normalization; "
                f"only {names} do"
            )
        if self.floor is not None:
            if not normalizable:
                raise ConfigError(("floor",), f"{self.measure} has no class-ratio normalization")
            if not 0.0 <= self.floor <= 1.0:
                raise ConfigError(("floor",),
                                  f"must be in [0, 1] (a normalized value), got {self.floor}")
        unit_input = self.normalized or measure.unit_range
        for index, spec in enumerate(self.detectors):
            bounds = registry.get(spec.name).input_range
            if bounds is not None and not unit_input and bounds == (0.0, 1.0):
                raise ConfigError(
                    ("detectors", index), f"{spec.name} needs inputs in [0, 1] but "
                    f"{self.measure} can leave [0, 1]; watch its normalized value instead"
                )

    def _check_detector_names(self) -> None:
        """Every detector is registered and appears once (see the class docstring)."""
        first: dict[str, int] = {}
        for index, spec in enumerate(self.detectors):
            try:
                registry.get(spec.name)
            except ValueError as exc:
                raise ConfigError(("detectors", index, "name"), str(exc)) from exc
            seen = first.setdefault(spec.name, index)
            if seen != index:
                raise ConfigError(
                    ("detectors", index, "name"), f"{spec.name} already watches "
                    f"{self.measure} (detectors.{seen}); metrics and alarms are labelled by "
                    "measure and detector, so each pair may appear once"
                )

    def _check_blocks(self) -> None:
        if self.measure not in BLOCK_MEASURES:
            raise ConfigError(
                ("feed",), f"blocks watches take {', '.join(BLOCK_MEASURES)}; {self.measure} "
                "is watched on the window (feed: window)"
            )
        if self.normalized or self.floor is not None:
            raise ConfigError(
                ("normalized" if self.normalized else "floor",),
                "applies to the window; a blocks watch has neither floor nor normalized",
            )
        for index, spec in enumerate(self.detectors):
            if registry.get(spec.name).input_range is not None:
                raise ConfigError(
                    ("detectors", index), f"{spec.name} needs bounded inputs, but a blocks "
                    "watch feeds z-scores (use cusum, or page_hinkley/adwin)"
                )

    @property
    def effective_direction(self) -> Direction:
        if self.direction is not None:
            return self.direction
        return "down" if measure_registry.get(self.measure).higher_is_better else "up"


DEFAULT_SAMPLE_EVERY = 25
"""The window's measures are sampled for floors and window watches every 25 events."""

DEFAULT_BLOCK_MIN_CLASS = 20
"""A block closes once it holds 20 positives and 20 negatives (see :data:`DEFAULT_WATCHES`)."""

DEFAULT_BLOCK_WARMUP = 5
"""Blocks that only build the reference after the start and after each alarm."""

DEFAULT_BLOCK_SECONDS = 30.0
"""A block also spans at least 30 s of record time (see :data:`DEFAULT_WATCHES`)."""

DEFAULT_DAYS_PER_FALSE_ALARM = 30.0
"""The false-alarm budget: one false drift alarm per model per 30 days at most."""

DEFAULT_MIN_EFFECT_AUC = 0.02
"""The smallest sustained AUC drop worth an alarm (see :data:`DEFAULT_WATCHES`)."""

DEFAULT_MIN_EFFECT_RATE = 0.05
"""The smallest sustained rise of a per-class error rate worth an alarm."""

_CUSUM = DetectorSpec("cusum", {"k": 0.5})

DEFAULT_WATCHES: tuple[Watch, ...] = (
    Watch("auc", (_CUSUM,), feed="blocks"),
    Watch(FALSE_NEGATIVE_RATE, (_CUSUM,), feed="blocks"),
    Watch(FALSE_POSITIVE_RATE, (_CUSUM,), feed="blocks"),
)
"""What a monitor watches unless the settings say otherwise: block AUC and the two per-class
error rates, each by a CUSUM (k 0.5; no ``arl``: its run length comes from the model's
false-alarm budget) on self-starting z-scores of blocks of ≥ 20 positives and ≥ 20 negatives
spanning at least 30 s of record time, against an indifference zone. Chosen with
``python -m benchmarks budget`` and ``python -m benchmarks detection``
(``benchmarks/results.md``, which has the measured figures; ``docs/detection.md`` the
guarantee).

- **False alarms in time, by construction.** Each block spends of the budget the record time
  it spans (:mod:`driftwatch.core.budget`): the three CUSUMs together expect at most one
  false alarm per 30 days (``days_per_false_alarm``) at any traffic, bursts and backlogs
  included, and that at the worst change the zone tolerates; while nothing changes, far
  fewer.
- **Changes that matter** (:mod:`driftwatch.core.zone`). Sustained AUC drops up to 0.01 and
  rises of a per-class error rate up to 0.025 (half the minimum effects 0.02 and 0.05; up to
  one block standard error short of the effect where blocks are that precise) are
  tolerated: a model's daily wobble of ± 0.01 AUC stays inside. At high traffic drops
  below 0.02 stay quiet however much traffic proves them; at low traffic, where a block's
  standard error is larger than the effect, the test is the CUSUM of k = 0.5 beyond the
  tolerance. The rate effect follows from the AUC's: in a binormal model a 0.02 AUC drop
  raises the false-negative rate by 0.02–0.04 at a threshold between the class means
  (AUC 0.7–0.9), up to 0.06 at AUC 0.95; 0.05 keeps the ± 0.01 wobble's share of that
  inside the tolerance for all but the steepest models.
- **Half a minute per block.** The time rule bounds the tests to 2 880 a day per watch
  whatever the traffic, makes high-traffic blocks precise enough for the zone to be sharp
  (30 s at 100 events a second and 1:4: a standard error of about 0.007 AUC), and lets a
  drop be found within a few blocks, minutes, at 10 events a second and more. A minute
  would sharpen the zone a little and cost half a minute of delay per block of granularity
  (at 10 events a second and 1:15 the median delay of a 0.05 drop measured 10.2 minutes
  against 9.7 at 30 s); shorter blocks would no longer hold 20 positives at 1:15 and close
  on information anyway. At low traffic blocks close on information and last longer.
- **Ratio-free.** The block AUC and the two per-class rates do not move when only the class
  ratio does, and their z-scores use the block's own P and N, so neither a ratio change nor
  an off-centre crisp threshold raises an alarm (the overall error and the window AUC's
  spread both move with the ratio, which is why ``error_stream`` and ADWIN on the window
  left the defaults).
- **Delay.** k = 0.5 suits shifts of about one block standard deviation beyond the
  tolerance; at 20 + 20 events a 0.10 AUC drop is about two, so it is detected after ≈ 8
  blocks: a few hundred events at 1:1 and 1:4, proportionally more where one class is rare
  (the minority class carries the information).
"""


@dataclass(frozen=True, slots=True)
class MonitorConfig:
    """What one monitor computes and watches; the defaults are argued at DEFAULT_WATCHES.

    Checked whole when built: every value, one watch per measure, and every detector built
    once with its parameters (so a config that exists builds a
    :class:`~driftwatch.core.monitor.Monitor`). Problems raise
    :class:`~driftwatch.core.config_error.ConfigError` at their key
    (``watches.0.detectors.1.params.delta``).
    """

    window_size: int = 1000
    sample_every: int = DEFAULT_SAMPLE_EVERY
    threshold: float = 0.5
    watches: tuple[Watch, ...] = DEFAULT_WATCHES
    block_min_class: int = DEFAULT_BLOCK_MIN_CLASS
    block_warmup: int = DEFAULT_BLOCK_WARMUP
    adaptive_window: bool = False
    """ADWIN chooses the window's length from the per-event error, ``window_size`` being its
    cap (:class:`~driftwatch.core.adaptive_window.AdaptiveWindow`, Bifet et al. 2015, §6)."""
    block_seconds: float = DEFAULT_BLOCK_SECONDS
    """Record time a block spans at least (0: blocks close on information only)."""
    days_per_false_alarm: float = DEFAULT_DAYS_PER_FALSE_ALARM
    """The false-alarm budget of the blocks watches' CUSUMs without an ``arl`` of their own:
    one false alarm per this many days, all of them together (:mod:`driftwatch.core.budget`)."""
    min_effect_auc: float = DEFAULT_MIN_EFFECT_AUC
    """The indifference zone of a blocks watch of AUC (:mod:`driftwatch.core.zone`)."""
    min_effect_rate: float = DEFAULT_MIN_EFFECT_RATE
    """The indifference zone of a blocks watch of a per-class error rate."""
    estimation: EstimationConfig | None = None
    """Estimate the measures from the scores before the labels arrive, checked against
    them when they do (:mod:`driftwatch.core.estimation.watch`); None: no estimate."""

    def __post_init__(self) -> None:
        problems: list[Problem] = []
        for key, minimum in (("window_size", 1), ("sample_every", 1), ("block_min_class", 2),
                             ("block_warmup", 1)):
            value = getattr(self, key)
            if not isinstance(value, int) or value < minimum:
                problems.append(Problem((key,), f"must be an integer ≥ {minimum}, got {value!r}"))
        for key, low, high in (("block_seconds", 0.0, 86_400.0),
                               ("days_per_false_alarm", 0.01, 36_500.0),
                               ("min_effect_auc", 0.0, 0.5), ("min_effect_rate", 0.0, 0.5)):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not low <= value <= high:
                problems.append(Problem((key,), f"must be a number in [{low:g}, {high:g}], "
                                                f"got {value!r}"))
        if not math.isfinite(self.threshold):
            problems.append(Problem(("threshold",), f"must be finite, got {self.threshold!r}"))
        if not isinstance(self.adaptive_window, bool):
            problems.append(Problem(("adaptive_window",),
                                    f"must be true or false, got {self.adaptive_window!r}"))
        if self.estimation is not None and not isinstance(self.estimation, EstimationConfig):
            problems.append(Problem(("estimation",), "must be an EstimationConfig or None, "
                                                     f"got {self.estimation!r}"))
        first: dict[str, int] = {}
        for index, watch in enumerate(self.watches):
            seen = first.setdefault(watch.measure, index)
            if seen != index:
                problems.append(Problem(
                    ("watches", index, "measure"), f"{watch.measure} is already watched "
                    f"(watches.{seen}); metrics and alarms are labelled by measure and "
                    "detector, so a measure has one watch: give it several detectors instead"))
                continue
            try:
                build_detectors(watch)
            except ConfigError as exc:
                problems.extend(exc.within("watches", index).problems)
        if problems:
            raise ConfigError.of(problems)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MonitorConfig:
        """The inverse of :meth:`to_dict`. Keys added since take the values that mean what
        the state meant when it was saved: ``feed`` window and the block settings' defaults
        (a version-1 state), no time rule and no indifference zone (a version-2 state, saved
        before the budget: its watches name their ``arl``), so an old state restores to the
        monitor that saved it."""
        watches = tuple(
            Watch(
                measure=w["measure"],
                detectors=tuple(DetectorSpec(d["name"], dict(d["params"])) for d in w["detectors"]),
                normalized=w["normalized"],
                direction=w["direction"],
                floor=w["floor"],
                feed=w.get("feed", "window"),
            )
            for w in data["watches"]
        )
        return cls(
            window_size=data["window_size"],
            sample_every=data["sample_every"],
            threshold=data["threshold"],
            watches=watches,
            block_min_class=data.get("block_min_class", DEFAULT_BLOCK_MIN_CLASS),
            block_warmup=data.get("block_warmup", DEFAULT_BLOCK_WARMUP),
            adaptive_window=data.get("adaptive_window", False),
            block_seconds=data.get("block_seconds", 0.0),
            days_per_false_alarm=data.get("days_per_false_alarm", DEFAULT_DAYS_PER_FALSE_ALARM),
            min_effect_auc=data.get("min_effect_auc", 0.0),
            min_effect_rate=data.get("min_effect_rate", 0.0),
            estimation=(None if data.get("estimation") is None
                        else EstimationConfig.from_dict(data["estimation"])),
        )

    def saved_form(self) -> dict[str, Any]:
        """This configuration as a saved monitor state holds it once read back: :meth:`to_dict`
        through JSON (tuples become lists). Worked out once per configuration object (the last
        :data:`_SAVED_FORMS_KEPT` asked for are kept): a restore compares each model's saved
        configuration with the agent's, and thousands of models share one."""
        kept = _SAVED_FORMS.get(id(self))
        if kept is not None and kept[0] is self:
            return kept[1]
        form: dict[str, Any] = json.loads(json.dumps(self.to_dict(), allow_nan=True))
        if len(_SAVED_FORMS) >= _SAVED_FORMS_KEPT:
            _SAVED_FORMS.clear()
        _SAVED_FORMS[id(self)] = (self, form)
        return form

    def min_effect(self, measure: str) -> float:
        """The minimum effect of a blocks watch of ``measure``, in the measure's units: its
        indifference zone (:mod:`driftwatch.core.zone`)."""
        return self.min_effect_auc if measure == "auc" else self.min_effect_rate




_SAVED_FORMS_KEPT = 64
_SAVED_FORMS: dict[int, tuple[MonitorConfig, dict[str, Any]]] = {}
""":meth:`MonitorConfig.saved_form`'s, by the configuration's id (the configuration is kept
with its form, so an id is never taken for another object's)."""


def build_detectors(watch: Watch) -> list[Detector]:
    """The watch's detectors, each given the watch's direction unless its parameters set one.

    Raises :class:`~driftwatch.core.config_error.ConfigError` at ``detectors.<i>...`` for
    every detector that refuses its parameters, all at once.
    """
    detectors: list[Detector] = []
    problems: list[Problem] = []
    for index, spec in enumerate(watch.detectors):
        params = dict(spec.params)
        if "direction" in registry.get(spec.name).parameter_names() and "direction" not in params:
            params["direction"] = watch.effective_direction
        try:
            detectors.append(registry.create(spec.name, **params))
        except ConfigError as exc:
            problems.extend(exc.within("detectors", index).problems)
    if problems:
        raise ConfigError.of(problems)
    return detectors
