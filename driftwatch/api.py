"""The embeddable Python API: one model's monitor, in River's spelling.

:class:`ModelMonitor` is what the agent runs for each model, for a model server, a batch job
or a notebook: ``update(y_true, y_score)`` once a label is known, and the result says whether
drift was detected (River's ``drift_detected``) along with the alarms themselves. The measures
are properties (``auc``, ``gmean``, ``kappa`` ...), with their class-ratio-normalized values
(Brzezinski et al. 2019, eq. 10), the raw thresholds that the normalized floors mean at the window's
class ratio, and the window's class counts.

It is a thin wrapper around the pure core :class:`~driftwatch.core.monitor.Monitor`, built
from the same options as the settings file's ``monitoring.defaults`` section (validated by the
same rules, with the same defaults), so it raises exactly the alarms the agent raises for the
same events. The names documented here are the stable API (``docs/api.md``); the core's
classes may change shape underneath.

Example:
    >>> from driftwatch import ModelMonitor
    >>> monitor = ModelMonitor(window_size=4, sample_every=1, watches=[])
    >>> for y_true, y_score in [(1, 0.9), (0, 0.3), (1, 0.6), (0, 0.7)]:
    ...     result = monitor.update(y_true, y_score)
    >>> monitor.auc, monitor.accuracy, monitor.positives, monitor.negatives
    (0.75, 0.75, 2, 2)
    >>> result.drift_detected, result.alarms
    (False, ())
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driftwatch.core.estimation.expected import Estimate
from driftwatch.core.events import Event
from driftwatch.core.monitor import Alarm, Monitor, MonitorConfig, Watch

__all__ = ["Alarm", "Estimate", "ModelMonitor", "UpdateResult"]

DEFAULT_MODEL = "default"
"""The model id of a monitor built without one (the agent's ``events.model_constant``)."""


@dataclass(frozen=True, slots=True)
class UpdateResult:
    """What one :meth:`ModelMonitor.update` found.

    Attributes:
        alarms: the alarms the event raised, usually none. Each is a
            :class:`~driftwatch.core.monitor.Alarm`: ``measure``, ``detector`` (a detector
            name, or ``"threshold"`` for a floor), ``level`` (``"drift"``, ``"warning"`` or
            ``"threshold"``), the raw ``value`` and its ``normalized`` value, the window's
            ``positives`` and ``negatives``, ``event_count`` and ``event_time``.
    """

    alarms: tuple[Alarm, ...] = ()

    @property
    def drift_detected(self) -> bool:
        """A detector signalled drift on this event (River's ``drift_detected``)."""
        return any(alarm.level == "drift" for alarm in self.alarms)

    @property
    def warning_detected(self) -> bool:
        """A detector entered its warning zone on this event."""
        return any(alarm.level == "warning" for alarm in self.alarms)

    @property
    def below_floor(self) -> bool:
        """A watched measure fell below its floor on this event."""
        return any(alarm.level == "threshold" for alarm in self.alarms)


_QUIET = UpdateResult()  # the result of nearly every update: shared, it costs nothing


def _watch_mapping(watch: Watch | Mapping[str, Any]) -> Mapping[str, Any]:
    """A watch in the settings' form (the form the settings file writes it in)."""
    if isinstance(watch, Mapping):
        return watch
    if isinstance(watch, Watch):
        return {
            "measure": watch.measure,
            "detectors": [{"name": d.name, "params": dict(d.params)} for d in watch.detectors],
            "normalized": watch.normalized,
            "direction": watch.direction,
            "floor": watch.floor,
        }
    raise TypeError(f"watches: expected a mapping or a Watch, got {type(watch).__name__}")


def monitor_config(window_size: int | None = None, sample_every: int | None = None,
                   threshold: float | None = None,
                   watches: Sequence[Watch | Mapping[str, Any]] | None = None,
                   block_min_class: int | None = None,
                   block_warmup: int | None = None,
                   adaptive_window: bool | None = None,
                   block_seconds: float | None = None,
                   days_per_false_alarm: float | None = None,
                   min_effect_auc: float | None = None,
                   min_effect_rate: float | None = None,
                   estimation: Mapping[str, Any] | None = None) -> MonitorConfig:
    """The core configuration for these options, validated exactly as the settings file's
    ``monitoring.defaults`` section is; omitted options take the agent's defaults.

    Raises:
        ValueError: one line per problem, each naming its key (``watches.0.detectors.0.params.
            delta: ...``).
    """
    from pydantic import ValidationError

    from driftwatch.settings import MonitorDefaults

    options: dict[str, Any] = {"window_size": window_size, "sample_every": sample_every,
                               "threshold": threshold, "block_min_class": block_min_class,
                               "block_warmup": block_warmup, "adaptive_window": adaptive_window,
                               "block_seconds": block_seconds,
                               "days_per_false_alarm": days_per_false_alarm,
                               "min_effect_auc": min_effect_auc,
                               "min_effect_rate": min_effect_rate,
                               "estimation": estimation}
    options = {key: value for key, value in options.items() if value is not None}
    if watches is not None:
        if isinstance(watches, str | bytes | Mapping) or not isinstance(watches, Sequence):
            raise TypeError("watches: expected a list of watches")
        options["watches"] = [_watch_mapping(w) for w in watches]
    try:
        defaults = MonitorDefaults.model_validate(options)
    except ValidationError as error:
        lines = [f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}"
                 for e in error.errors(include_url=False)]
        raise ValueError("invalid monitor options:\n  " + "\n  ".join(lines)) from None
    try:
        estimated = defaults.estimation.config()
    except ValueError as error:
        raise ValueError(f"invalid monitor options:\n  estimation.{error}") from None
    # MonitorDefaults built this once already (the core's rules, at their keys).
    return MonitorConfig(
        window_size=defaults.window_size,
        sample_every=defaults.sample_every,
        threshold=defaults.threshold,
        watches=tuple(w.watch() for w in defaults.watches),
        block_min_class=defaults.block_min_class,
        block_warmup=defaults.block_warmup,
        adaptive_window=defaults.adaptive_window,
        block_seconds=defaults.block_seconds,
        days_per_false_alarm=defaults.days_per_false_alarm,
        min_effect_auc=defaults.min_effect_auc,
        min_effect_rate=defaults.min_effect_rate,
        estimation=estimated,
    )


