"""Tests for driftwatch.simulate: determinism, the statistics the streams promise, validation.

Statistical checks compare an empirical value with its population target within
``Z`` standard errors: Hanley & McNeil's (1982) standard error for AUC and the binomial one
for shares and rates. ``Z = 4`` means a correct generator fails one check with probability
about 6e-5, so the fixed seeds below did not have to be picked to pass, while a wrong
generator (say μ = Φ⁻¹(AUC), forgetting the √2, which turns AUC 0.9 into 0.82) fails by
tens of standard errors. The hypothesis property runs many draws, so it uses ``Z = 5``.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import driftwatch.simulate as simulate
import driftwatch.simulate.binormal as binormal
from driftwatch.core.events import Event
from driftwatch.core.join import Join, Label, Prediction
from driftwatch.simulate import (
    IMBALANCE_RATIOS,
    SCENARIOS,
    AucDropThenRatioChange,
    BinormalModel,
    ChangePoint,
    Composite,
    ConceptChange,
    CovariateShiftThenConceptChange,
    GradualAucDrop,
    MinMaj,
    RatioChange,
    RecurringRatio,
    Scenario,
    SimulatedStream,
    Stationary,
    SuddenAucDrop,
    delayed_labels,
    generate,
    positive_share_from_ratio,
)

Z = 4.0
Z_PROPERTY = 5.0


# -- statistical references ----------------------------------------------------------------


def empirical_auc(y_true: Sequence[int], y_score: Sequence[float]) -> float:
    """Mann–Whitney AUC from average ranks (ties count 1/2), checked against scikit-learn in
    ``test_empirical_auc_matches_sklearn``; numpy only, so it runs where sklearn is absent."""
    labels = np.asarray(y_true, dtype=bool)
    scores = np.asarray(y_score, dtype=float)
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ranks = (np.bincount(inverse, weights=ranks) / counts)[inverse]
    positives = int(labels.sum())
    negatives = len(labels) - positives
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def hanley_mcneil_se(auc: float, positives: int, negatives: int) -> float:
    """Standard error of the empirical AUC (Hanley & McNeil 1982, eq. 2). Symmetric in
    AUC ↔ 1 − AUC (swapping the classes' roles), so below 0.5 it uses the mirror image."""
    a = max(auc, 1.0 - auc)
    q1, q2 = a / (2.0 - a), 2.0 * a * a / (1.0 + a)
    variance = (a * (1.0 - a) + (positives - 1) * (q1 - a * a) + (negatives - 1) * (q2 - a * a)) / (
        positives * negatives
    )
    return math.sqrt(variance)


def binomial_se(p: float, n: int) -> float:
    return math.sqrt(p * (1.0 - p) / n)


def assert_auc(events: Sequence[Event], target: float, z: float = Z) -> float:
    labels = [event.y_true for event in events]
    positives = sum(labels)
    auc = empirical_auc(labels, [event.y_score for event in events])
    tolerance = z * hanley_mcneil_se(target, positives, len(labels) - positives)
    assert abs(auc - target) <= tolerance, (auc, target, tolerance)
    return auc


def assert_share(events: Sequence[Event], target: float, z: float = Z) -> float:
    share = sum(event.y_true for event in events) / len(events)
    tolerance = z * binomial_se(target, len(events))
    assert abs(share - target) <= tolerance, (share, target, tolerance)
    return share


# -- class ratios and the scoring model ----------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "share"),
    [
        ("1:15", 1 / 16),
        ("1:4", 0.2),
        ("1:1", 0.5),
        ("4:1", 0.8),
        ("15:1", 15 / 16),
        ("1:19", 0.05),
        (" 24 : 30 ", 24 / 54),
        ("0.5:1", 1 / 3),
    ],
)
def test_positive_share_from_ratio(ratio: str, share: float) -> None:
    assert positive_share_from_ratio(ratio) == pytest.approx(share, rel=1e-15)


def test_imbalance_ratios_are_paper_003s() -> None:
    shares = [positive_share_from_ratio(ratio) for ratio in IMBALANCE_RATIOS]
    assert shares == [1 / 16, 0.2, 0.5, 0.8, 15 / 16]


@pytest.mark.parametrize(
    "ratio", ["1/15", "1", "1:2:3", "0:1", "1:0", "-1:4", "a:b", "nan:1", "inf:1", "", 0.5]
)
def test_positive_share_from_bad_ratio_names_ratio(ratio: Any) -> None:
    with pytest.raises(ValueError, match=r"^ratio "):
        positive_share_from_ratio(ratio)


@pytest.mark.parametrize("auc", [0.01, 0.3, 0.5, 0.75, 0.9, 0.999])
def test_separation_gives_exactly_the_auc(auc: float) -> None:
    # Population AUC of the equal-variance binormal model is Φ(μ/√2).
    model = BinormalModel(auc=auc)
    assert binormal._STANDARD_NORMAL.cdf(model.separation / math.sqrt(2)) == pytest.approx(auc)
    assert (model.separation > 0) == (auc > 0.5)


