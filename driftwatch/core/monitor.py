"""The per-model monitor: one window, its measures, their detectors, and the alarms.

A :class:`Monitor` is the pure heart of the agent. It takes events one by one and keeps the
prequential window (AUC and the confusion matrix over the same last ``window_size`` events),
which it reports and on which floors are set: every ``sample_every`` events it samples the
window's measures, normalizes them for the window's class ratio (Brzezinski et al. 2019, eq. 10),
and converts each normalized floor into the raw threshold that means the same thing at the
current P:N.

Drift detection is done on **blocks** by default (``feed="blocks"``,
:mod:`driftwatch.core.block_watches`): non-overlapping runs of events holding at least
``block_min_class`` events of each class and spanning ``block_seconds`` of record time, whose
AUC and per-class error rates are turned into z-scores by their own sampling error against a
self-starting reference, and fed to a CUSUM that tests them against an indifference zone
(:mod:`driftwatch.core.zone`) with the run length the model's false-alarm budget gives each
block (:mod:`driftwatch.core.budget`). Independent, standardized inputs are what make that
budget hold at any class ratio, any traffic and any stream length; samples of the
overlapping window (``feed="window"``, for Page-Hinkley, ADWIN and DDM as configured by users)
are autocorrelated and their spread depends on P and N.

What the monitor finds comes back as :class:`Alarm` values; it never logs, exports or sleeps:
the agent does that.

Its whole state can be exported as plain data and restored exactly, so the agent can
checkpoint it and resume after a restart as if it had never stopped.

What goes in and what comes out have modules of their own: the configuration and its checks
in :mod:`driftwatch.core.monitor_config`, the alarms and snapshots in :mod:`driftwatch.core.report`.
This module re-exports their names (``__all__``), so that a monitor's user needs one import.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from driftwatch.core.adaptive_window import AdaptiveWindow
from driftwatch.core.block_watches import BlockWatches
from driftwatch.core.blocks import Block, delong
from driftwatch.core.detectors.base import Detector, DetectorState
from driftwatch.core.estimation.watch import CALIBRATION_DRIFT, EstimateWatch
from driftwatch.core.events import Event
from driftwatch.core.measures import registry as measure_registry
from driftwatch.core.monitor_config import (
    BLOCK_MEASURES,
    DEFAULT_BLOCK_MIN_CLASS,
    DEFAULT_BLOCK_WARMUP,
    DEFAULT_SAMPLE_EVERY,
    DEFAULT_WATCHES,
    ERROR_STREAM,
    FALSE_NEGATIVE_RATE,
    FALSE_POSITIVE_RATE,
    FEEDS,
    MEASURES,
    WATCHABLE,
    DetectorSpec,
    Direction,
    Feed,
    MonitorConfig,
    Watch,
    build_detectors,
)
from driftwatch.core.normalization import normalize, threshold
from driftwatch.core.report import Alarm, BudgetView, Level, Snapshot
from driftwatch.core.watch_state import WatchState
from driftwatch.core.window import PrequentialWindow

__all__ = [  # the monitor's whole interface, importable from here (see the module docstring)
    "BLOCK_MEASURES", "DEFAULT_BLOCK_MIN_CLASS", "DEFAULT_BLOCK_WARMUP",
    "DEFAULT_SAMPLE_EVERY", "DEFAULT_WATCHES", "ERROR_STREAM", "FALSE_NEGATIVE_RATE",
    "FALSE_POSITIVE_RATE", "FEEDS", "MEASURES", "STATE_VERSION", "WATCHABLE", "Alarm",
    "BudgetView", "DetectorSpec", "Direction", "Feed", "Level", "Monitor", "MonitorConfig",
    "Snapshot", "Watch", "build_detectors",
]

STATE_VERSION = 3
"""Version of :meth:`Monitor.export_state`'s format (3: blocks with record time, references
weighted by information, CUSUM sums of blocks watches in nats). Versions 1 (before blocks
watches) and 2 (before the budget) are restored with their window, events and alarm counts
but fresh detectors and blocks watches (what they kept meant something else); any other is
refused."""

_STABLE, _WARNING, _DRIFT = DetectorState.STABLE, DetectorState.WARNING, DetectorState.DRIFT


class Monitor:
    """Watches one model's events.

    Windowed measures reach their floors and window watches every ``sample_every`` events
    once the window is full (``window_size`` events), never from a filling window (an
    adaptive window, ``config.adaptive_window``, once ``window_size`` events were seen: after
    a change its shorter window is the measurement); the
    per-event ``error_stream`` feeds its detectors from the first event; blocks watches get
    one input per closed block, after ``block_warmup`` blocks that build their reference.

    **Episodes.** An alarm is a state change. On a blocks watch every detector drift is an
    alarm; the watch then restarts its reference on post-change blocks and its detectors
    from zero, so one change gives one alarm and no alarm, false or real, hides a later
    change. On a window watch a change stays visible for a whole window while old events
    leave it, so a drift less than one window after the detector's previous *alarm* is the
    same episode, as is a drift while ADWIN still holds inputs from before that alarm (less
    the window's ramp); drifts that are not alarmed move nothing, so they cannot chain.

    Cost per event: O(log d) for the window (d = ``window_size``), O(1) for the open block,
    plus, once every ``sample_every`` events, one O(P) normalization per normalized or
    floored measure and one detector update per window detector, and per closed block one
    O(b log b) AUC with its DeLong components (b the block's events) and O(b) per rate.

    Parameters:
        model: the model id, carried into every alarm.
        config: what to compute and watch.
    """

    __slots__ = ("_alarm_counts", "_blocks", "_collector", "_error_watches", "_estimate",
                 "_events", "_last_alarm_time", "_last_event_time", "_sample_every",
                 "_sampled_watches", "_threshold", "_window", "_window_size", "config", "model")

    def __init__(self, model: str, config: MonitorConfig) -> None:
        self.model = model
        self.config = config
        self._window = _new_window(config)
        self._sample_every = config.sample_every  # read at every event: one lookup, not two
        self._window_size = config.window_size
        self._threshold = config.threshold
        states = [WatchState(w, config) for w in config.watches]
        self._error_watches = [s for s in states if s.watch.measure == ERROR_STREAM]
        self._sampled_watches = [s for s in states if s.watch.measure != ERROR_STREAM
                                 and s.watch.feed == "window"
                                 and (s.detectors or s.watch.floor is not None)]
        block_states = [s for s in states if s.watch.feed == "blocks"]
        self._blocks = BlockWatches(block_states, config) if block_states else None
        self._collector = None if self._blocks is None else self._blocks.collector
        self._events = 0
        self._alarm_counts: dict[tuple[str, str, str], int] = {}
        self._last_event_time: float | None = None
        self._last_alarm_time: float | None = None
        self._estimate = EstimateWatch.of(config)

    @property
    def window(self) -> PrequentialWindow:
        return self._window

    @property
    def estimate(self) -> EstimateWatch | None:
        """The estimated performance (None unless ``config.estimation`` is set)."""
        return self._estimate

    @property
    def events(self) -> int:
        return self._events

    @property
    def watched_measures(self) -> frozenset[str]:
        """The measures this monitor's watches watch, with a detector or a floor (the
        measures an export level ``standard`` shows, besides AUC)."""
        return frozenset(s.watch.measure for s in self._watch_states())

    @property
    def sampled(self) -> bool:
        """Whether the latest :meth:`update` sampled the windowed measures for their
        detectors and floors: every ``sample_every`` events once the window is full (the
        rule :meth:`update` applies). A replay records its figure's points here."""
        return self._events % self._sample_every == 0 and self._full()

    def _full(self) -> bool:
        """Whether the windowed measures are sampled: the window is full, or, for an adaptive
        window, ``window_size`` events have been seen (after a change ADWIN's shorter window
        *is* the measurement, Bifet et al. 2015, §6)."""
        if self.config.adaptive_window:
            return self._events >= self._window_size
        return len(self._window) == self._window_size

    def update(self, event: Event) -> list[Alarm]:
        """Take one event; return the alarms it raised (usually none).

        The event's values were checked when it was built (validation happens once, at the
        boundary: :class:`Event`'s constructor or the decoder), so nothing here checks them
        again; anything but an :class:`Event` is refused with ``TypeError``, the monitor
        unchanged.
        """
        if not isinstance(event, Event):
            raise TypeError(f"event must be an Event, got {type(event).__name__}: {event!r}")
        return self.update_values(event.y_true, event.y_score, event.y_pred, event.ts)

    def update_values(self, y_true: int, y_score: float, y_pred: int | None,
                      ts: float | None) -> list[Alarm]:
        """:meth:`update` with the event's values, which must be what :class:`Event` makes of
        its arguments (a 0/1 int class and prediction, a finite float score and time) and are
        not checked again: a replay's decoder checks a record's values and passes them on
        without building an :class:`Event` per record."""
        window = self._window
        window.update_valid(y_true, y_score, y_pred)
        self._events = count = self._events + 1
        if ts is not None:
            self._last_event_time = ts
        alarms: list[Alarm] = []
        if self._estimate is not None:
            drifted = self._estimate.event(y_true, y_score, y_pred, ts)
            if drifted is not None:  # the check block's realized and promised AUC
                alarms.append(self._alarm(CALIBRATION_DRIFT, "cusum", "drift", drifted[0],
                                          math.nan, ts, drifted[1]))
        error_watches, collector = self._error_watches, self._collector
        if error_watches or collector is not None:
            if y_pred is None:
                y_pred = y_score >= self._threshold  # a bool: True == 1
            wrong = y_pred != y_true
            if error_watches:
                error = 1.0 if wrong else 0.0
                for state in error_watches:
                    self._feed(state, error, error, math.nan, ts, alarms)
            if collector is not None:
                block = collector.add(y_true, y_score, wrong, ts)
                if block is not None and self._blocks is not None:
                    alarms += self._blocks.close(block, ts, self._block_alarm)
        # Windowed measures are sampled once the window is full: over a filling window they
        # are estimates from a few events, noisy enough to cross floors and trip detectors
        # at start-up (a restored monitor starts full). Without window watches (the
        # default watches are all blocks watches) there is nothing to sample.
        if self._sampled_watches and count % self._sample_every == 0 and self._full():
            self._sample(ts, alarms)
        return alarms

    def update_columns(self, labels: Sequence[int], scores: Sequence[float],
                       times: Sequence[float | None]) -> list[tuple[int, list[Alarm]]]:
        """:meth:`update_values` of each event in turn (predictions derived from the scores),
        in one call; returns (index, alarms) of every event that raised some.

        A replay's run of plain records of one model: for a monitor whose watches all read
        blocks (the defaults) the events go to the window's queue and the block collector in
        bulk (:meth:`~driftwatch.core.window.PrequentialWindow.extend_valid`,
        :meth:`~driftwatch.core.blocks.BlockCollector.extend`), and each closed block reaches
        the watches with the window and the counters as they were at its closing event, as
        does the estimate's (:meth:`~driftwatch.core.estimation.watch.EstimateWatch.extend`);
        any other monitor takes the events one by one. The same alarms, the same state.
        """
        collector, blocks = self._collector, self._blocks
        if self._error_watches or self._sampled_watches or collector is None or \
                blocks is None or self.config.adaptive_window:
            found = []
            for index, (y, s, t) in enumerate(zip(labels, scores, times, strict=True)):
                alarms = self.update_values(y, s, None, t)
                if alarms:
                    found.append((index, alarms))
            return found
        # The estimate depends on nothing else of the monitor: its alarms are found first and
        # raised at their events, before that event's block alarms (as update_values does).
        drifts = [] if self._estimate is None else self._estimate.extend(labels, scores, times)
        closes: list[tuple[int, Block | tuple[float, float]]] = sorted(
            [*drifts, *collector.extend(labels, scores, times, self._threshold)],
            key=lambda close: close[0])  # stable: a drift before a block at one event
        found = []
        start = 0
        for index, close in closes:
            self._take(labels, scores, times, start, index + 1)
            start = index + 1
            if not isinstance(close, Block):
                alarms = [self._alarm(CALIBRATION_DRIFT, "cusum", "drift", close[0], math.nan,
                                      times[index], close[1])]
            else:
                alarms = blocks.close(close, times[index], self._block_alarm)
            if not alarms:
                continue
            if found and found[-1][0] == index:
                found[-1][1].extend(alarms)
            else:
                found.append((index, alarms))
        self._take(labels, scores, times, start, len(labels))
        return found

    def _take(self, labels: Sequence[int], scores: Sequence[float],
              times: Sequence[float | None], start: int, stop: int) -> None:
        """Events ``start`` to ``stop`` into the window and the counters (not the blocks).
        The window's queue keeps its last size + 1 events: only those are handed to it,
        with the label before them."""
        if start >= stop:
            return
        first = max(start, stop - self._window_size - 1)
        self._window.extend_valid(labels[first:stop], scores[first:stop],
                                  labels[first - 1] if first > start else None)
        self._events += stop - start
        for index in range(stop - 1, start - 1, -1):
            ts = times[index]
            if ts is not None:
                self._last_event_time = ts
                break

    def _sample(self, ts: float | None, alarms: list[Alarm]) -> None:
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
                                              value, norm, ts))
                state.below_floor = below
            x = norm if watch.normalized else value
            if not math.isnan(x):  # an undefined window tells the detectors nothing
                self._feed(state, x, value, norm, ts, alarms)

    def _feed(self, state: WatchState, x: float, value: float, norm: float, ts: float | None,
              alarms: list[Alarm]) -> None:
        """Feed ``x`` (never NaN) to the watch's detectors; ``value`` is the raw measure and
        ``norm`` its normalized value, both for the alarms."""
        state.fed = fed = state.fed + 1
        for index, detector in enumerate(state.detectors):
            before = detector.state
            level = detector.update_valid(x)
            if level is _STABLE:  # nearly always
                state.shown[index] = _STABLE
                continue
            # An alarm is a state change: a drift (which lasts one step), or entering warning.
            if level is _DRIFT:
                if self._repeated(state, index, detector, fed):
                    state.shown[index] = _STABLE  # users see the alarms they got
                    continue
                alarms.append(self._alarm(state.watch.measure, detector.name, "drift",
                                          value, norm, ts))
                state.quiet_until[index] = self._events + self._window_size
                state.fed_at_alarm[index] = fed
            elif before is not _WARNING:
                alarms.append(self._alarm(state.watch.measure, detector.name, "warning",
                                          value, norm, ts))
            state.shown[index] = level

    def _repeated(self, state: WatchState, index: int, detector: Detector, fed: int) -> bool:
        """Whether a window watch's drift repeats the detector's previous alarm.

        A windowed measure shows a change for a whole window (the ramp while old events leave
        it), so drifts less than one window after the previous alarm are the same episode.
        And a detector that keeps its estimate after a cut (ADWIN, whose ``width`` is the
        number of inputs it still holds) cuts again while what it holds reaches back before
        its previous alarm, less that ramp: those cuts still separate the old concept from
        the new. Only alarms set these marks, so unalarmed drifts cannot extend them.
        """
        if self._events < state.quiet_until[index]:
            return True
        last = state.fed_at_alarm[index]
        width = getattr(detector, "width", None)
        if last < 0 or not isinstance(width, int):
            return False
        ramp = 0 if state.watch.measure == ERROR_STREAM else self._window_size // self._sample_every
        return width > fed - last + ramp

    def _block_alarm(self, measure: str, detector: str, level: Level, value: float,
                     ts: float | None, reference: float) -> Alarm:
        return self._alarm(measure, detector, level, value, math.nan, ts, reference)

    def _alarm(self, measure: str, detector: str, level: Level, value: float, norm: float,
               ts: float | None, reference: float = math.nan) -> Alarm:
        key = (measure, detector, level)
        self._alarm_counts[key] = self._alarm_counts.get(key, 0) + 1
        if ts is not None:
            self._last_alarm_time = ts
        return Alarm(self.model, measure, detector, level, value, norm,
                     self._window.positives, self._window.negatives, self._events, ts,
                     reference)

    def auc_standard_error(self) -> float:
        """DeLong's standard error of the window AUC, from the window's own scores (NaN with
        fewer than two events of a class). O(d log d)."""
        window = self._window
        if window.positives < 2 or window.negatives < 2:
            return math.nan
        positives, negatives = window.scores_by_class()
        _, s10, s01 = delong(positives, negatives)
        return math.sqrt(s10 / len(positives) + s01 / len(negatives))

    def snapshot(self, normalized: Collection[str] | None = None) -> Snapshot:
        """The current values, computed now from the window (O(P) per normalized measure,
        O(d log d) for the AUC's standard error).

        ``normalized``: the measures to normalize, None for every normalizable one. The
        normalizations are most of a snapshot's cost (Brzezinski et al. 2019, eq. 10: a
        count over the confusion matrices at P, N, up to about 100 µs each at d = 1 000), so
        a caller that shows only some of them (an export level) computes only those.
        """
        window = self._window
        positives, negatives = window.positives, window.negatives
        values = window.measures()
        normalized_values = {
            m.name: normalize(m.name, positives, negatives, values[m.name])
            for m in measure_registry.window_measures()
            if m.normalizable and (normalized is None or m.name in normalized)}
        thresholds = {s.watch.measure: s.threshold for s in self._sampled_watches
                      if s.watch.floor is not None}
        states = {
            (s.watch.measure, d.name): shown.name.lower()
            for s in self._watch_states()
            for d, shown in zip(s.detectors, s.shown, strict=True)
        }
        estimate = None if self._estimate is None else self._estimate.view()
        if estimate is not None:
            states[(CALIBRATION_DRIFT, "cusum")] = estimate.detector_state
        return Snapshot(self.model, self._events, positives, negatives, values,
                        normalized_values, thresholds, states, dict(self._alarm_counts),
                        self._last_event_time, self._last_alarm_time, self.auc_standard_error(),
                        None if self._blocks is None else self._blocks.budget(), estimate)

    def _watch_states(self) -> list[WatchState]:
        blocks = [] if self._blocks is None else self._blocks.states
        return [*self._error_watches, *self._sampled_watches, *blocks]

    def export_state(self) -> dict[str, Any]:
        """Everything needed to continue exactly where this monitor is, as plain data."""
        return {
            "version": STATE_VERSION,
            "model": self.model,
            "config": self.config.to_dict(),
            "window": self._window.export_state(compact=True),
            "events": self._events,
            "blocks": None if self._blocks is None else self._blocks.export_state(),
            "watches": [
                {
                    "measure": s.watch.measure,
                    "detectors": [d.export_state() for d in s.detectors],
                    "shown": [level.value for level in s.shown],
                    "quiet_until": s.quiet_until,
                    "fed": s.fed,
                    "fed_at_alarm": s.fed_at_alarm,
                    "below_floor": s.below_floor,
                    "threshold": s.threshold,
                    "standardizer": (None if s.standardizer is None
                                     else s.standardizer.export_state()),
                }
                for s in self._watch_states()
            ],
            "alarms": [[*key, count] for key, count in sorted(self._alarm_counts.items())],
            "last_event_time": self._last_event_time,
            "last_alarm_time": self._last_alarm_time,
            "estimate": None if self._estimate is None else self._estimate.export_state(),
        }

    @classmethod
    def restore(cls, state: Mapping[str, Any], config: MonitorConfig | None = None) -> Monitor:
        """Rebuild a monitor from :meth:`export_state`.

        With ``config`` different from the saved one (the settings changed between runs) the
        monitor takes the new configuration with fresh detectors, but keeps its events, its
        counters and as much of its window as the new size holds, so a restart is never blind
        for a whole window. A state of version 1 (saved before blocks watches existed) or 2
        (before the false-alarm budget) is restored the same way, with ``config`` or else
        its own configuration: its window and counters continue, its detectors and blocks
        watches start afresh (their inputs have changed meaning). Any other version is
        refused with a ``ValueError``.
        """
        version = state.get("version") if isinstance(state, Mapping) else None
        if version not in (1, 2, STATE_VERSION):
            raise ValueError(
                f"monitor state has format version {version!r}; this driftwatch reads "
                f"versions 1 to {STATE_VERSION}"
            )
        try:
            if config is not None and version == STATE_VERSION \
                    and state["config"] == config.saved_form():
                # Saved with this very configuration (the agent restoring its models):
                # nothing to parse, check and compare again, model after model.
                saved = config
            else:
                saved = MonitorConfig.from_dict(state["config"])
                if version != STATE_VERSION:
                    return cls._reconfigured(state, config or saved)
                if config is not None and config != saved:
                    return cls._reconfigured(state, config)
            monitor = cls(state["model"], saved)
            monitor._window = _window_from_state(state["window"])
            monitor._events = int(state["events"])
            if monitor._blocks is not None:
                monitor._blocks.restore(state["blocks"])
            live = monitor._watch_states()
            saved_watches = state["watches"]
            if len(saved_watches) != len(live):
                raise ValueError("watches do not match the configuration")
            for live_state, saved_state in zip(live, saved_watches, strict=True):
                if saved_state["measure"] != live_state.watch.measure:
                    raise ValueError("watches do not match the configuration")
                live_state.detectors = [
                    type(d).from_state(s)
                    for d, s in zip(live_state.detectors, saved_state["detectors"], strict=True)
                ]
                live_state.shown = [DetectorState(v) for v in saved_state["shown"]]
                live_state.quiet_until = [int(q) for q in saved_state["quiet_until"]]
                live_state.fed = int(saved_state["fed"])
                live_state.fed_at_alarm = [int(f) for f in saved_state["fed_at_alarm"]]
                live_state.below_floor = bool(saved_state["below_floor"])
                live_state.threshold = float(saved_state["threshold"])
                if live_state.standardizer is not None:
                    live_state.standardizer.restore(saved_state["standardizer"])
            monitor._alarm_counts = {
                (m, d, lvl): int(c) for m, d, lvl, c in state["alarms"]
            }
            monitor._last_event_time = state["last_event_time"]
            monitor._last_alarm_time = state["last_alarm_time"]
            if monitor._estimate is not None and state.get("estimate") is not None:
                monitor._estimate.restore(state["estimate"])
        except (KeyError, TypeError) as error:
            raise ValueError(f"monitor state is malformed: {error!r}") from error
        return monitor

    @classmethod
    def _reconfigured(cls, state: Mapping[str, Any], config: MonitorConfig) -> Monitor:
        monitor = cls(state["model"], config)
        saved_window = _window_from_state(state["window"])
        for y_true, y_score, y_pred in saved_window.export_state()["events"]:
            monitor._window.update(y_true, y_score, y_pred)
        monitor._events = int(state["events"])
        monitor._alarm_counts = {(m, d, lvl): int(c) for m, d, lvl, c in state["alarms"]}
        monitor._last_event_time = state["last_event_time"]
        monitor._last_alarm_time = state["last_alarm_time"]
        return monitor


def _new_window(config: MonitorConfig) -> PrequentialWindow:
    if config.adaptive_window:
        return AdaptiveWindow(config.window_size, config.threshold)
    return PrequentialWindow(config.window_size, config.threshold)


def _window_from_state(state: Mapping[str, Any]) -> PrequentialWindow:
    """A saved window of either kind (an adaptive one carries its ADWIN)."""
    if isinstance(state, Mapping) and "adwin" in state:
        return AdaptiveWindow.from_state(state)
    return PrequentialWindow.from_state(state)

