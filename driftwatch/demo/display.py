"""What ``driftwatch demo`` prints: a header with the scenario's truth, a progress line a
second, each alarm as it fires, and a verdict against the true change points.

Plain lines, each flushed at once, so the output reads the same in a terminal, a pipe or a
CI log (and tests can parse it): alarms are ``ALARM  event N: MEASURE LEVEL (DETECTOR) ...``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from driftwatch.core.monitor import Alarm, Snapshot
    from driftwatch.simulate import ChangePoint, SimulatedStream

COLUMNS = (f"{'time':>7} {'events':>7} {'AUC':>6} {'G-mean':>7} {'(norm)':>7} {'precision':>9} "
           f"{'window P:N':>11}   truth")
"""Prequential AUC, G-mean raw and class-ratio-normalized (what the default watches use),
precision (which moves with the class ratio while AUC and G-mean do not), the window's
class counts, and the scenario's true AUC and positive share at the last processed event."""


def describe_change_points(points: Sequence[ChangePoint]) -> list[str]:
    """One line per true change point, saying what a monitor should do about it.

    Example:
        >>> from driftwatch.simulate import ChangePoint
        >>> describe_change_points([ChangePoint(500, "ratio", 0.3, 0.0625, 500)])
        ['event 500: positive share 0.30 -> 0.06 (virtual drift: no AUC alarm should follow)']
    """
    lines = []
    for point in points:
        where = f"event {point.index}" if point.sudden else f"events {point.index}-{point.end}"
        if point.kind == "auc":
            lines.append(f"{where}: AUC {point.before:.2f} -> {point.after:.2f} "
                         "(real drift: an AUC alarm should follow)")
        elif point.kind == "concept":
            low, high = point.band or (math.nan, math.nan)
            lines.append(f"{where}: labels flipped for scores in [{low:.2f}, {high:.2f}), AUC "
                         f"{point.before:.2f} -> {point.after:.2f} (concept change: the scores "
                         "do not move, only the labels show it)")
        else:
            lines.append(f"{where}: positive share {point.before:.2f} -> {point.after:.2f} "
                         "(virtual drift: no AUC alarm should follow)")
    return lines or ["no change: every alarm is a false one"]


def _number(value: float, width: int, digits: int = 3) -> str:
    return f"{'-':>{width}}" if math.isnan(value) else f"{value:>{width}.{digits}f}"


class Display:
    """The demo's terminal output (see the module docstring); remembers the alarms it showed
    for the :meth:`verdict`.

    When the reader goes away (``driftwatch demo | head``), :attr:`closed` turns true and
    further lines are dropped, so the demo can stop in order instead of dying of a
    ``BrokenPipeError``.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.alarms: list[Alarm] = []
        self.closed = False
        self._last_events = -1

    def line(self, text: str = "") -> None:
        if self.closed:
            return
        try:
            print(text, file=self.out, flush=True)
        except BrokenPipeError:
            self.closed = True
            # The interpreter flushes the stream again at exit: let that write go nowhere.
            with suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), self.out.fileno())

    def header(self, scenario: str, seed: int, stream: SimulatedStream, rate: float) -> None:
        self.line("driftwatch demo: a simulated model with known drifts -> Kafka -> the agent")
        self.line(f"  scenario  {scenario} (seed {seed}): {len(stream)} events at {rate:g}/s, "
                  f"about {len(stream) / rate:.0f} s")
        for text in describe_change_points(stream.change_points):
            self.line(f"            {text}")

    def table_header(self) -> None:
        self.line()
        self.line(COLUMNS)

    def progress(self, elapsed: float, produced: int, snapshot: Snapshot | None,
                 stream: SimulatedStream, *, if_changed: bool = False) -> None:
        """One line: the monitor's values now, and the truth at its last event. With
        ``if_changed``, nothing when the monitor has seen no event since the last line."""
        events = 0 if snapshot is None else snapshot.events
        if if_changed and events == self._last_events:
            return
        self._last_events = events
        if snapshot is None or events == 0:
            self.line(f"{elapsed:>6.0f}s {0:>7}   (waiting for the first events; "
                      f"{produced} produced)")
            return
        scenario = stream.scenario
        index = min(events, len(stream)) - 1
        truth = (f"AUC {scenario.auc_at(index):.2f}, "
                 f"positive share {scenario.positive_share_at(index):.2f}")
        values, normalized = snapshot.values, snapshot.normalized
        window = f"{snapshot.positives}:{snapshot.negatives}"
        norm = f"({_number(normalized['gmean'], 4, 2)})"
        self.line(f"{elapsed:>6.0f}s {events:>7} {_number(values['auc'], 6)} "
                  f"{_number(values['gmean'], 7)} {norm:>7} "
                  f"{_number(values['precision'], 9)} {window:>11}   {truth}")

    def alarm(self, alarm: Alarm) -> None:
        self.alarms.append(alarm)
        if alarm.measure == "error_stream":  # the value is one event's 0/1 error
            value = "the per-event error rate rose"
        else:
            value = f"value {alarm.value:.3f}"
            if not math.isnan(alarm.normalized):
                value += f" (normalized {alarm.normalized:.3f})"
        self.line(f"  ALARM  event {alarm.event_count}: {alarm.measure} {alarm.level} "
                  f"({alarm.detector}), {value}, window P:N {alarm.positives}:{alarm.negatives}")

    def alarm_tally(self) -> None:
        """A blank line, then how many alarms of each measure and level were shown."""
        self.line()
        counts: dict[str, int] = {}
        for alarm in self.alarms:
            key = f"{alarm.measure} {alarm.level}"
            counts[key] = counts.get(key, 0) + 1
        self.line("alarms: " + (", ".join(f"{key} x{n}" for key, n in counts.items()) or "none"))

    def verdict(self, points: Sequence[ChangePoint], processed: int) -> None:
        """The alarms shown so far against each true change point the monitor reached (it
        processed ``processed`` events): how long a real drift took to detect, and whether a
        virtual one raised an AUC alarm."""
        self.alarm_tally()
        auc_alarms = [a.event_count for a in self.alarms if a.measure == "auc"]
        if not points:
            self.line(f"  no change in this scenario: {len(auc_alarms)} AUC alarm(s), "
                      "every one false")
        ends = [p.index for p in points[1:]] + [math.inf] if points else []
        for point, end in zip(points, ends, strict=True):
            auc_after = [n for n in auc_alarms if point.index <= n < end]
            kind = {"auc": "AUC", "ratio": "class-ratio", "concept": "concept"}[point.kind]
            if processed <= point.index:
                self.line(f"  {kind} change at event {point.index}: not reached "
                          f"(stopped after {processed} events)")
            elif point.kind in ("auc", "concept"):  # real drifts
                first = [a for a in self.alarms if point.index <= a.event_count < end]
                found = (f"first alarm {first[0].event_count - point.index} events later "
                         f"({first[0].measure}), " if first else "")
                auc = (f"first AUC alarm {auc_after[0] - point.index} events later"
                       if auc_after else "no AUC alarm (yet)")
                self.line(f"  {kind} change at event {point.index}: {found}{auc}")
            else:
                outcome = ("no AUC alarm, as it should be" if not auc_after
                           else f"{len(auc_after)} AUC alarm(s), at events "
                                f"{', '.join(map(str, auc_after))}")
                self.line(f"  {kind} change at event {point.index}: {outcome}")