def test_threshold_half_is_the_equal_error_point() -> None:
    model = BinormalModel(auc=0.9, positive_share=0.3)
    assert model.recall() == pytest.approx(model.specificity())
    assert model.recall() == pytest.approx(binormal._STANDARD_NORMAL.cdf(model.separation / 2))
    latent = replace(model, output="latent")
    assert latent.recall(0.0) == pytest.approx(model.recall(0.5))
    assert model.recall(0.7) < model.recall(0.5) and model.specificity(0.7) > model.specificity()


@pytest.mark.parametrize("output", ["probability", "calibrated"])
@pytest.mark.parametrize(("threshold", "share"), [(0.5, 0.3), (0.7, 0.3), (0.5, 1 / 16)])
def test_empirical_recall_and_specificity_match_the_model(threshold: float, share: float,
                                                          output: Any) -> None:
    # Calibrated scores move the latent cut of a threshold: (logit t − logit π) / μ.
    scenario = Stationary(length=40_000, auc=0.85, positive_share=share, output=output)
    events = list(scenario.events(seed=11))
    model = scenario.model_at(0)
    positives = [e for e in events if e.y_true == 1]
    negatives = [e for e in events if e.y_true == 0]
    recall = sum(e.y_score >= threshold for e in positives) / len(positives)
    specificity = sum(e.y_score < threshold for e in negatives) / len(negatives)
    expected_recall, expected_specificity = model.recall(threshold), model.specificity(threshold)
    assert abs(recall - expected_recall) <= Z * binomial_se(expected_recall, len(positives))
    assert abs(specificity - expected_specificity) <= Z * binomial_se(
        expected_specificity, len(negatives)
    )


def test_model_draw_matches_a_stationary_stream() -> None:
    model = BinormalModel(auc=0.8, positive_share=0.4)
    rng = random.Random(5)
    drawn = [model.draw(rng) for _ in range(50)]
    events = Stationary(length=50, auc=0.8, positive_share=0.4).events(seed=5)
    assert drawn == [(event.y_true, event.y_score) for event in events]


# -- determinism and the shape of events ---------------------------------------------------


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_seed_same_stream_different_seed_different_stream(name: str) -> None:
    first = list(generate(name, seed=42, length=500))
    assert first == list(generate(name, seed=42, length=500))
    assert first != list(generate(name, seed=43, length=500))


def test_stream_is_reiterable_and_lazy() -> None:
    stream = generate("stationary", seed=1, length=100)
    assert list(stream) == list(stream)
    assert len(stream) == 100
    assert next(iter(generate("stationary", seed=1, length=10**12))) == next(iter(stream))


def test_seeds_zero_one_and_their_negations_are_not_aliases() -> None:
    # random.Random(-1) == random.Random(1): negative seeds are refused rather than aliased.
    assert list(generate("stationary", seed=0, length=50)) != list(
        generate("stationary", seed=1, length=50)
    )
    with pytest.raises(ValueError, match=r"^seed "):
        generate("stationary", seed=-1)


def test_event_fields() -> None:
    scenario = Stationary(length=200, rate=4.0, start_ts=1_700_000_000.0)
    events = list(scenario.events(seed=3))
    assert len(events) == 200
    assert all(event.y_pred is None for event in events)
    assert [event.ts for event in events] == [1_700_000_000.0 + i / 4.0 for i in range(200)]
    assert all(0.0 < event.y_score < 1.0 for event in events)


def test_latent_output_is_the_logit_of_the_probability_output() -> None:
    probabilities = list(Stationary(length=500).events(seed=8))
    latents = list(Stationary(length=500, output="latent").events(seed=8))
    assert [e.y_true for e in probabilities] == [e.y_true for e in latents]
    for probability, latent in zip(probabilities, latents, strict=True):
        assert probability.y_score == pytest.approx(1 / (1 + math.exp(-latent.y_score)))


def test_streams_differing_after_a_change_point_agree_before_it() -> None:
    before = list(Stationary(length=1000).events(seed=9))
    after = list(SuddenAucDrop(length=1000, change_at=600).events(seed=9))
    assert before[:600] == after[:600]
    assert before[600:] != after[600:]


# -- the statistics the streams promise ----------------------------------------------------


def test_empirical_auc_matches_sklearn() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    events = list(generate("stationary", seed=2, length=3000))
    labels, scores = [e.y_true for e in events], [e.y_score for e in events]
    assert empirical_auc(labels, scores) == pytest.approx(metrics.roc_auc_score(labels, scores))
    tied = [round(score, 1) for score in scores]  # ties count 1/2 in both
    assert empirical_auc(labels, tied) == pytest.approx(metrics.roc_auc_score(labels, tied))


