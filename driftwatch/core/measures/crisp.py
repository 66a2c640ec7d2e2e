"""Crisp (confusion-matrix) measures, one formula each, for scalars and numpy arrays alike.

Every measure is written once, over the counts ``tp, fp, fn, tn``, and evaluates on Python
ints (one value, as the confusion window needs) or on float64 numpy arrays (a whole row of the
confusion-matrix grid, as class-ratio normalization needs) with **bit-identical** results.
That identity is what lets normalization count grid cells exactly like brute-force
enumeration does. It holds because each formula is a single correctly rounded division of
exact integers (with a correctly rounded square root for G-mean and MCC), and float64 holds
every integer the formulas build exactly while the window is below 2**26 (67 million) events;
for MCC the two pair products are each exact and rounded once when multiplied, in both paths.

A single correctly rounded division also makes each value a monotone function of the exact
rational value, so mathematically equal values are equal floats (0.5 from 1/2 and from 2/4)
and ties are ties.

Undefined values are NaN, never an exception: a measure is NaN exactly when the denominator of
the formula in its docstring is 0, except the harmonic mean, NaN when P or N is 0 (definitions
from Bifet et al. 2015, §5 and Brzezinski et al. 2019, Table I).
"""

from __future__ import annotations

import math
from typing import TypeVar

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
Count = TypeVar("Count", int, FloatArray)
"""A count (an ``int``) or an array of counts (float64 holding integers)."""

Number = int | float | FloatArray


def _div(num: Number, den: Number) -> float | FloatArray:
    """num / den, NaN where den is 0."""
    if isinstance(den, np.ndarray):
        out = np.full(np.broadcast(num, den).shape, np.nan)
        np.divide(num, den, out=out, where=den != 0)
        return out
    return num / den if den else math.nan


def _sqrt(value: float | FloatArray) -> float | FloatArray:
    if isinstance(value, np.ndarray):
        return np.sqrt(value)
    return math.sqrt(value) if value >= 0 else math.nan  # NaN passes through as NaN


def accuracy(tp: Count, fp: Count, fn: Count, tn: Count) -> float | FloatArray:
    """(TP + TN) / n."""
    return _div(tp + tn, tp + fp + fn + tn)


def error(tp: int, fp: int, fn: int, tn: int) -> float:
    """1 − accuracy, written as (FP + FN) / n so it is exact too."""
    return _div(fp + fn, tp + fp + fn + tn)  # type: ignore[return-value]


def precision(tp: Count, fp: Count, fn: Count, tn: Count) -> float | FloatArray:
    """TP / (TP + FP): the share of predicted positives that are positive."""
    return _div(tp, tp + fp)


def recall(tp: Count, fp: Count, fn: Count, tn: Count) -> float | FloatArray:
    """TP / P: the true-positive rate (sensitivity)."""
    return _div(tp, tp + fn)


def specificity(tp: int, fp: int, fn: int, tn: int) -> float:
    """TN / N: the true-negative rate."""
    return _div(tn, tn + fp)  # type: ignore[return-value]


def balanced_accuracy(tp: Count, fp: Count, fn: Count, tn: Count) -> float | FloatArray:
    """(recall + specificity) / 2, as (TP·N + TN·P) / (2·P·N)."""
    pos, neg = tp + fn, tn + fp
    return _div(tp * neg + tn * pos, 2 * pos * neg)


def gmean(tp: Count, fp: Count, fn: Count, tn: Count) -> float | FloatArray:
    """√(recall · specificity), as √(TP·TN / (P·N))."""
    return _sqrt(_div(tp * tn, (tp + fn) * (tn + fp)))


def harmonic_mean(tp: int, fp: int, fn: int, tn: int) -> float:
    """2 / (1/recall + 1/specificity) = 2·TP·TN / (TP·N + TN·P); 0 when either rate is 0.

    Bifet et al. 2015, §5.2 (the harmonic mean of the class accuracies).
    """
    pos, neg = tp + fn, tn + fp
    if pos == 0 or neg == 0:
        return math.nan
    den = tp * neg + tn * pos
    return 2 * tp * tn / den if den else 0.0


def f1(tp: Count, fp: Count, fn: Count, tn: Count) -> float | FloatArray:
    """2·TP / (2·TP + FP + FN): the harmonic mean of precision and recall."""
    return _div(2 * tp, 2 * tp + fp + fn)


def kappa(tp: Count, fp: Count, fn: Count, tn: Count) -> float | FloatArray:
    """Cohen's κ = (p0 − pc) / (1 − pc), as 2·(TP·TN − FP·FN) / (q·N + P·(n − q)).

    q = TP + FP is the number of predicted positives; the denominator is n²·(1 − pc), so κ is
    NaN exactly when pc = 1. Bifet et al. 2015, §5.1, eq. (1).
    """
    pos, neg = tp + fn, tn + fp
    predicted_pos, predicted_neg = tp + fp, fn + tn
    return _div(2 * (tp * tn - fp * fn), predicted_pos * neg + pos * predicted_neg)


def mcc(tp: Count, fp: Count, fn: Count, tn: Count) -> float | FloatArray:
    """Matthews correlation (TP·TN − FP·FN) / √((TP+FP)(TP+FN)(TN+FP)(TN+FN)).

    NaN when a factor under the root is 0.
    """
    outer = (tp + fp) * (tn + fn)  # predicted positives × predicted negatives
    inner = (tp + fn) * (tn + fp)  # P × N
    # Both paths round once, when the two exact pair products are multiplied.
    product = outer * inner if isinstance(outer, np.ndarray) else float(outer) * float(inner)
    return _div(tp * tn - fp * fn, _sqrt(product))


def kappa_m(tp: int, fp: int, fn: int, tn: int) -> float:
    """κm = (p0 − pm) / (1 − pm), pm the accuracy of the window's majority-class classifier.

    Bifet et al. 2015, §5.3. Written as (TP + TN − max(P, N)) / (n − max(P, N)).
    """
    majority = max(tp + fn, tn + fp)
    return _div(tp + tn - majority, tp + fp + fn + tn - majority)  # type: ignore[return-value]


def kappa_per(tp: int, fp: int, fn: int, tn: int, persistent_hits: int) -> float:
    """κper = (p0 − pper) / (1 − pper) against the persistent classifier.

    The persistent classifier predicts the label of the event before; ``persistent_hits`` is
    the number of events in the window whose label equals their predecessor's. Bifet et al. 2015,
    §5.4.1.
    """
    n = tp + fp + fn + tn
    return _div(tp + tn - persistent_hits, n - persistent_hits)  # type: ignore[return-value]