class ModelMonitor:
    """One model's prequential measures and drift detectors: the agent's monitor, embedded.

    Parameters (all optional, the settings file's ``monitoring.defaults`` keys; omitted ones
    take the agent's defaults):
        window_size: d, the events in the sliding window of AUC and the crisp measures.
        sample_every: the watched windowed measures reach their detectors every this many
            events, once the window is full.
        threshold: an event given without ``y_pred`` is predicted positive when
            ``y_score >= threshold``.
        watches: the measures to watch, as in the settings file (mappings such as
            ``{"measure": "auc", "detectors": [{"name": "adwin", "params": {"delta":
            0.002}}]}``) or as core :class:`~driftwatch.core.monitor.Watch` values; ``[]``
            watches nothing (measures only).
        block_min_class: a block (the input of ``feed: blocks`` watches, the defaults)
            closes once it holds this many positives and this many negatives.
        block_warmup: blocks that only build a blocks watch's reference, after the start
            and after each of its alarms.
        adaptive_window: ADWIN chooses the window's length from the per-event error, up to
            ``window_size`` (Bifet et al. 2015, §6); ``positives + negatives`` is its current
            length.
        block_seconds: a block also spans at least this much record time (``ts``; 0: on
            information only).
        days_per_false_alarm: the false-alarm budget of the blocks watches' CUSUMs, in days
            of record time per false alarm (``docs/detection.md``).
        min_effect_auc, min_effect_rate: the smallest sustained AUC drop and per-class
            error-rate rise worth an alarm (the indifference zone).
        estimation: estimated performance before labels arrive, as the settings file's
            ``estimation`` section (``{"enabled": True, "calibration": "assume"}``; a
            ``reference_file`` is read with the default event fields ``label`` and
            ``score``): :attr:`estimated`, :attr:`estimate_trusted`, :meth:`predict`.
        model: the model id carried in the alarms.

    Not thread-safe: a read brings the window up to date with the events queued since the
    previous read, so it changes the monitor; callers in several threads hold one lock
    around updates and reads.

    Raises:
        ValueError: an invalid option, naming its key.
    """

    __slots__ = ("_last", "_monitor")

    def __init__(self, *, window_size: int | None = None, sample_every: int | None = None,
                 threshold: float | None = None,
                 watches: Sequence[Watch | Mapping[str, Any]] | None = None,
                 model: str = DEFAULT_MODEL, block_min_class: int | None = None,
                 block_warmup: int | None = None,
                 adaptive_window: bool | None = None, block_seconds: float | None = None,
                 days_per_false_alarm: float | None = None,
                 min_effect_auc: float | None = None,
                 min_effect_rate: float | None = None,
                 estimation: Mapping[str, Any] | None = None) -> None:
        config = monitor_config(window_size, sample_every, threshold, watches,
                                block_min_class, block_warmup, adaptive_window, block_seconds,
                                days_per_false_alarm, min_effect_auc, min_effect_rate,
                                estimation)
        self._monitor = Monitor(model, config)
        self._last = _QUIET

    @classmethod
    def _wrap(cls, monitor: Monitor) -> ModelMonitor:
        wrapper = cls.__new__(cls)
        wrapper._monitor = monitor
        wrapper._last = _QUIET
        return wrapper

    # -- the stream ---------------------------------------------------------------------

    def update(self, y_true: int | bool, y_score: float, y_pred: int | bool | None = None,
               ts: float | None = None) -> UpdateResult:
        """Take one labelled, scored event.

        Parameters:
            y_true: the true class, 0/1 (or False/True).
            y_score: the model's score, any finite number (higher means more positive).
            y_pred: the model's crisp prediction, 0/1; None derives it as
                ``y_score >= threshold``.
            ts: the event's time in seconds since the epoch, carried into the alarms.

        Returns:
            the alarms this event raised, with ``drift_detected``.

        Raises:
            ValueError: an invalid argument, naming it; the monitor is unchanged.
        """
        alarms = self._monitor.update(Event(y_true, y_score, y_pred, ts))
        self._last = UpdateResult(tuple(alarms)) if alarms else _QUIET
        return self._last

    def predict(self, y_score: float, y_pred: int | bool | None = None) -> None:
        """A prediction whose label comes later, as it is made (with ``estimation`` on): it
        enters the estimate at once, and :meth:`update` with its label, later, checks the
        estimate against it. Once this is called, every :meth:`update` is taken as the
        label of a prediction given here (so each enters the estimate once). Without
        ``estimation`` it does nothing.

        Raises:
            ValueError: an invalid argument, naming it; the monitor is unchanged.
        """
        event = Event(0, y_score, y_pred)  # the checks of a scored event, label aside
        if self._monitor.estimate is not None:
            self._monitor.estimate.predict(event.y_score, event.y_pred)

    @property
    def estimated(self) -> dict[str, Estimate]:
        """The estimated ``auc``, ``false_negative_rate`` and ``false_positive_rate`` over
        the window's predictions, each with its ``value``, ``standard_error`` and ``bias``
        (docs/estimation.md); empty without ``estimation``, NaN values while no calibration
        is in place. O(d log d) per read."""
        estimate = self._monitor.estimate
        return {} if estimate is None else dict(estimate.view().estimates)

    @property
    def estimate_trusted(self) -> bool:
        """Whether the estimate has a calibration the self-check has not rejected (False
        without ``estimation``, while fitting, and from a ``calibration_drift`` alarm until
        the refit on the next ``first_n`` labels)."""
        estimate = self._monitor.estimate
        return estimate is not None and estimate.trusted

    @property
    def drift_detected(self) -> bool:
        """Whether the latest update detected drift (River's ``drift_detected``)."""
        return self._last.drift_detected

    @property
    def n_events(self) -> int:
        """Events taken so far."""
        return self._monitor.events

    @property
    def model(self) -> str:
        return self._monitor.model

    @property
    def config(self) -> MonitorConfig:
        """The resolved configuration (defaults filled in)."""
        return self._monitor.config

    # -- the window ---------------------------------------------------------------------

    @property
    def positives(self) -> int:
        """P, the events labelled 1 in the window."""
        return self._monitor.window.positives

    @property
    def negatives(self) -> int:
        """N, the events labelled 0 in the window."""
        return self._monitor.window.negatives

    @property
    def measures(self) -> dict[str, float]:
        """Every measure over the window, raw: ``auc`` then the crisp ones (NaN when
        undefined, e.g. AUC before both classes are in the window)."""
        return self._monitor.window.measures()

    @property
    def normalized(self) -> dict[str, float]:
        """The class-ratio-normalized value of every measure that has one (Brzezinski et al. 2019,
        eq. 10: the share of all confusion matrices at the window's P:N that the measure beats)."""
        return dict(self._monitor.snapshot().normalized)

    @property
    def thresholds(self) -> dict[str, float]:
        """Per watched floor, the raw threshold it meant at the latest sample's class ratio
        (NaN before the first sample)."""
        return dict(self._monitor.snapshot().thresholds)

    @property
    def detector_states(self) -> dict[tuple[str, str], str]:
        """(measure, detector) → ``stable``, ``warning`` or ``drift``."""
        return dict(self._monitor.snapshot().detector_states)

    @property
    def alarm_counts(self) -> dict[tuple[str, str, str], int]:
        """(measure, detector, level) → alarms raised so far."""
        return dict(self._monitor.snapshot().alarms)

    def _measure(self, name: str) -> float:
        return self._monitor.window.measure(name)

    @property
    def auc(self) -> float:
        """Prequential AUC over the window, exact with ties counted half."""
        return self._measure("auc")

    @property
    def accuracy(self) -> float:
        return self._measure("accuracy")

    @property
    def error(self) -> float:
        return self._measure("error")

    @property
    def precision(self) -> float:
        return self._measure("precision")

    @property
    def recall(self) -> float:
        return self._measure("recall")

    @property
    def specificity(self) -> float:
        return self._measure("specificity")

    @property
    def balanced_accuracy(self) -> float:
        return self._measure("balanced_accuracy")

    @property
    def gmean(self) -> float:
        return self._measure("gmean")

    @property
    def harmonic_mean(self) -> float:
        return self._measure("harmonic_mean")

    @property
    def f1(self) -> float:
        return self._measure("f1")

    @property
    def kappa(self) -> float:
        """Cohen's κ against a chance classifier with the same marginals (Bifet et al. 2015, §5)."""
        return self._measure("kappa")

    @property
    def mcc(self) -> float:
        return self._measure("mcc")

    @property
    def kappa_m(self) -> float:
        """κm: against the majority-class classifier (Bifet et al. 2015, §5)."""
        return self._measure("kappa_m")

    @property
    def kappa_per(self) -> float:
        """κper: against the persistent classifier, which repeats the previous label
        (Bifet et al. 2015, §5.4.1)."""
        return self._measure("kappa_per")

    # -- persistence --------------------------------------------------------------------

    def export_state(self) -> dict[str, Any]:
        """Everything needed to continue exactly here, as JSON-serializable plain data (the
        agent's checkpoint format for one model)."""
        return self._monitor.export_state()

    @classmethod
    def restore(cls, state: Mapping[str, Any]) -> ModelMonitor:
        """A monitor that continues exactly where :meth:`export_state` left off.

        Raises:
            ValueError: the state is malformed or of another format version.
        """
        return cls._wrap(Monitor.restore(state))

    def __repr__(self) -> str:
        auc = self.auc
        shown = "nan" if math.isnan(auc) else f"{auc:.3f}"
        return (f"ModelMonitor(model={self.model!r}, window_size={self.config.window_size}): "
                f"{self.n_events} events, P={self.positives}, N={self.negatives}, AUC={shown}")