@pytest.mark.parametrize(
    ("auc", "share"),
    [(0.9, 0.3), (0.75, 1 / 16), (0.6, 0.8), (0.5, 0.5), (0.3, 0.5), (0.97, 15 / 16)],
)
def test_stationary_auc_and_share_match_their_targets(auc: float, share: float) -> None:
    events = list(generate("stationary", seed=1234, length=30_000, auc=auc, positive_share=share))
    assert_auc(events, auc)
    assert_share(events, share)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    auc=st.floats(0.05, 0.95),
    share=st.floats(0.1, 0.9),
    seed=st.integers(0, 2**32),
)
def test_stationary_auc_property(auc: float, share: float, seed: int) -> None:
    events = list(Stationary(length=3000, auc=auc, positive_share=share).events(seed))
    assert_auc(events, auc, z=Z_PROPERTY)
    assert_share(events, share, z=Z_PROPERTY)


def test_sudden_auc_drop_segments_match_their_targets() -> None:
    stream = generate("sudden_auc_drop", seed=77, length=40_000, change_at=15_000)
    (point,) = stream.change_points
    assert (point.index, point.kind, point.before, point.after) == (15_000, "auc", 0.9, 0.8)
    events = list(stream)
    before = assert_auc(events[: point.index], 0.9)
    after = assert_auc(events[point.index :], 0.8)
    assert before - after > 0.05
    assert_share(events[: point.index], 0.3)  # real drift only: the ratio is untouched
    assert_share(events[point.index :], 0.3)


def test_gradual_auc_drop_is_between_in_the_middle() -> None:
    scenario = GradualAucDrop(length=60_000, change_at=20_000, width=20_000)
    (point,) = scenario.change_points
    assert (point.index, point.end, point.sudden) == (20_000, 40_000, False)
    schedule = [scenario.auc_at(i) for i in range(point.index - 1, point.end + 1)]
    assert schedule[0] == 0.9 and schedule[-1] == pytest.approx(0.8)
    assert all(0.8 < value < 0.9 for value in schedule[1:-1])
    assert all(a > b for a, b in itertools.pairwise(schedule))
    events = list(scenario.events(seed=5))
    assert_auc(events[: point.index], 0.9)
    assert_auc(events[point.end :], 0.8)
    middle = events[25_000:35_000]
    tolerance = Z * hanley_mcneil_se(0.85, 3000, 7000)
    auc = assert_auc(middle, scenario.auc_at(30_000))
    assert 0.8 + tolerance < auc < 0.9 - tolerance


def test_ratio_change_moves_the_share_and_not_the_auc() -> None:
    stream = generate("ratio_change", seed=21, length=40_000, positive_share=0.5)
    (point,) = stream.change_points
    assert (point.index, point.kind, point.before, point.after) == (20_000, "ratio", 0.5, 1 / 16)
    events = list(stream)
    assert_auc(events[: point.index], 0.9)
    assert_auc(events[point.index :], 0.9)
    before = assert_share(events[: point.index], 0.5)
    after = assert_share(events[point.index :], 1 / 16)
    assert before - after > 100 * binomial_se(0.5, point.index)


def test_minmaj_swaps_the_classes_and_keeps_the_auc() -> None:
    stream = generate("minmaj", seed=4, length=40_000)
    (point,) = stream.change_points
    assert (point.kind, point.before, point.after) == ("ratio", 0.05, 0.95)
    events = list(stream)
    assert_share(events[: point.index], 0.05)
    assert_share(events[point.index :], 0.95)
    assert_auc(events[: point.index], 0.9)
    assert_auc(events[point.index :], 0.9)


def test_auc_drop_then_ratio_change_segments_match_their_targets() -> None:
    stream = generate("auc_drop_then_ratio_change", seed=12, length=40_000)
    drop, ratio = stream.change_points
    assert (drop.index, drop.kind, drop.before, drop.after) == (10_000, "auc", 0.9, 0.7)
    assert (ratio.index, ratio.kind, ratio.before, ratio.after) == (30_000, "ratio", 0.3, 1 / 16)
    events = list(stream)
    stable, dropped, rebalanced = events[:10_000], events[10_000:30_000], events[30_000:]
    assert_auc(stable, 0.9)
    assert_auc(dropped, 0.7)
    assert_auc(rebalanced, 0.7)  # the ratio change leaves the AUC where the drop put it
    assert_share(stable, 0.3)
    assert_share(dropped, 0.3)
    assert_share(rebalanced, 1 / 16)


def test_auc_drop_then_ratio_change_is_the_composite_of_its_parts() -> None:
    named = AucDropThenRatioChange(length=2000, drop=0.15, change_at=600,
                                   positive_share_after=0.1, ratio_change_at=1400)
    composite = Composite(length=2000, parts=(
        SuddenAucDrop(length=2000, drop=0.15, change_at=600),
        RatioChange(length=2000, positive_share_after=0.1, change_at=1400),
    ))
    assert named.change_points == composite.change_points
    assert list(named.events(seed=3)) == list(composite.events(seed=3))
    assert "parts" not in repr(named)  # derived from the parameters, not one of them
    assert named == replace(named)
    assert named != replace(named, drop=0.1)


