"""DeLong's paired test: speed against two reference implementations, and what the event-
level and block-level tests call significant as the number of events grows (Bifet et al. 2015,
§4.1).

**Speed.** ``driftwatch.core.comparison.delong`` computes the structural components by
binary search in each class's sorted scores, O(n log n). References, on the same seeded
data, checked to agree to 1e-9: the definition (all P·N pairs, O(P·N) time and memory) and
the midrank formulation of Sun & Xu (2014) with scipy's ``rankdata`` (O(n log n), the usual
"fast DeLong").

**Sensitivity.** Two models on the same events whose true AUCs differ by a negligible 0.002
(champion 0.760, challenger 0.762, correlation 0.64), and a true null (equal AUCs). For
growing n, the share of seeded runs in which each test rejects at α = 0.05: DeLong and
McNemar over all events, Wilcoxon's signed-rank test over 10 blocks. Under the null all three
should reject about 5 % of runs. With the small real gap, every test's power grows with n:
Bifet et al.'s (2015) warning (§4.1, Table 2: McNemar rejects for two seeds of one learner in 42–80
% of runs) is about that growth, and the table shows how much of it a fixed number of blocks
avoids. Whatever the test, "significant" on a large stream says little about "large": read
the interval, and set ``driftwatch compare --min-difference``.

Run: ``python -m benchmarks.comparison [--quick]``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from statistics import NormalDist

import numpy as np
import scipy.stats

from driftwatch.core.comparison.delong import delong
from driftwatch.core.comparison.mcnemar import mcnemar
from driftwatch.core.comparison.wilcoxon import wilcoxon_signed_rank

Data = tuple[np.ndarray, np.ndarray, np.ndarray]


def make_data(n: int, seed: int, gap: float = 0.0) -> Data:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    shared = rng.normal(size=n)
    # A positive shifted by μ, unit noise: AUC Φ(μ/√2). μ = 1 gives 0.760; the challenger's
    # μ is chosen for an AUC higher by ``gap``.
    normal = NormalDist()
    shift = math.sqrt(2) * normal.inv_cdf(normal.cdf(1 / math.sqrt(2)) + gap)
    a = y * 1.0 + 0.8 * shared + 0.6 * rng.normal(size=n)
    b = y * shift + 0.8 * shared + 0.6 * rng.normal(size=n)
    return y, a, b


def brute_variance(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    pos, neg = y == 1, y == 0
    d10, d01 = [], []
    for s in (a, b):
        x, z = s[pos][:, None], s[neg][None, :]
        psi = (x > z) + 0.5 * (x == z)
        d10.append(psi.mean(axis=1))
        d01.append(psi.mean(axis=0))
    return float(
        (d10[1] - d10[0]).var(ddof=1) / pos.sum() + (d01[1] - d01[0]).var(ddof=1) / neg.sum()
    )


def midrank_variance(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    pos, neg = y == 1, y == 0
    m, n = pos.sum(), neg.sum()
    v10, v01 = [], []
    for s in (a, b):
        r_all, r_pos, r_neg = (scipy.stats.rankdata(x) for x in (s, s[pos], s[neg]))
        v10.append((r_all[pos] - r_pos) / n)
        v01.append(1.0 - (r_all[neg] - r_neg) / m)
    return float((v10[1] - v10[0]).var(ddof=1) / m + (v01[1] - v01[0]).var(ddof=1) / n)


def median_seconds(function: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def speed(quick: bool) -> None:
    print("| events | driftwatch (ms) | midrank, scipy (ms) | all pairs (ms) | ratios |")
    print("|---:|---:|---:|---:|---:|")
    for n in (1_000, 10_000) if quick else (1_000, 10_000, 100_000, 1_000_000):
        y, a, b = make_data(n, seed=n)
        ours = delong(y, a, b).variance
        assert math.isclose(ours, midrank_variance(y, a, b), rel_tol=1e-9)
        repeats = 3 if n >= 100_000 else 7
        t_ours = median_seconds(lambda: delong(y, a, b), repeats)  # noqa: B023
        t_mid = median_seconds(lambda: midrank_variance(y, a, b), repeats)  # noqa: B023
        if n <= 10_000:
            assert math.isclose(ours, brute_variance(y, a, b), rel_tol=1e-9)
            t_brute = median_seconds(lambda: brute_variance(y, a, b), 3)  # noqa: B023
            pairs = f"{t_brute * 1e3:.1f}"
            ratio = f", {t_brute / t_ours:.0f}× faster than all pairs"
        else:
            pairs, ratio = "(P·N too large)", ""
        print(
            f"| {n:,} | {t_ours * 1e3:.2f} | {t_mid * 1e3:.2f} | {pairs} | "
            f"{t_mid / t_ours:.1f}× faster than midrank{ratio} |"
        )


def sensitivity(quick: bool) -> None:
    runs = 40 if quick else 100
    sizes = (2_000, 20_000) if quick else (2_000, 20_000, 200_000)
    print(f"Share of {runs} seeded runs rejecting at α = 0.05 (10 blocks per run).\n")
    print("| true AUC gap | events | DeLong | McNemar | Wilcoxon, 10 blocks |")
    print("|---:|---:|---:|---:|---:|")
    for gap in (0.0, 0.002):
        for n in sizes:
            rejected = np.zeros(3)
            for run in range(runs):
                y, a, b = make_data(n, seed=1000 * run + n, gap=gap)
                rejected[0] += delong(y, a, b).p_value < 0.05
                threshold_a, threshold_b = np.quantile(a, 0.7), np.quantile(b, 0.7)
                rejected[1] += mcnemar(y, a >= threshold_a, b >= threshold_b).mcnemar.p_value < 0.05
                size = n // 10
                blocks = [
                    delong(y[k : k + size], a[k : k + size], b[k : k + size])
                    for k in range(0, n, size)
                ]
                champion = [block.champion_auc for block in blocks]
                challenger = [block.challenger_auc for block in blocks]
                rejected[2] += wilcoxon_signed_rank(champion, challenger).p_value < 0.05
            shares = " | ".join(f"{r / runs:.2f}" for r in rejected)
            print(f"| {gap:.3f} | {n:,} | {shares} |")


def main(quick: bool = False) -> None:
    print("### DeLong's test: time per call\n")
    speed(quick)
    print("\n### What each test calls significant\n")
    sensitivity(quick)


if __name__ == "__main__":
    import sys

    main(quick="--quick" in sys.argv)
