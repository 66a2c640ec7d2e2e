"""``driftwatch demo --delayed-labels``: the labels come late, the scores do not wait.

The default demo sends each event with its label. Here the simulated model sends what a
deployed one does: a *prediction* record (event id, model, score, time) when it scores, and a
*label* record (event id, label, time) when the outcome is known, a random delay later,
on the demo topic as separate records told apart by their ``kind`` field (the agent's
``join`` settings, one-topic form). The agent joins them by event id; a pair enters the
model's window when its label arrives.

**The story** (:data:`SCENARIO`, :data:`PARAMETERS`): a model whose scores are calibrated
probabilities (:class:`~driftwatch.simulate.CovariateShiftThenConceptChange`), with the
agent's estimated performance on (:func:`estimate_settings`, ``calibration: assume``).

1. Predictions 0–11 999: nothing changes; the first 10 000 make the label-free signals'
   reference (``join.score_drift.reference_size``). No alarm should come.
2. At prediction 12 000, a **covariate shift**: the AUC drops from 0.9 to 0.8 because the
   scores move (more of them in the uncertain middle), while P(label | score) stays the
   score. The KS distance and PSI of the next block of 500 predictions against the
   reference react at once, and so does the **estimated AUC** (``docs/estimation.md``),
   computed from the scores alone over the latest predictions: it falls with the AUC the
   labels will realize. The labelled AUC can only react once labels of changed predictions
   have arrived and filled enough of its window. Labels arrive after a lognormal delay (mean
   ``--label-delay``, 20 s by default; log-scale spread 1: most come within the mean, a few
   much later, the heavy tail of chargebacks), so the labelled AUC alarm follows the score
   alarm and the estimate's fall by a lead time that the demo prints: the time a team
   watching only labelled measures would have lost.
3. At prediction 20 000, a **concept change**: the labels of the scores in [0.5, 0.9) flip.
   The scores do not move, so neither the label-free signals nor the estimate can see it;
   the labels, once they come, show an AUC of 0.70 where the scores promised 0.80, and the
   estimate's self-check raises a ``calibration_drift`` alarm (the estimate is then
   untrusted until it is refitted on the next labels).

The verdict's rules (when the estimate "falls", and why the lead time is on the records'
clock): docs/demo.md#how-the-verdict-reads-the-story.

**The end.** Labels due more than ``--label-delay`` seconds after the last prediction are not
sent (the heavy tail would otherwise keep the demo waiting for minutes); their predictions
stay pending in the join, and the verdict says how many.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from driftwatch.core.estimation.watch import CALIBRATION_DRIFT
from driftwatch.core.join import Label, Prediction
from driftwatch.core.monitor import Monitor
from driftwatch.core.prediction_watch import SIGNAL_MEASURES
from driftwatch.demo.display import Display, _number, describe_change_points
from driftwatch.simulate import DelayDistribution, delayed_labels

if TYPE_CHECKING:
    from driftwatch.core.delayed import JoinSnapshot
    from driftwatch.core.monitor import Alarm, Snapshot
    from driftwatch.settings import Settings
    from driftwatch.simulate import ChangePoint, SimulatedStream
    from driftwatch.sinks.snapshot import AgentSnapshot

SCENARIO = "covariate_shift_then_concept_change"
"""The scenario when ``--scenario`` is not given: calibrated scores, a covariate shift (the
scores move), then a concept change (the labels move)."""
PARAMETERS: dict[str, Any] = {"change_at": 12_000, "concept_at": 20_000}
"""Its parameters unless ``--param`` sets them: the shift after the score reference (10 000
predictions) and 2 000 predictions more, the concept change 8 000 predictions (16 s) later,
once the labels of the shift have come."""
LENGTH = 26_000
"""Predictions unless ``--length`` is given: 52 s at 500/s, the labels 20 s longer."""
LABEL_DELAY_S = 20.0
"""Mean label delay (``--label-delay``): 10 000 predictions at 500/s."""
DELAY_DISTRIBUTION: DelayDistribution = "lognormal"
KIND_FIELD = "kind"
"""The field that tells a prediction record from a label record on the demo topic."""

SCORE_MEASURES = frozenset(SIGNAL_MEASURES.values())
"""The measures of the label-free alarms (KS, PSI, predicted-positive rate)."""

COLUMNS = (f"{'time':>7} {'predicted':>9} {'labelled':>8} {'pending':>7} {'AUC':>6} "
           f"{'est.AUC':>8} {'KS':>6} {'PSI':>6} {'pos.rate':>8}   truth")
"""Predictions received, pairs joined (the labelled window's events), predictions waiting for
their label, the labelled window's AUC, the AUC estimated from the scores of the latest
predictions (marked ``*`` while untrusted), the scores' KS distance and PSI against their
reference and the predicted-positive rate (label-free, NaN until the reference is full), and
the scenario's true AUC (of the labels against the scores) at the latest prediction."""


@dataclass(frozen=True, slots=True)
class LabelDelay:
    """How the demo's labels are late: ``distribution`` with mean ``mean_s`` seconds."""

    distribution: DelayDistribution = DELAY_DISTRIBUTION
    mean_s: float = LABEL_DELAY_S


def join_settings(settings: Settings) -> Settings:
    """``settings`` (the demo's) with the join on, in its one-topic form: predictions and
    labels on the demo topic, told apart by :data:`KIND_FIELD`. The user's other join
    settings (bounds, label-free signals) are kept."""
    join = settings.join.model_copy(update={
        "enabled": True, "kind_field": KIND_FIELD, "predictions_topic": None,
        "labels_topic": None})
    return settings.model_copy(update={"join": join})


def estimate_settings(settings: Settings) -> Settings:
    """``settings`` with the estimated performance on for every model: the user's
    ``monitoring.defaults.estimation`` if it is enabled, else ``calibration: assume`` (the
    demo's scores are calibrated probabilities, ``--calibrated``)."""
    defaults = settings.monitoring.defaults
    if defaults.estimation.enabled:
        return settings
    estimation = defaults.estimation.model_copy(update={"enabled": True,
                                                        "calibration": "assume"})
    monitoring = settings.monitoring.model_copy(update={
        "defaults": defaults.model_copy(update={"estimation": estimation})})
    return settings.model_copy(update={"monitoring": monitoring})


def records(stream: SimulatedStream, model: str, delay: LabelDelay) -> Iterator[Prediction | Label]:
    """The stream's predictions now and labels later (:func:`~driftwatch.simulate.delayed_labels`,
    seeded like the stream), in time order, up to ``delay.mean_s`` after the last prediction
    (module docstring: the end)."""
    scenario = stream.scenario
    horizon = scenario.start_ts + (len(stream) - 1) / scenario.rate + delay.mean_s
    for record in delayed_labels(stream, seed=stream.seed, model=model,
                                 delay=delay.distribution, mean_delay=delay.mean_s):
        if record.ts > horizon:
            return
        yield record


@dataclass(frozen=True, slots=True)
class OfflineStory:
    """What :func:`offline` saw: every alarm (stamped with its record time) and the
    estimated AUC as ``(record time of the latest prediction, estimate)`` every ``every``
    predictions."""

    alarms: list[Alarm]
    estimated: list[tuple[float, float]]


def offline(stream: SimulatedStream, settings: Settings, delay: LabelDelay = LabelDelay(),
            every: int = 125) -> OfflineStory:
    """The delayed-labels demo's story without the broker and the agent's threads: the
    stream's predictions and labels (:func:`records`) through the pure core the agent runs,
    the join, its label-free watch and the model's monitor with its estimate, with
    ``settings`` (the demo's: :func:`join_settings` and :func:`estimate_settings` are
    applied here). The estimate is read every ``every`` predictions, as the demo's display
    reads the agent's snapshots (125: every 0.25 s at 500/s). What the tests and
    ``python -m benchmarks delayed_demo`` run."""
    settings = estimate_settings(join_settings(settings))
    delayed = settings.join.delayed_labels(
        lambda model: settings.monitoring.monitor_config(model).threshold)
    model = "demo"
    monitor = Monitor(model, settings.monitoring.monitor_config(model))
    estimate = monitor.estimate
    assert estimate is not None  # estimate_settings turned it on
    alarms: list[Alarm] = []
    estimated: list[tuple[float, float]] = []
    for record in records(stream, model, delay):
        if isinstance(record, Prediction):
            joined, raised = delayed.add_prediction(record, estimate)
            alarms += raised
            if estimate.predictions % every == 0:
                estimated.append((record.ts, estimate.auc))
        else:
            joined = delayed.add_label(record)
        if joined is not None:
            alarms += monitor.update(joined.event())
    return OfflineStory(alarms, estimated)


def handled(snapshot: AgentSnapshot) -> int:
    """Records the agent has taken: predictions and labels the join counted, and rejections
    (what the demo compares with the records sent to know that all arrived)."""
    join = snapshot.join
    taken = 0 if join is None else join.labels + sum(join.predictions.values())
    return taken + sum(snapshot.rejected.values())


class DelayedDisplay(Display):
    """What the delayed-labels demo prints: :class:`~driftwatch.demo.display.Display`'s lines
    with the join's columns and the estimated AUC, alarms stamped with their record time, and
    a verdict with the lead time of the scores and of the estimate over the labels, and the
    concept change the estimate missed and its self-check caught.

    Parameters:
        out: where the lines go.
        delay: the labels' delay, for the header.
        reference_size: predictions in the scores' reference, for the header.
        calibration: where the estimate's calibration comes from (the settings'
            ``estimation.calibration``), for the header.
    """

    def __init__(self, out: TextIO, delay: LabelDelay, reference_size: int,
                 calibration: str = "assume") -> None:
        super().__init__(out)
        self.delay = delay
        self.reference_size = reference_size
        self.calibration = calibration
        self.join: Callable[[], JoinSnapshot | None] = lambda: None
        """Gives the agent's latest join snapshot (None until the agent runs)."""
        self.start_ts = math.nan
        """Time of the first prediction: alarm times are shown from it."""
        self._rate = math.nan
        self.estimate_fell: float | None = None
        """When the estimated AUC was first below the midpoint of the first AUC change
        (seconds from the first prediction, the latest prediction's time), None before."""
        self.missed: tuple[float, float] = (math.inf, -math.inf)
        """The estimated AUC's range from the concept change until the self-check rejects
        the calibration (what the estimate showed while the labels had changed)."""
        self._shift: ChangePoint | None = None
        self._concept: ChangePoint | None = None

    def start(self, stream: SimulatedStream, join: Callable[[], JoinSnapshot | None]) -> None:
        """The model starts producing ``stream`` now; ``join`` reads the agent's join."""
        self.start_ts, self._rate, self.join = stream.scenario.start_ts, stream.scenario.rate, join
        points = stream.change_points
        self._shift = next((p for p in points if p.kind == "auc"), None)
        self._concept = next((p for p in points if p.kind == "concept"), None)

    def observe(self, agent: AgentSnapshot) -> None:
        """Follow the estimated AUC at each of the agent's snapshots (the demo's tick): when
        it first falls below the midpoint of the AUC change, and its range after the concept
        change, at the time of the latest prediction (the estimate and the predictions'
        time from one snapshot)."""
        join = agent.join
        estimate = agent.monitors[0].estimate if agent.monitors else None
        if estimate is None or join is None or not sum(join.predictions.values()):
            return
        estimated = estimate.estimates["auc"].value
        at = join.prediction_watermark - self.start_ts
        shift, concept = self._shift, self._concept
        if shift is not None and self.estimate_fell is None and at >= shift.index / self._rate \
                and estimated < (shift.before + shift.after) / 2.0:
            self.estimate_fell = at
        # Until the self-check rejects the calibration: the refit that follows learns the
        # new concept, and its estimate is no longer the one that missed it.
        if concept is not None and at >= concept.index / self._rate and estimate.trusted \
                and estimate.calibration != "refit" and not math.isnan(estimated):
            low, high = self.missed
            self.missed = (min(low, estimated), max(high, estimated))

    def header(self, scenario: str, seed: int, stream: SimulatedStream, rate: float) -> None:
        self.line("driftwatch demo: a simulated model whose labels arrive late -> Kafka -> "
                  "the agent")
        self.line(f"  scenario  {scenario} (seed {seed}): {len(stream)} predictions at "
                  f"{rate:g}/s, about {len(stream) / rate:.0f} s")
        for text in describe_change_points(stream.change_points):
            self.line(f"            {text}")
        self.line(f"  labels    {self.delay.mean_s:g} s after their prediction on average "
                  f"({self.delay.distribution} delays), joined by event id")
        self.line(f"  scores    watched meanwhile, against the first {self.reference_size} "
                  "predictions (the reference)")
        how = "the scores taken as calibrated probabilities" if self.calibration == "assume" \
            else f"calibration {self.calibration}"
        self.line(f"  estimate  AUC of the latest predictions from their scores alone ({how}), "
                  "checked against their labels as they join")

    def table_header(self) -> None:
        self.line()
        self.line(COLUMNS)

    def progress(self, elapsed: float, produced: int, snapshot: Snapshot | None,
                 stream: SimulatedStream, *, if_changed: bool = False) -> None:
        join = self.join()
        predicted = 0 if join is None else sum(join.predictions.values())
        labelled = 0 if snapshot is None else snapshot.events
        if if_changed and predicted + labelled == self._last_events:
            return
        self._last_events = predicted + labelled
        if join is None or predicted == 0:
            self.line(f"{elapsed:>6.0f}s {0:>9}   (waiting for the first predictions; "
                      f"{produced} records produced)")
            return
        signals = join.watches[0].values if join.watches else {}
        auc = math.nan if snapshot is None else snapshot.values["auc"]
        view = None if snapshot is None else snapshot.estimate
        estimated = math.nan if view is None else view.estimates["auc"].value
        untrusted = "*" if view is not None and not view.trusted else " "
        truth = f"AUC {stream.scenario.labels_auc_at(min(predicted, len(stream)) - 1):.2f}"
        self.line(f"{elapsed:>6.0f}s {predicted:>9} {labelled:>8} {sum(join.pending.values()):>7} "
                  f"{_number(auc, 6)} {_number(estimated, 7)}{untrusted} "
                  f"{_number(signals.get('ks', math.nan), 6)} "
                  f"{_number(signals.get('psi', math.nan), 6)} "
                  f"{_number(signals.get('positive_rate', math.nan), 8)}   {truth}")

    def alarm(self, alarm: Alarm) -> None:
        """One line per alarm; a label-free signal's repeats are counted, not shown (with a
        frozen reference its CUSUM fires again every few blocks while the scores differ)."""
        seen = any(a.measure == alarm.measure and a.level == alarm.level for a in self.alarms)
        self.alarms.append(alarm)
        at = f"{self._seconds(alarm):>5.1f}s"
        if alarm.measure in SCORE_MEASURES:
            if seen:
                return
            reference = f" (reference {alarm.reference:.3f})" \
                if alarm.measure == SIGNAL_MEASURES["positive_rate"] else ""
            self.line(f"  ALARM  {at} prediction {alarm.event_count}: {alarm.measure} "
                      f"{alarm.level} ({alarm.detector}), value {alarm.value:.3f}{reference}, "
                      "no label needed (repeats not shown)")
        elif alarm.measure == CALIBRATION_DRIFT:
            self.line(f"  ALARM  {at} label {alarm.event_count}: {alarm.measure} "
                      f"{alarm.level} ({alarm.detector}), a block's AUC {alarm.value:.3f} where "
                      f"its scores promised {alarm.reference:.3f}: the estimate is untrusted "
                      "until refitted")
        else:
            self.line(f"  ALARM  {at} label {alarm.event_count}: {alarm.measure} "
                      f"{alarm.level} ({alarm.detector}), value {alarm.value:.3f}, "
                      f"window P:N {alarm.positives}:{alarm.negatives}")

    def verdict(self, points: Sequence[ChangePoint], processed: int) -> None:
        """The alarms before the first change, the first label-free alarm, the estimate's
        fall and the first labelled AUC alarm after the real drift with the lead times
        between them (their record times), and the concept change: what the estimate showed
        and when the self-check caught it."""
        self.alarm_tally()
        join = self.join()
        if join is not None:
            self.line(f"  {sum(join.pending.values())} predictions still wait for their label "
                      f"(labels due more than {self.delay.mean_s:g} s after the last "
                      "prediction are not sent)")
        if not points:
            self.line("  no change in this scenario: every alarm is a false one")
            return
        first_s = points[0].index / self._rate
        early = [a for a in self.alarms if self._seconds(a) < first_s]
        self.line(f"  before the first change ({first_s:.1f} s): " + (
            f"{len(early)} alarm(s), every one false" if early else "no alarm, as it should be"))
        if self._shift is not None:
            self._shift_verdict(self._shift)
        if self._concept is not None:
            self._concept_verdict(self._concept)

    def _shift_verdict(self, change: ChangePoint) -> None:
        change_s = change.index / self._rate
        after = [a for a in self.alarms
                 if a.event_time is not None and self._seconds(a) >= change_s]
        scores = [a for a in after if a.measure in SCORE_MEASURES and a.level == "drift"]
        aucs = [a for a in after if a.measure == "auc" and a.level == "drift"]
        mark = (change.before + change.after) / 2.0
        fell = self.estimate_fell
        self.line(f"  AUC change at prediction {change.index} ({change_s:.1f} s):")
        self.line("    first score-drift alarm: " + (
            f"{self._seconds(scores[0]):.1f} s ({scores[0].measure}, "
            f"{self._seconds(scores[0]) - change_s:.1f} s after the change)"
            if scores else "none"))
        self.line(f"    estimated AUC below {mark:.2f}: " + (
            f"{fell:.1f} s ({fell - change_s:.1f} s after the change)" if fell is not None
            else "not (yet)"))
        self.line("    first labelled AUC alarm: " + (
            f"{self._seconds(aucs[0]):.1f} s ({self._seconds(aucs[0]) - change_s:.1f} s "
            "after the change)" if aucs else "none (yet)"))
        if scores and aucs:
            lead = self._seconds(aucs[0]) - self._seconds(scores[0])
            self.line(f"    lead time of the scores over the labels: {lead:.1f} s "
                      f"({lead * self._rate:.0f} predictions)")
        if fell is not None and aucs:
            lead = self._seconds(aucs[0]) - fell
            self.line(f"    lead time of the estimate over the labels: {lead:.1f} s "
                      f"({lead * self._rate:.0f} predictions)")

    def _concept_verdict(self, change: ChangePoint) -> None:
        change_s = change.index / self._rate
        drifts = [a for a in self.alarms if a.measure == CALIBRATION_DRIFT]
        before = [a for a in drifts if self._seconds(a) < change_s]
        after = [a for a in drifts if self._seconds(a) >= change_s]
        low, high = self.missed
        self.line(f"  concept change at prediction {change.index} ({change_s:.1f} s): "
                  f"AUC {change.before:.2f} -> {change.after:.2f}, the scores unchanged")
        if low <= high:
            self.line(f"    estimated AUC meanwhile: {low:.3f} to {high:.3f} (it cannot see "
                      "a concept change)")
        self.line("    first calibration-drift alarm: " + (
            f"{self._seconds(after[0]):.1f} s ({self._seconds(after[0]) - change_s:.1f} s "
            "after the change)" if after else "none (yet)"))
        if before:
            self.line(f"    {len(before)} calibration-drift alarm(s) before it, every one false")

    def _seconds(self, alarm: Alarm) -> float:
        """The alarm's record time, from the first prediction."""
        return math.nan if alarm.event_time is None else alarm.event_time - self.start_ts
