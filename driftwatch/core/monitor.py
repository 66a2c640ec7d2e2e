"""The per-model monitor: one window, its measures, their detectors, and the alarms.

A :class:`Monitor` is the pure heart of the agent. It takes events one by one, keeps the
prequential window (AUC and the confusion matrix over the same last ``window_size`` events),
and every ``sample_every`` events samples the watched measures, normalizes them for the
window's class ratio (paper 003, eq. 10), feeds each measure's detectors, and converts each
normalized floor into the raw threshold that means the same thing at the current P:N. What it
finds comes back as :class:`Alarm` values; it never logs, exports or sleeps: the agent does that.

Its whole state can be exported as plain data and restored exactly, so the agent can
checkpoint it and resume after a restart as if it had never stopped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from driftwatch.core.detectors import registry
from driftwatch.core.detectors.base import Detector, DetectorState
from driftwatch.core.events import Event
from driftwatch.core.measures.crisp import CRISP_MEASURES, NORMALIZABLE
from driftwatch.core.normalization import normalize, threshold
from driftwatch.core.window import PrequentialWindow

STATE_VERSION = 1
"""Version of :meth:`Monitor.export_state`'s format; restore refuses any other."""

ERROR_STREAM = "error_stream"
"""Pseudo-measure: the per-event crisp error (1 when the prediction is wrong), DDM's input."""

MEASURES: tuple[str, ...] = ("auc", *CRISP_MEASURES)
"""Every measure a monitor reports, in a stable order."""

WATCHABLE: tuple[str, ...] = (*MEASURES, ERROR_STREAM)

HIGHER_IS_WORSE = frozenset({"error", ERROR_STREAM})
"""Measures whose rise is bad; for every other measure a drop is bad."""

UNIT_RANGE = frozenset(
    {"auc", "accuracy", "error", "precision", "recall", "specificity", "balanced_accuracy",
     "gmean", "harmonic_mean", "f1", ERROR_STREAM}
)
"""Measures whose raw values always lie in [0, 1] (κ, κm, κper and MCC can go negative)."""

