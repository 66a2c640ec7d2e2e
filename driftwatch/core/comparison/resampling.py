"""The AUC difference under Bifet et al.'s (2015) validation schemes (§3): a bootstrap
confidence interval
(every event gets a Poisson(1) weight in each of k replicates) and per-fold AUCs of its k-fold
scheme, whose paired values the block tests (:mod:`~driftwatch.core.comparison.sign_test`,
:mod:`~driftwatch.core.comparison.wilcoxon`) take. Differences are challenger − champion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from driftwatch.core.comparison.inputs import (
    FloatArray,
    check_labels,
    check_level,
    check_scores,
)


def _score_groups(scores: FloatArray) -> tuple[npt.NDArray[np.intp], int]:
    """Each event's index among the distinct scores, ascending, and the number of them."""
    distinct, inverse = np.unique(scores, return_inverse=True)
    return inverse.reshape(-1), int(distinct.size)


def _weighted_auc(
    groups: npt.NDArray[np.intp], size: int, positive: npt.NDArray[np.bool_], weights: FloatArray
) -> float:
    """AUC with every event counted ``weights`` times (ties ½); NaN without both classes.

    Per distinct score g, wp[g] and wn[g] are the weights of the positives and negatives
    scored g; the pairs a positive at g wins are the negatives below g plus half those at g.
    """
    wp = np.bincount(groups, weights=np.where(positive, weights, 0.0), minlength=size)
    wn = np.bincount(groups, weights=np.where(positive, 0.0, weights), minlength=size)
    total_p, total_n = float(wp.sum()), float(wn.sum())
    if total_p == 0.0 or total_n == 0.0:
        return math.nan
    below = np.cumsum(wn) - wn
    return float(np.dot(wp, below + wn / 2.0)) / (total_p * total_n)


@dataclass(frozen=True, slots=True)
class BootstrapResult:
    """A percentile bootstrap interval for the AUC difference (challenger − champion).

    ``difference`` is the difference on the events themselves; ``low``/``high`` the
    (1 − confidence)/2 and (1 + confidence)/2 quantiles of the replicates' differences
    (linear interpolation between order statistics); ``standard_error`` their standard
    deviation. ``replicates`` holds each replicate's difference (NaN for a replicate whose
    weights left out a class entirely; those are left out of the interval and counted in
    ``undefined``).
    """

    difference: float
    low: float
    high: float
    standard_error: float
    confidence: float
    replicates: tuple[float, ...]
    undefined: int


def bootstrap_auc_difference(
    y_true: object,
    champion: object,
    challenger: object,
    *,
    replicates: int = 200,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Bootstrap confidence interval for the AUC difference, Bifet et al.'s (2015) bootstrap scheme.

    Bifet et al. 2015 (§3) recommends *k-fold distributed bootstrap validation*: each event enters
    each of k replicates with a Poisson(1) weight (Oza and Russell's online bagging), which
    simulates sampling the stream with replacement one event at a time, without storing it.
    driftwatch scores deployed models, so there is nothing to train: each replicate *tests*
    both models on the same weighted events, and the spread of the replicates' AUC
    differences is the difference's sampling distribution. Both models share each
    replicate's weights, which keeps the pairing (the correlation of the two AUCs) that
    DeLong's variance also accounts for. O(n log n) to group the scores once, then O(n) per
    replicate.

    Parameters:
        y_true, champion, challenger: as for :func:`delong`.
        replicates: k, the number of bootstrap replicates (≥ 2).
        confidence: the interval's coverage, in (0, 1).
        seed: seeds numpy's generator; the same seed gives the same interval.
    """
    positive = check_labels(y_true)
    n = positive.size
    a = check_scores(champion, "champion", n)
    b = check_scores(challenger, "challenger", n)
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 2:
        raise ValueError(f"replicates must be an integer ≥ 2, got {replicates!r}")
    check_level(confidence)
    groups_a, size_a = _score_groups(a)
    groups_b, size_b = _score_groups(b)
    ones = np.ones(n, dtype=np.float64)
    difference = _weighted_auc(groups_b, size_b, positive, ones) - _weighted_auc(
        groups_a, size_a, positive, ones
    )
    rng = np.random.default_rng(seed)
    values = np.empty(replicates, dtype=np.float64)
    for r in range(replicates):
        weights = rng.poisson(1.0, n).astype(np.float64)
        values[r] = _weighted_auc(groups_b, size_b, positive, weights) - _weighted_auc(
            groups_a, size_a, positive, weights
        )
    defined = values[~np.isnan(values)]
    undefined = replicates - int(defined.size)
    if defined.size < 2:
        low = high = se = math.nan
    else:
        tail = (1.0 - confidence) / 2.0
        low, high = (float(x) for x in np.quantile(defined, [tail, 1.0 - tail]))
        se = float(defined.std(ddof=1))
    return BootstrapResult(
        difference, low, high, se, confidence, tuple(float(v) for v in values), undefined
    )


@dataclass(frozen=True, slots=True)
class FoldAUCs:
    """Each fold's AUC for both models, for :func:`sign_test` / :func:`wilcoxon_signed_rank`."""

    champion: tuple[float, ...]
    challenger: tuple[float, ...]


def fold_aucs(
    y_true: object, champion: object, challenger: object, *, folds: int = 10, seed: int = 0
) -> FoldAUCs:
    """Both models' AUC on each of k random folds: Bifet et al.'s (2015) k-fold
    cross-validation scheme.

    Bifet et al. 2015 (§3) assigns each event to one of k classifier instances, chosen at random, to
    be tested on. Here each event is tested in one fold chosen uniformly at random, and each
    fold's AUC is computed for both models on the same events: k paired values, the unit
    the paper's sign and Wilcoxon tests count (§4). A fold without both classes gets NaN,
    which both tests leave out.
    """
    positive = check_labels(y_true)
    n = positive.size
    a = check_scores(champion, "champion", n)
    b = check_scores(challenger, "challenger", n)
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise ValueError(f"folds must be an integer ≥ 2, got {folds!r}")
    assignment = np.random.default_rng(seed).integers(0, folds, n)
    groups_a, size_a = _score_groups(a)
    groups_b, size_b = _score_groups(b)
    champion_values, challenger_values = [], []
    for fold in range(folds):
        weights = (assignment == fold).astype(np.float64)
        champion_values.append(_weighted_auc(groups_a, size_a, positive, weights))
        challenger_values.append(_weighted_auc(groups_b, size_b, positive, weights))
    return FoldAUCs(tuple(champion_values), tuple(challenger_values))
