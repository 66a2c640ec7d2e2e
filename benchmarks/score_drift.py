"""Label-free score drift: are the block z-scores N(0, 1) without change, and what do they cost?

A. **Calibration.** Stationary streams (scores Beta(2, 5), predicted positive at 0.5), each
   block of m predictions compared with a reference of R: the z-scores' mean, standard
   deviation, share above 1.645 (5 % for N(0, 1)) and lag-1 autocorrelation, and the spread
   of each run's mean z against what independent z-scores would give (√(1/blocks)): a frozen
   reference shared by all blocks of a run makes the run means spread wider, by about the
   correlation m/(m + R) that the module docstring names.
B. **False alarms.** The agent's default detectors (:func:`~driftwatch.core.prediction_watch.
   default_detectors`: CUSUMs with k = 0.5 whose threshold is set for a target in-control
   run length) on those z-scores, against the alarms the target implies.
C. **Cost.** One prediction's update (amortized over blocks), and the sliding values
   (exact KS and PSI of w = 1000 recent scores against R = 10 000) beside
   ``scipy.stats.ks_2samp`` alone on the same samples.

Run: ``python -m benchmarks score_drift`` (``--quick``: fewer runs).
"""

from __future__ import annotations

import statistics
import sys
import timeit

import numpy as np

from driftwatch.core.score_drift import SIGNALS, ScoreDrift


def calibration_table(quick: bool) -> None:
    runs, blocks = (12, 30) if quick else (40, 40)
    print(f"A. Calibration: {runs} stationary runs × {blocks} blocks each\n")
    print("| reference | R | m | signal | mean z | sd z | P(z > 1.645) | lag-1 corr | "
          "sd of run means (iid) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for reference, r, m in (("frozen", 10_000, 500), ("frozen", 2_000, 500),
                            ("previous", 10_000, 500)):
        rng = np.random.default_rng(1)
        z = np.empty((runs, blocks, len(SIGNALS)))
        for run in range(runs):
            watch = ScoreDrift(window=m, block_size=m, reference=reference, reference_size=r)
            got = [s for x in rng.beta(2, 5, r + m * blocks)
                   if (s := watch.update(float(x))) is not None]
            z[run] = [[signal.z for signal in block] for block in got]
        for i, name in enumerate(SIGNALS):
            zi = z[:, :, i]
            lag1 = statistics.fmean(float(np.corrcoef(row[:-1], row[1:])[0, 1]) for row in zi)
            print(f"| {reference} | {r} | {m} | {name} | {zi.mean():+.3f} | {zi.std():.3f} | "
                  f"{np.mean(zi > 1.645):.3f} | {lag1:+.3f} | "
                  f"{zi.mean(axis=1).std():.3f} ({blocks ** -0.5:.3f}) |")
    print()


def false_alarm_table(quick: bool) -> None:
    """B. CUSUM false alarms on the block z-scores (what the agent's default detectors do)."""
    from driftwatch.core.prediction_watch import default_detectors

    runs, blocks, arl = (10, 200, 200.0) if quick else (30, 300, 200.0)
    print(f"B. False alarms of the default CUSUMs (target: one per {arl:.0f} blocks), "
          f"{runs} stationary runs × {blocks} blocks\n")
    print("| reference | R | m | signal | alarms | expected | ratio |")
    print("|---|---|---|---|---|---|---|")
    for reference, r, m in (("frozen", 10_000, 500), ("previous", 10_000, 500)):
        rng = np.random.default_rng(5)
        alarms = dict.fromkeys(SIGNALS, 0)
        total = 0
        for _ in range(runs):
            watch = ScoreDrift(window=m, block_size=m, reference=reference, reference_size=r)
            detectors = default_detectors(arl)
            for x in rng.beta(2, 5, r + m * blocks):
                signals = watch.update(float(x))
                if signals is None:
                    continue
                total += 1
                for signal in signals:
                    if detectors[signal.name][0].update(signal.z).value == "drift":
                        alarms[signal.name] += 1
        for name in SIGNALS:
            print(f"| {reference} | {r} | {m} | {name} | {alarms[name]} | {total / arl:.1f} | "
                  f"{alarms[name] / (total / arl):.2f} |")
    print()


def cost_table(quick: bool) -> None:
    from scipy import stats

    rng = np.random.default_rng(2)
    w, r, m = 1000, 10_000, 500
    watch = ScoreDrift(window=w, block_size=m, reference_size=r)
    scores = [float(x) for x in rng.beta(2, 5, r + 20 * m)]
    for x in scores[: r + w]:
        watch.update(x)
    rest = scores[r + w:]
    repeat = 3 if quick else 7
    per_update = min(timeit.repeat(lambda: [watch.update(x) for x in rest[: 4 * m]],
                                   number=1, repeat=repeat)) / (4 * m)
    values = min(timeit.repeat(watch.values, number=5, repeat=repeat)) / 5
    a, b = np.array(scores[-w:]), np.array(scores[:r])
    scipy_ks = min(timeit.repeat(lambda: stats.ks_2samp(a, b), number=5, repeat=repeat)) / 5
    print(f"C. Cost (w = {w}, m = {m}, R = {r}; best of {repeat})\n")
    print("| operation | time | ratio |")
    print("|---|---|---|")
    print(f"| update, per prediction (block closes amortized) | {per_update * 1e6:.1f} µs | |")
    print(f"| values(): exact KS + PSI + rates | {values * 1e3:.2f} ms | "
          f"{values / scipy_ks:.2f}× scipy |")
    print(f"| scipy.stats.ks_2samp (statistic and p-value) | {scipy_ks * 1e3:.2f} ms | 1 |")
    print()


def main(quick: bool = False) -> None:
    calibration_table(quick)
    false_alarm_table(quick)
    cost_table(quick)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