def test_composite_chains_changes_of_one_kind() -> None:
    scenario = Composite(length=300, parts=(
        SuddenAucDrop(length=300, drop=0.1, change_at=100),
        SuddenAucDrop(length=300, auc=0.8, drop=0.1, change_at=200),
        MinMaj(length=300, positive_share=0.3, change_at=100),  # a ratio change may coincide
    ))
    assert [round(scenario.auc_at(i), 10) for i in (99, 100, 199, 200)] == [0.9, 0.8, 0.8, 0.7]
    assert [scenario.positive_share_at(i) for i in (99, 100, 299)] == [0.3, 0.7, 0.7]
    assert len(list(scenario.events(seed=0))) == 300


@pytest.mark.parametrize(
    "parts",
    [
        (),
        [SuddenAucDrop(length=100)],  # a list, not a tuple
        ("sudden_auc_drop",),
        (SuddenAucDrop(length=100, drop=0.1), SuddenAucDrop(length=100, drop=0.2)),  # no chain
        (SuddenAucDrop(length=100, auc=0.8, drop=0.1),),  # starts from an AUC it does not have
        (GradualAucDrop(length=100, change_at=40, width=20),
         SuddenAucDrop(length=100, auc=0.8, drop=0.1, change_at=50)),  # overlap
        (SuddenAucDrop(length=1000, change_at=500),),  # outside a stream of 100 events
    ],
)
def test_composite_rejects_bad_parts_naming_them(parts: Any) -> None:
    with pytest.raises(ValueError, match=r"^parts "):
        Composite(length=100, parts=parts)


def test_recurring_ratio_alternates_every_period() -> None:
    scenario = RecurringRatio(length=24_000, period=6000, positive_share=0.5)
    points = scenario.change_points
    assert [p.index for p in points] == [6000, 12_000, 18_000]
    assert [p.after for p in points] == [1 / 16, 0.5, 1 / 16]
    events = list(scenario.events(seed=6))
    for k, share in enumerate([0.5, 1 / 16, 0.5, 1 / 16]):
        assert_share(events[k * 6000 : (k + 1) * 6000], share)
    assert_auc(events, 0.9)


def test_defaults_are_the_documented_ones() -> None:
    stream = generate("sudden_auc_drop", seed=0)
    assert len(stream) == 20_000
    assert stream.change_points == (ChangePoint(10_000, "auc", 0.9, 0.8, 10_000),)
    assert stream.scenario.positive_share == 0.3
    assert GradualAucDrop().change_points == (ChangePoint(10_000, "auc", 0.9, 0.8, 12_000),)
    assert RatioChange().change_points == (ChangePoint(10_000, "ratio", 0.3, 1 / 16, 10_000),)
    assert MinMaj().change_points == (ChangePoint(10_000, "ratio", 0.05, 0.95, 10_000),)
    assert [p.index for p in RecurringRatio().change_points] == [5000, 10_000, 15_000]
    assert AucDropThenRatioChange().change_points == (
        ChangePoint(5000, "auc", 0.9, 0.7, 5000),
        ChangePoint(15_000, "ratio", 0.3, 1 / 16, 15_000),
    )


# -- calibrated scores, covariate shift and concept change ---------------------------------


def calibration_z(events: Sequence[Event], bins: int = 10) -> list[float]:
    """Per score bin of width 1/bins: (positives − Σ score) / √Σ score·(1 − score). Given
    the scores, calibrated labels are independent Bernoulli(score) draws, so each is a
    standardized sum of independent terms with exactly that mean and variance: about
    N(0, 1) in every bin of a few hundred events, whatever the score distribution."""
    sums = np.zeros((3, bins))
    for event in events:
        k = min(int(event.y_score * bins), bins - 1)
        sums[:, k] += (event.y_true, event.y_score, event.y_score * (1.0 - event.y_score))
    return [float((pos - mean) / math.sqrt(var))
            for pos, mean, var in sums.T if var > 25.0]  # bins with ≥ ~100 events


@pytest.mark.parametrize(("auc", "share"), [(0.9, 0.3), (0.7, 0.3), (0.85, 1 / 16), (0.6, 0.8)])
def test_calibrated_scores_are_the_positive_share_of_their_bin(auc: float, share: float) -> None:
    # 100 000 events: every populated bin's positives within Z standard errors of Σ score
    # (about 0.004 in share for a bin of 10 000 events). The logistic of the latent score,
    # the default output, is not calibrated: the same check fails it by far.
    events = list(generate("stationary", seed=3, length=100_000, auc=auc,
                           positive_share=share, output="calibrated"))
    zs = calibration_z(events)
    assert len(zs) >= 3 and all(abs(z) <= Z for z in zs), zs
    assert_auc(events, auc)  # calibration is monotone: the AUC is the model's
    raw = list(generate("stationary", seed=3, length=100_000, auc=auc, positive_share=share))
    assert max(abs(z) for z in calibration_z(raw)) > 10 * Z


