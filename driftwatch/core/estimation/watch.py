"""A monitor's estimated performance: the estimator, its calibration-drift CUSUM and whether
the estimate can be trusted.

:class:`EstimateWatch` is what a :class:`~driftwatch.core.monitor.Monitor` owns when its
configuration has an :class:`~driftwatch.core.estimation.config.EstimationConfig`. Each
prediction goes to the :class:`~driftwatch.core.estimation.estimator.PerformanceEstimator`'s
window as it is made (:meth:`EstimateWatch.predict`); each label, when it joins, to its
self-check (:meth:`EstimateWatch.label`), whose blocks also span the monitor's
``block_seconds`` of record time. Every closed check block gives the AUC's z-score
(realized minus estimated, standardized: :mod:`~driftwatch.core.estimation.self_check`),
and a two-sided CUSUM (k = 0.5, in-control run length ``check_arl`` blocks, the threshold
derived from it as for every CUSUM of driftwatch) watches those z-scores: a concept change
the scores do not show (P(label | score) moved) lowers the realized AUC below the estimate
block after block, and the CUSUM raises a ``calibration_drift`` alarm.

**Trust.** The estimate is *trusted* while a calibration is in place that the self-check has
not rejected. From a calibration-drift alarm on it is not: the watch **refits** an isotonic
calibration on the next ``first_n`` labelled predictions (whatever the calibration was:
assumed, fitted on the first events or on a reference, each has just been shown wrong),
keeps showing the old estimate meanwhile, marked untrusted, and then re-weighs its window
with the refit, restarts the self-check and trusts the estimate again. A restart restores
all of it from the monitor's checkpoint (the refit in progress included).

**Fitted calibrations are checked for change, not for being right.** A fit on N labels is off
by its own sampling error, the same for every later block: its z-scores are N(δ, 1) for an
unknown δ, and a CUSUM on them alarms too often (``benchmarks/results.md``, estimate C). For
fitted calibrations (``first_n``, ``reference`` and every refit) the CUSUM therefore watches
the self-starting residuals (:class:`~driftwatch.core.estimation.self_check.SelfStarting`,
Hawkins 1987) of the z-scores, after five blocks; an assumed calibration is checked for
being right, on the z-scores themselves.

**Whole events are queued while they cannot close a check block** (:meth:`EstimateWatch.event`):
the next few after a block opens (its expected counts cannot reach ``min_expected`` sooner)
and, once the counts are met, those within ``block_seconds`` of the block's first time. The
queue is entered in bulk before the next event that might close a block and before every
read, so blocks close, and alarms are raised, at the same events as entering each event at
once; the agent's records per CPU-second with the estimate on went from 0.53 to 0.75–0.78 of
off (``benchmarks/results.md``, estimate_cost).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from driftwatch.core.detectors.base import DetectorState
from driftwatch.core.detectors.cusum import Cusum
from driftwatch.core.estimation.calibration import (
    Calibration,
    IdentityCalibration,
    IsotonicCalibration,
    calibration_from_state,
)
from driftwatch.core.estimation.config import EstimationConfig
from driftwatch.core.estimation.estimator import PerformanceEstimator
from driftwatch.core.estimation.expected import Estimate
from driftwatch.core.estimation.reliability import CalibrationReport, calibration_report
from driftwatch.core.estimation.self_check import CheckBlock, SelfStarting
from driftwatch.core.events import check_label, check_score
from driftwatch.core.monitor_config import MonitorConfig
from driftwatch.core.state import check_state

CALIBRATION_DRIFT = "calibration_drift"
"""The ``measure`` of a calibration-drift alarm (its detector is ``cusum``)."""

CHECKED = ("auc",)
"""What the self-check scores per block: the AUC, whose z-score the CUSUM watches."""

BULK_MIN = 64
"""Fewer queued events than this are entered one call each (numpy's overhead is larger)."""

CHECK_K = 0.5
"""The CUSUM's allowance: shifts of about one standard deviation of a block's z-score."""

STATE_VERSION = 1
_STATE_KEYS = frozenset({"version", "estimator", "detector", "starting", "refitted",
                         "refitting", "predictions", "blocks", "refits", "last_z", "apart",
                         "skipped"})


@dataclass(frozen=True, slots=True)
class EstimateView:
    """An immutable picture of a model's estimate, safe to read from another thread.

    Attributes:
        estimates: each estimated measure (auc, false_negative_rate, false_positive_rate)
            with its standard error and bias; NaN while no calibration is in place.
        trusted: a calibration is in place and the self-check has not rejected it.
        calibration: where the calibration in place comes from: ``assume``, ``first_n``,
            ``reference``, ``refit`` (after an alarm), or ``fitting`` (none yet).
        refitting: labelled predictions collected for a refit after an alarm (0: none
            under way).
        predictions: predictions estimated so far.
        skipped: predictions left out (a score the calibration has no probability for).
        check_blocks: self-check blocks closed so far (since the latest calibration).
        last_z: the latest input of the calibration-drift CUSUM (NaN before the first).
        report: the calibration error of the reference or of the fitting labels (None for
            an assumed calibration, or scores that are not probabilities).
        detector_state: the calibration-drift CUSUM's state (stable or drift).
    """

    estimates: Mapping[str, Estimate]
    trusted: bool
    calibration: str
    refitting: int
    predictions: int
    skipped: int
    check_blocks: int
    last_z: float
    report: CalibrationReport | None
    detector_state: str


def _promised(block: CheckBlock) -> tuple[float, float]:
    """A check block's realized AUC and the AUC its scores promised (estimate + bias)."""
    auc = next(m for m in block.measures if m.name == "auc")
    return auc.realized, auc.estimate.value + auc.estimate.bias


class EstimateWatch:
    """A model's estimate, its self-check and its trust (see the module docstring).

    Parameters:
        config: calibration and run length.
        window: d, the predictions the estimate covers (the monitor's window size).
        threshold: the crisp threshold of predictions without ``y_pred``.
        min_expected: a check block's expected events of each class (the monitor's
            ``block_min_class``).
    """

    __slots__ = ("_apart", "_blocks", "_detector", "_estimator", "_last_z", "_min_expected",
                 "_min_seconds", "_predictions", "_queue", "_quiet", "_refits", "_refitted",
                 "_refitting", "_skipped", "_starting", "_threshold", "_waiting_from",
                 "_window", "config")

    def __init__(self, config: EstimationConfig, *, window: int, threshold: float,
                 min_expected: int, min_seconds: float = 0.0) -> None:
        self.config = config
        self._window, self._threshold, self._min_expected = window, threshold, min_expected
        self._min_seconds = min_seconds
        self._refitted: IsotonicCalibration | None = None
        self._estimator = self._new_estimator()
        self._detector = Cusum(k=CHECK_K, arl=config.check_arl, direction="both")
        self._starting = None if config.calibration == "assume" else SelfStarting()
        self._refitting: tuple[list[int], list[float]] | None = None
        self._predictions = 0
        self._blocks = 0
        self._refits = 0
        self._last_z = math.nan
        self._apart = False
        self._skipped = 0
        # Labelled predictions none of which can close a check block, not yet entered
        # (:meth:`event`): the next ``_quiet`` predictions, and while ``_waiting_from`` is
        # set those with a time less than ``_min_seconds`` after it.
        self._queue: tuple[list[int], list[float], list[int | None], list[float | None]] = \
            ([], [], [], [])
        self._quiet = 0
        self._waiting_from: float | None = None

    @classmethod
    def of(cls, config: MonitorConfig) -> EstimateWatch | None:
        """A monitor's watch: its window, threshold and block size (None without
        ``config.estimation``)."""
        if config.estimation is None:
            return None
        return cls(config.estimation, window=config.window_size, threshold=config.threshold,
                   min_expected=config.block_min_class, min_seconds=config.block_seconds)

    def _new_estimator(self) -> PerformanceEstimator:
        config = self.config
        calibration: Calibration | None
        fit_size = None
        if self._refitted is not None:
            calibration = self._refitted
        elif config.calibration == "assume":
            calibration = IdentityCalibration()
        elif config.calibration == "reference":
            assert config.reference is not None  # EstimationConfig's rule
            calibration = calibration_from_state(config.reference)
        else:
            calibration, fit_size = None, config.first_n
        return PerformanceEstimator(window=self._window, threshold=self._threshold,
                                    calibration=calibration, fit_size=fit_size,
                                    min_expected=self._min_expected, checked=CHECKED,
                                    min_seconds=self._min_seconds,
                                    report=(config.reference_report
                                            if self._refitted is None else None))

    @property
    def predictions(self) -> int:
        self._flush()
        return self._predictions

    @property
    def auc(self) -> float:
        """The estimated AUC alone, without its standard error: O(1) after the window's
        pending edits (a figure's point), NaN while no calibration is in place."""
        self._flush()
        return self._estimator.window.auc if self._estimator.calibrated else math.nan

    @property
    def skipped(self) -> int:
        """Predictions left out: their score has no probability under the calibration."""
        self._flush()
        return self._skipped

    @property
    def trusted(self) -> bool:
        return self._estimator.calibrated and self._refitting is None

    def predict(self, y_score: float, y_pred: int | None = None) -> None:
        """A prediction whose label comes later (predictions and labels as separate
        records), as it is made: it enters the window now, and from this call on every
        :meth:`event` is taken as the label of such a prediction (checked, not entered
        again). Values are checked events' values."""
        self._flush()
        self._apart = True
        self._enter(y_score, y_pred)

    def _enter(self, y_score: float, y_pred: int | None) -> None:
        """A score the calibration has no probability for (outside [0, 1] under an assumed
        calibration) is left out of the estimate and counted (:attr:`skipped`): the
        event itself was valid, and the rest of the monitor took it."""
        try:
            self._estimator.predict(y_score, y_pred)
        except ValueError:
            self._skipped += 1
            return
        self._predictions += 1

    def event(self, y_true: int, y_score: float, y_pred: int | None = None,
              ts: float | None = None) -> tuple[float, float] | None:
        """A labelled prediction: entered (unless its prediction came apart, :meth:`predict`)
        and checked (:meth:`label`). On a calibration-drift alarm, the check block's realized
        AUC and the AUC its scores promised (estimate + bias), else None.

        **Queued when it cannot close a check block.** A whole event with a calibration in
        place is only queued when it provably cannot close the open check block
        (:meth:`~driftwatch.core.estimation.self_check.CalibrationCheck.cannot_close`:
        while the block's expected counts are short, or while its time span is), and the
        queue is entered in bulk (:meth:`extend`) before the next event that might close
        one, or a read. Nearly every event is then one list append: the same alarms at the
        same events and the same state as entering each at once (tested)."""
        start = self._waiting_from
        if self._quiet or (start is not None and ts is not None
                           and ts - start < self._min_seconds):
            if self._quiet:
                self._quiet -= 1
            labels, scores, preds, times = self._queue
            labels.append(y_true)
            scores.append(y_score)
            preds.append(y_pred)
            times.append(ts)
            return None
        if self._apart:  # labels of predictions apart: never queued (predict flushed)
            return self._event(y_true, y_score, y_pred, ts)
        self._flush()
        found = self._event(y_true, y_score, y_pred, ts)
        self._arm()
        return found

    def _arm(self) -> None:
        """Set how many of the next events may be queued, and until when (:meth:`event`)."""
        self._quiet, self._waiting_from = 0, None
        if self._apart or self._refitting is not None or not self._estimator.calibrated:
            return
        self._quiet, self._waiting_from = self._estimator.check.cannot_close()

    def _flush(self) -> None:
        """Enter the queued events (none of which closes a check block)."""
        labels, scores, preds, times = self._queue
        if not labels:
            return
        self._queue = ([], [], [], [])
        self._quiet, self._waiting_from = 0, None
        found = self._extend(labels, scores, preds, times)
        assert not found, "a queued event closed a check block"

    def _event(self, y_true: int, y_score: float, y_pred: int | None,
               ts: float | None) -> tuple[float, float] | None:
        """:meth:`event` of one event, entered now."""
        if self._apart:
            block = self.label(y_true, y_score, y_pred, ts)
        elif self._refitting is None:
            try:
                block = self._estimator.observe_valid(y_true, y_score, y_pred, ts)
            except ValueError:  # no probability for the score: left out, counted
                self._skipped += 1
                return None
            self._predictions += 1
            block = None if block is None else self._checked(block)
        else:
            self._enter(y_score, y_pred)
            block = self.label(y_true, y_score, y_pred, ts)
        return None if block is None else _promised(block)

    def extend(self, y_true: Sequence[int], y_score: Sequence[float],
               times: Sequence[float | None]) -> list[tuple[int, tuple[float, float]]]:
        """:meth:`event` of each labelled prediction in turn (checked values, predictions
        derived from the scores), in one call; (index, what :meth:`event` returned) of each
        that raised a calibration-drift alarm. Whole events with a calibration in place (the
        agent's usual case) go in bulk: their weights computed in one numpy call, the check
        blocks found by :meth:`PerformanceEstimator.extend_valid`, the window's queue
        extended; each closed block reaches the CUSUM in order. Anything else (predictions
        apart, a calibration being fitted or refitted, a score it has no probability for,
        and the events after an alarm) takes one call each. The same alarms at the same
        events, the same state."""
        self._flush()
        found = self._extend(y_true, y_score, None, times)
        self._arm()
        return found

    def _extend(self, y_true: Sequence[int], y_score: Sequence[float],
                y_pred: Sequence[int | None] | None,
                times: Sequence[float | None]) -> list[tuple[int, tuple[float, float]]]:
        count = len(y_true)
        estimator = self._estimator
        weights = (None if self._apart or self._refitting is not None or count < BULK_MIN
                   else estimator.weights(y_score))
        found: list[tuple[int, tuple[float, float]]] = []
        start = 0
        if weights is not None:
            preds = (np.fromiter(y_score, float, count) >= self._threshold
                     ).astype(np.int64).tolist()
            if y_pred is not None:
                preds = [d if p is None else p for d, p in zip(preds, y_pred, strict=True)]
            stamps = np.fromiter(times, float, count)  # None reads as NaN
            while start < count and self._refitting is None:
                stop, block = estimator.extend_valid(y_true, y_score, weights, preds, stamps,
                                                     start)
                self._predictions += stop - start
                start = stop
                drifted = None if block is None else self._checked(block)
                if drifted is not None:
                    found.append((stop - 1, _promised(drifted)))
        for index in range(start, count):
            alarm = self._event(y_true[index], y_score[index],
                                None if y_pred is None else y_pred[index], times[index])
            if alarm is not None:
                found.append((index, alarm))
        return found

    def label(self, y_true: int, y_score: float, y_pred: int | None = None,
              ts: float | None = None) -> CheckBlock | None:
        """A prediction whose label has joined (checked values: a 0/1 label and prediction
        or None, a finite float score): the check block that raised a calibration-drift
        alarm, if this label closed one that did (then the estimate is untrusted and a refit
        starts), else None."""
        self._flush()
        refitting = self._refitting
        if refitting is not None:
            refitting[0].append(check_label(y_true, "y_true"))
            refitting[1].append(check_score(y_score, "y_score"))
            if len(refitting[0]) >= self.config.first_n:
                self._refit()
            return None
        try:
            block = self._estimator.label_valid(y_true, y_score, y_pred, ts)
        except ValueError:  # a score the calibration refuses: skipped when predicted
            return None
        return None if block is None else self._checked(block)

    def _checked(self, block: CheckBlock) -> CheckBlock | None:
        """A closed check block to the CUSUM: itself if it raised the alarm (then the
        refit starts), else None."""
        self._blocks += 1
        z: float | None = block.z("auc")
        if self._starting is not None and z is not None:
            z = self._starting.update(z)
        if z is None or math.isnan(z):
            return None
        self._last_z = z
        if self._detector.update_valid(z) is not DetectorState.DRIFT:
            return None
        self._refitting = ([], [])
        return block

    def _refit(self) -> None:
        """Fit an isotonic calibration on the collected labels and use it from now on."""
        assert self._refitting is not None
        labels, scores = self._refitting
        calibration = IsotonicCalibration.fit(labels, scores)
        report = (calibration_report(labels, scores)
                  if all(0.0 <= s <= 1.0 for s in scores) else None)
        self._estimator.recalibrate(calibration, report)
        self._refitted = calibration
        self._refitting = None
        self._refits += 1
        self._blocks = 0
        self._last_z = math.nan
        self._detector.reset()
        self._starting = SelfStarting()

    def view(self) -> EstimateView:
        """The current picture (O(d log d): the standard errors read the whole window)."""
        self._flush()
        estimator = self._estimator
        if self._refitted is not None:
            source = "refit"
        elif not estimator.calibrated:
            source = "fitting"
        else:
            source = self.config.calibration
        return EstimateView(
            estimates=estimator.estimates(), trusted=self.trusted, calibration=source,
            refitting=0 if self._refitting is None else len(self._refitting[0]),
            predictions=self._predictions, skipped=self._skipped, check_blocks=self._blocks,
            last_z=self._last_z,
            report=estimator.report,
            detector_state="drift" if self._refitting is not None else "stable")

    def export_state(self) -> dict[str, Any]:
        """Everything to continue exactly, as JSON-ready values."""
        self._flush()
        return {
            "version": STATE_VERSION,
            "estimator": self._estimator.export_state(),
            "detector": self._detector.export_state(),
            "starting": None if self._starting is None else self._starting.export_state(),
            "refitted": None if self._refitted is None else self._refitted.export_state(),
            "refitting": (None if self._refitting is None
                          else [list(self._refitting[0]), list(self._refitting[1])]),
            "predictions": self._predictions,
            "blocks": self._blocks,
            "refits": self._refits,
            "last_z": self._last_z,
            "apart": self._apart,
            "skipped": self._skipped,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`export_state` (this watch's configuration kept). All or
        nothing: a state this version cannot read is a ``ValueError`` naming the problem,
        and nothing changes."""
        state = check_state(state, _STATE_KEYS, STATE_VERSION)
        fresh = EstimateWatch(self.config, window=self._window, threshold=self._threshold,
                              min_expected=self._min_expected, min_seconds=self._min_seconds)
        try:
            if state["refitted"] is not None:
                refitted = calibration_from_state(state["refitted"])
                if not isinstance(refitted, IsotonicCalibration):
                    raise ValueError("state refitted is not an isotonic calibration")
                fresh._refitted = refitted
                fresh._estimator = fresh._new_estimator()
            fresh._estimator.restore(state["estimator"])
            fresh._detector = Cusum.from_state(state["detector"])
            if state["starting"] is not None:
                fresh._starting = SelfStarting()
                fresh._starting.restore(state["starting"])
            if state["refitting"] is not None:
                labels, scores = state["refitting"]
                fresh._refitting = ([check_label(y) for y in labels],
                                    [check_score(s) for s in scores])
            fresh._predictions = int(state["predictions"])
            fresh._blocks = int(state["blocks"])
            fresh._refits = int(state["refits"])
            fresh._last_z = float(state["last_z"])
            fresh._apart = bool(state["apart"])
            fresh._skipped = int(state["skipped"])
        except (TypeError, ValueError, KeyError) as error:
            raise ValueError(f"estimate state {error}") from error
        for name in self.__slots__:
            setattr(self, name, getattr(fresh, name))
