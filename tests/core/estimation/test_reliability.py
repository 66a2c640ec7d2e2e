"""The calibration report: CORP decomposition and ECE against their definitions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.isotonic import IsotonicRegression

from driftwatch.core.estimation.reliability import calibration_report

labelled = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 100).map(lambda k: k / 100)),
                    min_size=1, max_size=40)


@given(labelled, st.integers(1, 12))
def test_report_matches_its_definitions(events: list[tuple[int, float]], bins: int) -> None:
    y = np.array([e[0] for e in events], dtype=float)
    s = np.array([e[1] for e in events])
    report = calibration_report(y.astype(int).tolist(), s.tolist(), bins=bins)
    recalibrated = IsotonicRegression(out_of_bounds="clip").fit(s, y).predict(s)
    brier = float(np.mean((s - y) ** 2))
    brier_recalibrated = float(np.mean((recalibrated - y) ** 2))
    uncertainty = float(y.mean() * (1 - y.mean()))
    assert report.brier == pytest.approx(brier, abs=1e-12)
    assert report.miscalibration == pytest.approx(brier - brier_recalibrated, abs=1e-12)
    assert report.discrimination == pytest.approx(uncertainty - brier_recalibrated, abs=1e-12)
    assert report.uncertainty == pytest.approx(uncertainty, abs=1e-12)
    assert report.brier == pytest.approx(
        report.miscalibration - report.discrimination + report.uncertainty, abs=1e-12)
    assert report.miscalibration >= -1e-12 and report.discrimination >= -1e-12
    order = np.argsort(s, kind="stable")
    k = min(bins, len(events))
    edges = [b * len(events) // k for b in range(k + 1)]
    ece = sum(abs(s[order][a:b].sum() - y[order][a:b].sum()) for a, b in
              itertools.pairwise(edges)) / len(events)
    # Ties at a bin edge may be split differently by the two sorts; compare on ties-free
    # bins only when the scores are distinct.
    if len(set(s.tolist())) == len(events):
        assert report.ece == pytest.approx(ece, abs=1e-12)


def test_calibrated_scores_have_no_miscalibration_in_the_limit() -> None:
    rng = np.random.default_rng(3)
    s = rng.beta(2, 5, 100_000)
    y = (rng.random(s.size) < s).astype(int)
    report = calibration_report(y.tolist(), s.tolist())
    assert report.miscalibration < 0.002 and report.ece < 0.01
    skewed = calibration_report(y.tolist(), np.sqrt(s).tolist())  # over-confident
    assert skewed.miscalibration > 0.05 and skewed.ece > 0.2


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match=r"y_score\[1\] must be a probability"):
        calibration_report([0, 1], [0.5, 1.5])
    with pytest.raises(ValueError, match=r"y_true\[0\]"):
        calibration_report([3], [0.5])
    with pytest.raises(ValueError, match="at least one"):
        calibration_report([], [])
    with pytest.raises(ValueError, match="bins"):
        calibration_report([1], [0.5], bins=0)
