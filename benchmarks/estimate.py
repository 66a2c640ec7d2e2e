"""Estimated performance from scores alone: accuracy, NannyML's CBPE, the self-check, cost.

A. **Accuracy under covariate shift.** The model's scores are calibrated probabilities,
   p = σ(a + 1.5·x); the covariate x ~ N(μₜ, σₜ) moves (σₜ shrinks from 1.3 to 0.6 over the
   stream, μₜ follows so that the positive share stays at 1:4 or 1:15), so the score
   distribution and the AUC change while P(label | score) does not. The estimated window
   (d = 1000) is compared with the realized prequential window over the same predictions
   every 250 predictions: the share of windows where the estimate is within 0.02 (AUC) or
   0.03 (false-negative and false-positive rates) of the realized value, the coverage of
   ±1.96 standard errors, the mean error and the mean predicted bias. Calibration: the
   identity (the scores are probabilities), and an isotonic fit on the first N labelled
   events of scores given as logits (not probabilities), N = 2 000 and 10 000.
B. **Against NannyML's CBPE** (0.13, in its own venv ``benchmarks/.venv-nannyml``): the same
   kind of stream with over-confident scores √p, both calibrated by isotonic regression on
   the same 5 000 labelled reference events, estimates per chunk of 1000 (NannyML's chunks)
   against the realized values; CPU cost per event (NannyML's chunked estimate, and one
   estimate of one window, which is what a sliding estimate costs per event).
C. **The self-check catches a concept change.** Labels flipped for the scores in a band,
   or drawn at the base rate there (P(label | score) changes, the scores do not): the
   realized AUC falls, the estimate does not. Delay, in labelled events after the change,
   of the self-check's CUSUM on the AUC z (k = 0.5, the monitor's default target ARL), on
   the z-scores as they are and on their self-starting residuals, against the default
   monitor's labelled AUC watch (blocks + CUSUM) on the same labels; and false alarms of
   the self-check's CUSUM at a short target ARL on stationary streams (identity, and
   isotonic fits on N labels), both ways.
D. **Cost** per prediction and per read, beside the prequential window and the default
   monitor measured in the same run.

``python -m benchmarks estimate`` (``--quick``: fewer runs). Seeds start at 9_000_000.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from driftwatch.core.blocks import delong
from driftwatch.core.detectors import Cusum, DetectorState
from driftwatch.core.estimation.calibration import IsotonicCalibration
from driftwatch.core.estimation.estimator import PerformanceEstimator
from driftwatch.core.estimation.self_check import CalibrationCheck, SelfStarting
from driftwatch.core.estimation.window import EstimatedWindow
from driftwatch.core.events import Event
from driftwatch.core.monitor import DEFAULT_ARL, Monitor, MonitorConfig
from driftwatch.core.window import PrequentialWindow

SEED = 9_000_000
SLOPE = 1.5
RATIOS = {"1:4": 0.2, "1:15": 1 / 16}
NANNYML_PYTHON = Path(__file__).parent / ".venv-nannyml" / "bin" / "python"
_GRID = np.random.default_rng(1).normal(size=200_000)  # for E[p] under N(μ, σ)


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def intercept(share: float) -> float:
    """a such that E[σ(a + SLOPE·x)] = share for x ~ N(0, 1.3) (the stream's start)."""
    low, high = -20.0, 20.0
    for _ in range(60):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if sigmoid(mid + SLOPE * 1.3 * _GRID).mean() < share \
            else (low, mid)
    return 0.5 * (low + high)


def location(a: float, spread: float, share: float) -> float:
    """μ such that the positive share stays ``share`` when x ~ N(μ, spread)."""
    low, high = -10.0, 10.0
    for _ in range(50):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if sigmoid(a + SLOPE * (mid + spread * _GRID)).mean() < share \
            else (low, mid)
    return 0.5 * (low + high)


def covariate_shift(rng: np.random.Generator, share: float, stationary: int, shifted: int,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(logits, probabilities, labels): ``stationary`` events at σ = 1.3, then σ falls
    linearly to 0.6 over ``shifted`` events, μ keeping the share (in 40 steps)."""
    a = intercept(share)
    spreads = np.concatenate([np.full(stationary, 1.3), np.linspace(1.3, 0.6, shifted)])
    steps = np.round(np.linspace(1.3, 0.6, 41), 6)
    centres = {s: location(a, s, share) for s in steps}
    mu = np.array([centres[steps[np.argmin(np.abs(steps - s))]] for s in spreads])
    x = mu + spreads * rng.normal(size=spreads.size)
    logits = a + SLOPE * x
    p = sigmoid(logits)
    return logits, p, (rng.random(p.size) < p).astype(int)


# ------------------------------------------------------------------------------------------
# A. Accuracy under covariate shift


def compare_windows(scores: np.ndarray, p_hat: np.ndarray, labels: np.ndarray, start: int,
                    d: int = 1000, every: int = 250) -> dict[str, list[tuple[float, ...]]]:
    """Estimated vs realized over the same sliding windows from ``start`` on: per measure,
    (estimate, realized, standard error, bias) every ``every`` events once full."""
    estimated, realized = EstimatedWindow(d), PrequentialWindow(d)
    out: dict[str, list[tuple[float, ...]]] = {"auc": [], "false_negative_rate": [],
                                               "false_positive_rate": []}
    for t in range(start, scores.size):
        s = float(scores[t])
        estimated.update(s, float(p_hat[t]), int(p_hat[t] >= 0.5))
        realized.update(int(labels[t]), s, int(p_hat[t] >= 0.5))
        if t - start + 1 >= d and (t - start + 1) % every == 0:
            c = realized.confusion
            values = {"auc": realized.auc,
                      "false_negative_rate": c.fn / (c.fn + c.tp) if c.fn + c.tp else math.nan,
                      "false_positive_rate": c.fp / (c.fp + c.tn) if c.fp + c.tn else math.nan}
            for name, e in estimated.estimates().items():
                out[name].append((e.value, values[name], e.standard_error, e.bias))
    return out


def accuracy_table(quick: bool) -> None:
    runs = 2 if quick else 4
    stationary, shifted = 12_000, (20_000 if quick else 40_000)
    print(f"A. Estimated vs realized over sliding windows (d = 1000, every 250 predictions), "
          f"covariate shift, {runs} runs per row\n")
    print("| calibration | ratio | windows | measure | within tol. | coverage ±1.96 SE | "
          "median SE | mean error | mean predicted bias |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|")
    tolerance = {"auc": 0.02, "false_negative_rate": 0.03, "false_positive_rate": 0.03}
    for ratio, share in RATIOS.items():
        for calibration in ("identity", "isotonic N=2000", "isotonic N=10000"):
            rows: dict[str, list[tuple[float, ...]]] = {m: [] for m in tolerance}
            for run in range(runs):
                rng = np.random.default_rng(SEED + 100 * run + int(1 / share))
                logits, p, y = covariate_shift(rng, share, stationary, shifted)
                if calibration == "identity":
                    scores, p_hat = p, p
                else:
                    n = int(calibration.split("=")[1])
                    fit = IsotonicCalibration.fit(y[:n].tolist(), logits[:n].tolist())
                    scores = logits
                    p_hat = np.array([fit.probability(float(s)) for s in logits])
                # The realized window predicts at 0.5 on the calibrated probability.
                got = compare_windows(scores, p_hat, y, stationary - 1000)
                for name in rows:
                    rows[name] += got[name]
            for name, values in rows.items():
                v = np.array([r for r in values if not math.isnan(r[1])])
                error = v[:, 0] - v[:, 1]
                print(f"| {calibration} | {ratio} | {len(v)} | {name} | "
                      f"{np.mean(np.abs(error) <= tolerance[name]):.3f} "
                      f"(±{tolerance[name]}) | {np.mean(np.abs(error) <= 1.96 * v[:, 2]):.3f} | "
                      f"{np.median(v[:, 2]):.4f} | {error.mean():+.4f} | {v[:, 3].mean():+.5f} |")
    print()


# ------------------------------------------------------------------------------------------
# B. NannyML's CBPE


def nannyml_table(quick: bool) -> None:
    chunk, reference = 1000, 5000
    analysis = 20_000 if quick else 50_000
    print(f"B. Against NannyML's CBPE: isotonic calibration on the same {reference} labelled "
          f"reference events, over-confident scores √p, {analysis // chunk} chunks of {chunk}\n")
    if not NANNYML_PYTHON.exists():
        print(f"not run: NannyML's venv is missing. Create it with\n\n"
              f"    python3 -m venv {NANNYML_PYTHON.parent.parent} && "
              f"{NANNYML_PYTHON.parent}/pip install nannyml==0.13.1 statsmodels\n")
        return
    print("| ratio | estimator | measure | mean abs. error | 95th pct. abs. error | "
          "within tol. |")
    print("|---|---|---|---:|---:|---:|")
    costs = []
    for ratio, share in RATIOS.items():
        rng = np.random.default_rng(SEED + 7 + int(1 / share))
        _, p, y = covariate_shift(rng, share, reference, analysis)
        scores = np.sqrt(p)  # over-confident: a model whose scores need calibrating
        fit = IsotonicCalibration.fit(y[:reference].tolist(), scores[:reference].tolist())
        pred = (scores >= 0.5).astype(int)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "data.npz")
            np.savez(path, ref_score=scores[:reference], ref_label=y[:reference],
                     ref_pred=pred[:reference], score=scores[reference:],
                     label=y[reference:], pred=pred[reference:], chunk_size=chunk)
            result = subprocess.run([str(NANNYML_PYTHON), str(Path(__file__).with_name(
                "nannyml_cbpe.py")), path], capture_output=True, text=True, check=True)
        theirs = json.loads(result.stdout)
        # driftwatch over the same chunks: the window, read at each chunk's end.
        estimator = PerformanceEstimator(window=chunk, calibration=fit)
        ours: dict[str, list[float]] = {"auc": [], "fnr": [], "fpr": []}
        realized: dict[str, list[float]] = {"auc": [], "fnr": [], "fpr": []}
        begin = time.process_time()
        for t in range(reference, p.size):
            estimator.predict(float(scores[t]), int(pred[t]))
            if (t - reference + 1) % chunk == 0:
                e = estimator.estimates()
                ours["auc"].append(e["auc"].value)
                ours["fnr"].append(e["false_negative_rate"].value)
                ours["fpr"].append(e["false_positive_rate"].value)
        ours_s = time.process_time() - begin
        for i in range(analysis // chunk):
            sl = slice(reference + i * chunk, reference + (i + 1) * chunk)
            yy, ss, pp = y[sl].astype(bool), scores[sl], pred[sl]
            realized["auc"].append(delong(ss[yy].tolist(), ss[~yy].tolist())[0])
            realized["fnr"].append(float(np.mean(pp[yy] == 0)))
            realized["fpr"].append(float(np.mean(pp[~yy] == 1)))
        cbpe = {"auc": theirs["roc_auc"], "fnr": [1 - r for r in theirs["recall"]],
                "fpr": [1 - s for s in theirs["specificity"]]}
        for name, tol in (("auc", 0.02), ("fnr", 0.03), ("fpr", 0.03)):
            for label, values in (("driftwatch", ours[name]), ("NannyML CBPE", cbpe[name])):
                error = np.abs(np.array(values[:len(realized[name])]) - realized[name])
                print(f"| {ratio} | {label} | {name} | {error.mean():.4f} | "
                      f"{np.quantile(error, 0.95):.4f} | {np.mean(error <= tol):.2f} |")
        costs.append((ratio, ours_s / analysis, theirs["estimate_s"] / analysis,
                      theirs["fit_s"], theirs["single_chunk_s"], theirs["version"]))
    print("\nCPU cost (process time; driftwatch: predict() per event plus estimates() with "
          "standard errors at each chunk's end)\n")
    print("| ratio | driftwatch per event | NannyML per event (chunked) | ratio | NannyML "
          "fit | NannyML one window | driftwatch one window, incremental (D) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for ratio, ours_e, theirs_e, fit_s, single, _ in costs:
        print(f"| {ratio} | {ours_e * 1e6:.1f} µs | {theirs_e * 1e6:.1f} µs | "
              f"{theirs_e / ours_e:.1f}× | {fit_s:.2f} s | {single * 1e3:.1f} ms | "
              f"see D |")
    print(f"\n(NannyML {costs[0][5]})\n")


# ------------------------------------------------------------------------------------------
# C. Concept change: the self-check against the labelled AUC watch


def concept_stream(rng: np.random.Generator, share: float, before: int, after: int,
                   band: tuple[float, float], mode: str = "flip",
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Calibrated scores at a fixed share; after ``before`` events the labels of scores in
    ``band`` change: flipped (``"flip"``), or drawn at the base rate, the scores telling
    nothing there any more (``"noise"``)."""
    a = intercept(share)
    p = sigmoid(a + SLOPE * 1.3 * rng.normal(size=before + after))
    y = rng.random(p.size) < p
    changed = (np.arange(p.size) >= before) & (p >= band[0]) & (p < band[1])
    if mode == "flip":
        y[changed] = ~y[changed]
    else:
        y[changed] = rng.random(int(changed.sum())) < share
    return p, y.astype(int)


def population_auc(p: np.ndarray, y: np.ndarray) -> float:
    yy = y.astype(bool)
    return delong(p[yy].tolist(), p[~yy].tolist())[0]


def detection_table(quick: bool) -> None:
    runs = 4 if quick else 12
    before, after = 20_000, 20_000
    print(f"C. Concept change (labels flipped for a score band at event {before}): delay in "
          f"labelled events to the first AUC alarm, {runs} runs, target ARL {DEFAULT_ARL:.0f} "
          f"blocks\n")
    print("| ratio | labels changed | realized AUC before → after | estimated AUC | watch | "
          "detected | median delay | false alarms before |")
    print("|---|---|---|---|---|---:|---:|---:|")
    cases = (("1:4", (0.6, 0.8), "flip"), ("1:4", (0.6, 0.9), "flip"),
             ("1:15", (0.6, 1.0), "flip"), ("1:15", (0.3, 1.0), "noise"))
    for ratio, band, mode in cases:
        share = RATIOS[ratio]
        names = ("self-check", "self-check, self-starting", "labelled AUC")
        delays: dict[str, list[float]] = {name: [] for name in names}
        false_alarms = dict.fromkeys(names, 0)
        aucs = []
        for run in range(runs):
            rng = np.random.default_rng(SEED + 1000 + run)
            p, y = concept_stream(rng, share, before, after, band, mode)
            aucs.append((population_auc(p[:before], y[:before]),
                         population_auc(p[before:], y[before:])))
            check, starting = CalibrationCheck(), SelfStarting()
            cusums = {name: Cusum(arl=DEFAULT_ARL, direction="down") for name in names[:2]}
            monitor = Monitor("m", MonitorConfig())
            found = dict.fromkeys(names, math.nan)
            for t in range(p.size):
                block = check.update(int(y[t]), float(p[t]), float(p[t]))
                if block is not None:
                    z = block.z("auc")
                    inputs = {names[0]: None if math.isnan(z) else z,
                              names[1]: starting.update(z)}
                    for name, x in inputs.items():
                        if x is None or cusums[name].update(x) is not DetectorState.DRIFT:
                            continue
                        if name == names[1]:
                            starting.reset()
                        if t < before:
                            false_alarms[name] += 1
                        elif math.isnan(found[name]):
                            found[name] = t - before
                for alarm in monitor.update(Event(int(y[t]), float(p[t]))):
                    if alarm.measure == "auc" and alarm.level == "drift":
                        if t < before:
                            false_alarms["labelled AUC"] += 1
                        elif math.isnan(found["labelled AUC"]):
                            found["labelled AUC"] = t - before
            for name, delay in found.items():
                delays[name].append(delay)
        before_auc = statistics.fmean(a for a, _ in aucs)
        after_auc = statistics.fmean(b for _, b in aucs)
        for name, values in delays.items():
            hit = [v for v in values if not math.isnan(v)]
            median = f"{statistics.median(hit):.0f}" if hit else "—"
            print(f"| {ratio} | {mode} [{band[0]}, {band[1]}) | {before_auc:.3f} → "
                  f"{after_auc:.3f} | "
                  f"{before_auc:.3f} (unchanged) | {name} | {len(hit)}/{runs} | {median} | "
                  f"{false_alarms[name]} |")
    print()
    calibration_of_check(quick)


def calibration_of_check(quick: bool) -> None:
    """False alarms of the self-check's CUSUM at a short target ARL on stationary streams."""
    arl, runs, blocks = 200.0, (3 if quick else 5), (600 if quick else 1500)
    print(f"Self-check CUSUM (k = 0.5, down, target ARL {arl:.0f} blocks) on stationary "
          f"streams, {runs} runs × about {blocks} blocks: alarms against the target\n")
    print("| ratio | calibration | blocks | AUC z mean | AUC z sd | alarms | expected | "
          "ratio | self-starting: alarms | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for ratio, share in RATIOS.items():
        for calibration in ("identity", "isotonic N=2000", "isotonic N=10000"):
            total, alarms, zs = 0, 0, []
            residuals, starting_alarms = 0, 0
            for run in range(runs):
                rng = np.random.default_rng(SEED + 2000 + run)
                events = int(blocks * 20 / share / 0.8)
                p, y = concept_stream(rng, share, events, 0, (0.0, 0.0))
                if calibration == "identity":
                    p_hat = p
                else:
                    n = int(calibration.split("=")[1])
                    ref_p, ref_y = concept_stream(np.random.default_rng(SEED + 3000 + run),
                                                  share, n, 0, (0.0, 0.0))
                    fit = IsotonicCalibration.fit(ref_y.tolist(), ref_p.tolist())
                    p_hat = np.array([fit.probability(float(s)) for s in p])
                check, cusum = CalibrationCheck(), Cusum(arl=arl, direction="down")
                starting, starting_cusum = SelfStarting(), Cusum(arl=arl, direction="down")
                for t in range(p.size):
                    block = check.update(int(y[t]), float(p[t]), float(p_hat[t]))
                    if block is None or math.isnan(z := block.z("auc")):
                        continue
                    total += 1
                    zs.append(z)
                    alarms += cusum.update(z) is DetectorState.DRIFT
                    residual = starting.update(z)
                    if residual is not None:
                        residuals += 1
                        if starting_cusum.update(residual) is DetectorState.DRIFT:
                            starting_alarms += 1
                            starting.reset()
            print(f"| {ratio} | {calibration} | {total} | {np.mean(zs):+.3f} | "
                  f"{np.std(zs):.3f} | {alarms} | {total / arl:.1f} | "
                  f"{alarms / (total / arl):.2f} | {starting_alarms} | "
                  f"{starting_alarms / (residuals / arl):.2f} |")
    print()


# ------------------------------------------------------------------------------------------
# D. Cost


def monitor_run(d: int, y: list[int], p: list[float]) -> None:
    monitor = Monitor("m", MonitorConfig(window_size=d))
    for label, score in zip(y, p, strict=True):
        monitor.update_values(label, score, None, None)


def window_run(d: int, p: list[float], every: int) -> None:
    window = EstimatedWindow(d)
    for i, score in enumerate(p):
        window.update(score, score)
        if i % every == 0:
            window.auc  # noqa: B018  (a read settles the queue)


def estimator_run(d: int, p: list[float]) -> None:
    estimator = PerformanceEstimator(window=d)
    for score in p:
        estimator.predict(score)


def check_run(y: list[int], p: list[float]) -> None:
    check = CalibrationCheck()
    for label, score in zip(y, p, strict=True):
        check.update(label, score, score)


def prequential_run(d: int, y: list[int], p: list[float]) -> None:
    window = PrequentialWindow(d)
    for label, score in zip(y, p, strict=True):
        window.update(label, score)
        window.auc  # noqa: B018


def cost_table(quick: bool) -> None:
    repeat = 3 if quick else 7
    rng = np.random.default_rng(SEED + 5)
    print(f"D. Cost (best of {repeat}; the prequential window and the default monitor in the "
          f"same run)\n")
    print("| d | operation | per event | ratio to the default monitor's update |")
    print("|---:|---|---:|---:|")
    for d in (1000, 10_000):
        n = 20_000
        p = sigmoid(-1.4 + SLOPE * rng.normal(size=n + d)).tolist()
        y = (rng.random(n + d) < np.array(p)).astype(int).tolist()
        events = n + d

        def best(run: Callable[[], None], events: int = events) -> float:
            return min(timeit.repeat(run, number=1, repeat=repeat)) / events

        base = best(partial(monitor_run, d, y, p))
        rows = [("default monitor, update (reference)", base),
                ("estimator.predict (identity calibration)", best(partial(estimator_run, d, p))),
                ("estimated window, read at every event (incremental)",
                 best(partial(window_run, d, p, 1))),
                ("estimated window, read every 25 events", best(partial(window_run, d, p, 25))),
                ("estimated window, read every 1000 events",
                 best(partial(window_run, d, p, 1000))),
                ("self-check, per labelled event (block closes amortized)",
                 best(partial(check_run, y, p))),
                ("prequential window, read at every event",
                 best(partial(prequential_run, d, y, p)))]
        window = EstimatedWindow(d)
        for score in p[:d]:
            window.update(score, score)
        window.auc  # noqa: B018
        estimates = min(timeit.repeat(window.estimates, number=5, repeat=repeat)) / 5
        for name, cost in rows:
            print(f"| {d} | {name} | {cost * 1e6:.2f} µs | {cost / base:.2f} |")
        print(f"| {d} | estimates() with standard errors, per read | {estimates * 1e3:.2f} ms "
              f"| |")
    print()


def main(quick: bool = False) -> None:
    accuracy_table(quick)
    nannyml_table(quick)
    detection_table(quick)
    cost_table(quick)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