def test_calibrated_score_is_the_posterior_by_bayes_rule() -> None:
    # Worked numbers: P(y = 1 | x) from the two normal densities and the prior, directly.
    model = BinormalModel(auc=0.8, positive_share=0.2, output="calibrated")
    m = model.separation / 2.0
    for x in (-2.0, -0.3, 0.0, 1.7):
        positive = 0.2 * math.exp(-((x - m) ** 2) / 2)
        negative = 0.8 * math.exp(-((x + m) ** 2) / 2)
        assert model.score(x) == pytest.approx(positive / (positive + negative), rel=1e-12)
    # The threshold's latent cut inverts the score, so recall and specificity hold for it.
    for t in (0.1, 0.5, 0.77):
        assert model.score(model._latent_cut(t)) == pytest.approx(t, rel=1e-12)


def test_covariate_shift_moves_the_scores_and_keeps_them_calibrated() -> None:
    stream = generate("covariate_shift_then_concept_change", seed=5, length=150_000,
                      change_at=50_000, concept_at=149_999)
    events = list(stream)
    before, after = events[:50_000], events[50_000:149_999]
    for segment, auc in ((before, 0.9), (after, 0.8)):
        zs = calibration_z(segment)
        assert all(abs(z) <= Z for z in zs), zs  # P(label | score) = score on both sides
        assert_auc(segment, auc)
    # The scores moved: more of them in the uncertain middle after the shift.
    middle = [sum(0.3 <= e.y_score < 0.7 for e in seg) / len(seg) for seg in (before, after)]
    assert middle[1] > middle[0] + 0.05, middle


def test_concept_change_flips_the_labels_of_its_band_and_nothing_else() -> None:
    # Exact: the same draws as the scenario without it; from change_at on, labels of scores
    # in [band_low, band_high) are flipped, every score and every other label unchanged.
    common = dict(length=20_000, auc=0.8, output="calibrated")
    changed = list(generate("concept_change", seed=9, change_at=7000, band_low=0.4,
                            band_high=0.7, **common))
    plain = list(generate("stationary", seed=9, **common))
    flipped = 0
    for index, (event, reference) in enumerate(zip(changed, plain, strict=True)):
        assert event.y_score == reference.y_score and event.ts == reference.ts
        in_band = index >= 7000 and 0.4 <= reference.y_score < 0.7
        assert event.y_true == (1 - reference.y_true if in_band else reference.y_true)
        flipped += in_band
    assert flipped > 1000
    # Before the change the scores are calibrated; inside the band after it they are not.
    assert all(abs(z) <= Z for z in calibration_z(changed[:7000]))
    assert max(abs(z) for z in calibration_z(changed[7000:])) > 3 * Z


@pytest.mark.parametrize(("auc", "share", "band", "output"), [
    (0.8, 0.3, (0.5, 0.9), "calibrated"),
    (0.9, 0.3, (0.5, 0.8), "calibrated"),
    (0.7, 1 / 16, (0.1, 0.3), "calibrated"),
    (0.9, 0.5, (0.6, 0.95), "probability"),
    (0.75, 0.4, (-0.5, 1.0), "latent"),
])
def test_flipped_auc_is_the_auc_of_the_flipped_stream(
    auc: float, share: float, band: tuple[float, float], output: str
) -> None:
    scenario = ConceptChange(length=200_000, auc=auc, positive_share=share, output=output,
                             band_low=band[0], band_high=band[1], change_at=1)
    (point,) = scenario.change_points
    assert point.before == auc and point.band == band
    assert_auc(list(SimulatedStream(scenario, seed=2))[1:], point.after)


def test_flipped_auc_limits() -> None:
    model = BinormalModel(auc=0.85, positive_share=0.3, output="calibrated")
    # Every label flipped: the ranking is reversed exactly.
    assert model.flipped_auc(1e-15, 1 - 1e-15) == pytest.approx(0.15, abs=1e-5)
    # A band holding almost nothing changes nothing.
    assert model.flipped_auc(0.999999, 0.9999999) == pytest.approx(0.85, abs=1e-5)
    with pytest.raises(ValueError, match=r"^low must be below high"):
        model.flipped_auc(0.6, 0.4)


def test_covariate_shift_then_concept_change_is_the_composite_of_its_parts() -> None:
    scenario = CovariateShiftThenConceptChange(length=30_000)
    assert scenario.output == "calibrated"
    assert [p.kind for p in scenario.change_points] == ["auc", "concept"]
    shift, concept = scenario.change_points
    assert (shift.index, shift.before, shift.after) == (10_000, 0.9, pytest.approx(0.8))
    assert (concept.index, concept.before, concept.band) == (20_000, shift.after, (0.5, 0.9))
    assert concept.after == pytest.approx(0.699, abs=1e-3)
    assert scenario.auc_at(25_000) == shift.after  # the scores' model keeps its AUC
    assert scenario.labels_auc_at(19_999) == shift.after  # ... the labels do not
    assert scenario.labels_auc_at(20_000) == concept.after
    assert scenario.labels_auc_at(9_999) == scenario.auc_at(9_999) == 0.9


