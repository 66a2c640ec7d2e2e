"""What a monitor reports: :class:`Alarm` values as they happen, :class:`Snapshot` s on demand.

Both are frozen plain data, so the agent can log, count and export them, and read a snapshot
from another thread, without touching the monitor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from driftwatch.core.equality import nan_equal

if TYPE_CHECKING:
    from driftwatch.core.estimation.watch import EstimateView

Level = Literal["warning", "drift", "threshold"]


@nan_equal
@dataclass(frozen=True, slots=True, eq=False)
class Alarm:
    """A detector or threshold that changed state: what the agent logs, counts and exports.

    Equal to another alarm when every field is, NaN matching NaN, on every Python
    (:func:`~driftwatch.core.equality.nan_equal`).

    For a blocks watch, ``value`` is the measure over the block that raised the alarm (its
    AUC, or its false-negative or false-positive rate) and ``reference`` the level it was
    tested against (the blocks since the previous alarm); elsewhere ``reference`` is NaN.
    """

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
    reference: float = math.nan  # blocks watch: the pre-change level tested against


@nan_equal  # NaN fields compare equal on every Python (driftwatch.core.equality)
@dataclass(frozen=True, slots=True, eq=False)
class BudgetView:
    """What a model's false-alarm budget implies at its current traffic
    (:mod:`driftwatch.core.budget`).

    Attributes:
        days_per_false_alarm: the budget (the setting): one false alarm per this many days.
        record_time: whether the model's events carry a time (False: blocks close on
            information only, and the budget holds per block, not in time).
        block_seconds: record time the latest closed block spanned (NaN: none yet, or
            unknown).
        expected_false_alarms: false alarms to expect in 30 days on the blocks watches'
            CUSUMs if blocks kept the latest one's length, at the tolerance of their zone
            (NaN while unknown).
        min_effects: the minimum effect of each blocks watch's indifference zone, by
            measure (:mod:`driftwatch.core.zone`).
    """

    days_per_false_alarm: float
    record_time: bool
    block_seconds: float = math.nan
    expected_false_alarms: float = math.nan
    min_effects: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """An immutable picture of one monitor, safe to read from another thread."""

    model: str
    events: int
    positives: int
    negatives: int
    values: Mapping[str, float]  # every window measure of the registry, raw
    normalized: Mapping[str, float]  # every normalizable one
    thresholds: Mapping[str, float]  # raw thresholds of the watched floors
    detector_states: Mapping[tuple[str, str], str]  # (measure, detector) → stable/warning/drift
    alarms: Mapping[tuple[str, str, str], int]  # (measure, detector, level) → count
    last_event_time: float | None
    last_alarm_time: float | None
    auc_standard_error: float = math.nan  # DeLong's, of the window AUC (NaN if undefined)
    budget: BudgetView | None = None  # None: the monitor has no blocks watch
    estimate: EstimateView | None = None  # None: the monitor does not estimate
