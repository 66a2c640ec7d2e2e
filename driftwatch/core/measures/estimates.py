"""Closed-form guesses of where a line of the confusion-matrix grid crosses a value.

Class-ratio normalization (:mod:`driftwatch.core.normalization`, Brzezinski et al. 2019, eq. 10)
counts, on each line of the (P+1)(N+1) grid, the cells whose measure is at most x. Along a row (TP
fixed, FP = s growing) or a column (FP fixed, FN = s growing) every normalizable measure is
non-increasing, so the count is the line's length less the first index at or below x. Each
function here solves M = x for that index in closed form, vectorized over the lines ``c``; a
measure's :class:`~driftwatch.core.measures.registry.Normalization` names its estimates. They
are only guesses: normalization verifies every guess on the cells it points to with the
measure's own formula and bisects where it fails, so a poor guess costs time, never a wrong
count.

Reference:
    Brzezinski, Stefanowski, Susmaga, Szczęch, "On the Dynamics of Classification Measures for
    Imbalanced and Streaming Data", IEEE TNNLS 2019, §III-B, eq. (10).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
Estimate = Callable[[FloatArray, float, int, int], FloatArray]
"""(lines c, value x, P, N) → the real index s* at which each line crosses x."""


# Closed-form estimates of the real index s* at which a line crosses x. Rows: c = TP, s = FP;
# columns: c = FP, s = FN. Only a guess: every guess is verified against crisp.py's values, so
# rounding here costs at most a bisection, never a wrong count. Unit measures see x in [0, 1),
# κ and MCC any x in [−2, 2]; grids whose every cell is 0 never reach these.


def accuracy_rows(c: FloatArray, x: float, p: int, n_: int) -> FloatArray:
    # (TP + N − FP) / n ≤ x
    return c + n_ - x * (p + n_)


def balanced_accuracy_rows(c: FloatArray, x: float, p: int, n_: int) -> FloatArray:
    # (TP·N + TN·P) / (2PN) ≤ x
    return n_ * (c / p + 1.0 - 2.0 * x)


def gmean_rows(c: FloatArray, x: float, p: int, n_: int) -> FloatArray:
    # TP·TN / (PN) ≤ x²
    return n_ - (x * x * p * n_) / c


def precision_rows(c: FloatArray, x: float, p: int, n_: int) -> FloatArray:
    # TP / (TP + FP) ≤ x
    return c * (1.0 - x) / x


def precision_columns(c: FloatArray, x: float, p: int, n_: int) -> FloatArray:
    # (P − FN) / (P − FN + FP) ≤ x
    return p - x * c / (1.0 - x)


def recall_columns(c: FloatArray, x: float, p: int, n_: int) -> FloatArray:
    # (P − FN) / P ≤ x
    return np.full_like(c, p * (1.0 - x))


def f1_rows(c: FloatArray, x: float, p: int, n_: int) -> FloatArray:
    # 2TP / (TP + FP + P) ≤ x
    return 2.0 * c / x - c - p


def f1_columns(c: FloatArray, x: float, p: int, n_: int) -> FloatArray:
    # 2(P − FN) / (2P − FN + FP) ≤ x
    return (2.0 * p * (1.0 - x) - x * c) / (2.0 - x)


def kappa_rows(c: FloatArray, x: float, p: int, n_: int) -> FloatArray:
    # 2(TP·N − P·FP) / (TP(N − P) + P·n + (N − P)·FP) ≤ x, the denominator > 0 for P, N > 0;
    # when 2P + x(N − P) ≤ 0 the line stays above x.
    slope = 2.0 * p + x * (n_ - p)
    crossing = (2.0 * c * n_ - x * (c * (n_ - p) + p * (p + n_))) / slope
    return np.where(slope > 0, crossing, np.inf)


def mcc_rows(c: FloatArray, x: float, p: int, n_: int) -> FloatArray:
    # (TP·n − P·q)² = x²·P·N·q(n − q) in q = TP + FP, the root on the side of x's sign.
    n = p + n_
    x2 = x * x
    root = np.sqrt(n_ * (4.0 * c * (p - c) / p + x2 * n_))
    q = n * ((2.0 * c + x2 * n_) - x * root) / (2.0 * (p + x2 * n_))
    return q - c
