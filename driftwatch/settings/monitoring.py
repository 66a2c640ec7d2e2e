"""``monitoring``: per-model windows, measures and their watches, as defaults and per-model
overrides."""

from __future__ import annotations

from functools import cached_property
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from driftwatch.core.config_error import ConfigError
from driftwatch.core.measures import registry as measure_registry
from driftwatch.core.monitor import (
    DEFAULT_WATCHES,
    WATCHABLE,
    Direction,
    Feed,
    MonitorConfig,
    Watch,
    build_detectors,
)
from driftwatch.settings.common import Name, _core_problems, _pick, _raise, _Section
from driftwatch.settings.detectors import DetectorSettings
from driftwatch.settings.estimation import EstimationSettings

MAX_WINDOW_SIZE = 1_000_000
"""Upper bound of ``window_size``: a window holds its events in memory (tens of bytes each,
per model), and 10⁶ stays far below the 2**26 events where the crisp measures stop being
exact in float64 (``driftwatch.core.measures.crisp``)."""

_MONITOR_DEFAULTS = MonitorConfig()
"""The core's defaults, read rather than copied so that the two cannot disagree."""


class WatchSettings(_Section):
    """How one measure is watched: which value, which detectors, and an optional floor."""

    measure: str = Field(
        description=(
            "A measure of the window (auc, a crisp measure such as gmean or kappa), "
            "error_stream (the per-event error, 1 when the prediction is wrong: DDM's input), "
            "or, with feed: blocks, false_negative_rate (FN/P) or false_positive_rate (FP/N)."
        ),
        json_schema_extra={"enum": list(WATCHABLE)},
    )
    feed: Feed = Field(
        default="window",
        description=(
            "What the detectors get. blocks: one input per block of at least "
            "block_min_class positives and negatives spanning block_seconds of record time "
            "(the block's AUC or per-class error rate, standardized by its sampling error "
            "against the level since the last alarm): independent inputs, whose false "
            "alarms the cusum detector holds to the model's budget in time "
            "(days_per_false_alarm) at any class ratio and traffic, testing against the "
            "indifference zone of min_effect_auc or min_effect_rate; for auc, "
            "false_negative_rate and false_positive_rate. "
            "window: the window's value every sample_every events (autocorrelated; for "
            "page_hinkley, adwin and ddm as configured before blocks existed)."
        ),
    )
    normalized: bool = Field(
        default=False,
        description=(
            "Feed the detectors the class-ratio-normalized value (Brzezinski et al. 2019, "
            "eq. 10) instead of the raw one; only for measures that have a normalization."
        ),
    )
    direction: Direction | None = Field(
        default=None,
        description=(
            "The change that matters: down, up or both. None: the measure's bad direction "
            "(a drop; a rise for "
            + ", ".join(m.name for m in measure_registry.BUILTIN
                     if not m.higher_is_better and m.kind in measure_registry.WATCHABLE_KINDS)
            + "). Given to every detector that takes a direction and does not set its own."
        ),
    )
    floor: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(
        default=None,
        description=(
            "A floor on the normalized scale (0.8: better than 80 % of all confusion "
            "matrices at the window's class ratio). Exported as a raw threshold that follows "
            "the class ratio, and a threshold alarm when the measure falls below it."
        ),
    )
    detectors: list[DetectorSettings] = Field(
        default_factory=list,
        max_length=20,
        description="Detectors fed with this measure's samples (none: only exported).",
    )

    @field_validator("measure")
    @classmethod
    def _watchable(cls, measure: str) -> str:
        # The registry: measures added later too.
        if measure_registry.find(measure) is None and \
                measure not in measure_registry.plugin_errors():  # else: what is wrong with it
            watchable = ", ".join(measure_registry.watchable_names())
            raise ValueError(f"unknown measure {measure!r}; watchable: {watchable}")
        if (reason := measure_registry.unwatchable_reason(measure)) is not None:
            raise ValueError(reason)
        return measure

    @model_validator(mode="after")
    def _buildable(self) -> WatchSettings:
        """The core's checks of the watch (e.g. DDM on raw kappa) and of each detector built
        as a monitor builds it, with the direction it inherits, reported at their keys."""
        try:
            build_detectors(self.watch())
        except ConfigError as exc:
            _raise(type(self).__name__, _core_problems(exc))
        return self

    def watch(self) -> Watch:
        """The core's :class:`~driftwatch.core.monitor.Watch` for these settings."""
        return Watch(
            measure=self.measure,
            detectors=tuple(d.spec() for d in self.detectors),
            normalized=self.normalized,
            direction=self.direction,
            floor=self.floor,
            feed=self.feed,
        )

    @classmethod
    def from_watch(cls, watch: Watch) -> WatchSettings:
        return cls(
            measure=watch.measure,
            feed=watch.feed,
            normalized=watch.normalized,
            direction=watch.direction,
            floor=watch.floor,
            detectors=[
                DetectorSettings(name=spec.name, params=dict(spec.params))
                for spec in watch.detectors
            ],
        )


