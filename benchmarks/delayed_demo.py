"""The delayed-labels demo's story over many seeds: how long before the labels does the
estimate see the covariate shift, and how soon after a concept change does the self-check?

``driftwatch demo --delayed-labels`` plays one seed live. Here its offline path
(:func:`driftwatch.demo.delayed.offline`: the same join, label-free watch, monitor and
estimate the agent runs, with the demo's settings, no broker) runs seeds 1 … n of the same
scenario, at the demo's 500 predictions a second with labels 20 s late on average
(lognormal), and times, on the records' clock, in seconds after each change:

- the first label-free score alarm (KS, PSI or predicted-positive rate) after the shift;
- the estimated AUC's first reading below the midpoint of the AUC before and after the shift
  (read every 125 predictions, the demo's 0.25 s snapshots);
- the first labelled AUC alarm, and the estimate's lead over it;
- the first calibration-drift alarm after the concept change,

and counts the alarms before the shift (the stationary phase: none should come) and the
calibration-drift alarms before the concept change (none should come).

Run: ``python -m benchmarks delayed_demo`` (``--quick``: 4 seeds instead of 12).
"""

from __future__ import annotations

import math
import statistics

from driftwatch.demo import delayed as demo_delayed
from driftwatch.demo.run import demo_monitoring
from driftwatch.settings import Settings
from driftwatch.simulate import generate

RATE = 500.0


def _after(times: list[float], start: float) -> float:
    later = [t for t in times if t >= start]
    return min(later) - start if later else math.nan


def main(quick: bool = False) -> None:
    seeds = range(1, 5 if quick else 13)
    print(f"Scenario {demo_delayed.SCENARIO} {demo_delayed.PARAMETERS}, "
          f"{demo_delayed.LENGTH} predictions at {RATE:g}/s, labels "
          f"{demo_delayed.LABEL_DELAY_S:g} s late on average ({demo_delayed.DELAY_DISTRIBUTION}); "
          "times in seconds after the change\n")
    print("| seed | alarms before the shift | score alarm | estimate below midpoint | "
          "labelled AUC alarm | lead of the estimate | calibration-drift alarms before the "
          "concept change | calibration-drift alarm |")
    print("|---|---|---|---|---|---|---|---|")
    leads, catches = [], []
    for seed in seeds:
        stream = generate(demo_delayed.SCENARIO, seed=seed, length=demo_delayed.LENGTH,
                          rate=RATE, **demo_delayed.PARAMETERS)
        shift, concept = stream.change_points
        shift_s, concept_s = shift.index / RATE, concept.index / RATE
        midpoint = (shift.before + shift.after) / 2.0
        story = demo_delayed.offline(stream, demo_monitoring(Settings()))
        stamped = [(a.measure, a.level, a.event_time) for a in story.alarms
                   if a.event_time is not None]
        early = sum(t < shift_s for _, _, t in stamped)
        scores = _after([t for m, lv, t in stamped
                         if m in demo_delayed.SCORE_MEASURES and lv == "drift"], shift_s)
        fell = _after([t for t, auc in story.estimated if auc < midpoint], shift_s)
        auc = _after([t for m, lv, t in stamped if m == "auc" and lv == "drift"], shift_s)
        drifts = [t for m, _, t in stamped if m == "calibration_drift"]
        false_drifts = sum(t < concept_s for t in drifts)
        caught = _after(drifts, concept_s)
        leads.append(auc - fell)
        catches.append(caught)
        print(f"| {seed} | {early} | {scores:.1f} | {fell:.2f} | {auc:.1f} | {auc - fell:.1f} | "
              f"{false_drifts} | {caught:.1f} |")
    print(f"\nMedian lead of the estimate over the labelled AUC alarm: "
          f"{statistics.median(leads):.1f} s (range {min(leads):.1f}–{max(leads):.1f}); "
          f"median calibration-drift alarm after the concept change: "
          f"{statistics.median(catches):.1f} s (range {min(catches):.1f}–{max(catches):.1f}).")


if __name__ == "__main__":
    main()