# -- every registered scenario (a new one is tested as soon as it is registered) ------------


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("length", [5, 997, 20_000])
def test_registered_scenario_schedule_agrees_with_its_change_points(name: str, length: int) -> None:
    scenario = generate(name, seed=0, length=length).scenario
    assert scenario.name == name and SCENARIOS[name] is type(scenario)
    value_at = {"auc": scenario.auc_at, "ratio": scenario.positive_share_at}
    other_at = {"auc": scenario.positive_share_at, "ratio": scenario.auc_at}
    assert scenario.auc_at(0) == scenario.auc
    assert scenario.positive_share_at(0) == scenario.positive_share
    for point in scenario.change_points:
        assert 0 < point.index <= point.end <= length and point.index < length
        if point.kind == "concept":  # the labels change, the scores' schedule does not
            assert point.sudden and point.band is not None
            assert scenario.auc_at(point.index - 1) == point.before
            assert scenario.auc_at(point.index) == point.before
            assert scenario.positive_share_at(point.index - 1) == \
                scenario.positive_share_at(point.index)
            continue
        assert value_at[point.kind](point.index - 1) == point.before
        if point.end < length:
            assert value_at[point.kind](point.end) == pytest.approx(point.after)
        if point.sudden:
            assert value_at[point.kind](point.index) == point.after
        else:
            assert min(point.before, point.after) < value_at[point.kind](point.index)
            assert value_at[point.kind](point.index) < max(point.before, point.after)
        assert other_at[point.kind](point.index - 1) == other_at[point.kind](point.index)
    # Outside the change points' [index, end] nothing moves.
    for at in (scenario.auc_at, scenario.positive_share_at):
        for i in range(length - 1):
            if not any(p.index <= i + 1 <= p.end for p in scenario.change_points
                       if p.kind != "concept"):
                assert at(i) == at(i + 1), (name, i)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_registered_scenario_generates_its_length(name: str) -> None:
    stream = generate(name, seed=1, length=300)
    events = list(stream)
    assert len(events) == 300 and all(isinstance(e, Event) for e in events)
    assert isinstance(stream, SimulatedStream) and isinstance(stream.scenario, Scenario)


# -- validation ----------------------------------------------------------------------------


BAD_PARAMETERS: list[tuple[str, dict[str, Any], str]] = [
    ("stationary", {"auc": 0.0}, "auc"),
    ("stationary", {"auc": 1.0}, "auc"),
    ("stationary", {"auc": 1.5}, "auc"),
    ("stationary", {"auc": math.nan}, "auc"),
    ("stationary", {"auc": "0.9"}, "auc"),
    ("stationary", {"auc": True}, "auc"),
    ("stationary", {"positive_share": 0.0}, "positive_share"),
    ("stationary", {"positive_share": 1.0}, "positive_share"),
    ("stationary", {"positive_share": -0.2}, "positive_share"),
    ("stationary", {"length": 0}, "length"),
    ("stationary", {"length": 2.5}, "length"),
    ("stationary", {"rate": 0.0}, "rate"),
    ("stationary", {"rate": math.inf}, "rate"),
    ("stationary", {"start_ts": math.nan}, "start_ts"),
    ("stationary", {"output": "score"}, "output"),
    ("sudden_auc_drop", {"change_at": 0}, "change_at"),
    ("sudden_auc_drop", {"change_at": 20_000}, "change_at"),
    ("sudden_auc_drop", {"change_at": -5}, "change_at"),
    ("sudden_auc_drop", {"change_at": 5000.0}, "change_at"),
    ("sudden_auc_drop", {"length": 1}, "change_at"),
    ("sudden_auc_drop", {"drop": 0.0}, "drop"),
    ("sudden_auc_drop", {"drop": -0.1}, "drop"),
    ("sudden_auc_drop", {"drop": 0.9}, "drop"),
    ("gradual_auc_drop", {"drop": 1.0}, "drop"),
    ("gradual_auc_drop", {"change_at": 20_000}, "change_at"),
    ("gradual_auc_drop", {"width": 0}, "width"),
    ("gradual_auc_drop", {"width": 10_001}, "width"),
    ("gradual_auc_drop", {"change_at": 19_000, "width": 1001}, "width"),
    ("ratio_change", {"positive_share_after": 0.3}, "positive_share_after"),
    ("ratio_change", {"positive_share_after": 1.0}, "positive_share_after"),
    ("ratio_change", {"change_at": 0}, "change_at"),
    ("minmaj", {"positive_share": 0.5}, "positive_share"),
    ("minmaj", {"positive_share": 1.0}, "positive_share"),
    ("recurring_ratio", {"period": 0}, "period"),
    ("recurring_ratio", {"period": 20_000}, "period"),
    ("recurring_ratio", {"positive_share_alternate": 0.3}, "positive_share_alternate"),
    ("recurring_ratio", {"positive_share_alternate": 0.0}, "positive_share_alternate"),
    ("auc_drop_then_ratio_change", {"drop": 0.9}, "drop"),
    ("auc_drop_then_ratio_change", {"change_at": 0}, "change_at"),
    ("auc_drop_then_ratio_change", {"change_at": 2.5}, "change_at"),
    ("auc_drop_then_ratio_change", {"length": 3}, "change_at"),
    ("auc_drop_then_ratio_change", {"change_at": 15_000}, "ratio_change_at"),
    ("auc_drop_then_ratio_change", {"ratio_change_at": 20_000}, "ratio_change_at"),
    ("auc_drop_then_ratio_change", {"positive_share_after": 0.3}, "positive_share_after"),
    ("auc_drop_then_ratio_change", {"positive_share_after": 1.0}, "positive_share_after"),
    ("stationary", {"auc": 0.5, "output": "calibrated"}, "auc"),
    ("sudden_auc_drop", {"drop": 0.45, "output": "calibrated"}, "drop"),
    ("gradual_auc_drop", {"auc": 0.7, "drop": 0.3, "output": "calibrated"}, "drop"),
    ("concept_change", {"band_low": 0.0}, "band_low"),
    ("concept_change", {"band_high": 1.0}, "band_high"),
    ("concept_change", {"band_low": 0.7, "band_high": 0.6}, "band_high"),
    ("concept_change", {"change_at": 0}, "change_at"),
    ("covariate_shift_then_concept_change", {"drop": 0.45}, "drop"),
    ("covariate_shift_then_concept_change", {"concept_at": 100}, "concept_at"),
    ("covariate_shift_then_concept_change", {"change_at": 0}, "change_at"),
    ("covariate_shift_then_concept_change", {"band_low": 0.95}, "band_high"),
]


