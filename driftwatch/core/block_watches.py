"""A monitor's blocks watches: the block collector, and what each closed block does to them.

The monitor (:mod:`driftwatch.core.monitor`) gives every event to :class:`BlockWatches`; at
each closed block every blocks watch scores it against its self-starting reference
(:mod:`driftwatch.core.blocks`), its CUSUMs weigh the evidence against the watch's
indifference zone (:mod:`driftwatch.core.zone`) with the run length the model's false-alarm
budget gives a block of that record time (:mod:`driftwatch.core.budget`), and other detectors
(Page-Hinkley, ADWIN on z-scores) get the block's plain z-score. After an alarm the watch
re-learns its reference from post-change blocks.

What the budget implies at the current traffic (:meth:`BlockWatches.budget`) is part of the
monitor's snapshot: the record time of the latest block and the false alarms to expect per
30 days if blocks kept that length.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from driftwatch.core.block_rates import RateScore
from driftwatch.core.blocks import AUCScore, AUCStandardizer, Block, BlockCollector
from driftwatch.core.budget import block_arl, counted_seconds, expected_false_alarms
from driftwatch.core.detectors.base import DetectorState
from driftwatch.core.detectors.cusum import Cusum
from driftwatch.core.monitor_config import FALSE_NEGATIVE_RATE, MonitorConfig
from driftwatch.core.report import Alarm, BudgetView, Level
from driftwatch.core.watch_state import WatchState

_STABLE, _WARNING, _DRIFT = DetectorState.STABLE, DetectorState.WARNING, DetectorState.DRIFT

RaiseAlarm = Callable[[str, str, Level, float, float | None, float], Alarm]
"""The monitor's alarm factory: (measure, detector, level, value, ts, reference) → Alarm."""


class BlockWatches:
    """The blocks watches of one monitor, their collector and their budget.

    Cost: per event the collector's (:meth:`BlockCollector.add`); per closed block one
    score per watch and one CUSUM step per side, the thresholds cached.
    """

    __slots__ = ("_budgeted", "_days", "_last_seconds", "collector", "states")

    def __init__(self, states: list[WatchState], config: MonitorConfig) -> None:
        self.states = states
        self.collector = BlockCollector(config.block_min_class, config.block_seconds)
        self._days = config.days_per_false_alarm
        self._budgeted = sum(sum(s.budgeted) for s in states)
        self._last_seconds: float | None = None  # the latest closed block's span

    def close(self, block: Block, ts: float | None, alarm: RaiseAlarm) -> list[Alarm]:
        """Give a closed block to every blocks watch; return the alarms it raised."""
        alarms: list[Alarm] = []
        self._last_seconds = block.seconds
        seconds = counted_seconds(block.seconds, self.collector.seconds)
        budget = block_arl(self._days, self._budgeted, seconds) if self._budgeted else math.nan
        for state in self.states:
            standardizer = state.standardizer
            if standardizer is None:  # not a blocks watch: cannot happen
                continue
            reference = standardizer.reference
            scored: AUCScore | RateScore | None
            if isinstance(standardizer, AUCStandardizer):
                value = block.auc
                scored = standardizer.score(block)
                standardizer.add(block)
            else:
                if state.watch.measure == FALSE_NEGATIVE_RATE:
                    errors, trials = block.false_negatives, block.positives
                else:
                    errors, trials = block.false_positives, block.negatives
                value = errors / trials
                scored = standardizer.score(errors, trials)
                standardizer.add(errors, trials)
            if scored is None:  # still building the reference
                continue
            measure = state.watch.measure
            drifted = False
            for index, name, level, before in self._feed(state, scored, budget):
                state.shown[index] = level
                if level is _DRIFT:
                    drifted = True
                    alarms.append(alarm(measure, name, "drift", value, ts, reference))
                elif level is _WARNING and before is not _WARNING:
                    alarms.append(alarm(measure, name, "warning", value, ts, reference))
            if drifted:
                # A new episode: re-learn the level from post-change blocks, and restart
                # the detectors that did not alarm (the one that did restarts itself at its
                # next input, and shows drift until then).
                standardizer.reset()
                for index, detector in enumerate(state.detectors):
                    if detector.state is not _DRIFT:
                        detector.reset()
                        state.shown[index] = _STABLE
        return alarms

    @staticmethod
    def _feed(state: WatchState, scored: AUCScore | RateScore, budget: float
              ) -> list[tuple[int, str, DetectorState, DetectorState]]:
        """One block to the watch's detectors: CUSUMs get its evidence against the zone
        and their run length (the budget's, or their own ``arl``), others its z-score.
        Returns (index, name, state, state before) per detector."""
        effect = state.effect
        sides: dict[int, tuple[float, float]] = {}

        def evidence(side: int) -> tuple[float, float]:
            found = sides.get(side)
            if found is None:
                found = sides[side] = scored.evidence(side, effect)
            return found

        z: float | None = None
        results = []
        for index, detector in enumerate(state.detectors):
            before = detector.state
            if isinstance(detector, Cusum):
                arl = budget if state.budgeted[index] else detector.arl
                level = detector.update_block(evidence, arl)
            else:
                if z is None:
                    z = scored.z()
                level = detector.update_valid(z)
            results.append((index, detector.name, level, before))
        return results

    def budget(self) -> BudgetView:
        """What the budget implies at the current traffic (see :class:`BudgetView`)."""
        record_time = self.collector.now is not None
        effects = {s.watch.measure: s.effect for s in self.states
                   if any(isinstance(d, Cusum) for d in s.detectors)}
        view = BudgetView(self._days, record_time, min_effects=effects)
        last = self._last_seconds
        if last is None or not record_time:
            return view
        seconds = counted_seconds(last, self.collector.seconds)
        arls = []
        for state in self.states:
            for detector, budgeted in zip(state.detectors, state.budgeted, strict=True):
                if isinstance(detector, Cusum):
                    arls.append(block_arl(self._days, self._budgeted, seconds) if budgeted
                                else detector.arl)
        expected = expected_false_alarms(arls, seconds) if arls else math.nan
        return BudgetView(self._days, record_time, last, expected, effects)

    def export_state(self) -> dict[str, Any]:
        state = self.collector.export_state()
        state["last_seconds"] = self._last_seconds
        return state

    def restore(self, state: dict[str, Any]) -> None:
        self.collector.restore(state)
        last = state.get("last_seconds")
        self._last_seconds = None if last is None else float(last)
