"""The measures of one model over a replay, recorded at every sample, for the figure.

Why at every sample: the monitor's detectors see the measures once every ``sample_every``
events once its window is full (:attr:`~driftwatch.core.monitor.Monitor.sampled`), so the
figure shows exactly the values the alarms were raised on, and recording costs nothing on
the other events. What a sample costs: one O(1) window read per measure, one
O(min(P, N)) normalization per normalizable measure, and the raw thresholds of the watched
floors, which the monitor has just computed for the same class counts (the cached
:func:`~driftwatch.core.normalization.threshold` answers them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from driftwatch.core.measures import registry as measure_registry
from driftwatch.core.monitor import (
    ERROR_STREAM,
    Monitor,
    MonitorConfig,
)
from driftwatch.core.normalization import normalize, threshold


def check_measures(names: Iterable[str]) -> tuple[str, ...]:
    """The names, without duplicates, each checked against the monitor's measures;
    ``ValueError`` naming an unknown one."""
    result: list[str] = []
    for name in names:
        spec = measure_registry.find(name)
        if spec is None or spec.kind != "window":
            names = ", ".join(m.name for m in measure_registry.window_measures())
            raise ValueError(f"unknown measure {name!r}; measures: {names}")
        if name not in result:
            result.append(name)
    return tuple(result)


def default_measures(config: MonitorConfig) -> tuple[str, ...]:
    """What to plot when nobody says: AUC, then every window measure the monitor watches
    (with detectors or a floor), so the figure shows what the alarms are about; a blocks
    watch of a per-class error rate shows as its window counterpart (false-negative rate:
    recall; false-positive rate: specificity)."""
    watched = [measure_registry.get(w.measure).counterpart or w.measure for w in config.watches
               if w.measure not in ("auc", ERROR_STREAM) and (w.detectors or w.floor is not None)]
    return check_measures(["auc", *watched])


@dataclass(slots=True)
class Series:
    """One model's measures at each sample (every ``sample_every`` of its events).

    Attributes:
        events: the model's event count at each sample (the x axis by default).
        times: the event time of the sampled event (seconds since the epoch; NaN when the
            record had none): the x axis when the figure is drawn over time.
        positive_share: P / (P + N) in the window at each sample (NaN while empty).
        raw: measure → raw values.
        normalized: measure → class-ratio-normalized values (measures of Brzezinski et al. 2019
        only). thresholds: measure → the raw threshold of its watched floor (floored measures only).
        floors: measure → its floor on the normalized scale.
        estimated_auc: the AUC estimated from the scores of the latest window of
            predictions (NaN while not calibrated); empty when the monitor does not
            estimate.
    """

    model: str
    window_size: int
    sample_every: int
    measures: tuple[str, ...]
    floors: dict[str, float]
    events: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    positive_share: list[float] = field(default_factory=list)
    raw: dict[str, list[float]] = field(default_factory=dict)
    normalized: dict[str, list[float]] = field(default_factory=dict)
    thresholds: dict[str, list[float]] = field(default_factory=dict)
    estimated_auc: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        for name in self.measures:
            self.raw[name] = []
            if measure_registry.get(name).normalizable:
                self.normalized[name] = []
            if name in self.floors:
                self.thresholds[name] = []


class SeriesRecorder:
    """Records a :class:`Series` from a monitor; call :meth:`sample` after each update that
    sampled (:attr:`~driftwatch.core.monitor.Monitor.sampled`; the replay does), with the
    event's time."""

    __slots__ = ("series",)

    def __init__(self, model: str, config: MonitorConfig, measures: tuple[str, ...]) -> None:
        floors = {w.measure: w.floor for w in config.watches
                  if w.floor is not None and w.measure in measures}
        self.series = Series(model, config.window_size, config.sample_every, measures, floors)

    def sample(self, monitor: Monitor, ts: float | None = None) -> None:
        series = self.series
        window = monitor.window
        positives, negatives = window.positives, window.negatives
        total = positives + negatives
        series.events.append(monitor.events)
        series.times.append(math.nan if ts is None else ts)
        series.positive_share.append(positives / total if total else math.nan)
        for name in series.measures:
            value = window.measure(name)
            series.raw[name].append(value)
            if name in series.normalized:
                series.normalized[name].append(normalize(name, positives, negatives, value))
            floor = series.floors.get(name)
            if floor is not None:
                series.thresholds[name].append(threshold(name, positives, negatives, floor))
        if monitor.estimate is not None:
            series.estimated_auc.append(monitor.estimate.auc)
