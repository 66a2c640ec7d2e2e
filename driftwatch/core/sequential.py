"""CUSUM run lengths for standardized normal increments, and the threshold a target implies.

A one-sided CUSUM on inputs z₁, z₂, … is S₀ = 0, Sₙ = max(0, Sₙ₋₁ + zₙ − k), with an alarm
at the first n where Sₙ > h (Page 1954). When the inputs are independent N(μ, 1), its
average run length (ARL, the expected number of inputs to the first alarm) depends on μ, k and
h only; for μ = 0 it is the in-control ARL, the mean time between false alarms. So a
detector fed independent, standardized inputs gets its false-alarm rate from its threshold
alone, whatever produced the inputs, which is what lets driftwatch derive ``h`` from a
target instead of tuning it.

The ARL L(u) from a start value u solves the integral equation (Page 1954; Goel and Wu 1971)

    L(u) = 1 + L(0)·Φ(k − u − μ) + ∫₀ʰ L(y)·φ(y + k − u − μ) dy,

which :func:`cusum_arl` solves by the Nyström method with Gauss–Legendre nodes (64 nodes
give about ten significant digits for h ≤ 20). :func:`siegmund_arl` is Siegmund's (1985)
closed-form approximation, kept as an independent check.

References:
    E. S. Page (1954). Continuous inspection schemes. *Biometrika* 41, 100–115.
    A. L. Goel, S. M. Wu (1971). Determination of A.R.L. and a contour nomogram for CUSUM
    charts to control normal mean. *Technometrics* 13, 221–230.
    D. Siegmund (1985). *Sequential Analysis*, Springer (the ARL approximation, ρ ≈ 0.583).
"""

from __future__ import annotations

import functools
import math

import numpy as np

_NODES = 64
_SQRT2 = math.sqrt(2.0)
_SQRT2PI = math.sqrt(2.0 * math.pi)
_RHO = 0.5826  # Siegmund's overshoot correction: −ζ(1/2)/√(2π)


def normal_cdf(x: float) -> float:
    """Φ(x), the standard normal distribution function."""
    return 0.5 * math.erfc(-x / _SQRT2)


def normal_quantile(p: float) -> float:
    """Φ⁻¹(p) for 0 < p < 1 (Acklam's rational start, two Newton steps: ~1e-15)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), got {p!r}")
    q = min(p, 1.0 - p)
    t = math.sqrt(-2.0 * math.log(q))
    x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
          / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t ** 3))
    for _ in range(3):  # Newton on Φ(x) = q (x < 0 here, where Φ is accurate)
        x -= (normal_cdf(x) - q) * _SQRT2PI * math.exp(0.5 * x * x)
    return x if p < 0.5 else -x


@functools.lru_cache(maxsize=4)
def _gauss_legendre(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on [−1, 1], computed once per node count: numpy
    derives them from an eigenproblem each time, half the cost of an ARL evaluation, and a
    threshold takes about ten evaluations (at every monitor's first construction)."""
    y, w = np.polynomial.legendre.leggauss(nodes)
    y.flags.writeable = False
    w.flags.writeable = False
    return y, w


@functools.lru_cache(maxsize=256)
def cusum_arl(h: float, k: float, shift: float = 0.0, nodes: int = _NODES) -> float:
    """The average run length of a one-sided CUSUM started at 0, for N(``shift``, 1) inputs.

    Parameters:
        h: the alarm threshold (> 0); an alarm is Sₙ > h.
        k: the reference value subtracted from every input (≥ 0 for a finite in-control
            ARL).
        shift: the mean of the inputs, in standard deviations (0: in control).
        nodes: Gauss–Legendre nodes of the Nyström discretization.
    """
    if not h > 0.0:
        raise ValueError(f"h must be > 0, got {h!r}")
    y, w = _gauss_legendre(nodes)
    y = 0.5 * h * (y + 1.0)
    w = 0.5 * h * w
    c = k - shift
    # Unknowns L(0), L(y_1..y_n); row i:
    # L(u_i) − L(0)·Φ(c − u_i) − Σ_j w_j·φ(y_j + c − u_i)·L(y_j) = 1.
    u = np.concatenate(([0.0], y))
    diff = y[None, :] + c - u[:, None]
    kernel = np.exp(-0.5 * diff * diff) / _SQRT2PI * w[None, :]
    cdf = 0.5 * np.vectorize(math.erfc)(-(c - u) / _SQRT2)
    matrix = np.eye(nodes + 1)
    matrix[:, 0] -= cdf
    matrix[:, 1:] -= kernel
    solution = np.linalg.solve(matrix, np.ones(nodes + 1))
    return float(solution[0])


def siegmund_arl(h: float, k: float, shift: float = 0.0) -> float:
    """Siegmund's approximation of :func:`cusum_arl`: with Δ = shift − k and b = h + 2ρ,
    ARL ≈ (exp(−2Δb) + 2Δb − 1)/(2Δ²), and b²  when Δ = 0."""
    delta = shift - k
    b = h + 2.0 * _RHO
    if abs(delta) < 1e-12:
        return b * b
    return (math.exp(-2.0 * delta * b) + 2.0 * delta * b - 1.0) / (2.0 * delta * delta)


@functools.lru_cache(maxsize=1024)
def cusum_threshold(arl: float, k: float) -> float:
    """The threshold h whose in-control ARL (N(0, 1) inputs, :func:`cusum_arl`) is ``arl``.

    The in-control ARL grows monotonically (about exponentially) with h, so h is the root
    of log ARL(h) − log ``arl``, found by the Illinois variant of regula falsi inside a
    bracket (a handful of ARL evaluations) to 1e-10.

    With a large allowance even h = 0 reaches the target: then an alarm is one input above
    k, whose run length is exactly 1/Φ(−k), and the threshold is 0 (an ARL of at least
    ``arl``). Blocks watches meet this at high traffic, where the indifference zone's
    allowance is many block standard deviations (:mod:`driftwatch.core.zone`).

    Cached (1024 entries): a blocks watch asks for the thresholds of a quantized grid of
    run lengths and allowances, a few per model (:mod:`driftwatch.core.budget`).
    """
    if not arl > 1.0:
        raise ValueError(f"arl must be > 1, got {arl!r}")
    if normal_cdf(-k) * arl <= 1.0:
        return 0.0
    target = math.log(arl)

    def gap(h: float) -> float:
        return math.log(cusum_arl(h, k)) - target

    low, high = 1e-6, 1.0
    f_low, f_high = gap(low), gap(high)
    while f_high < 0.0:
        low, f_low = high, f_high
        high *= 2.0
        if high > 1e3:
            raise ValueError(f"no threshold reaches ARL {arl!r} with k = {k!r}")
        f_high = gap(high)
    side = 0
    for _ in range(200):
        mid = high - f_high * (high - low) / (f_high - f_low)
        f_mid = gap(mid)
        if abs(f_mid) < 1e-12 or high - low < 1e-10:
            return mid
        if f_mid < 0.0:
            low, f_low = mid, f_mid
            if side == -1:
                f_high /= 2.0
            side = -1
        else:
            high, f_high = mid, f_mid
            if side == 1:
                f_low /= 2.0
            side = 1
    return mid