@pytest.mark.parametrize(("name", "params", "parameter"), BAD_PARAMETERS)
def test_bad_parameters_raise_value_error_naming_them(
    name: str, params: dict[str, Any], parameter: str
) -> None:
    with pytest.raises(ValueError, match=rf"^{parameter} "):
        generate(name, seed=0, **params)
    with pytest.raises(ValueError, match=rf"^{parameter} "):
        SCENARIOS[name](**params)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "1", None])
def test_bad_seed(seed: Any) -> None:
    with pytest.raises(ValueError, match=r"^seed "):
        generate("stationary", seed=seed)
    with pytest.raises(ValueError, match=r"^seed "):
        Stationary().events(seed)
    with pytest.raises(ValueError, match=r"^seed "):
        SimulatedStream(Stationary(), seed=seed)


def test_unknown_scenario_and_parameter() -> None:
    with pytest.raises(ValueError, match=r"^name must be one of"):
        generate("sudden_drop", seed=0)
    with pytest.raises(ValueError, match="unknown parameter 'width'"):
        generate("sudden_auc_drop", seed=0, width=10)


@pytest.mark.parametrize("index", [-1, 100, 1.0, True])
def test_schedule_index_outside_the_stream(index: Any) -> None:
    with pytest.raises(ValueError, match=r"^index "):
        Stationary(length=100).auc_at(index)
    with pytest.raises(ValueError, match=r"^index "):
        Stationary(length=100).positive_share_at(index)


@pytest.mark.parametrize(
    ("output", "threshold"),
    [("probability", 0.0), ("probability", 1.0), ("latent", math.inf), ("latent", "0")],
)
def test_bad_threshold(output: Any, threshold: Any) -> None:
    with pytest.raises(ValueError, match=r"^threshold "):
        BinormalModel(output=output).recall(threshold)


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"auc": 1.0}, "auc"),
        ({"positive_share": 0.0}, "positive_share"),
        ({"output": "x"}, "output"),
    ],
)
def test_bad_model_parameters(params: dict[str, Any], parameter: str) -> None:
    with pytest.raises(ValueError, match=rf"^{parameter} "):
        BinormalModel(**params)


def test_scenarios_are_frozen_values() -> None:
    scenario = SuddenAucDrop(length=100, change_at=30)
    with pytest.raises(AttributeError):
        scenario.change_at = 40  # type: ignore[misc]
    assert scenario == SuddenAucDrop(length=100, change_at=30)
    assert hash(scenario) == hash(SuddenAucDrop(length=100, change_at=30))


# -- documentation and purity --------------------------------------------------------------


def test_imports_only_the_standard_library_and_the_event() -> None:
    allowed = {
        "__future__",
        "math",
        "random",
        "abc",
        "bisect",
        "collections.abc",
        "dataclasses",
        "functools",
        "itertools",
        "statistics",
        "typing",
        "driftwatch.core.events",
        "heapq",  # delayed labels: the labels not yet due
        "driftwatch.core.join",  # the Prediction and Label records (pure values)
    }
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for path in Path(simulate.__file__).parent.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    own = {name for name in imported if name and name.startswith("driftwatch.simulate.")}
    assert own, "the walk reads the package's modules"
    assert imported - own <= allowed, imported - own - allowed


