"""Input checks shared by the comparison statistics: each returns the array a statistic
computes on, or raises ``ValueError`` naming the argument and what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def check_labels(y_true: object) -> npt.NDArray[np.bool_]:
    array = np.asarray(y_true)
    if array.ndim != 1:
        raise ValueError(f"y_true must be one-dimensional, got shape {array.shape}")
    if array.dtype != np.bool_ and array.size and not np.isin(array, (0, 1)).all():
        raise ValueError("y_true must hold only 0 and 1 (or booleans)")
    return np.asarray(array == 1, dtype=np.bool_)


def check_scores(values: object, name: str, length: int) -> FloatArray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be real numbers: {error}") from error
    if array.shape != (length,):
        raise ValueError(f"{name} must have one value per label ({length}), got {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite")
    return array


def check_predictions(values: object, name: str, length: int) -> npt.NDArray[np.bool_]:
    array = np.asarray(values)
    if array.shape != (length,):
        raise ValueError(f"{name} must have one value per label ({length}), got {array.shape}")
    if array.dtype != np.bool_ and array.size and not np.isin(array, (0, 1)).all():
        raise ValueError(f"{name} must hold only 0 and 1 (or booleans)")
    return np.asarray(array == 1, dtype=np.bool_)


def check_level(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return confidence


def check_paired_values(champion: Sequence[float], challenger: Sequence[float]) -> FloatArray:
    a = np.asarray(champion, dtype=np.float64)
    b = np.asarray(challenger, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(
            f"champion and challenger must be equally long lists, got {a.shape} and {b.shape}"
        )
    if np.isinf(a).any() or np.isinf(b).any():
        raise ValueError("champion and challenger values must not be infinite")
    return np.asarray(b - a, dtype=np.float64)
