"""``driftwatch demo --delayed-labels``: the labels come late, the scores do not wait.

The default demo sends each event with its label. Here the simulated model sends what a
deployed one does: a *prediction* record (event id, model, score, time) when it scores, and a
*label* record (event id, label, time) when the outcome is known, a random delay later,
on the demo topic as separate records told apart by their ``kind`` field (the agent's
``join`` settings, one-topic form). The agent joins them by event id; a pair enters the
model's window when its label arrives.

**The story** (:data:`SCENARIO`, :data:`PARAMETERS`): a sudden AUC drop of 0.2 at prediction
12 000, after the 10 000 predictions that make the label-free signals' reference
(``join.score_drift.reference_size``) and 2 000 more. In the equal-variance binormal model the
scores are drawn from (:mod:`driftwatch.simulate`), a weaker model's classes move closer
together, so the distribution of its scores changes even though no label says so: the KS
distance and the PSI of the next block of 500 predictions against the reference react at
once. The labelled AUC can only react once labels of changed predictions have arrived and
filled enough of its window. Labels arrive after a lognormal delay (mean
``--label-delay``, 20 s by default; log-scale spread 1: most come within the mean, a few
much later, the heavy tail of chargebacks), so the AUC alarm follows the score alarm by
a lead time that the demo prints: the time a team watching only labelled measures would
have lost.

Both alarms are stamped with the record time they became known (``Alarm.event_time``): a
score alarm with its prediction's time, a labelled alarm with the time of the label that
raised it (:mod:`driftwatch.core.join`), so the lead time is their difference, on the
records' clock, whatever the agent's processing speed.

**The end.** Labels due more than ``--label-delay`` seconds after the last prediction are not
sent (the heavy tail would otherwise keep the demo waiting for minutes); their predictions
stay pending in the join, and the verdict says how many.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from driftwatch.core.join import Label, Prediction
from driftwatch.core.prediction_watch import SIGNAL_MEASURES
from driftwatch.demo.display import Display, _number, describe_change_points
from driftwatch.simulate import DelayDistribution, delayed_labels

if TYPE_CHECKING:
    from driftwatch.core.delayed import JoinSnapshot
    from driftwatch.core.monitor import Alarm, Snapshot
    from driftwatch.settings import Settings
    from driftwatch.simulate import ChangePoint, SimulatedStream
    from driftwatch.sinks.snapshot import AgentSnapshot

SCENARIO = "sudden_auc_drop"
"""The scenario when ``--scenario`` is not given: a real drift, which moves the scores."""
PARAMETERS: dict[str, Any] = {"drop": 0.2, "change_at": 12_000}
"""Its parameters unless ``--param`` sets them: the drop after the score reference
(10 000 predictions) and 2 000 predictions more."""
LENGTH = 16_000
"""Predictions unless ``--length`` is given: 32 s at 500/s, the labels 20 s longer."""
LABEL_DELAY_S = 20.0
"""Mean label delay (``--label-delay``): 10 000 predictions at 500/s."""
DELAY_DISTRIBUTION: DelayDistribution = "lognormal"
KIND_FIELD = "kind"
"""The field that tells a prediction record from a label record on the demo topic."""

SCORE_MEASURES = frozenset(SIGNAL_MEASURES.values())
"""The measures of the label-free alarms (KS, PSI, predicted-positive rate)."""

COLUMNS = (f"{'time':>7} {'predicted':>9} {'labelled':>8} {'pending':>7} {'AUC':>6} "
           f"{'KS':>6} {'PSI':>6} {'pos.rate':>8}   truth")
"""Predictions received, pairs joined (the labelled window's events), predictions waiting for
their label, the labelled window's AUC, the scores' KS distance and PSI against their
reference and the predicted-positive rate (label-free, NaN until the reference is full), and
the scenario's true AUC at the latest prediction."""


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


def handled(snapshot: AgentSnapshot) -> int:
    """Records the agent has taken: predictions and labels the join counted, and rejections
    (what the demo compares with the records sent to know that all arrived)."""
    join = snapshot.join
    taken = 0 if join is None else join.labels + sum(join.predictions.values())
    return taken + sum(snapshot.rejected.values())


class DelayedDisplay(Display):
    """What the delayed-labels demo prints: :class:`~driftwatch.demo.display.Display`'s lines
    with the join's columns, alarms stamped with their record time, and a verdict with the
    lead time of the scores over the labels.

    Parameters:
        out: where the lines go.
        delay: the labels' delay, for the header.
        reference_size: predictions in the scores' reference, for the header.
    """

    def __init__(self, out: TextIO, delay: LabelDelay, reference_size: int) -> None:
        super().__init__(out)
        self.delay = delay
        self.reference_size = reference_size
        self.join: Callable[[], JoinSnapshot | None] = lambda: None
        """Gives the agent's latest join snapshot (None until the agent runs)."""
        self.start_ts = math.nan
        """Time of the first prediction: alarm times are shown from it."""
        self._rate = math.nan

    def start(self, stream: SimulatedStream, join: Callable[[], JoinSnapshot | None]) -> None:
        """The model starts producing ``stream`` now; ``join`` reads the agent's join."""
        self.start_ts, self._rate, self.join = stream.scenario.start_ts, stream.scenario.rate, join

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
        truth = f"AUC {stream.scenario.auc_at(min(predicted, len(stream)) - 1):.2f}"
        self.line(f"{elapsed:>6.0f}s {predicted:>9} {labelled:>8} {sum(join.pending.values()):>7} "
                  f"{_number(auc, 6)} {_number(signals.get('ks', math.nan), 6)} "
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
        else:
            self.line(f"  ALARM  {at} label {alarm.event_count}: {alarm.measure} "
                      f"{alarm.level} ({alarm.detector}), value {alarm.value:.3f}, "
                      f"window P:N {alarm.positives}:{alarm.negatives}")

    def verdict(self, points: Sequence[ChangePoint], processed: int) -> None:
        """The first label-free alarm and the first labelled AUC alarm after the real drift,
        and the lead time between them (their record times)."""
        self.alarm_tally()
        join = self.join()
        if join is not None:
            self.line(f"  {sum(join.pending.values())} predictions still wait for their label "
                      f"(labels due more than {self.delay.mean_s:g} s after the last "
                      "prediction are not sent)")
        drops = [p for p in points if p.kind == "auc"]
        if not drops:
            self.line("  no AUC change in this scenario: every alarm is a false one")
            return
        change = drops[0]
        change_s = change.index / self._rate
        after = [a for a in self.alarms
                 if a.event_time is not None and self._seconds(a) >= change_s]
        scores = [a for a in after if a.measure in SCORE_MEASURES and a.level == "drift"]
        aucs = [a for a in after if a.measure == "auc" and a.level == "drift"]
        self.line(f"  AUC change at prediction {change.index} ({change_s:.1f} s):")
        self.line("    first score-drift alarm: " + (
            f"{self._seconds(scores[0]):.1f} s ({scores[0].measure}, "
            f"{self._seconds(scores[0]) - change_s:.1f} s after the change)"
            if scores else "none"))
        self.line("    first labelled AUC alarm: " + (
            f"{self._seconds(aucs[0]):.1f} s ({self._seconds(aucs[0]) - change_s:.1f} s "
            "after the change)" if aucs else "none (yet)"))
        if scores and aucs:
            lead = self._seconds(aucs[0]) - self._seconds(scores[0])
            self.line(f"    lead time of the scores over the labels: {lead:.1f} s "
                      f"({lead * self._rate:.0f} predictions)")

    def _seconds(self, alarm: Alarm) -> float:
        """The alarm's record time, from the first prediction."""
        return math.nan if alarm.event_time is None else alarm.event_time - self.start_ts
