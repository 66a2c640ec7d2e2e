"""Paired samples the comparison tests share: Bifet et al.'s (2015) Table 1 and runs under a
true null."""

from __future__ import annotations

import numpy as np

# Bifet et al. 2015, Table 1: ten folds, classifier A and classifier B (accuracy in %).
TABLE_1_A = [77.98, 72.26, 76.95, 77.94, 72.23, 76.90, 77.93, 72.37, 76.93, 77.97]
TABLE_1_B = [77.91, 72.27, 76.97, 76.57, 71.63, 75.48, 75.75, 71.33, 74.54, 77.94]


def null_runs(runs: int, n: int, seed: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Two different models of the same true AUC (Φ(1/√2) ≈ 0.76), correlated noise."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(runs):
        y = (rng.random(n) < 0.3).astype(int)
        shared = rng.normal(size=n)
        a = y + 0.8 * shared + 0.6 * rng.normal(size=n)
        b = y + 0.8 * shared + 0.6 * rng.normal(size=n)
        out.append((y, a, b))
    return out
