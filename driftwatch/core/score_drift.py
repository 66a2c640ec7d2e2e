"""Label-free drift signals: has the distribution of a model's scores moved?

While labels are pending (days for chargebacks, months for churn), AUC and the crisp measures
cannot move, but the model's inputs and therefore its scores often already have. These
signals need predictions only, so they react before any label does:

- **Kolmogorov–Smirnov statistic** D = maxₓ |F_cur(x) − F_ref(x)|, the largest gap between
  the empirical distribution functions of recent scores and of a reference sample.
- **Population stability index** PSI = Σᵢ (aᵢ − eᵢ)·ln(aᵢ/eᵢ) over B bins whose edges are
  the reference's quantiles, aᵢ and eᵢ the shares of recent and reference scores in bin i
  (the credit-scoring industry's stability measure; Yurdakul 2018).
- **Predicted-positive rate**, the share of recent predictions that are 1 (the explicit
  prediction, else ``score >= threshold``).

**Reference.** ``"frozen"``: the first ``reference_size`` predictions after a start or
:meth:`ScoreDrift.reset` (the model as deployed), kept for good. ``"previous"``: the
``reference_size`` predictions just before the ones compared (a trailing window, which
follows slow changes and flags fast ones).

**Exact, not sketched**: computed on the raw scores, sorted once per block and per scrape.

**Two uses, two samples.** :meth:`ScoreDrift.values` compares the last ``window``
predictions with the reference, for dashboards; :meth:`ScoreDrift.update` compares each
non-overlapping block of ``block_size`` predictions with it and returns its statistic as a
z-score by its null distribution (KS: Stephens' corrected Kolmogorov distribution; PSI: its
χ² limit, Yurdakul 2018; the rate: a beta-binomial predictive, self-starting with a frozen
reference, Hawkins 1987), so a CUSUM gets the false-alarm rate it promises. Derivations and
limits: docs/detection.md#label-free-signals-the-score-statistics-as-z-scores.

References:
    A. P. Dawid (1984). Statistical theory: the prequential approach. *JRSS A* 147, 278–292.
    D. M. Hawkins (1987). Self-starting CUSUM charts for location and scale.
    *The Statistician* 36, 299–316.
    M. A. Stephens (1970). Use of the Kolmogorov–Smirnov, Cramér–von Mises and related
    statistics without extensive tables. *JRSS B* 32, 115–122.
    B. Yurdakul (2018). *Statistical properties of the population stability index*. PhD
    thesis, Western Michigan University (the χ² limit of PSI).
    W. H. Press et al. (2007). *Numerical Recipes*, 3rd ed., §6.2 (incomplete gamma) and
    §14.3.3 (the Kolmogorov distribution).
"""

from __future__ import annotations

import math
import numbers
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from driftwatch.core.config_error import ConfigError
from driftwatch.core.events import check_label, check_score
from driftwatch.core.state import check_state

Reference = Literal["frozen", "previous"]
REFERENCES: tuple[Reference, ...] = ("frozen", "previous")

SIGNALS: tuple[str, ...] = ("ks", "psi", "positive_rate")
"""The signals, in the order :meth:`ScoreDrift.values` and :meth:`ScoreDrift.update` report."""

STATE_VERSION = 1
_STATE_KEYS = frozenset({"version", "history", "reference", "block", "seen", "pool"})
_NORMAL = NormalDist()
_P_LIMIT = 1e-15  # probabilities are clamped to [1e-15, 1 − 1e-15]: |z| ≤ 7.9

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class BlockSignal:
    """One signal of a closed block: what a detector is fed (``z``) and what an alarm shows.

    Attributes:
        name: one of :data:`SIGNALS`.
        value: the block's statistic: D, PSI, or its predicted-positive rate.
        reference: what ``value`` is compared with: 0 for D and PSI (no difference), the
            reference's predicted-positive rate for the rate.
        z: the standardized value, N(0, 1) while nothing changes (module docstring).
    """

    name: str
    value: float
    reference: float
    z: float


# --- statistics ---------------------------------------------------------------------------


