"""Calibration maps: PAV against brute force and scikit-learn, the identity's refusals, state."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.isotonic import IsotonicRegression

from driftwatch.core.estimation.calibration import (
    IdentityCalibration,
    IsotonicCalibration,
    calibration_from_state,
    pav,
)

labelled = st.lists(st.tuples(st.integers(0, 1), st.sampled_from([0.1, 0.2, 0.3, 0.5, 0.9])
                              | st.floats(0, 1)), min_size=1, max_size=20)


def brute_isotonic(labels: list[int], scores: list[float]) -> dict[float, Fraction]:
    """The least-squares non-decreasing fit over the distinct scores, by its min-max formula:
    f(x_i) = max over a ≤ i of min over b ≥ i of mean(y over x_a … x_b) (Barlow et al. 1972,
    Theorem 1.4), in exact fractions."""
    xs = sorted(set(scores))
    sums = [sum(y for y, s in zip(labels, scores, strict=True) if s == x) for x in xs]
    counts = [scores.count(x) for x in xs]
    fit = {}
    for i, x in enumerate(xs):
        fit[x] = max(min(Fraction(sum(sums[a:b + 1]), sum(counts[a:b + 1]))
                         for b in range(i, len(xs))) for a in range(i + 1))
    return fit


@given(labelled)
def test_pav_is_the_least_squares_isotonic_fit(events: list[tuple[int, float]]) -> None:
    labels, scores = [y for y, _ in events], [s for _, s in events]
    blocks = pav(labels, scores)
    fit = brute_isotonic(labels, scores)
    for block in blocks:
        for x in fit:
            if block.first <= x <= block.last:
                assert Fraction(block.positives, block.events) == fit[x]
    # Blocks tile the distinct scores, probabilities strictly increase, counts add up.
    assert sum(b.events for b in blocks) == len(events)
    assert sum(b.positives for b in blocks) == sum(labels)
    probabilities = [Fraction(b.positives, b.events) for b in blocks]
    assert all(a < b for a, b in itertools.pairwise(probabilities))
    assert all(a.last < b.first for a, b in itertools.pairwise(blocks))


# scikit-learn merges scores less than its float resolution (1e-15) apart before fitting;
# driftwatch groups exactly equal scores only. On scores at least 1e-3 apart the two agree.
spaced = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1000).map(lambda k: k / 1000)),
                  min_size=1, max_size=20)


@given(spaced, st.lists(st.floats(-0.5, 1.5), min_size=1, max_size=10))
def test_isotonic_calibration_equals_scikit_learn(events: list[tuple[int, float]],
                                                  queries: list[float]) -> None:
    labels, scores = [y for y, _ in events], [s for _, s in events]
    calibration = IsotonicCalibration.fit(labels, scores)
    reference = IsotonicRegression(out_of_bounds="clip").fit(scores, labels)
    expected = reference.predict(np.array(queries + scores))
    got = [calibration.probability(q) for q in queries + scores]
    assert got == pytest.approx(expected.tolist(), abs=1e-12)


def test_pav_pools_ties_and_violations_on_worked_numbers() -> None:
    # Scores 1, 2, 2, 3, 4 with labels 1, 0, 1, 0, 1: the tie at 2 is one group (1 of 2),
    # then 1/1 > 1/2 > 0/1 pool into 2 of 4 for scores 1…3.
    blocks = pav([1, 0, 1, 0, 1], [1.0, 2.0, 2.0, 3.0, 4.0])
    assert [(b.first, b.last, b.positives, b.events) for b in blocks] == [
        (1.0, 3.0, 2, 4), (4.0, 4.0, 1, 1)]
    calibration = IsotonicCalibration.fit([1, 0, 1, 0, 1], [1.0, 2.0, 2.0, 3.0, 4.0])
    assert calibration.knots == [(1.0, 0.5), (3.0, 0.5), (4.0, 1.0)]
    assert calibration.probability(3.5) == 0.75


def test_pav_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match=r"y_true\[1\]"):
        pav([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"y_score\[0\]"):
        pav([0], [float("nan")])
    with pytest.raises(ValueError, match="differ in length"):
        pav([0, 1], [0.1])
    with pytest.raises(ValueError, match="at least one"):
        IsotonicCalibration.fit([], [])


def test_identity_refuses_scores_that_are_not_probabilities() -> None:
    identity = IdentityCalibration()
    assert identity.probability(0.0) == 0.0 and identity.probability(1.0) == 1.0
    for bad in (-0.01, 1.01, float("nan")):
        with pytest.raises(ValueError, match="y_score must be a probability"):
            identity.probability(bad)


def test_state_round_trip_and_refusals() -> None:
    fitted = IsotonicCalibration.fit([0, 1, 0, 1, 1], [0.1, 0.2, 0.3, 0.4, 0.6])
    restored = calibration_from_state(fitted.export_state())
    assert isinstance(restored, IsotonicCalibration) and restored.knots == fitted.knots
    assert isinstance(calibration_from_state(IdentityCalibration().export_state()),
                      IdentityCalibration)
    state = fitted.export_state()
    with pytest.raises(ValueError, match="kind"):
        calibration_from_state({**state, "kind": "platt"})
    with pytest.raises(ValueError, match="strictly increase"):
        calibration_from_state({**state, "scores": [0.5, 0.1, 0.2, 0.4, 0.6]})
    with pytest.raises(ValueError, match="never decrease"):
        calibration_from_state({**state, "probabilities": [1.0, 0.0, 0.5, 1.0, 1.0]})
    with pytest.raises(ValueError, match="missing keys"):
        calibration_from_state({"version": 1})
