"""Expected measures against every label vector (exact), and their spread against simulation."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from driftwatch.core.blocks import delong
from driftwatch.core.estimation.expected import expected_auc, expected_confusion

# Probabilities on a grid of sixteenths (exact in binary), scores with ties.
predictions = st.lists(st.tuples(st.sampled_from([0.1, 0.2, 0.5]) | st.floats(0, 1),
                                 st.integers(0, 16).map(lambda k: k / 16), st.integers(0, 1)),
                       min_size=2, max_size=8)


def enumerate_labels(p: list[float]):  # type: ignore[no-untyped-def]
    """Every label vector with its exact probability."""
    for labels in itertools.product((0, 1), repeat=len(p)):
        weight = Fraction(1)
        for y, pi in zip(labels, p, strict=True):
            weight *= Fraction(pi) if y else 1 - Fraction(pi)
        if weight:
            yield labels, weight


def pair_counts(scores: list[float], labels: tuple[int, ...]) -> tuple[Fraction, int]:
    """U (ties ½) and D = P·N of one label vector, by definition."""
    u = Fraction(0)
    for i, j in itertools.permutations(range(len(scores)), 2):
        if labels[i] and not labels[j]:
            u += 1 if scores[i] > scores[j] else Fraction(1, 2) if scores[i] == scores[j] else 0
    positives = sum(labels)
    return u, positives * (len(labels) - positives)


@given(predictions)
def test_expected_auc_is_the_ratio_of_the_exact_expectations(
        events: list[tuple[float, float, int]]) -> None:
    scores, p = [s for s, _, _ in events], [q for _, q, _ in events]
    expected_u = expected_d = Fraction(0)
    for labels, weight in enumerate_labels(p):
        u, d = pair_counts(scores, labels)
        expected_u += weight * u
        expected_d += weight * d
    got = expected_auc(scores, p)
    if expected_d == 0:
        assert math.isnan(got.value)
    else:
        assert got.value == pytest.approx(float(expected_u / expected_d), abs=1e-12)


@given(predictions)
def test_expected_confusion_and_rates_are_exact_expectations(
        events: list[tuple[float, float, int]]) -> None:
    p, predicted = [q for _, q, _ in events], [y for _, _, y in events]
    moments = {name: [Fraction(0), Fraction(0)] for name in ("tp", "fp", "fn", "tn")}
    for labels, weight in enumerate_labels(p):
        cells = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
        for y, yhat in zip(labels, predicted, strict=True):
            cells[("t" if y == yhat else "f") + ("p" if yhat else "n")] += 1
        for name, count in cells.items():
            moments[name][0] += weight * count
            moments[name][1] += weight * count * count
    got = expected_confusion(p, predicted)
    for name, (mean, square) in moments.items():
        assert getattr(got, name) == pytest.approx(float(mean), abs=1e-12)
        variance = float(square - mean * mean)
        attribute = ("var_positive_predictions" if name in ("tp", "fp")
                     else "var_negative_predictions")
        assert getattr(got, attribute) == pytest.approx(variance, abs=1e-12)
    fnr = got.false_negative_rate
    total = float(moments["fn"][0] + moments["tp"][0])
    if total > 0:
        assert fnr.value == pytest.approx(float(moments["fn"][0]) / total, abs=1e-12)
    else:
        assert math.isnan(fnr.value)


def test_the_self_pairs_are_not_counted() -> None:
    # One prediction has no pair: E[P·N] = 0, not p(1 − p) as a trapezoid over the
    # expected ROC curve would count.
    assert math.isnan(expected_auc([0.3], [0.4]).value)
    # Two tied predictions: each ordered pair is a tie, E[U]/E[P·N] = ½ whatever p is.
    assert expected_auc([0.5, 0.5], [0.2, 0.9]).value == pytest.approx(0.5)


def test_probabilities_are_checked() -> None:
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        expected_auc([0.1, 0.2], [0.5, 1.5])
    with pytest.raises(ValueError, match="2 numbers"):
        expected_confusion([0.5, 0.5, 0.5], [1, 0])


@pytest.mark.parametrize(("n", "intercept"), [(60, -0.5), (400, -1.4), (1000, -3.3)])
def test_standard_errors_cover_the_realized_values(n: int, intercept: float) -> None:
    # Calibrated scores at positive shares of about 40 %, 20 % and 6 % (1:15): draw the
    # labels 2 000 times for fixed scores; the realized values' spread matches the standard
    # errors, and about 95 % fall within 1.96 standard errors of the estimate.
    rng = np.random.default_rng(n)
    x = rng.normal(size=n)
    p = 1.0 / (1.0 + np.exp(-(intercept + 1.5 * x)))
    scores = np.round(p, 3)  # ties
    predicted = (scores >= 0.5).astype(int)
    auc = expected_auc(scores, p)
    confusion = expected_confusion(p, predicted)
    fnr, fpr = confusion.false_negative_rate, confusion.false_positive_rate
    realized: dict[str, list[float]] = {"auc": [], "fnr": [], "fpr": []}
    for _ in range(2000):
        y = rng.random(n) < p
        if y.all() or not y.any():
            continue
        realized["auc"].append(delong(scores[y].tolist(), scores[~y].tolist())[0])
        realized["fnr"].append(float(np.mean(predicted[y] == 0)))
        realized["fpr"].append(float(np.mean(predicted[~y] == 1)))
    for name, estimate in (("auc", auc), ("fnr", fnr), ("fpr", fpr)):
        values = np.array(realized[name])
        assert np.std(values) == pytest.approx(estimate.standard_error, rel=0.1), name
        inside = np.mean(np.abs(values - estimate.value) <= 1.96 * estimate.standard_error)
        assert 0.93 <= inside <= 0.97, (name, inside)
        # The ratio of expectations is within a fraction of a standard error of the mean
        # realized value, and the second-order bias accounts for most of the gap.
        gap = float(np.mean(values)) - estimate.value
        assert abs(gap) < 0.1 * estimate.standard_error, (name, gap)
        assert abs(gap - estimate.bias) < 3 * np.std(values) / math.sqrt(values.size), name