WindowSize = Annotated[int, Field(ge=1, le=MAX_WINDOW_SIZE)]
SampleEvery = Annotated[int, Field(ge=1, le=MAX_WINDOW_SIZE)]
Threshold = Annotated[float, Field(allow_inf_nan=False, ge=-1e300, le=1e300)]
BlockMinClass = Annotated[int, Field(ge=2, le=100_000)]
BlockWarmup = Annotated[int, Field(ge=1, le=100_000)]
BlockSeconds = Annotated[float, Field(ge=0.0, le=86_400.0, allow_inf_nan=False)]
DaysPerFalseAlarm = Annotated[float, Field(ge=0.01, le=36_500.0, allow_inf_nan=False)]
MinEffect = Annotated[float, Field(ge=0.0, le=0.5, allow_inf_nan=False)]
Watches = Annotated[list[WatchSettings], Field(max_length=100)]

_WINDOW_SIZE = (
    "Events in the sliding window over which AUC and the crisp measures are computed "
    "(Brzezinski & Stefanowski 2017 study the choice; 1000 balances reaction time against "
    "variance)."
)
_SAMPLE_EVERY = (
    "The window's measures are sampled for floors and feed: window detectors every this "
    "many events (error_stream detectors see every event; feed: blocks detectors one input "
    "per block)."
)
_THRESHOLD = (
    "The decision threshold: score at or above which an event without a prediction field "
    "counts as predicted positive. Any finite number: scores need not be probabilities."
)
_WATCHES = "The measures to watch and their detectors."
_BLOCK_MIN_CLASS = (
    "A block (the input unit of feed: blocks watches) closes once it holds at least this "
    "many positives and this many negatives, so every block carries the same information "
    "whatever the class ratio (at 1:15 it is longer in events). Larger: smaller shifts "
    "seen, later."
)
_BLOCK_WARMUP = (
    "Blocks that only build a blocks watch's reference level, after the start and after "
    "each of its alarms, before its detectors get inputs."
)
_BLOCK_SECONDS = (
    "A block also spans at least this many seconds of record time (the events' time "
    "field), so a blocks watch runs at most 86400/block_seconds tests a day whatever the "
    "traffic, and each block spends the record time it spans of the false-alarm budget. "
    "Smaller: drops found sooner at high traffic; larger: sharper indifference zone. "
    "Events without a time close blocks on information alone (see days_per_false_alarm). "
    "0: information only, as before blocks had a time rule."
)
_DAYS_PER_FALSE_ALARM = (
    "The false-alarm budget: the blocks watches' CUSUMs that set no arl of their own (the "
    "defaults) expect at most one false drift alarm per this many days per model, all of "
    "them together, at any traffic: each block gets the run length that the record time it "
    "spans allows. Spent at the worst change the indifference zone tolerates (min_effect_*/2); "
    "while nothing changes, far fewer. Needs events with a time: without one each block "
    "counts as block_seconds, so the budget holds only while blocks close no more often."
)
_MIN_EFFECT_AUC = (
    "The smallest sustained AUC drop worth an alarm, in AUC units. Drops up to half of it, "
    "or up to one block standard error short of it where blocks are more precise than that "
    "(high traffic), are tolerated: they raise no more alarms than the budget (a daily "
    "wobble of the model fits inside), however much traffic proves them; drops well above "
    "it are found within a block or a few. 0: test any drop (the CUSUM of earlier "
    "versions)."
)
_MIN_EFFECT_RATE = (
    "The smallest sustained rise of a per-class error rate (false_negative_rate, "
    "false_positive_rate) worth an alarm, in rate units, with the tolerance of "
    "min_effect_auc. The default 0.05 is about what a 0.02 AUC drop does to a per-class rate "
    "at a threshold between the class means; 0: test any rise."
)
_ADAPTIVE_WINDOW = (
    "Let ADWIN choose the window's length from the per-event error (Bifet et al. 2015, §6): "
    "window_size becomes the longest it may grow, and after a change the window drops the "
    "events from before it. Its current length is the sum of driftwatch_window_events over "
    "the classes."
)