Direction = Literal["down", "up", "both"]
Level = Literal["warning", "drift", "threshold"]


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
        normalized: feed the class-ratio-normalized value instead of the raw one (only for
            measures paper 003 normalizes).
        direction: the change that matters; None means the measure's bad direction (a drop,
            or a rise for error). Passed to every detector that takes a ``direction``.
        floor: a floor on the normalized scale (e.g. 0.8: "above 80 % of all confusion
            matrices at this class ratio"); turned into a raw threshold at every sample and
            raising a ``threshold`` alarm when the measure falls below it.
    """

    measure: str
    detectors: tuple[DetectorSpec, ...] = ()
    normalized: bool = False
    direction: Direction | None = None
    floor: float | None = None

    def __post_init__(self) -> None:
        if self.measure not in WATCHABLE:
            raise ValueError(f"measure must be one of {', '.join(WATCHABLE)}; got {self.measure!r}")
        normalizable = self.measure in NORMALIZABLE
        if self.normalized and not normalizable:
            raise ValueError(
                f"normalized: {self.measure} has no class-ratio normalization; "
                f"only {', '.join(NORMALIZABLE)} do"
            )
        if self.floor is not None:
            if not normalizable:
                raise ValueError(f"floor: {self.measure} has no class-ratio normalization")
            if not 0.0 <= self.floor <= 1.0:
                raise ValueError(f"floor must be in [0, 1] (a normalized value), got {self.floor}")
        if self.direction not in (None, "down", "up", "both"):
            raise ValueError(f"direction must be down, up or both, got {self.direction!r}")
        unit_input = self.normalized or self.measure in UNIT_RANGE
        for spec in self.detectors:
            detector_type = registry.get(spec.name)
            bounds = detector_type.input_range
            if bounds is not None and not unit_input and bounds == (0.0, 1.0):
                raise ValueError(
                    f"detectors: {spec.name} needs inputs in [0, 1] but {self.measure} can "
                    "leave [0, 1]; watch its normalized value instead"
                )

    @property
    def effective_direction(self) -> Direction:
        if self.direction is not None:
            return self.direction
        return "up" if self.measure in HIGHER_IS_WORSE else "down"


DEFAULT_SAMPLE_EVERY = 25
"""Measures are sampled for the detectors every 25 events (see :data:`DEFAULT_WATCHES`)."""

DEFAULT_WATCHES: tuple[Watch, ...] = (
    Watch("auc", (DetectorSpec("adwin", {"delta": 0.002, "clock": 1}),)),
    Watch(ERROR_STREAM, (DetectorSpec("adwin", {"delta": 0.002}),)),
    Watch("gmean", (DetectorSpec("adwin", {"delta": 0.002, "clock": 1}),), normalized=True),
)
"""What a monitor watches unless the settings say otherwise, chosen with
``python -m benchmarks.detection`` (``benchmarks/results.md``): table B tries every
candidate on 20 seeded runs of 40 000 events per scenario (binormal scores at AUC 0.9,
d = 1000, class ratios 1:15 … 15:1, sudden and gradual AUC drops of 0.10, pure class-ratio
changes); table C runs these defaults end to end through the monitor (8 000 000 events
without a real drift).

The goal is no false alarm, whatever the class ratio, before speed of detection:

- **AUC, ADWIN (δ 0.002) on every 25th value.** Table B: no false alarm in 4 000 000
  stationary events and none under pure class-ratio changes; a sudden 0.10 drop always
  detected, after 2 600 events on average. Table C: one false alarm in 5 000 000 stationary
  events, and 2 of 20 MinMaj runs (5 % positives, so ~50 in the window) alarmed. Page-Hinkley
  detects sooner (λ 1, δ 0.01 every 100: 1 750 events) but alarmed in 3 % of the stationary
  and of the ratio-change runs: windowed values are autocorrelated, which Page-Hinkley's
  fixed λ ignores, while ADWIN's bound scales with the variance it sees. Every 25 rather than
  every event keeps that autocorrelation and the cost down; every 50 doubled the delay.
- **The per-event crisp error, ADWIN (δ 0.002, checks every 32 events, watching rises).**
  The classic input of the three detectors (independent 0/1 values, no window): the fastest
  detection of the drop (500 events); no false alarm in table B, three in table C's
  5 000 000 stationary events. DDM alarmed in 34 % of the stationary runs, Page-Hinkley (λ 50)
  in 91 %.
- **G-mean, class-ratio-normalized, ADWIN (δ 0.002) every 25th value.** A crisp measure
  that treats both classes alike, normalized so that its alarm rate does not depend on the
  class ratio (raw G-mean's false-alarm share varied by up to 45 points between ratios with
  Page-Hinkley, the normalized one by at most 15): no false alarm in either table; 3 200
  events to detect the drop.
"""


@dataclass(frozen=True, slots=True)
class MonitorConfig:
    """What one monitor computes and watches; the defaults are argued at DEFAULT_WATCHES."""

    window_size: int = 1000
    sample_every: int = DEFAULT_SAMPLE_EVERY
    threshold: float = 0.5
    watches: tuple[Watch, ...] = DEFAULT_WATCHES

    def __post_init__(self) -> None:
        if not isinstance(self.window_size, int) or self.window_size < 1:
            raise ValueError(f"window_size must be an integer ≥ 1, got {self.window_size!r}")
        if not isinstance(self.sample_every, int) or self.sample_every < 1:
            raise ValueError(f"sample_every must be an integer ≥ 1, got {self.sample_every!r}")
        if not math.isfinite(self.threshold):
            raise ValueError(f"threshold must be finite, got {self.threshold!r}")
        measures = [w.measure for w in self.watches]
        for measure in measures:
            if measures.count(measure) > 1:
                # Alarms and metrics are keyed by (measure, detector): one watch per measure.
                raise ValueError(f"watches: {measure} is watched twice; give one watch several "
                                 "detectors instead")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MonitorConfig:
        watches = tuple(
            Watch(
                measure=w["measure"],
                detectors=tuple(DetectorSpec(d["name"], dict(d["params"])) for d in w["detectors"]),
                normalized=w["normalized"],
                direction=w["direction"],
                floor=w["floor"],
            )
            for w in data["watches"]
        )
        return cls(
            window_size=data["window_size"],
            sample_every=data["sample_every"],
            threshold=data["threshold"],
            watches=watches,
        )


@dataclass(frozen=True, slots=True)
class Alarm:
    """A detector or threshold that changed state: what the agent logs, counts and exports."""

    model: str
    measure: str
    detector: str  # a registry name, or "threshold"
    level: Level
    value: float  # the raw measure value at the sample
    normalized: float  # its class-ratio-normalized value (NaN when not normalizable)
    positives: int
    negatives: int
    event_count: int  # events the monitor had processed when the alarm fired
    event_time: float | None  # ``ts`` of the event that triggered the sample


@dataclass(frozen=True, slots=True)
class Snapshot:
    """An immutable picture of one monitor, safe to read from another thread."""

    model: str
    events: int
    positives: int
    negatives: int
    values: Mapping[str, float]  # every measure of MEASURES, raw
    normalized: Mapping[str, float]  # every NORMALIZABLE measure
    thresholds: Mapping[str, float]  # raw thresholds of the watched floors
    detector_states: Mapping[tuple[str, str], str]  # (measure, detector) → stable/warning/drift
    alarms: Mapping[tuple[str, str, str], int]  # (measure, detector, level) → count
    last_event_time: float | None
    last_alarm_time: float | None


class _WatchState:
    """The live part of one watch: its detectors and whether it is below its floor."""

    __slots__ = ("below_floor", "detectors", "fed", "fed_at_drift", "quiet_until", "threshold",
                 "watch")

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.detectors: list[Detector] = [_build(spec, watch) for spec in watch.detectors]
        self.quiet_until = [0] * len(self.detectors)  # event count before which drifts repeat
        self.fed = 0  # inputs given to the detectors so far
        self.fed_at_drift = [-1] * len(self.detectors)  # ``fed`` at each one's last drift
        self.below_floor = False
        self.threshold = math.nan


_STABLE, _WARNING, _DRIFT = DetectorState.STABLE, DetectorState.WARNING, DetectorState.DRIFT


def _build(spec: DetectorSpec, watch: Watch) -> Detector:
    params = dict(spec.params)
    if "direction" in registry.get(spec.name).parameter_names() and "direction" not in params:
        params["direction"] = watch.effective_direction
    return registry.create(spec.name, **params)


class Monitor:
    """Watches one model's events.

    Windowed measures reach their detectors and floors every ``sample_every`` events once
    the window is full (``window_size`` events), never from a filling window; the per-event
    ``error_stream`` feeds its detectors from the first event.

    Cost per event: O(log d) for the window (d = ``window_size``), plus, once every
    ``sample_every`` events, one O(P) normalization per normalized or floored measure and one
    detector update per watching detector. The ``error_stream`` pseudo-measure feeds its
    detectors at every event. With the watches of ``benchmarks/throughput.py`` (d = 1000,
    every 25 events) about half of the time goes to the window and to G-mean's
    normalization, a sixth to feeding DDM the per-event error and a tenth to the two ADWINs
    with clock 1.

    Parameters:
        model: the model id, carried into every alarm.
        config: what to compute and watch.
    """

    __slots__ = ("_alarm_counts", "_error_watches", "_events", "_last_alarm_time",
                 "_last_event_time", "_sample_every", "_sampled_watches", "_threshold",
                 "_window", "_window_size", "config", "model")

    def __init__(self, model: str, config: MonitorConfig) -> None:
        self.model = model
        self.config = config
        self._window = PrequentialWindow(config.window_size, config.threshold)
        self._sample_every = config.sample_every  # read at every event: one lookup, not two
        self._window_size = config.window_size
        self._threshold = config.threshold
        states = [_WatchState(w) for w in config.watches]
        self._error_watches = [s for s in states if s.watch.measure == ERROR_STREAM]
        self._sampled_watches = [s for s in states if s.watch.measure != ERROR_STREAM
                                 and (s.detectors or s.watch.floor is not None)]
        self._events = 0
        self._alarm_counts: dict[tuple[str, str, str], int] = {}
        self._last_event_time: float | None = None
        self._last_alarm_time: float | None = None

    @property
    def window(self) -> PrequentialWindow:
        return self._window

    @property
    def events(self) -> int:
        return self._events

    @property
    def sampled(self) -> bool:
        """Whether the latest :meth:`update` sampled the windowed measures for their
        detectors and floors: every ``sample_every`` events once the window is full (the
        rule :meth:`update` applies). A replay records its figure's points here."""
        return self._events % self._sample_every == 0 and len(self._window) == self._window_size

    def update(self, event: Event) -> list[Alarm]:
        """Take one event; return the alarms it raised (usually none)."""
        y_true, y_pred = event.y_true, event.y_pred
        self._window.update(y_true, event.y_score, y_pred)
        self._events = count = self._events + 1
        if event.ts is not None:
            self._last_event_time = event.ts
        alarms: list[Alarm] = []
        if self._error_watches:
            if y_pred is None:
                y_pred = event.y_score >= self._threshold  # a bool: True == 1
            error = 1.0 if y_pred != y_true else 0.0
            for state in self._error_watches:
                self._feed(state, error, error, math.nan, event, alarms)
        # Windowed measures are sampled once the window is full: over a filling window they
        # are estimates from a few events, noisy enough to cross floors and trip detectors
        # at start-up (a restored monitor starts full).
        if count % self._sample_every == 0 and len(self._window) == self._window_size:
            self._sample(event, alarms)
        return alarms

    def _sample(self, event: Event, alarms: list[Alarm]) -> None:
        window = self._window
        positives, negatives = window.positives, window.negatives
        for state in self._sampled_watches:
            watch = state.watch
            value = window.measure(watch.measure)
            norm = math.nan
            if watch.normalized or watch.floor is not None:
                norm = normalize(watch.measure, positives, negatives, value)
            if watch.floor is not None:
                state.threshold = threshold(watch.measure, positives, negatives, watch.floor)
                below = not math.isnan(value) and value < state.threshold
                if below and not state.below_floor:
                    alarms.append(self._alarm(watch.measure, "threshold", "threshold",
                                              value, norm, event))
                state.below_floor = below
            x = norm if watch.normalized else value
            if not math.isnan(x):  # an undefined window tells the detectors nothing
                self._feed(state, x, value, norm, event, alarms)

    def _feed(self, state: _WatchState, x: float, value: float, norm: float, event: Event,
              alarms: list[Alarm]) -> None:
        """Feed ``x`` (never NaN) to the watch's detectors; ``value`` is the raw measure and
        ``norm`` its normalized value, both for the alarms."""
        state.fed = fed = state.fed + 1
        for index, detector in enumerate(state.detectors):
            before = detector.state
            level = detector.update(x)
            if level is _STABLE:  # nearly always
                continue
            # An alarm is a state change: a drift (which lasts one step), or entering warning.
            if level is _DRIFT:
                if not self._repeated(state, index, detector, fed):
                    alarms.append(self._alarm(state.watch.measure, detector.name, "drift",
                                              value, norm, event))
                state.quiet_until[index] = self._events + self._window_size
                state.fed_at_drift[index] = fed
            elif level is _WARNING and before is not _WARNING:
                alarms.append(self._alarm(state.watch.measure, detector.name, "warning",
                                          value, norm, event))

    def _repeated(self, state: _WatchState, index: int, detector: Detector, fed: int) -> bool:
        """Whether a drift repeats the detector's previous one rather than a new change.

        A windowed measure shows a change for a whole window (the ramp while old events leave
        it), so drifts less than one window after the previous are the same episode. And a
        detector that keeps its estimate after a cut (ADWIN, whose ``width`` is the number of
        inputs it still holds) cuts again while what it holds reaches back before its previous
        drift, less that ramp: those cuts still separate the old concept from the new.
        """
        if self._events < state.quiet_until[index]:
            return True
        last = state.fed_at_drift[index]
        width = getattr(detector, "width", None)
        if last < 0 or not isinstance(width, int):
            return False
        ramp = 0 if state.watch.measure == ERROR_STREAM else self._window_size // self._sample_every
        return width > fed - last + ramp

    def _alarm(self, measure: str, detector: str, level: Level, value: float, norm: float,
               event: Event) -> Alarm:
        key = (measure, detector, level)
        self._alarm_counts[key] = self._alarm_counts.get(key, 0) + 1
        if event.ts is not None:
            self._last_alarm_time = event.ts
        return Alarm(self.model, measure, detector, level, value, norm,
                     self._window.positives, self._window.negatives, self._events, event.ts)

    def snapshot(self) -> Snapshot:
        """The current values, computed now from the window (O(P) per normalized measure)."""
        window = self._window
        positives, negatives = window.positives, window.negatives
        values = window.measures()
        normalized = {m: normalize(m, positives, negatives, values[m]) for m in NORMALIZABLE}
        thresholds = {s.watch.measure: s.threshold for s in self._sampled_watches
                      if s.watch.floor is not None}
        states = {
            (s.watch.measure, d.name): d.state.name.lower()
            for s in (*self._error_watches, *self._sampled_watches)
            for d in s.detectors
        }
        return Snapshot(self.model, self._events, positives, negatives, values, normalized,
                        thresholds, states, dict(self._alarm_counts), self._last_event_time,
                        self._last_alarm_time)

    def export_state(self) -> dict[str, Any]:
        """Everything needed to continue exactly where this monitor is, as plain data."""
        watches = [*self._error_watches, *self._sampled_watches]
        return {
            "version": STATE_VERSION,
            "model": self.model,
            "config": self.config.to_dict(),
            "window": self._window.export_state(),
            "events": self._events,
            "watches": [
                {
                    "measure": s.watch.measure,
                    "detectors": [d.export_state() for d in s.detectors],
                    "quiet_until": s.quiet_until,
                    "fed": s.fed,
                    "fed_at_drift": s.fed_at_drift,
                    "below_floor": s.below_floor,
                    "threshold": s.threshold,
                }
                for s in watches
            ],
            "alarms": [[*key, count] for key, count in sorted(self._alarm_counts.items())],
            "last_event_time": self._last_event_time,
            "last_alarm_time": self._last_alarm_time,
        }

    @classmethod
    def restore(cls, state: Mapping[str, Any], config: MonitorConfig | None = None) -> Monitor:
        """Rebuild a monitor from :meth:`export_state`; refuses another format version.

        With ``config`` different from the saved one (the settings changed between runs) the
        monitor takes the new configuration with fresh detectors, but keeps its events, its
        counters and as much of its window as the new size holds, so a restart is never blind
        for a whole window.
        """
        version = state.get("version") if isinstance(state, Mapping) else None
        if version != STATE_VERSION:
            raise ValueError(
                f"monitor state has format version {version!r}; this driftwatch reads "
                f"version {STATE_VERSION} only"
            )
        try:
            saved = MonitorConfig.from_dict(state["config"])
            if config is not None and config != saved:
                return cls._reconfigured(state, config)
            monitor = cls(state["model"], saved)
            monitor._window = PrequentialWindow.from_state(state["window"])
            monitor._events = int(state["events"])
            live = [*monitor._error_watches, *monitor._sampled_watches]
            saved = state["watches"]
            if len(saved) != len(live):
                raise ValueError("watches do not match the configuration")
            for live_state, saved_state in zip(live, saved, strict=True):
                if saved_state["measure"] != live_state.watch.measure:
                    raise ValueError("watches do not match the configuration")
                live_state.detectors = [
                    type(d).from_state(s)
                    for d, s in zip(live_state.detectors, saved_state["detectors"], strict=True)
                ]
                live_state.quiet_until = [int(q) for q in saved_state["quiet_until"]]
                live_state.fed = int(saved_state["fed"])
                live_state.fed_at_drift = [int(f) for f in saved_state["fed_at_drift"]]
                live_state.below_floor = bool(saved_state["below_floor"])
                live_state.threshold = float(saved_state["threshold"])
            monitor._alarm_counts = {
                (m, d, lvl): int(c) for m, d, lvl, c in state["alarms"]
            }
            monitor._last_event_time = state["last_event_time"]
            monitor._last_alarm_time = state["last_alarm_time"]
        except (KeyError, TypeError) as error:
            raise ValueError(f"monitor state is malformed: {error!r}") from error
        return monitor

    @classmethod
    def _reconfigured(cls, state: Mapping[str, Any], config: MonitorConfig) -> Monitor:
        monitor = cls(state["model"], config)
        saved_window = PrequentialWindow.from_state(state["window"])
        for y_true, y_score, y_pred in saved_window.export_state()["events"]:
            monitor._window.update(y_true, y_score, y_pred)
        monitor._events = int(state["events"])
        monitor._alarm_counts = {(m, d, lvl): int(c) for m, d, lvl, c in state["alarms"]}
        monitor._last_event_time = state["last_event_time"]
        monitor._last_alarm_time = state["last_alarm_time"]
        return monitor
