"""ModelMonitor's estimate: the core's, predictions apart or with their labels."""

from __future__ import annotations

import math

import numpy as np
import pytest

from driftwatch import ModelMonitor
from driftwatch.core.estimation.estimator import PerformanceEstimator


def test_estimated_is_the_cores_estimate_over_the_window() -> None:
    rng = np.random.default_rng(11)
    scores = rng.beta(2, 5, 2_000).tolist()
    labels = (rng.random(2_000) < np.array(scores)).astype(int).tolist()
    monitor = ModelMonitor(window_size=400, estimation={"enabled": True})
    direct = PerformanceEstimator(window=400)
    for score in scores:
        monitor.predict(score)  # the predictions first, their labels later
        direct.predict(score)
    assert monitor.estimated == direct.estimates() and monitor.estimate_trusted
    for label, score in zip(labels, scores, strict=True):
        monitor.update(label, score)
    assert monitor.estimated == direct.estimates()  # labels check, they do not re-enter
    assert set(monitor.estimated) == {"auc", "false_negative_rate", "false_positive_rate"}


def test_without_estimation_nothing_is_estimated() -> None:
    monitor = ModelMonitor()
    monitor.predict(0.3)
    assert monitor.estimated == {} and not monitor.estimate_trusted


def test_first_n_is_untrusted_and_nan_until_fitted() -> None:
    monitor = ModelMonitor(estimation={"enabled": True, "calibration": "first_n",
                                       "first_n": 10})
    for index in range(9):
        monitor.update(index % 2, 0.1 * index)
    assert not monitor.estimate_trusted
    assert all(math.isnan(e.value) for e in monitor.estimated.values())
    monitor.update(1, 0.95)
    assert monitor.estimate_trusted


@pytest.mark.parametrize(("estimation", "words"), [
    ({"enabled": True, "calibration": "sometimes"}, "estimation.calibration"),
    ({"enabled": True, "calibration": "reference"}, "estimation.reference_file: required"),
    ({"enabled": True, "calibration": "reference", "reference_file": "/nonexistent.jsonl"},
     "estimation.reference_file"),
])
def test_bad_options_name_their_key(estimation: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError, match="invalid monitor options") as error:
        ModelMonitor(estimation=estimation)
    assert words in str(error.value)


def test_a_bad_prediction_is_refused_by_name() -> None:
    monitor = ModelMonitor(estimation={"enabled": True})
    with pytest.raises(ValueError, match="y_score"):
        monitor.predict(math.nan)
