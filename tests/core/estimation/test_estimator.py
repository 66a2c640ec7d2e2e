"""The estimator a monitor will own: identity, a reference fit, a fit on the first labels."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from driftwatch.core.estimation.calibration import IdentityCalibration, IsotonicCalibration
from driftwatch.core.estimation.estimator import PerformanceEstimator
from driftwatch.core.estimation.window import EstimatedWindow


def miscalibrated(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores s whose true probability is s² (over-confident): labels ~ Bernoulli(s²)."""
    s = rng.beta(4, 2, n)
    return (rng.random(n) < s * s).astype(int), s


def test_fitted_on_the_first_labels_then_frozen() -> None:
    rng = np.random.default_rng(5)
    y, s = miscalibrated(rng, 6_000)
    estimator = PerformanceEstimator(window=1_000, calibration=None, fit_size=2_000)
    assert not estimator.calibrated
    for score in s[:1_000].tolist():
        estimator.predict(score)
    assert all(math.isnan(e.value) for e in estimator.estimates().values())
    blocks = [estimator.label(int(a), float(b)) for a, b in zip(y[:2_000], s[:2_000],
                                                               strict=True)]
    assert blocks == [None] * 2_000  # the fitting labels are not self-checked
    assert estimator.calibrated and isinstance(estimator.calibration, IsotonicCalibration)
    assert estimator.report is not None and estimator.report.miscalibration > 0.01
    # The window held its scores: the estimate covers all 1 000 at once, with the fit's
    # probabilities, and the identity's estimate (which believes the raw scores) is off by
    # 0.033 (20 seeds: 0.033 ± 0.001). The fit's own sampling error from 2 000 labels moves
    # the estimate by 0.004 ± 0.014 (benchmarks/estimate.py has the effect of the fit size).
    fitted = estimator.estimates()["auc"]
    raw = EstimatedWindow(1_000)
    for score in s[:1_000].tolist():
        raw.update(score, score)
    realized_p = s[:1_000] ** 2
    truth = EstimatedWindow(1_000)
    for score, p in zip(s[:1_000].tolist(), realized_p.tolist(), strict=True):
        truth.update(score, p)
    assert abs(fitted.value - truth.auc) < 0.02 < 0.03 < abs(raw.auc - truth.auc)
    # Later labels are checked: blocks close, z-scores near 0 under the fitted calibration.
    closed = [block for label, score in zip(y[2_000:], s[2_000:], strict=True)
              if (block := estimator.label(int(label), float(score))) is not None]
    assert closed and abs(np.nanmean([b.z("auc") for b in closed])) < 0.5


def test_state_round_trip_keeps_everything_json_ready() -> None:
    rng = np.random.default_rng(6)
    y, s = miscalibrated(rng, 700)
    estimator = PerformanceEstimator(window=300, calibration=None, fit_size=500,
                                     min_expected=5)
    for a, b in zip(y.tolist(), s.tolist(), strict=True):
        estimator.predict(b)
        estimator.label(a, b)
    state = json.loads(json.dumps(estimator.export_state()))
    restored = PerformanceEstimator(window=300, calibration=None, fit_size=500,
                                    min_expected=5)
    restored.restore(state)
    assert restored.export_state() == estimator.export_state()
    assert restored.estimates() == estimator.estimates()
    # Mid-fit state: the fitting events are kept and the fit completes after a restart.
    early = PerformanceEstimator(window=300, calibration=None, fit_size=500)
    for a, b in zip(y[:400].tolist(), s[:400].tolist(), strict=True):
        early.label(a, b)
    later = PerformanceEstimator(window=300, calibration=None, fit_size=500)
    later.restore(json.loads(json.dumps(early.export_state())))
    for a, b in zip(y[400:500].tolist(), s[400:500].tolist(), strict=True):
        later.label(a, b)
    assert later.calibrated


def test_a_given_calibration_wins_over_the_saved_one() -> None:
    fitted = PerformanceEstimator(window=10, calibration=IsotonicCalibration.fit(
        [0, 0, 1, 1], [0.1, 0.4, 0.6, 0.9]))
    for score in (0.2, 0.3, 0.7, 0.8):
        fitted.predict(score)
    identity = PerformanceEstimator(window=10)
    identity.restore(fitted.export_state())
    assert isinstance(identity.calibration, IdentityCalibration)
    direct = PerformanceEstimator(window=10)
    for score in (0.2, 0.3, 0.7, 0.8):
        direct.predict(score)
    assert identity.estimates() == direct.estimates()


def test_from_a_reference_file_with_its_report() -> None:
    rng = np.random.default_rng(7)
    y, s = miscalibrated(rng, 3_000)
    estimator = PerformanceEstimator.from_reference(y.tolist(), s.tolist(), window=500)
    assert isinstance(estimator.calibration, IsotonicCalibration) and estimator.calibrated
    assert estimator.report is not None and estimator.report.events == 3_000
    assert estimator.report.miscalibration > 0.01  # the raw scores are over-confident
    assert estimator.window.size == 500
    logits = PerformanceEstimator.from_reference([0, 1, 1], [-2.0, 0.5, 3.0])
    assert logits.report is None  # scores that are not probabilities have no Brier score
    with pytest.raises(ValueError, match=r"y_true\[1\]"):
        PerformanceEstimator.from_reference([0, 5], [0.1, 0.2])


def test_bad_arguments_and_settings_are_named() -> None:
    estimator = PerformanceEstimator(window=5)
    with pytest.raises(ValueError, match="y_score must be a probability"):
        estimator.predict(1.5)
    with pytest.raises(ValueError, match="y_true"):
        estimator.label(2, 0.5)
    assert len(estimator.window) == 0 and len(estimator.check) == 0
    with pytest.raises(ValueError, match="fit_size"):
        PerformanceEstimator(calibration=None)
    with pytest.raises(ValueError, match="fit_size"):
        PerformanceEstimator(fit_size=100)
    with pytest.raises(ValueError, match="missing keys"):
        estimator.restore({"version": 1})