def ks_statistic(sample: Sequence[float] | FloatArray,
                 reference: Sequence[float] | FloatArray) -> float:
    """The two-sample Kolmogorov–Smirnov statistic D, exactly (ties handled as scipy does).

    O((n + m) log(n + m)).

    >>> ks_statistic([1.0, 2.0, 3.0], [2.5, 3.5])
    0.6666666666666666
    """
    a = np.sort(np.asarray(sample, dtype=float))
    b = np.sort(np.asarray(reference, dtype=float))
    if not len(a) or not len(b):
        return math.nan
    points = np.concatenate((a, b))
    gap = (np.searchsorted(a, points, "right") / len(a)
           - np.searchsorted(b, points, "right") / len(b))
    return float(np.max(np.abs(gap)))


def kolmogorov_cdf(x: float) -> float:
    """K(x) = P(sup |Brownian bridge| ≤ x), the Kolmogorov distribution function.

    Two series, each where it converges fast (Numerical Recipes §6.14): for x < 1.18 the
    Jacobi form √(2π)/x·Σ exp(−(2j − 1)²π²/(8x²)), else 1 − 2Σ(−1)^(j−1) exp(−2j²x²).
    """
    if x <= 0.0:
        return 0.0
    if x < 1.18:
        y = math.exp(-math.pi ** 2 / (8.0 * x * x))
        return math.sqrt(2.0 * math.pi) / x * (y + y ** 9 + y ** 25 + y ** 49)
    return 1.0 - kolmogorov_sf(x)


def kolmogorov_sf(x: float) -> float:
    """1 − K(x), computed directly (accurate in the far tail)."""
    if x < 1.18:
        return 1.0 - kolmogorov_cdf(x)
    y = math.exp(-2.0 * x * x)
    return 2.0 * (y - y ** 4 + y ** 9 - y ** 16)


def ks_z(d: float, n: int, m: int) -> float:
    """z-score of a two-sample KS statistic ``d`` of sizes ``n`` and ``m`` under no change.

    λ = (√nₑ + 0.12 + 0.11/√nₑ)·d with nₑ = nm/(n + m) (Stephens 1970); z = Φ⁻¹(K(λ)),
    evaluated from whichever tail is small so that neither end loses precision.
    """
    ne = n * m / (n + m)
    root = math.sqrt(ne)
    lam = (root + 0.12 + 0.11 / root) * d
    if lam < 1.18:
        return _z_from_cdf(kolmogorov_cdf(lam))
    return -_z_from_cdf(kolmogorov_sf(lam))


def _z_from_cdf(p: float) -> float:
    return _NORMAL.inv_cdf(min(max(p, _P_LIMIT), 1.0 - _P_LIMIT))


def gamma_p(a: float, x: float) -> float:
    """The regularized lower incomplete gamma function P(a, x) (Numerical Recipes §6.2):
    the series for x < a + 1, else 1 − the continued fraction for Q."""
    return 1.0 - gamma_q(a, x) if x >= a + 1.0 else _gamma_series(a, x)