class MonitorDefaults(_Section):
    """What every model's monitor computes and watches, unless its entry in ``models``
    overrides it."""

    window_size: WindowSize = Field(
        default=_MONITOR_DEFAULTS.window_size, description=_WINDOW_SIZE
    )
    sample_every: SampleEvery = Field(
        default=_MONITOR_DEFAULTS.sample_every, description=_SAMPLE_EVERY
    )
    threshold: Threshold = Field(default=_MONITOR_DEFAULTS.threshold, description=_THRESHOLD)
    block_min_class: BlockMinClass = Field(
        default=_MONITOR_DEFAULTS.block_min_class, description=_BLOCK_MIN_CLASS
    )
    block_warmup: BlockWarmup = Field(
        default=_MONITOR_DEFAULTS.block_warmup, description=_BLOCK_WARMUP
    )
    adaptive_window: bool = Field(
        default=_MONITOR_DEFAULTS.adaptive_window, description=_ADAPTIVE_WINDOW
    )
    block_seconds: BlockSeconds = Field(
        default=_MONITOR_DEFAULTS.block_seconds, description=_BLOCK_SECONDS
    )
    days_per_false_alarm: DaysPerFalseAlarm = Field(
        default=_MONITOR_DEFAULTS.days_per_false_alarm, description=_DAYS_PER_FALSE_ALARM
    )
    min_effect_auc: MinEffect = Field(
        default=_MONITOR_DEFAULTS.min_effect_auc, description=_MIN_EFFECT_AUC
    )
    min_effect_rate: MinEffect = Field(
        default=_MONITOR_DEFAULTS.min_effect_rate, description=_MIN_EFFECT_RATE
    )
    watches: Watches = Field(
        default_factory=lambda: [WatchSettings.from_watch(w) for w in DEFAULT_WATCHES],
        description=(
            f"{_WATCHES} Omitted: the built-in defaults (driftwatch.core.monitor."
            "DEFAULT_WATCHES; `driftwatch config show` prints them)."
        ),
    )

    estimation: EstimationSettings = Field(
        default_factory=EstimationSettings,
        description=(
            "Estimated performance from the scores before the labels arrive, checked "
            "against them when they join (every model; not overridable per model)."),
    )

    @model_validator(mode="after")
    def _core_rules(self) -> MonitorDefaults:
        _check_in_core(self)
        return self


