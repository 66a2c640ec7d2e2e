"""The live part of one watch: its detectors, what users are shown of them, and its position.

Shared by the monitor's window watches (:mod:`driftwatch.core.monitor`) and its blocks
watches (:mod:`driftwatch.core.block_watches`), so that a monitor exports and restores every
watch alike.
"""

from __future__ import annotations

import math

from driftwatch.core.block_rates import RateStandardizer
from driftwatch.core.blocks import AUCStandardizer
from driftwatch.core.detectors.base import Detector, DetectorState
from driftwatch.core.monitor_config import MonitorConfig, Watch, build_detectors

STABLE = DetectorState.STABLE


class WatchState:
    """The live part of one watch: its detectors, what the users are shown of them, and
    whether it is below its floor (window watches) or its reference and zone (blocks
    watches).

    A blocks watch's CUSUM whose parameters name no ``arl`` takes its run length from the
    model's false-alarm budget (:attr:`budgeted`); one that names it keeps that run length
    per block (:mod:`driftwatch.core.budget`).
    """

    __slots__ = ("below_floor", "budgeted", "detectors", "effect", "fed", "fed_at_alarm",
                 "quiet_until", "shown", "standardizer", "threshold", "watch")

    def __init__(self, watch: Watch, config: MonitorConfig) -> None:
        self.watch = watch
        self.detectors: list[Detector] = build_detectors(watch)
        # The state exported as driftwatch_detector_state: a detector's own, except that a
        # drift the episode rule did not turn into an alarm is shown as stable.
        self.shown = [STABLE] * len(self.detectors)
        self.quiet_until = [0] * len(self.detectors)  # event count before which drifts repeat
        self.fed = 0  # inputs given to the detectors so far
        self.fed_at_alarm = [-1] * len(self.detectors)  # ``fed`` at each one's last alarm
        self.below_floor = False
        self.threshold = math.nan
        self.standardizer: AUCStandardizer | RateStandardizer | None = None
        self.effect = 0.0  # the minimum effect of a blocks watch's zone
        self.budgeted = [False] * len(self.detectors)
        if watch.feed == "blocks":
            self.standardizer = (AUCStandardizer(config.block_warmup) if watch.measure == "auc"
                                 else RateStandardizer(config.block_warmup))
            self.effect = config.min_effect(watch.measure)
            self.budgeted = [spec.name == "cusum" and "arl" not in spec.params
                             for spec in watch.detectors]