def gamma_q(a: float, x: float) -> float:
    """Q(a, x) = 1 − P(a, x), computed directly for x ≥ a + 1 (accurate in the tail)."""
    if x < a + 1.0:
        return 1.0 - _gamma_series(a, x)
    # Lentz's method for the continued fraction.
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def _gamma_series(a: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    term = total = 1.0 / a
    ap = a
    for _ in range(10_000):
        ap += 1.0
        term *= x / ap
        total += term
        if abs(term) < abs(total) * 1e-16:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def quantile_edges(reference: Sequence[float] | FloatArray, bins: int) -> FloatArray:
    """The interior bin edges at the reference's 1/B, …, (B−1)/B quantiles (numpy's
    default, linear interpolation), repeated edges removed: tied scores can make fewer bins.
    """
    qs = np.quantile(np.asarray(reference, dtype=float), np.arange(1, bins) / bins)
    return np.unique(qs)


def psi(sample: Sequence[float] | FloatArray, reference: Sequence[float] | FloatArray,
        edges: FloatArray) -> float:
    """Population stability index of ``sample`` against ``reference`` on the bins cut at
    ``edges`` (a score equal to an edge falls in the bin above it).

    Shares are (count + ½)/(n + B/2) on both sides, so an empty bin gives a finite value
    (with an epsilon floor instead, a single empty bin can dominate the index).
    """
    bins = len(edges) + 1
    a = np.bincount(np.searchsorted(edges, np.asarray(sample, dtype=float), "right"),
                    minlength=bins) + 0.5
    e = np.bincount(np.searchsorted(edges, np.asarray(reference, dtype=float), "right"),
                    minlength=bins) + 0.5
    a /= a.sum()
    e /= e.sum()
    return float(np.sum((a - e) * np.log(a / e)))


def psi_z(value: float, n: int, m: int, bins: int) -> float:
    """z-score of a PSI over ``bins`` bins between samples of sizes ``n`` and ``m`` under
    no change: PSI/(1/n + 1/m) ~ χ²(bins − 1), z = Φ⁻¹(F_χ²(·))."""
    if bins < 2:
        return 0.0  # every score in one bin: the index cannot see a change
    x = value / (1.0 / n + 1.0 / m)
    a = (bins - 1) / 2.0
    if x < a + 1.0:
        return _z_from_cdf(gamma_p(a, x / 2.0))
    return -_z_from_cdf(gamma_q(a, x / 2.0))


def rate_z(x: int, n: int, k: int, r: int) -> float:
    """Mid-p z-score of ``x`` positives out of ``n`` given ``k`` out of ``r`` in the reference:
    Φ⁻¹(P(X < x) + ½·P(X = x)), X ~ BetaBinomial(n, k + ½, r − k + ½)."""
    a, b = k + 0.5, r - k + 0.5
    base = (math.lgamma(n + 1) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
            - math.lgamma(n + a + b))
    lg = math.lgamma
    pmf = np.exp(np.array([base - lg(i + 1) - lg(n - i + 1) + lg(i + a) + lg(n - i + b)
                           for i in range(n + 1)]))
    below = math.fsum(pmf[:x])
    above = math.fsum(pmf[x + 1:])
    if below < above:  # sum the smaller tail, for precision at both ends
        return _z_from_cdf(below + 0.5 * pmf[x])
    return -_z_from_cdf(above + 0.5 * pmf[x])


# --- the watch ----------------------------------------------------------------------------


def _check_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer ≥ {low}, got {value!r}")
    return int(value)


def _int_parameter(value: object, name: str) -> int:
    """A count parameter of :class:`ScoreDrift` (≥ 2): ConfigError located at ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 2:
        raise ConfigError((name,), f"must be an integer ≥ 2, got {value!r}")
    return int(value)


class ScoreDrift:
    """Label-free drift signals of one model's predictions (see the module docstring).

    Parameters:
        window: predictions in the sliding sample that :meth:`values` compares (≥ 2).
        block_size: predictions per detector block (≥ 2).
        reference: ``"frozen"`` (the first ``reference_size`` predictions) or
            ``"previous"`` (the ``reference_size`` predictions before those compared).
        reference_size: R, predictions in the reference (≥ 2).
        bins: B, the PSI's bins (≥ 2; fewer when reference quantiles tie).
        threshold: a prediction without a crisp value is positive when its score ≥ this.

    Costs, with w = ``window``, m = ``block_size``, R = ``reference_size``:

    ===================================  ====================================================
    method                               cost
    ===================================  ====================================================
    :meth:`update`                       O(1), and O((m + R) log(m + R)) when a block closes
    :meth:`values`                       O((w + R) log(w + R))
    :meth:`export_state`, restore        O(w + m + R)
    ===================================  ====================================================

    Examples:
        >>> import random
        >>> rng = random.Random(1)
        >>> watch = ScoreDrift(window=200, block_size=100, reference_size=1000)
        >>> before = [watch.update(rng.betavariate(2, 5)) for _ in range(3000)]
        >>> [round(s.z, 1) for s in before[-1]]  # ks, psi, positive rate: N(0, 1) values
        [0.9, 1.0, 0.1]
        >>> after = [watch.update(rng.betavariate(2.6, 5)) for _ in range(200)]
        >>> [[round(s.z, 1) for s in block] for block in after if block]  # scores moved up
        [[2.5, 1.5, 2.1], [2.2, 1.6, 2.1]]
        >>> rate = after[-1][2]
        >>> rate.value, round(rate.reference, 3)  # predicted positives: block, reference
        (0.17, 0.102)
    """

    __slots__ = ("_block", "_edges", "_frozen", "_history", "_pool", "_reference", "_seen", "bins",
                 "block_size", "reference", "reference_size", "threshold", "window")

    def __init__(self, *, window: int = 1000, block_size: int = 500,
                 reference: Reference = "frozen", reference_size: int = 10_000,
                 bins: int = 10, threshold: float = 0.5) -> None:
        self.window = _int_parameter(window, "window")
        self.block_size = _int_parameter(block_size, "block_size")
        if reference not in REFERENCES:
            raise ConfigError(("reference",), f"must be one of {', '.join(REFERENCES)}; "
                              f"got {reference!r}")
        self.reference: Reference = reference
        self.reference_size = _int_parameter(reference_size, "reference_size")
        self.bins = _int_parameter(bins, "bins")
        try:
            self.threshold = check_score(threshold, "threshold")
        except ValueError:
            raise ConfigError(("threshold",),
                              f"must be a finite real number, got {threshold!r}") from None
        self._init()

    def _init(self) -> None:
        # (score, positive) of the most recent predictions: the sliding window, and in
        # "previous" mode the reference before it (the longer of window and block first).
        keep = max(self.window, self.block_size)
        if self.reference == "previous":
            keep += self.reference_size
        self._history: deque[tuple[float, int]] = deque(maxlen=keep)
        self._reference: list[tuple[float, int]] = []  # "frozen", while it fills
        self._edges: FloatArray | None = None  # PSI edges of the frozen reference
        # Once full, the frozen reference is kept as its sorted scores and positive count
        # only (all its statistics need): 8 bytes a score instead of a Python pair's ~90.
        self._frozen: tuple[FloatArray, int] | None = None
        # "frozen": the rate's pooled reference, [positives, predictions] of the reference
        # and of every block since (module docstring).
        self._pool: list[int] | None = None
        self._block: list[tuple[float, int]] = []
        self._seen = 0

    def reset(self) -> None:
        """Forget everything, the frozen reference included (e.g. after a redeployment)."""
        self._init()

    @property
    def seen(self) -> int:
        """Predictions since the start or the last :meth:`reset`."""
        return self._seen

    def update(self, y_score: float,
               y_pred: int | None = None) -> tuple[BlockSignal, BlockSignal, BlockSignal] | None:
        """Add one prediction; when it closes a block whose reference is complete, return
        the block's signals in :data:`SIGNALS` order, else None."""
        score = check_score(y_score, "y_score")
        positive = (score >= self.threshold) if y_pred is None else check_label(y_pred, "y_pred")
        item = (score, int(positive))
        self._seen += 1
        if self.reference == "frozen" and self._frozen is None:
            self._reference.append(item)
            if len(self._reference) == self.reference_size:
                self._freeze()
            return None
        result = None
        self._block.append(item)
        if len(self._block) == self.block_size:
            reference = self._reference_sample(self.block_size - 1)
            if reference is not None:
                result = self._block_z(self._block, reference)
            self._block = []
        self._history.append(item)
        return result

    def _reference_sample(self, newest: int) -> tuple[FloatArray, int] | None:
        """The reference's scores (sorted) and predicted positives for a comparison of the
        ``newest`` latest predictions: the frozen sample, or the R before them; None while
        it is incomplete."""
        r = self.reference_size
        if self.reference == "frozen":
            return self._frozen
        end = len(self._history) - newest
        if end < r:
            return None
        items = list(islice(self._history, end - r, end))  # deque indexing is O(n) each
        return np.sort(np.fromiter((s for s, _ in items), float, r)), sum(p for _, p in items)

    def _edges_for(self, reference_scores: FloatArray) -> FloatArray:
        if self.reference == "frozen":
            if self._edges is None:
                self._edges = quantile_edges(reference_scores, self.bins)
            return self._edges
        return quantile_edges(reference_scores, self.bins)

    def _block_z(self, block: list[tuple[float, int]], reference: tuple[FloatArray, int]
                 ) -> tuple[BlockSignal, BlockSignal, BlockSignal]:
        scores = np.fromiter((s for s, _ in block), float, len(block))
        ref, k = reference
        m, r = len(scores), len(ref)
        edges = self._edges_for(ref)
        d = ks_statistic(scores, ref)
        index = psi(scores, ref, edges)
        x = sum(p for _, p in block)
        if self.reference == "frozen":
            if self._pool is None:
                self._pool = [k, r]
            k, r = self._pool
            self._pool[0] += x
            self._pool[1] += m
        return (
            BlockSignal("ks", d, 0.0, ks_z(d, m, len(ref))),
            BlockSignal("psi", index, 0.0, psi_z(index, m, len(ref), len(edges) + 1)),
            BlockSignal("positive_rate", x / m, k / r, rate_z(x, m, k, r)),
        )

    def values(self) -> dict[str, float]:
        """The sliding signals: KS and PSI of the last ``window`` predictions against the
        reference, the window's predicted-positive rate and the reference's (NaN while a
        sample is incomplete)."""
        nan = {"ks": math.nan, "psi": math.nan, "positive_rate": math.nan,
               "reference_positive_rate": math.nan}
        n = min(self.window, len(self._history))
        if n == 0:
            return nan
        recent = list(islice(self._history, len(self._history) - n, None))
        out = dict(nan, positive_rate=sum(p for _, p in recent) / n)
        reference = self._reference_sample(n) if n == self.window else None
        if reference is None:
            return out
        scores = np.fromiter((s for s, _ in recent), float, n)
        ref, k = reference
        out["ks"] = ks_statistic(scores, ref)
        out["psi"] = psi(scores, ref, self._edges_for(ref))
        out["reference_positive_rate"] = k / len(ref)
        return out

    def _freeze(self) -> None:
        items = self._reference
        self._frozen = (np.sort(np.fromiter((s for s, _ in items), float, len(items))),
                        sum(p for _, p in items))
        self._reference = []

    # --- state -------------------------------------------------------------------------

    def export_state(self) -> dict[str, Any]:
        """Everything :meth:`from_state` needs to continue exactly, as JSON-ready values."""
        return {
            "version": STATE_VERSION,
            "history": [list(x) for x in self._history],
            # While it fills, the pairs; once frozen, its sorted scores and positive count.
            "reference": [list(x) for x in self._reference] if self._frozen is None else {
                "scores": self._frozen[0].tolist(), "positives": self._frozen[1]},
            "block": [list(x) for x in self._block],
            "seen": self._seen,
            "pool": self._pool,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any], **parameters: Any) -> ScoreDrift:
        """Rebuild from :meth:`export_state` with the given constructor parameters; a state
        this version cannot read is a ``ValueError`` naming the problem."""
        state = check_state(state, _STATE_KEYS, STATE_VERSION)
        watch = cls(**parameters)
        reference = state["reference"]
        try:
            items = {key: [(check_score(s, "score"), check_label(p, "positive"))
                           for s, p in state[key]] for key in ("history", "block")}
            if isinstance(reference, Mapping):
                frozen = np.sort(np.array([check_score(x, "score")
                                           for x in reference["scores"]], dtype=float))
                positives = _check_int(reference["positives"], "positives", 0)
                if len(frozen) < 2 or positives > len(frozen):
                    raise ValueError(f"has a frozen reference of {len(frozen)} scores with "
                                     f"{positives} positives")
            else:
                pairs = [(check_score(s, "score"), check_label(p, "positive"))
                         for s, p in reference]
        except (TypeError, ValueError, KeyError) as error:
            raise ValueError(f"state {error}") from error
        if watch.reference == "frozen":
            if isinstance(reference, Mapping):
                watch._frozen = (frozen, positives)
            else:
                watch._reference = pairs[: watch.reference_size]
                if len(watch._reference) == watch.reference_size:
                    watch._freeze()
        watch._history.extend(items["history"])
        watch._block = items["block"][: watch.block_size - 1]
        watch._seen = _check_int(state["seen"], "seen", 0)
        pool = state["pool"]
        if watch.reference == "frozen" and pool is not None:
            watch._pool = [_check_int(pool[0], "pool positives", 0),
                           _check_int(pool[1], "pool size", 1)]
        return watch
