"""One model's performance estimate: calibration, estimated window and self-check together.

:class:`PerformanceEstimator` is the small object a monitor owns to estimate its model's
performance before labels arrive. It is fed twice per prediction:

- :meth:`~PerformanceEstimator.predict` ``(y_score, y_pred)`` on the prediction stream, at
  once: the prediction enters the :class:`~driftwatch.core.estimation.window.EstimatedWindow`
  with its calibrated probability;
- :meth:`~PerformanceEstimator.label` ``(y_true, y_score, y_pred)`` when its label joins:
  the labelled prediction either helps fit the calibration (the first ``fit_size`` labelled
  predictions, when the calibration is learned) or goes to the
  :class:`~driftwatch.core.estimation.self_check.CalibrationCheck`, which returns a
  :class:`~driftwatch.core.estimation.self_check.CheckBlock` of z-scores when a check block
  closes (for detectors to watch).

Calibration (:mod:`~driftwatch.core.estimation.calibration`), chosen at construction:

- a given map: :class:`IdentityCalibration` (the scores are calibrated probabilities, the
  default) or an :class:`IsotonicCalibration` fitted on a labelled reference
  (:meth:`PerformanceEstimator.from_reference` fits it and keeps the reference's report);
- ``calibration=None`` with ``fit_size=N``: isotonic regression fitted on the first N
  labelled predictions, then frozen. Until then the estimates are NaN; the window keeps
  filling with scores, so the fit's first read estimates a full window. The fitting events
  are never self-checked (they would check the fit against itself), and their
  :func:`~driftwatch.core.estimation.reliability.calibration_report` is kept
  (:attr:`PerformanceEstimator.report`).

Its state is plain data (:meth:`~PerformanceEstimator.export_state`,
:meth:`~PerformanceEstimator.restore`), like the other core objects a checkpoint holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import numpy.typing as npt

from driftwatch.core.estimation.calibration import (
    Calibration,
    IdentityCalibration,
    IsotonicCalibration,
    calibration_from_state,
)
from driftwatch.core.estimation.expected import NAN_ESTIMATE, Estimate
from driftwatch.core.estimation.reliability import CalibrationReport, calibration_report
from driftwatch.core.estimation.self_check import (
    CHECKED_MEASURES,
    DEFAULT_MIN_EXPECTED,
    CalibrationCheck,
    CheckBlock,
)
from driftwatch.core.estimation.window import (
    ESTIMATED_MEASURES,
    SCALE,
    EstimatedWindow,
    weight,
)
from driftwatch.core.events import check_label, check_score
from driftwatch.core.state import check_state

STATE_VERSION = 1
_STATE_KEYS = frozenset({"version", "calibration", "fitting", "report", "window", "check"})


class PerformanceEstimator:
    """Estimated measures of one model from its scores, checked against its labels.

    Parameters:
        window: d, the predictions the estimate covers (the realized window's size).
        threshold: the decision threshold for predictions that come without ``y_pred``.
        calibration: the score → probability map, or None to fit one (``fit_size``).
        fit_size: with ``calibration=None``, the labelled predictions the isotonic fit
            uses (≥ 2).
        min_expected: the self-check's block size, in expected events of each class.
        checked: the measures the self-check scores per block (all of
            :data:`~driftwatch.core.estimation.self_check.CHECKED_MEASURES` by default; a
            monitor asks for the AUC only, the one its CUSUM watches, which costs a third).
        min_seconds: the record time a check block spans at least (the monitor's
            ``block_seconds``; labelled predictions without a time close blocks on
            information alone).

    Example: calibrated scores; a check block closes once it expects ``min_expected``
    positives and as many negatives (here Σp = 2.3, Σ(1 − p) = 2.7 at the fifth label).

    >>> estimator = PerformanceEstimator(window=5, min_expected=2)
    >>> for score in (0.8, 0.3, 0.6, 0.1, 0.5):
    ...     estimator.predict(score)
    >>> round(estimator.estimates()["auc"].value, 4)
    0.8232
    >>> [estimator.label(y, s) for y, s in [(1, 0.8), (0, 0.3), (1, 0.6), (0, 0.1)]]
    [None, None, None, None]
    >>> block = estimator.label(0, 0.5)
    >>> block.events, block.positives, round(block.expected_positives, 2)
    (5, 2, 2.3)
    >>> round(block.z("auc"), 2)  # every positive above every negative: AUC 1 > 0.82
    1.53
    """

    __slots__ = ("_calibration", "_check", "_fitting", "_report", "_window", "fit_size")

    def __init__(self, *, window: int = 1000, threshold: float = 0.5,
                 calibration: Calibration | None = IdentityCalibration(),  # noqa: B008
                 fit_size: int | None = None,
                 min_expected: int = DEFAULT_MIN_EXPECTED,
                 checked: tuple[str, ...] = CHECKED_MEASURES,
                 min_seconds: float = 0.0,
                 report: CalibrationReport | None = None) -> None:
        if calibration is None:
            if isinstance(fit_size, bool) or not isinstance(fit_size, int) or fit_size < 2:
                raise ValueError(f"fit_size must be an integer ≥ 2 when the calibration is "
                                 f"fitted (calibration=None), got {fit_size!r}")
        elif fit_size is not None:
            raise ValueError("fit_size is for a fitted calibration: pass calibration=None "
                             "with it")
        self.fit_size = fit_size
        self._calibration = calibration
        self._window = EstimatedWindow(window, threshold)
        self._check = CalibrationCheck(min_expected, threshold, checked, min_seconds)
        self._fitting: tuple[list[int], list[float]] = ([], [])
        self._report = report  # the calibration's error where it was fitted, if known

    @classmethod
    def from_reference(cls, y_true: Sequence[object], y_score: Sequence[object],
                       **parameters: Any) -> PerformanceEstimator:
        """An estimator calibrated by isotonic regression on a labelled reference (a
        reference file's events), with the reference's :attr:`report` when its scores are
        probabilities; ``parameters`` are the constructor's other keyword arguments. A bad
        label or score is a ``ValueError`` naming it (``y_true[i]``, ``y_score[i]``)."""
        estimator = cls(calibration=IsotonicCalibration.fit(y_true, y_score), **parameters)
        scores = [check_score(s) for s in y_score]  # checked by the fit already
        if all(0.0 <= s <= 1.0 for s in scores):
            estimator._report = calibration_report(y_true, scores)
        return estimator

    @property
    def calibrated(self) -> bool:
        """Whether a calibration is in place (always, unless it is still being fitted)."""
        return self._calibration is not None

    @property
    def calibration(self) -> Calibration | None:
        return self._calibration

    @property
    def report(self) -> CalibrationReport | None:
        """The calibration report of the fitting events or the reference, when their
        scores are probabilities (None otherwise)."""
        return self._report

    @property
    def window(self) -> EstimatedWindow:
        return self._window

    @property
    def check(self) -> CalibrationCheck:
        return self._check

    def _probability(self, score: float) -> float:
        return 0.0 if self._calibration is None else self._calibration.probability(score)

    def predict(self, y_score: float, y_pred: int | None = None) -> None:
        """One prediction, as it is made. ``ValueError`` naming a bad argument (a score the
        calibration has no probability for included); nothing changes then."""
        score = y_score if type(y_score) is float and y_score - y_score == 0.0 \
            else check_score(y_score, "y_score")
        pred = None if y_pred is None else check_label(y_pred, "y_pred")
        self._window.update_valid(score, weight(self._probability(score)), pred)

    def label(self, y_true: int, y_score: float, y_pred: int | None = None) -> CheckBlock | None:
        """A prediction whose label has arrived: the closed check block it completes, if
        any. ``ValueError`` naming a bad argument; nothing changes then."""
        label = check_label(y_true, "y_true")
        score = check_score(y_score, "y_score")
        if self._calibration is None:
            labels, scores = self._fitting
            labels.append(label)
            scores.append(score)
            if len(labels) >= (self.fit_size or 0):
                self._fit()
            return None
        return self._check.update(label, score, self._calibration.probability(score), y_pred)

    def observe_valid(self, y_true: int, y_score: float, y_pred: int | None = None,
                      ts: float | None = None) -> CheckBlock | None:
        """:meth:`predict` then :meth:`label` of one prediction whose label came with it,
        its probability computed once, the values not checked again (a monitor's checked
        event: a 0/1 label and prediction, a finite float score). A score the calibration
        has no probability for is a ``ValueError``, and nothing changes."""
        calibration = self._calibration
        if calibration is None:
            self._window.update_valid(y_score, 0, y_pred)
            return self.label_valid(y_true, y_score, y_pred, ts)
        w = weight(calibration.probability(y_score))
        self._window.update_valid(y_score, w, y_pred)
        return self._check.update_valid(y_true, y_score, w, y_pred, ts)

    def label_valid(self, y_true: int, y_score: float, y_pred: int | None = None,
                    ts: float | None = None) -> CheckBlock | None:
        """:meth:`label` of checked values (those of :meth:`observe_valid`), not checked
        again. A score the calibration has no probability for is a ``ValueError``, and
        nothing changes."""
        calibration = self._calibration
        if calibration is None:
            return self.label(y_true, y_score, y_pred)
        return self._check.update_valid(y_true, y_score,
                                        weight(calibration.probability(y_score)), y_pred, ts)

    def weights(self, y_score: Sequence[float]) -> npt.NDArray[np.int64] | None:
        """The fixed-point weights (:func:`~driftwatch.core.estimation.window.weight`) of
        these checked scores' probabilities, in one call, bit for bit those of one call
        each (p·2³² is exact, and numpy's rint rounds half to even as ``round`` does);
        None when no calibration is in place or it has no probability for some score."""
        calibration = self._calibration
        if calibration is None:
            return None
        if isinstance(calibration, IdentityCalibration):
            p = np.fromiter(y_score, float, len(y_score))
        else:
            try:
                p = np.fromiter(map(calibration.probability, y_score), float, len(y_score))
            except ValueError:
                return None
        if not ((p >= 0.0) & (p <= 1.0)).all():  # NaN fails too
            return None
        weights: npt.NDArray[np.int64] = np.rint(p * SCALE).astype(np.int64)
        return weights

    def extend_valid(self, y_true: Sequence[int], y_score: Sequence[float],
                     weights: npt.NDArray[np.int64], preds: Sequence[int],
                     times: npt.NDArray[np.float64],
                     start: int = 0) -> tuple[int, CheckBlock | None]:
        """:meth:`observe_valid` of events ``start``, ``start + 1``, … (``weights`` from
        :meth:`weights`, 0/1 ``preds``, ``times`` with NaN for none) up to the first that
        closes a check block: the index after the last event taken and that block, or None
        when all were taken. The same state and blocks as one call each
        (:meth:`CalibrationCheck.extend_valid`); the window queues the events."""
        stop, block = self._check.extend_valid(y_true, y_score, weights, preds, times, start)
        first = max(start, stop - self._window.size)  # the window keeps no more
        self._window.extend_valid(y_score[first:stop], weights[first:stop].tolist(),
                                  preds[first:stop])
        return stop, block

    def _fit(self) -> None:
        labels, scores = self._fitting
        calibration = IsotonicCalibration.fit(labels, scores)
        if all(0.0 <= s <= 1.0 for s in scores):
            self._report = calibration_report(labels, scores)
        self._window.reweigh(calibration.probability)
        self._calibration = calibration
        self._fitting = ([], [])

    def recalibrate(self, calibration: Calibration,
                    report: CalibrationReport | None = None) -> None:
        """Use ``calibration`` from now on (a refit after the self-check found the old one
        wrong): the window's predictions are re-weighed with it and the self-check starts a
        fresh block (the open one was weighed by the old calibration); ``report`` is the
        refit's calibration report. A score the new calibration refuses raises its
        ``ValueError`` and nothing changes. O(d log d)."""
        self._window.reweigh(calibration.probability)
        self._calibration = calibration
        self._check = self._fresh_check()
        self._fitting = ([], [])
        self._report = report

    def _fresh_check(self) -> CalibrationCheck:
        check = self._check
        return CalibrationCheck(check.min_expected, check.threshold, check.measures,
                                check.min_seconds)

    def estimates(self) -> dict[str, Estimate]:
        """Each of :data:`~driftwatch.core.estimation.window.ESTIMATED_MEASURES` over the
        window (NaN until calibrated). O(d log d)."""
        if self._calibration is None:
            return dict.fromkeys(ESTIMATED_MEASURES, NAN_ESTIMATE)
        return self._window.estimates()

    def export_state(self) -> dict[str, Any]:
        """Calibration, fitting events, report, window and check as JSON-ready values."""
        return {
            "version": STATE_VERSION,
            "calibration": (None if self._calibration is None
                            else self._calibration.export_state()),
            "fitting": [list(self._fitting[0]), list(self._fitting[1])],
            "report": None if self._report is None else asdict(self._report),
            "window": self._window.export_state(),
            "check": self._check.export_state(),
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`export_state` (this estimator's parameters kept: window size,
        threshold, check block size, and a given calibration, which re-weighs the saved
        window if it differs from the saved one; a fitted calibration is state and is
        restored). All or nothing: a state this version cannot read is a
        ``ValueError`` naming the problem, and nothing changes."""
        state = check_state(state, _STATE_KEYS, STATE_VERSION)
        saved = state["calibration"]
        window = EstimatedWindow.from_state(state["window"], size=self._window.size,
                                            threshold=self._window.threshold)
        calibration: Calibration | None
        if self.fit_size is None:  # a given calibration is a setting: it wins over the state
            calibration = self._calibration
            assert calibration is not None
            if saved != calibration.export_state():
                window.reweigh(calibration.probability)
        else:
            calibration = None if saved is None else calibration_from_state(saved)
        check = self._fresh_check()
        check.restore(state["check"])
        try:
            labels, scores = state["fitting"]
            fitting = ([check_label(y) for y in labels], [check_score(s) for s in scores])
            report = None if state["report"] is None else CalibrationReport(**state["report"])
        except (TypeError, ValueError) as error:
            raise ValueError(f"state {error}") from error
        if report is not None and not all(
                math.isfinite(float(v)) for v in asdict(report).values()):
            raise ValueError("state report holds a value that is not finite")
        self._calibration, self._window, self._check = calibration, window, check
        self._fitting, self._report = fitting, report
