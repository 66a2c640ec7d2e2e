"""The scoring model of the simulator: the equal-variance binormal model of ROC analysis.

A latent score ``x`` is drawn from N(−μ/2, 1) for negatives and N(+μ/2, 1) for positives,
with μ = √2 · Φ⁻¹(AUC), so that the population AUC, P(x⁺ > x⁻) = Φ(μ / √2), is exactly the
requested value; the positive share is independent of the scores (see :class:`BinormalModel`
and the package docstring of :mod:`driftwatch.simulate`, which cites the papers). Also the
checks of the simulator's parameters, shared by its modules.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, get_args

Output = Literal["probability", "latent", "calibrated"]
"""How scores are reported: σ(x) in (0, 1), the latent binormal score x itself, or the
calibrated probability P(label = 1 | x) = σ(μ·x + logit π) (:meth:`BinormalModel.score`)."""

IMBALANCE_RATIOS: tuple[str, ...] = ("1:15", "1:4", "1:1", "4:1", "15:1")
"""The class ratios P:N studied in Brzezinski et al. 2019 (§III): balance, low and moderate
imbalance of either class. Turn one into a positive share with :func:`positive_share_from_ratio`."""

_STANDARD_NORMAL = NormalDist()


# -- validation --------------------------------------------------------------------------------


def _is_real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_open_unit(name: str, value: object) -> float:
    """``value`` as a float strictly inside (0, 1), or ``ValueError`` naming ``name``."""
    if not _is_real(value) or not 0.0 < value < 1.0:  # type: ignore[operator]  # NaN fails too
        raise ValueError(f"{name} must be a number in the open interval (0, 1), got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _check_int(name: str, value: object, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _check_seed(seed: object) -> int:
    # random.Random seeds with abs(seed): -1 and 1 would silently give the same stream.
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return seed


def _check_output(output: object) -> None:
    if output not in get_args(Output):
        raise ValueError(f"output must be one of {get_args(Output)}, got {output!r}")


def _check_calibrated_auc(name: str, auc: float, output: object) -> None:
    """Calibrated scores need μ > 0 (:class:`BinormalModel`): at AUC 0.5 every score is π,
    below it the calibrated score would rank the other way and its AUC be 1 − auc."""
    if output == "calibrated" and not auc > 0.5:
        raise ValueError(f"{name} must be above 0.5 with output 'calibrated' (below it the "
                         f"calibrated score ranks the other way), got {auc!r}")


def positive_share_from_ratio(ratio: str) -> float:
    """The positive share π = P / (P + N) of a class ratio written ``"P:N"``.

    Brzezinski et al. 2019 write class ratios as positives to negatives, so ``"1:15"`` means one
    positive per fifteen negatives. Both sides may be any positive finite numbers (``"1:99"``,
    ``"24:30"``, ``"0.5:1"``).

    Example:
        >>> positive_share_from_ratio("1:15")
        0.0625
        >>> [positive_share_from_ratio(r) for r in IMBALANCE_RATIOS]
        [0.0625, 0.2, 0.5, 0.8, 0.9375]

    Raises:
        ValueError: naming ``ratio`` when it is not ``"P:N"`` with positive finite P and N.
    """
    parts = ratio.split(":") if isinstance(ratio, str) else []
    try:
        positives, negatives = (float(part) for part in parts)
    except ValueError:  # wrong number of parts, or a part that is not a number
        positives = negatives = math.nan
    if not (0.0 < positives < math.inf and 0.0 < negatives < math.inf):
        raise ValueError(f"ratio must look like 'P:N' with positive P and N, got {ratio!r}")
    return positives / (positives + negatives)


# -- the scoring model -------------------------------------------------------------------------


def _separation(auc: float) -> float:
    """μ = √2 · Φ⁻¹(AUC): the distance between the class means, in standard deviations."""
    return math.sqrt(2.0) * _STANDARD_NORMAL.inv_cdf(auc)


def _logistic(x: float) -> float:
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)  # never overflows for x < 0
    return z / (1.0 + z)


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _report(latent: float, half_separation: float, positive_share: float,
            output: Output) -> float:
    """The reported score of latent score ``latent`` (:meth:`BinormalModel.score`)."""
    if output == "probability":
        return _logistic(latent)
    if output == "latent":
        return latent
    # The log-likelihood ratio of N(+μ/2, 1) against N(−μ/2, 1) at x is μ·x; plus the log
    # prior odds it is the log posterior odds (Bayes' rule).
    return _logistic(2.0 * half_separation * latent + _logit(positive_share))


def _draw(
    rng: random.Random, half_separation: float, positive_share: float, output: Output
) -> tuple[int, float]:
    """One (label, score) pair. Always two draws from ``rng``, label first, so streams with
    the same seed stay aligned event by event whatever the parameters."""
    y_true = 1 if rng.random() < positive_share else 0
    latent = rng.gauss(half_separation if y_true else -half_separation, 1.0)
    return y_true, _report(latent, half_separation, positive_share, output)


@dataclass(frozen=True, slots=True)
class BinormalModel:
    """A scoring model with a chosen population AUC and positive share.

    Negatives score x ~ N(−μ/2, 1), positives x ~ N(+μ/2, 1), μ = √2 · Φ⁻¹(``auc``), so
    P(x⁺ > x⁻) = Φ(μ/√2) = ``auc`` exactly. A label is positive with probability
    ``positive_share``; the scores do not depend on it, which is what makes a class-ratio
    change a purely virtual drift.

    **What the default threshold 0.5 means.** Events carry no ``y_pred``, so the monitor
    predicts positive when ``y_score >= threshold`` (default 0.5). With
    ``output="probability"`` the score is σ(x), and σ(x) ≥ 0.5 exactly when x ≥ 0, the
    midpoint between the class means. There recall = specificity = Φ(μ/2): the
    equal-error-rate point of the ROC curve, and the minimum-error (Bayes) threshold when the
    classes are balanced. For AUC 0.9 that is Φ(0.906) ≈ 0.818. Because the scores ignore π,
    the threshold stays put when the class ratio drifts, as it does for a deployed model that
    is not retrained: recall, specificity, balanced accuracy and G-mean keep their values, and
    so does accuracy (= π·recall + (1 − π)·specificity, with the two equal), while precision,
    F1, κ, κm and MCC move with π. To make accuracy react to the class ratio too, monitor with
    another threshold; :meth:`recall` and :meth:`specificity` give the population values for
    any threshold. With ``output="latent"`` the same midpoint is the threshold 0.0.

    **Calibrated scores** (``output="calibrated"``). σ(x) is a probability in name only: the
    share of positives among events scored s is not s. The calibrated score is that share,
    P(label = 1 | x) = σ(μ·x + logit π): by Bayes' rule the posterior log odds are the
    log-likelihood ratio of the two normal densities at x, log φ(x − μ/2) − log φ(x + μ/2)
    = μ·x, plus the prior log odds logit π. It is increasing in x (μ > 0: ``auc`` above 0.5
    is required), so the AUC is unchanged; unlike σ(x) it moves with π and μ, so a model
    whose scores are calibrated under one concept reports different scores under another.
    With it the threshold 0.5 is the Bayes (minimum-error) threshold for any π.

    Parameters:
        auc: population AUC, in (0, 1); above 0.5 with ``output="calibrated"``.
        positive_share: probability that an event is positive, π, in (0, 1).
        output: ``"probability"`` reports σ(x), ``"latent"`` reports x, ``"calibrated"``
            reports P(label = 1 | x).

    Example:
        >>> model = BinormalModel(auc=0.9, positive_share=0.3)
        >>> round(model.separation, 4), round(model.recall(), 4), round(model.specificity(), 4)
        (1.8124, 0.8176, 0.8176)
        >>> rng = random.Random(0)
        >>> [(y, round(s, 3)) for y, s in (model.draw(rng) for _ in range(3))]
        [(0, 0.299), (1, 0.466), (0, 0.087)]

    Reference:
        Hanley & McNeil (1982), the binormal ROC model; see the module docstring.
    """

    auc: float = 0.9
    positive_share: float = 0.3
    output: Output = "probability"

    def __post_init__(self) -> None:
        _check_open_unit("auc", self.auc)
        _check_open_unit("positive_share", self.positive_share)
        _check_output(self.output)
        _check_calibrated_auc("auc", self.auc, self.output)

    @property
    def separation(self) -> float:
        """μ = √2 · Φ⁻¹(auc), the distance between the class means (the ROC "d′")."""
        return _separation(self.auc)

    def draw(self, rng: random.Random) -> tuple[int, float]:
        """Draw one ``(y_true, y_score)`` pair from ``rng`` (two draws: label, then score)."""
        return _draw(rng, self.separation / 2.0, self.positive_share, self.output)

    def score(self, latent: float) -> float:
        """The reported score of latent score x: σ(x), x, or P(label = 1 | x) =
        σ(μ·x + logit π) (class docstring).

        Example:
            >>> model = BinormalModel(auc=0.9, positive_share=0.3, output="calibrated")
            >>> round(model.score(0.0), 4)  # x = 0 is as likely either way: the prior, π
            0.3
        """
        return _report(latent, self.separation / 2.0, self.positive_share, self.output)

    def _latent_cut(self, threshold: float, name: str = "threshold") -> float:
        """The reported score ``threshold`` on the latent scale, x_t (the inverse of
        :meth:`score`)."""
        if self.output == "latent":
            if not _is_real(threshold) or not math.isfinite(threshold):
                raise ValueError(f"{name} must be a finite number, got {threshold!r}")
            return float(threshold)
        logit = _logit(_check_open_unit(name, threshold))
        if self.output == "calibrated":
            return (logit - _logit(self.positive_share)) / self.separation
        return logit

    def recall(self, threshold: float = 0.5) -> float:
        """Population P(y_score ≥ threshold | positive) = Φ(μ/2 − x_t), x_t the latent cut."""
        return _STANDARD_NORMAL.cdf(self.separation / 2.0 - self._latent_cut(threshold))

    def specificity(self, threshold: float = 0.5) -> float:
        """Population P(y_score < threshold | negative) = Φ(x_t + μ/2)."""
        return _STANDARD_NORMAL.cdf(self._latent_cut(threshold) + self.separation / 2.0)

    def flipped_auc(self, low: float, high: float) -> float:
        """The population AUC when the labels of every event scored in [low, high) are
        flipped (a concept change: the scores as before, the labels not).

        Inside the band positives have the negatives' density and the other way round. The
        AUC, P(x⁺ > x⁻) under those densities, is summed over cells of the latent axis no
        wider than 0.002, cut at the band's ends, each cell's class masses exact (differences
        of Φ) and pairs within a cell counted half: error O(width²), below 10⁻⁵.

        Example:
            >>> model = BinormalModel(auc=0.9, positive_share=0.3, output="calibrated")
            >>> round(model.flipped_auc(0.5, 0.8), 3)
            0.867

        Raises:
            ValueError: naming ``low`` or ``high`` when one is not a score (in (0, 1) unless
                the output is latent) or ``low >= high``.
        """
        a, b = self._latent_cut(low, "low"), self._latent_cut(high, "high")
        if not a < b:
            raise ValueError(f"low must be below high, got low={low!r}, high={high!r}")
        m, share = self.separation / 2.0, self.positive_share
        start, stop = -abs(m) - 10.0, abs(m) + 10.0
        edges = sorted({start, stop, *(x for x in (a, b) if start < x < stop)})
        cdf = _STANDARD_NORMAL.cdf
        negatives_below = positive_mass = pairs = negative_mass = 0.0
        for left, right in itertools.pairwise(edges):
            cells = max(1, math.ceil((right - left) / 0.002))
            inside = a <= left < b
            for k in range(cells):
                x0 = left + (right - left) * k / cells
                x1 = left + (right - left) * (k + 1) / cells
                pos = share * (cdf(x1 - m) - cdf(x0 - m))
                neg = (1.0 - share) * (cdf(x1 + m) - cdf(x0 + m))
                if inside:
                    pos, neg = neg, pos
                pairs += pos * (negatives_below + neg / 2.0)
                negatives_below += neg
                positive_mass += pos
                negative_mass += neg
        return pairs / (positive_mass * negative_mass)