# -- delayed labels ----------------------------------------------------------------------------


@pytest.mark.parametrize("delay", ["fixed", "exponential", "lognormal"])
def test_delayed_labels_join_back_to_the_events(delay: str) -> None:
    events = list(generate("sudden_auc_drop", seed=5, length=3000))
    records = list(delayed_labels(events, seed=9, delay=delay, mean_delay=40.0))
    assert records == list(delayed_labels(events, seed=9, delay=delay, mean_delay=40.0))
    assert [r.ts for r in records] == sorted(r.ts for r in records)
    predictions = [r for r in records if isinstance(r, Prediction)]
    labels = [r for r in records if isinstance(r, Label)]
    assert len(predictions) == len(labels) == len(events)
    delays = [lab.ts - events[int(lab.event_id[1:])].ts for lab in labels]
    assert statistics.fmean(delays) == pytest.approx(40.0, rel=0.0 if delay == "fixed" else 0.1)
    join = Join(max_age=math.inf, max_label_age=math.inf)
    pairs = [p for r in records if (p := (join.add_prediction(r) if isinstance(r, Prediction)
                                          else join.add_label(r))) is not None]
    # Every event comes back whole, in the order its label arrived, stamped with the
    # label's time, and keeps its prediction time.
    assert [(p.event(), p.prediction_ts) for p in pairs] == [
        (replace(events[int(lab.event_id[1:])], ts=lab.ts), events[int(lab.event_id[1:])].ts)
        for lab in labels]
    assert [p.label_ts for p in pairs] == sorted(p.label_ts for p in pairs)


def test_delayed_labels_leave_a_share_unlabelled() -> None:
    records = list(delayed_labels(generate("stationary", seed=1, length=4000), seed=2,
                                  unlabelled=0.25))
    assert sum(isinstance(r, Label) for r in records) == pytest.approx(3000, abs=120)


@pytest.mark.parametrize(("params", "message"), [
    ({"delay": "uniform"}, "delay"),
    ({"mean_delay": -1.0}, "mean_delay"),
    ({"sigma": 0.0}, "sigma"),
    ({"unlabelled": 1.5}, "unlabelled"),
    ({"seed": -1}, "seed"),
])
def test_delayed_labels_refuse_bad_parameters(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        list(delayed_labels([], **{"seed": 1, **params}))


# -- records: the events as the agent reads them ----------------------------------------------


def test_record_defaults_are_the_default_settings() -> None:
    from driftwatch.decoding.decoder import EventFormat
    from driftwatch.decoding.joinable import JoinFormat
    from driftwatch.settings import Settings
    from driftwatch.simulate.records import DEFAULT_FORMAT, DEFAULT_JOIN

    settings = Settings()
    for fmt, reference in ((DEFAULT_FORMAT, settings.events.event_format()),
                           (DEFAULT_JOIN, settings.join.join_format())):
        names = [f.name for f in dataclasses.fields(fmt)]
        assert names
        for name in names:
            assert getattr(fmt, name) == getattr(reference, name), name
    assert isinstance(settings.events.event_format(), EventFormat)
    assert isinstance(settings.join.join_format(), JoinFormat)


@pytest.mark.parametrize("custom", [False, True])
def test_records_decode_back_to_the_events(custom: bool) -> None:
    import json

    from driftwatch.decoding.decoder import Decoded, EventFormat, decode

    fmt = EventFormat(label_field="y", score_field="p", time_field="time", model_field="m",
                      positive_label="fraud", negative_label="ok") if custom else EventFormat()
    stream = generate("sudden_auc_drop", seed=4, length=300, start_ts=1_700_000_000.0)
    records = list(stream.records(model="churn", fmt=fmt if custom else None))

    assert len(records) == 300
    if not custom:
        assert set(records[0]) == {"label", "score", "ts", "model"}
    decoded = [decode(json.dumps(r).encode(), None, fmt) for r in records]
    assert decoded == [Decoded("churn", event) for event in stream]


def test_records_of_the_two_stream_form_decode_back() -> None:
    import json

    from driftwatch.decoding.decoder import EventFormat
    from driftwatch.decoding.joinable import JoinFormat, decode_joinable
    from driftwatch.simulate import joinable_record

    fmt, join = EventFormat(), JoinFormat(kind_field="kind")
    stream = generate("stationary", seed=2, length=50, start_ts=1_700_000_000.0)
    records = list(delayed_labels(stream, seed=3, model="churn", mean_delay=10.0))
    values = [joinable_record(r, fmt, join) for r in records]

    assert {v["kind"] for v in values} == {"prediction", "label"}
    assert [decode_joinable(json.dumps(v).encode(), None, fmt, join, None, None)
            for v in values] == records