class MonitorOverrides(_Section):
    """One model's differences from ``monitoring.defaults``; omitted keys are inherited.
    ``watches``, when given, replaces the default list as a whole."""

    window_size: WindowSize | None = Field(default=None, description=_WINDOW_SIZE)
    sample_every: SampleEvery | None = Field(default=None, description=_SAMPLE_EVERY)
    threshold: Threshold | None = Field(default=None, description=_THRESHOLD)
    block_min_class: BlockMinClass | None = Field(default=None, description=_BLOCK_MIN_CLASS)
    block_warmup: BlockWarmup | None = Field(default=None, description=_BLOCK_WARMUP)
    adaptive_window: bool | None = Field(default=None, description=_ADAPTIVE_WINDOW)
    block_seconds: BlockSeconds | None = Field(default=None, description=_BLOCK_SECONDS)
    days_per_false_alarm: DaysPerFalseAlarm | None = Field(
        default=None, description=_DAYS_PER_FALSE_ALARM
    )
    min_effect_auc: MinEffect | None = Field(default=None, description=_MIN_EFFECT_AUC)
    min_effect_rate: MinEffect | None = Field(default=None, description=_MIN_EFFECT_RATE)
    watches: Watches | None = Field(
        default=None, description=f"{_WATCHES} Replaces the default list; [] watches nothing."
    )

    @model_validator(mode="after")
    def _core_rules(self) -> MonitorOverrides:
        _check_in_core(self)
        return self


def _check_in_core(section: MonitorDefaults | MonitorOverrides) -> None:
    """Build the core's ``MonitorConfig`` from the keys ``section`` sets (the others take
    the core's defaults), so the core's rules between values (one watch per measure, every
    detector buildable) report at the keys its error locates. No rule of the core relates
    a watch to another key, so an override is checked on its own, not merged per model.
    """
    given = {key: getattr(section, key) for key in type(section).model_fields
             if getattr(section, key) is not None and key != "estimation"}
    if "watches" in given:
        given["watches"] = tuple(w.watch() for w in given["watches"])
    try:
        MonitorConfig(**given)
    except ConfigError as exc:
        _raise(type(section).__name__, _core_problems(exc))


class MonitoringSettings(_Section):
    """Per-model monitors: shared defaults and per-model overrides."""

    defaults: MonitorDefaults = Field(
        default_factory=MonitorDefaults, description="Settings of every model's monitor."
    )
    models: dict[Name, MonitorOverrides] = Field(
        default_factory=dict,
        max_length=100_000,
        description=(
            "Overrides by model id. Models not listed use the defaults; listing a model "
            "does not reserve a slot (limits.max_models still applies). Environment "
            "variable names are case-insensitive, so ids set from the environment "
            "(DRIFTWATCH_MONITORING__MODELS__<ID>__WINDOW_SIZE) are lower case."
        ),
    )

    def monitor_config(self, model: str) -> MonitorConfig:
        """The core's :class:`~driftwatch.core.monitor.MonitorConfig` for ``model``: the
        defaults, with that model's overrides applied key by key. Models without overrides
        share one (frozen) config: building one takes about 0.1 ms, a tenth of what restoring
        a monitor of d = 1 000 and its first snapshot take, for every model restored."""
        if model not in self.models:
            return self._default_config
        return self._config(self.models[model])

    @cached_property
    def _default_config(self) -> MonitorConfig:
        return self._config(MonitorOverrides())

    def _config(self, overrides: MonitorOverrides) -> MonitorConfig:
        defaults = self.defaults
        watches = defaults.watches if overrides.watches is None else overrides.watches
        return MonitorConfig(
            window_size=_pick(overrides.window_size, defaults.window_size),
            sample_every=_pick(overrides.sample_every, defaults.sample_every),
            threshold=_pick(overrides.threshold, defaults.threshold),
            watches=tuple(w.watch() for w in watches),
            block_min_class=_pick(overrides.block_min_class, defaults.block_min_class),
            block_warmup=_pick(overrides.block_warmup, defaults.block_warmup),
            adaptive_window=_pick(overrides.adaptive_window, defaults.adaptive_window),
            block_seconds=_pick(overrides.block_seconds, defaults.block_seconds),
            days_per_false_alarm=_pick(overrides.days_per_false_alarm,
                                       defaults.days_per_false_alarm),
            min_effect_auc=_pick(overrides.min_effect_auc, defaults.min_effect_auc),
            min_effect_rate=_pick(overrides.min_effect_rate, defaults.min_effect_rate),
            estimation=defaults.estimation.config(),
        )
