"""Detection quality: false alarms on stationary streams, detection rate and delay on drifts.

Three tables, all on seeded streams from :mod:`driftwatch.simulate` (binormal scores, AUC 0.9):

A. **Paper 003's setting** (Table IV): Page-Hinkley (δ 0.005, λ 50, 30 minimum samples, no
   fading) on every event of each measure over a 100-event window, on stationary streams at
   class ratios 1:15 … 15:1: the share of runs with at least one false alarm, raw beside
   normalized, with the paper's own numbers (a Hoeffding tree on Agrawal data) in brackets.
B. **Candidates at driftwatch's scale** (d = 1000): every (measure, raw or normalized,
   detector and parameters, ``sample_every``) combination: false alarms on stationary streams
   at all five ratios (share of runs, per 100 000 events, and the spread between ratios),
   detection share and mean delay for a sudden and a gradual AUC drop of 0.10, and alarms
   raised by pure class-ratio changes (MinMaj, Sudden_RC, recurring), which are false alarms
   for every measure that the ratio does not move.
C. **The defaults** (``DEFAULT_WATCHES``, ``MonitorConfig()``), run end to end through
   :class:`~driftwatch.core.monitor.Monitor`, on the same scenarios.

Tables A and B record each run's sampled measure series once and replay them into every
candidate detector (the monitor feeds detectors exactly these samples:
``tests/core/test_monitor.py``) and count alarms by the monitor's rule: full windows only,
one alarm per change (``Monitor._repeated``).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from driftwatch.core.detectors import registry
from driftwatch.core.measures.crisp import NORMALIZABLE
from driftwatch.core.monitor import DEFAULT_WATCHES, ERROR_STREAM, Monitor, MonitorConfig
from driftwatch.core.normalization import normalize
from driftwatch.core.window import PrequentialWindow
from driftwatch.simulate import IMBALANCE_RATIOS, generate, positive_share_from_ratio

MEASURES = ("auc", *NORMALIZABLE)

# Paper 003, Table IV (REFERENCE.md): runs out of 100 with ≥ 1 false alarm, per class ratio.
PAPER_TABLE_IV = {
    "accuracy": (0, 12, 27, 3, 0),
    "balanced_accuracy": (9, 11, 26, 27, 25),
    "kappa": (68, 44, 50, 43, 49),
    "gmean": (91, 59, 24, 33, 47),
    "f1": (82, 50, 24, 1, 0),
    "precision": (94, 80, 50, 11, 0),
    "recall": (70, 44, 27, 4, 1),
    "mcc": (76, 49, 48, 40, 50),
}


@dataclass(frozen=True)
class Case:
    """One scenario instance: R seeded runs of it."""

    label: str
    scenario: str
    params: tuple[tuple[str, Any], ...]
    kind: str  # "stationary", "drift" (real AUC drop) or "virtual" (class ratio only)


def cases(length: int) -> list[Case]:
    stationary = [
        Case(f"stationary {r}", "stationary",
             (("positive_share", positive_share_from_ratio(r)),), "stationary")
        for r in IMBALANCE_RATIOS
    ]
    return [
        *stationary,
        Case("sudden AUC drop 0.10", "sudden_auc_drop", (("drop", 0.1),), "drift"),
        Case("gradual AUC drop 0.10", "gradual_auc_drop", (("drop", 0.1),), "drift"),
        Case("ratio change 3:7 → 1:15", "ratio_change", (), "virtual"),
        Case("MinMaj 1:19 → 19:1", "minmaj", (), "virtual"),
        Case("recurring ratio", "recurring_ratio", (), "virtual"),
    ]


# ----------------------------------------------------------------------------------------------
# Recording the sampled series of one run


def record(case: Case, seed: int, length: int, window_size: int, every: int) -> dict[str, Any]:
    """Sample every measure, raw and normalized, every ``every`` events of one seeded run."""
    stream = generate(case.scenario, seed=seed, length=length, **dict(case.params))
    window = PrequentialWindow(window_size)
    series: dict[tuple[str, str], list[float]] = defaultdict(list)
    errors = series[ERROR_STREAM, "raw"]
    for i, event in enumerate(stream, start=1):
        window.update(event.y_true, event.y_score)
        errors.append(float((event.y_score >= window.threshold) != event.y_true))
        if i % every:
            continue
        positives, negatives = window.positives, window.negatives
        full = len(window) == window_size  # as the monitor: detectors see full windows only
        for measure in MEASURES:
            value = window.measure(measure) if full else math.nan
            series[measure, "raw"].append(value)
            if measure != "auc":
                series[measure, "normalized"].append(
                    normalize(measure, positives, negatives, value)
                )
    change = stream.change_points[0].index if stream.change_points else None
    return {"case": case, "seed": seed, "series": dict(series), "change": change}


@dataclass(frozen=True)
class Candidate:
    detector: str
    params: tuple[tuple[str, Any], ...]
    every: int  # sample every this many events (a multiple of the recording step)

    @property
    def label(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.params if k != "direction")
        return f"{self.detector}({args}) every {self.every}"


def alarms(values: Sequence[float], step: int, candidate: Candidate, window_size: int) -> list[int]:
    """Event indices (1-based counts) of the alarms ``candidate`` raises on a recorded series."""
    detector = registry.create(candidate.detector, **dict(candidate.params))
    stride = candidate.every // step
    ramp = 0 if step == 1 else window_size // candidate.every
    found: list[int] = []
    quiet_until, fed, fed_at_drift = 0, 0, -1
    for k in range(stride - 1, len(values), stride):
        value = values[k]
        if math.isnan(value):
            continue
        fed += 1
        if detector.update(value).name == "DRIFT":
            # One alarm per change, by the monitor's rule (Monitor._repeated).
            event = (k + 1) * step
            width = getattr(detector, "width", None)
            repeated = event < quiet_until or (
                fed_at_drift >= 0 and width is not None and width > fed - fed_at_drift + ramp)
            if not repeated:
                found.append(event)
            quiet_until, fed_at_drift = event + window_size, fed
    return found


# ----------------------------------------------------------------------------------------------
# Scoring


@dataclass
class Score:
    runs: int = 0
    events: int = 0
    runs_with_false_alarm: int = 0
    false_alarms: int = 0
    detected: int = 0
    delays: list[int] | None = None

    def add(self, case: Case, found: list[int], change: int | None, length: int) -> None:
        self.runs += 1
        if self.delays is None:
            self.delays = []
        if case.kind == "drift" and change is not None:
            false = [a for a in found if a <= change]
            self.events += change
            after = [a for a in found if a > change]
            if after:
                self.detected += 1
                self.delays.append(after[0] - change)
        else:
            false = found
            self.events += length
        self.false_alarms += len(false)
        self.runs_with_false_alarm += bool(false)

    def share_false(self) -> float:
        return self.runs_with_false_alarm / self.runs if self.runs else math.nan

    def per_100k(self) -> float:
        return 1e5 * self.false_alarms / self.events if self.events else math.nan

    def share_detected(self) -> float:
        return self.detected / self.runs if self.runs else math.nan

    def mean_delay(self) -> float:
        return statistics.fmean(self.delays) if self.delays else math.nan


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.0f}%"


def _num(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:.0f}"


# ----------------------------------------------------------------------------------------------
# Table A: paper 003's setting


def table_a(runs: int, length: int, pool: Any) -> None:
    stationary = [c for c in cases(length) if c.kind == "stationary"]
    jobs = [(c, seed, length, 100, 1) for c in stationary for seed in range(runs)]
    recordings = pool.starmap(record, jobs, chunksize=1)
    ph = Candidate("page_hinkley", (("min_samples", 30), ("delta", 0.005), ("threshold", 50.0),
                                    ("alpha", 1.0), ("direction", "down")), 1)
    print(f"### A. Paper 003's setting: PH on each measure over a 100-event window, every "
          f"event; {runs} stationary runs of {length} events per ratio\n")
    print("Share of runs with ≥ 1 false alarm, raw / normalized [paper 003, Table IV].\n")
    print("| measure | " + " | ".join(IMBALANCE_RATIOS) + " |")
    print("|---|" + "---|" * len(IMBALANCE_RATIOS))
    for measure in NORMALIZABLE:
        cells = []
        for i, case in enumerate(stationary):
            mine = [r for r in recordings if r["case"] == case]
            shares = []
            for variant in ("raw", "normalized"):
                hit = sum(bool(alarms(r["series"][measure, variant], 1, ph, 100)) for r in mine)
                shares.append(f"{100 * hit / len(mine):.0f}")
            cells.append(f"{shares[0]} / {shares[1]} [{PAPER_TABLE_IV[measure][i]}]")
        print(f"| {measure} | " + " | ".join(cells) + " |")
    print()


# ----------------------------------------------------------------------------------------------
# Table B: candidates at d = 1000


def candidates(measure: str, step: int) -> list[Candidate]:
    """The detector settings tried on ``measure``; windowed measures every 1, 2 or 4 steps."""
    if measure == ERROR_STREAM:  # per-event 0/1 errors: the classic input of all three
        return [
            Candidate("ddm", (), 1),
            Candidate("page_hinkley", (("threshold", 50.0), ("direction", "up")), 1),
            Candidate("page_hinkley", (("threshold", 100.0), ("direction", "up")), 1),
            Candidate("adwin", (("delta", 0.002), ("direction", "up")), 1),
        ]
    found = []
    for every in (2 * step, 4 * step):
        for threshold, delta in ((1.0, 0.005), (2.0, 0.005), (3.0, 0.005), (1.0, 0.01),
                                 (2.0, 0.01)):
            found.append(Candidate("page_hinkley", (("threshold", threshold), ("delta", delta),
                                                    ("direction", "down")), every))
    for every in (step, 2 * step):
        for delta in (0.002, 0.1):
            found.append(Candidate("adwin", (("delta", delta), ("clock", 1),
                                             ("direction", "down")), every))
    return found


def table_b(runs: int, length: int, window_size: int, step: int, pool: Any) -> None:
    all_cases = cases(length)
    jobs = [(c, seed, length, window_size, step) for c in all_cases for seed in range(runs)]
    recordings = pool.starmap(record, jobs, chunksize=1)
    print(f"### B. Candidates at d = {window_size}: {runs} runs of {length} events per "
          "scenario\n")
    print("FA: false alarms on the 5 stationary ratios (share of runs with any; per 100 000 "
          "events; spread = highest − lowest share across ratios). Drift: share of runs "
          "detecting a 0.10 AUC drop after the change, and mean delay in events. Virtual: "
          "share of runs with an alarm under a pure class-ratio change.\n")
    print("| measure | input | detector | FA runs | FA /100k | FA spread | sudden det. | "
          "sudden delay | gradual det. | gradual delay | virtual |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for measure in (*MEASURES, ERROR_STREAM):
        normalizable = measure in NORMALIZABLE
        for variant in ("raw", "normalized") if normalizable else ("raw",):
            for candidate in candidates(measure, step):
                scores: dict[str, Score] = defaultdict(Score)
                for rec in recordings:
                    case = rec["case"]
                    recorded_every = 1 if measure == ERROR_STREAM else step
                    found = alarms(rec["series"][measure, variant], recorded_every, candidate,
                                   window_size)
                    key = case.label if case.kind == "stationary" else case.kind + case.scenario
                    scores[key].add(case, found, rec["change"], length)
                _row_b(measure, variant, candidate, scores)
    print()


def _row_b(measure: str, variant: str, candidate: Candidate, scores: dict[str, Score]) -> None:
    stationary = [s for k, s in scores.items() if k.startswith("stationary")]
    pooled = Score(runs=sum(s.runs for s in stationary), events=sum(s.events for s in stationary),
                   runs_with_false_alarm=sum(s.runs_with_false_alarm for s in stationary),
                   false_alarms=sum(s.false_alarms for s in stationary))
    spread = max(s.share_false() for s in stationary) - min(s.share_false() for s in stationary)
    sudden, gradual = scores["driftsudden_auc_drop"], scores["driftgradual_auc_drop"]
    virtual = [s for k, s in scores.items() if k.startswith("virtual")]
    virtual_share = sum(s.runs_with_false_alarm for s in virtual) / sum(s.runs for s in virtual)
    print(f"| {measure} | {variant} | {candidate.label} | {_pct(pooled.share_false())} | "
          f"{pooled.per_100k():.1f} | {_pct(spread)} | {_pct(sudden.share_detected())} | "
          f"{_num(sudden.mean_delay())} | {_pct(gradual.share_detected())} | "
          f"{_num(gradual.mean_delay())} | {_pct(virtual_share)} |")


# ----------------------------------------------------------------------------------------------
# Table C: the defaults, end to end through the Monitor


def run_defaults(case: Case, seed: int, length: int) -> dict[str, Any]:
    stream = generate(case.scenario, seed=seed, length=length, **dict(case.params))
    monitor = Monitor("bench", MonitorConfig())
    found: dict[tuple[str, str], list[int]] = defaultdict(list)
    for event in stream:
        for alarm in monitor.update(event):
            if alarm.level == "drift":
                found[alarm.measure, alarm.detector].append(alarm.event_count)
    change = stream.change_points[0].index if stream.change_points else None
    return {"case": case, "found": dict(found), "change": change}


def table_c(runs: int, length: int, pool: Any) -> None:
    config = MonitorConfig()
    all_cases = cases(length)
    jobs = [(c, seed, length) for c in all_cases for seed in range(runs)]
    results = pool.starmap(run_defaults, jobs, chunksize=1)
    keys = [(w.measure, d.name) for w in DEFAULT_WATCHES for d in w.detectors]
    print(f"### C. The defaults end to end (d = {config.window_size}, sample_every = "
          f"{config.sample_every}): {runs} runs of {length} events per scenario\n")
    print("| scenario | " + " | ".join(f"{m} {d}" for m, d in keys) + " |")
    print("|---|" + "---|" * len(keys))
    for case in all_cases:
        mine = [r for r in results if r["case"] == case]
        cells = []
        for key in keys:
            score = Score()
            for r in mine:
                score.add(case, r["found"].get(key, []), r["change"], length)
            if case.kind == "drift":
                cells.append(f"det. {_pct(score.share_detected())}, delay "
                             f"{_num(score.mean_delay())}, FA {_pct(score.share_false())}")
            else:
                cells.append(f"FA {_pct(score.share_false())} "
                             f"({score.per_100k():.1f}/100k)")
        print(f"| {case.label} | " + " | ".join(cells) + " |")
    total = runs * length * sum(c.kind != "drift" for c in all_cases)
    print(f"\nEvents without a real drift in table C: {total:,}.\n")


def main(quick: bool = False, tables: Iterable[str] = "ABC") -> None:
    with multiprocessing.get_context("fork").Pool(2) as pool:
        if "A" in tables:
            table_a(runs=4 if quick else 40, length=3000 if quick else 10_000, pool=pool)
        if "B" in tables:
            table_b(runs=4 if quick else 20, length=20_000 if quick else 40_000,
                    window_size=1000, step=25, pool=pool)
        if "C" in tables:
            table_c(runs=4 if quick else 20, length=20_000 if quick else 50_000, pool=pool)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tables", default="ABC")
    args = parser.parse_args()
    main(quick=args.quick, tables=args.tables)
