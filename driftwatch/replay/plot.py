"""The replay figure: prequential AUC and chosen measures over events, alarms and thresholds.

In the style of Brzezinski & Stefanowski's (2017) Fig. 4 and Fig. 8 (prequential performance over
processed examples, one line per measure), with what a backtest needs on top: each measure raw
(solid) and class-ratio-normalized (dashed, same colour; left out, and its distance named in the
legend, where it would lie under the raw line, as recall's does), the raw threshold of each
watched floor (dotted: it follows the class ratio), every alarm as a vertical line labelled
with its detector and the line it is drawn on, and under each model's panel the share of
positives in the window, so a class-ratio change is visible next to the measures it moves
(or, normalized, does not).

What an alarm's marker shows: for a window watch, the window's value the alarm was raised
on (a circle on the line); for a blocks watch, the value of the *block* that raised it (a
diamond filled with its line's colour, explained in the legend), which can lie well off the
window's line: a block of a few dozen events of each class is noisier than a window of d.
A blocks watch of a per-class error rate is drawn on its complement's line (false-negative
rate on recall = 1 − FN/P, false-positive rate on specificity = 1 − FP/N), and both names are
in the legend and the label.

matplotlib is an optional extra (``pip install 'driftwatch-agent[plot]'``), imported only
when a figure is drawn; :func:`check_plot` tells before a long replay whether drawing will
work. The figure is built with matplotlib's object API (no pyplot), so no global backend or
state is touched. ``.html`` writes one self-contained page: the PNG embedded as base64 and
the alarm table, no JavaScript.

Reference:
    D. Brzezinski, J. Stefanowski. Prequential AUC: properties of the area under the ROC
    curve for data streams with concept drift. Knowl. Inf. Syst. 52 (2017), Fig. 4 and Fig. 8.
"""

from __future__ import annotations

import base64
import bisect
import html
import io
import math
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from driftwatch.core.measures import registry as measure_registry
from driftwatch.core.monitor import Alarm, MonitorConfig
from driftwatch.replay.run import ReplayAlarm, ReplayResult
from driftwatch.replay.series import Series

PLOT_KINDS = (".png", ".svg", ".html")
INSTALL_HINT = "pip install 'driftwatch-agent[plot]'"
LABEL_ROWS = 3
"""Rows of alarm labels above the curves (the headroom left at the top of each panel)."""
MAX_PANELS = 8
"""Models drawn when no ``--model`` is given; more panels would be unreadable."""

DETECTOR_NAMES = {"adwin": "ADWIN", "page_hinkley": "Page-Hinkley", "ddm": "DDM",
                  "cusum": "CUSUM", "threshold": "floor"}

AUC_COLOR = "#1d3557"
MEASURE_COLORS = ("#e76f51", "#2a9d8f", "#8e6bbf", "#d4a017", "#e5548c", "#6a994e", "#8d6e63")
ALARM_COLORS = {"adwin": "#c1121f", "page_hinkley": "#7b2cbf", "ddm": "#9c6644",
                "cusum": "#d62828", "threshold": "#f08c00"}
OTHER_ALARM_COLOR = "#6c757d"
SHORT_NAMES = {"false_negative_rate": "FN rate", "false_positive_rate": "FP rate"}
"""How an alarm's label names a per-class error rate beside the line it is drawn on."""
INDISTINCT = 0.015
"""A normalized curve closer than this share of the panel's value range to its raw curve
everywhere would be hidden under it: it is not drawn, and the raw curve's legend says so."""
BLOCK_MARKER_LABEL = ("blocks alarm: the value of the block\nthat raised it, in its line's "
                      "colour\n(that block alone, not the window)")


class PlotError(Exception):
    """The figure cannot be drawn (unsupported file type, matplotlib missing, no model with a
    sample)."""


def plot_kind(path: str) -> str:
    """The figure type from the file name; :class:`PlotError` for anything unsupported."""
    suffix = Path(path).suffix.lower()
    if suffix not in PLOT_KINDS:
        raise PlotError(f"--plot {path}: unsupported file type {suffix or '(none)'!r}; use "
                        f"{', '.join(PLOT_KINDS)}")
    return suffix


def check_plot(path: str) -> None:
    """Raise :class:`PlotError` unless a figure can be written to ``path``: a known file type,
    matplotlib installed. Checked before replaying, so nobody waits for a replay that cannot
    end in its figure."""
    plot_kind(path)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlotError(f"--plot needs matplotlib, an optional extra: {INSTALL_HINT}") from None


def name_of(measure: str) -> str:
    """How the figure names a measure: its registry label (``"G-mean"``, ``"κ"``)."""
    spec = measure_registry.find(measure)
    return measure if spec is None else spec.label


XAxis = Literal["auto", "events", "time"]
X_AXES: tuple[str, ...] = ("auto", "events", "time")


def over_time(series: Series, x_axis: XAxis) -> bool:
    """Whether to draw ``series`` over event time: asked for (``time``) or by default
    (``auto``), when every sampled event carried a time and they span more than an instant;
    over the event count otherwise."""
    if x_axis == "events" or not series.times:
        return False
    # NaN fails both comparisons; one instant (a single sample) is no axis either.
    return all(t == t for t in series.times) and max(series.times) > min(series.times)


def figure_models(result: ReplayResult, models: Sequence[str] | None = None
                  ) -> tuple[list[str], list[str]]:
    """The models a figure of ``result`` draws, and the models it cannot draw for want of a
    sample, each in order: of ``models``, or of every recorded model (at most
    :data:`MAX_PANELS` drawn). A model's first sample comes when its window is full (its
    first ``window_size`` events), so a model with fewer events has no curve to draw; names
    in ``models`` with no events at all are in neither list."""
    recorded = [m for m in (models or result.series) if m in result.series]
    drawn = [m for m in recorded if result.series[m].events]
    return (drawn if models else drawn[:MAX_PANELS]), [m for m in recorded if m not in drawn]


def write_plot(result: ReplayResult, path: str, models: Sequence[str] | None = None,
               x_axis: XAxis = "auto") -> list[str]:
    """Draw the figure of ``result`` (one panel per model of :func:`figure_models`) into
    ``path`` (``.png``, ``.svg`` or ``.html``); return the models drawn. :class:`PlotError`
    when there is none: nothing is written then.

    ``x_axis``: ``events`` draws over each model's event count; ``time`` over event time
    (UTC) for every model whose sampled events all carried one; ``auto`` (the default) is
    ``time`` when they did, so incidents can be found by the clock."""
    kind = plot_kind(path)
    chosen, _ = figure_models(result, models)
    if not chosen:
        raise PlotError(f"--plot {path}: no model has a sample to draw")
    figure = _figure(result, chosen, x_axis)
    if kind == ".html":
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
        Path(path).write_text(_html(result, buffer.getvalue()), encoding="utf-8")
    elif kind == ".svg":
        figure.savefig(path, format="svg", metadata={"Date": None})
    else:
        figure.savefig(path, format="png", dpi=130, metadata={"Software": None})
    return chosen


class _Axis:
    """Where an event count or an alarm lands on one panel's x axis."""

    def __init__(self, series: Series, time: bool) -> None:
        self.time = time
        self._series = series
        if time:
            self.values: list[Any] = [_utc(t) for t in series.times]
            self.low, self.high = min(series.times), max(series.times)
        else:
            self.values = list(series.events)
            self.low, self.high = 0.0, float(series.events[-1] if series.events else 1)

    def of_alarm(self, alarm: Alarm) -> tuple[Any, float]:
        """The alarm's position (for drawing) and its fraction of the axis (for labels)."""
        if not self.time:
            value: float = alarm.event_count
        elif alarm.event_time is not None:
            value = alarm.event_time
        else:  # the event had no time: the time of the nearest sample
            index = bisect.bisect_left(self._series.events, alarm.event_count)
            value = self._series.times[min(index, len(self._series.times) - 1)]
        span = self.high - self.low or 1.0
        return (_utc(value) if self.time else value), (value - self.low) / span


def _utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def _figure(result: ReplayResult, models: Sequence[str], x_axis: XAxis = "auto") -> Any:
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, date2num
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, PercentFormatter

    panels = len(models)
    figure = Figure(figsize=(12.5, 4.6 * panels + 0.5), layout="constrained")
    grid = figure.add_gridspec(2 * panels, 1, height_ratios=[4.0, 0.85] * panels)
    figure.suptitle(f"driftwatch replay · {result.source}", fontsize=13, fontweight="bold",
                    x=0.01, ha="left")
    thousands = FuncFormatter(lambda x, _pos: f"{x / 1000:g}k" if abs(x) >= 1000 else f"{x:g}")
    for index, model in enumerate(models):
        series = result.series[model]
        axis = _Axis(series, over_time(series, x_axis))
        main = figure.add_subplot(grid[2 * index, 0])
        strip = figure.add_subplot(grid[2 * index + 1, 0], sharex=main)
        alarms = [a for a in result.alarms if a.alarm.model == model]
        config = result.configs[model]
        markers = alarm_markers(series, alarms, config)
        plotted = {line: name_of(w.measure) for w in config.watches
                   for line, complement in [plotted_as(w.measure)] if complement}
        _draw_measures(main, series, axis, bool(alarms), markers, plotted)
        _draw_alarms(main, series, axis, alarms, markers, config)
        _draw_strip(strip, series, axis)
        main.set_title(
            f"model {model}: prequential measures over a window of d = "
            f"{series.window_size:,} events, sampled every {series.sample_every}",
            loc="left", fontsize=10.5)
        main.tick_params(labelbottom=False)
        main.set_ylabel("measure value")
        strip.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        if axis.time:
            strip.set_xlabel("event time (UTC)")
            locator = AutoDateLocator()  # type: ignore[no-untyped-call]
            strip.xaxis.set_major_locator(locator)
            strip.xaxis.set_major_formatter(
                ConciseDateFormatter(locator, tz=UTC))  # type: ignore[no-untyped-call]
            main.set_xlim(date2num(_utc(axis.low)),  # type: ignore[no-untyped-call]
                          date2num(_utc(axis.high)))  # type: ignore[no-untyped-call]
        else:
            strip.set_xlabel("processed events")
            strip.xaxis.set_major_formatter(thousands)
            main.set_xlim(axis.low, axis.high)
        main.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8.5, frameon=False,
                    handlelength=2.6)
    return figure


def _draw_measures(axes: Any, series: Series, axis: _Axis, headroom: bool,
                   marked: Sequence[float] = (), plotted: Mapping[str, str] | None = None
                   ) -> None:
    """The measures' curves, and the y range that holds them and the alarm markers
    (``marked``). ``plotted``: the watched error rate each line is the complement of (its
    legend names it). A normalized curve that would lie under its raw one (recall's, whose
    normalization is (TP + 1)/(P + 1), within 1/(P + 1) of TP/P) is left out and its
    distance named in the raw curve's legend instead."""
    x = axis.values
    colors = line_colors(series)
    # The y range: every curve's values, and where the alarms' markers go.
    settled = [v for name in series.measures for curve in _curves(series, name) for v in curve
               if not math.isnan(v)] + [v for v in marked if not math.isnan(v)] + [
        v for v in series.estimated_auc if not math.isnan(v)]
    lowest, highest = (min(settled), max(settled)) if settled else (0.0, 1.0)
    span = max(highest - lowest, 0.1)
    for name in series.measures:
        color = colors[name]
        raw = series.raw[name]
        label = name_of(name) + (f" (= 1 − {plotted[name]})" if plotted and name in plotted
                                 else "")
        normalized = series.normalized.get(name)
        apart = _distance(raw, normalized) if normalized is not None else math.nan
        if normalized is not None and apart < INDISTINCT * span:
            label += f"\n(normalized: within {max(apart, 0.0005):.3f}, not drawn)"
        axes.plot(x, raw, color=color, lw=2.0 if name == "auc" else 1.5, label=label,
                  solid_joinstyle="round", zorder=3)
        if name == "auc" and series.estimated_auc:
            axes.plot(x, series.estimated_auc, color=color, lw=1.3, ls=(0, (2, 1.5)),
                      label="AUC estimated from the scores\n(latest predictions)", zorder=3)
        if normalized is not None and apart >= INDISTINCT * span:
            axes.plot(x, normalized, color=color, lw=1.3, ls=(0, (5, 2.5)), alpha=0.9,
                      label=f"{name_of(name)}, normalized", zorder=3)
        if name in series.thresholds:
            axes.plot(x, series.thresholds[name], color=color, lw=1.5, ls=(0, (1, 1.5)),
                      drawstyle="steps-post", zorder=2,
                      label=f"{name_of(name)} threshold (floor {series.floors[name]:g},\n"
                            "adjusted to the class ratio)")
    if not axis.time and series.window_size < (series.events[-1] if series.events else 0):
        axes.axvspan(0, series.window_size, color="#e9ecef", alpha=0.7, lw=0, zorder=0)
        axes.text(series.window_size / 2, 0.02, "window\nfilling", ha="center", va="bottom",
                  fontsize=7, color="#6c757d", transform=axes.get_xaxis_transform())
    bottom, top = lowest - 0.12 * span, highest + 0.06 * span
    # Headroom above the data for the alarm labels, which sit in rows at the top.
    axes.set_ylim(bottom, top + (0.45 * span if headroom else 0.0))
    axes.set_yticks([t for t in axes.get_yticks() if bottom <= t <= top])
    axes.grid(True, color="#dee2e6", lw=0.6)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def line_colors(series: Series) -> dict[str, str]:
    """Each measure's colour: AUC's, then the palette in order."""
    palette = iter(MEASURE_COLORS * 3)
    return {name: AUC_COLOR if name == "auc" else next(palette) for name in series.measures}


def _curves(series: Series, name: str) -> list[list[float]]:
    curves = [series.raw[name]]
    for extra in (series.normalized, series.thresholds):
        if name in extra:
            curves.append(extra[name])
    return curves


def _distance(raw: Sequence[float], normalized: Sequence[float]) -> float:
    """The largest distance between two curves (NaN where either is undefined: skipped)."""
    return max((abs(a - b) for a, b in zip(raw, normalized, strict=True)
                if not (math.isnan(a) or math.isnan(b))), default=0.0)


def plotted_as(measure: str) -> tuple[str, bool]:
    """The line an alarm on ``measure`` is drawn on, and whether its value is the complement
    of the line's: a blocks watch's per-class error rate shows on its window counterpart
    (false-negative rate FN/P on recall = 1 − FN/P, false-positive rate FP/N on specificity
    = 1 − FP/N); any other measure on its own line."""
    spec = measure_registry.find(measure)
    if spec is not None and spec.kind == "block" and spec.counterpart is not None:
        return spec.counterpart, True
    return measure, False


def alarm_markers(series: Series, alarms: Sequence[ReplayAlarm], config: MonitorConfig
                  ) -> list[float]:
    """Where each alarm's marker goes on the measure axis (NaN: no marker), in order: on the
    line the alarm's measure is drawn as (:func:`plotted_as`), at the value the alarm was
    raised on. For a blocks watch that is the value of the block that raised it (its AUC,
    or 1 − its error rate on recall's or specificity's line), not the window's; for a window
    watch, the window's value (normalized when the watch is)."""
    normalized_watch = {w.measure for w in config.watches if w.normalized and w.feed == "window"}
    where = []
    for found in alarms:
        alarm = found.alarm
        line, complement = plotted_as(alarm.measure)
        if line not in series.raw:
            where.append(math.nan)
        elif complement:
            where.append(1.0 - alarm.value)
        elif alarm.measure in normalized_watch and alarm.detector != "threshold":
            where.append(alarm.normalized)
        else:
            where.append(alarm.value)
    return where


def _draw_alarms(axes: Any, series: Series, axis: _Axis, alarms: Sequence[ReplayAlarm],
                 markers: Sequence[float], config: MonitorConfig) -> None:
    normalized_watch = {w.measure for w in config.watches if w.normalized}
    blocks_watch = {w.measure for w in config.watches if w.feed == "blocks"}
    rows: list[float] = []  # per label row, the x (axes fraction) where its last label ends
    seen_kinds: set[tuple[str, str]] = set()
    block_marker = False
    for found, y in zip(alarms, markers, strict=True):
        alarm = found.alarm
        color = ALARM_COLORS.get(alarm.detector, OTHER_ALARM_COLOR)
        style = {"drift": "-", "warning": (0, (2, 2)), "threshold": (0, (4, 2))}[alarm.level]
        detector = DETECTOR_NAMES.get(alarm.detector, alarm.detector)
        kind = (alarm.detector, alarm.level)
        label = None
        if kind not in seen_kinds:
            seen_kinds.add(kind)
            label = "threshold alarm (below floor)" if alarm.detector == "threshold" \
                else f"{detector} {alarm.level}"
        where, x = axis.of_alarm(alarm)
        axes.axvline(where, color=color, lw=1.2, ls=style, alpha=0.9, label=label, zorder=1)
        on_block = alarm.measure in blocks_watch
        if not math.isnan(y):
            first_block = on_block and not block_marker
            block_marker = block_marker or on_block
            # A block's value is filled with its line's colour: it belongs to that line.
            face = line_colors(series).get(plotted_as(alarm.measure)[0], color)
            axes.plot([where], [y], marker="D" if on_block else "o", ms=6.0 if on_block else 6.5,
                      mfc=face if on_block else "white", mec=color, mew=1.6, ls="none",
                      zorder=5, label=BLOCK_MARKER_LABEL if first_block else None)
        # Label in the first of LABEL_ROWS rows where it overlaps no earlier label, right of
        # its line (left of it near the right edge); with no room, the line and the marker
        # stay unlabelled (the summary table lists every alarm).
        text = _alarm_text(alarm, detector, alarm.measure in normalized_watch, series.raw)
        width = 0.0062 * max(len(line) for line in text.split("\n")) + 0.008
        flip = x + 0.003 + width > 1.0
        left = x - 0.003 - width if flip else x + 0.003
        row = next((i for i, end in enumerate(rows) if left > end), len(rows))
        if row >= LABEL_ROWS:
            continue
        if row == len(rows):
            rows.append(0.0)
        rows[row] = left + width
        axes.text(x - 0.003 if flip else left, 0.985 - 0.105 * row, text,
                  transform=axes.transAxes, fontsize=7.6, color=color,
                  ha="right" if flip else "left", va="top", linespacing=1.15,
                  multialignment="left",
                  bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none",
                        "alpha": 0.85}, zorder=6)


def _alarm_text(alarm: Alarm, detector: str, normalized: bool, drawn: Collection[str]) -> str:
    """An alarm's label, naming the line it is drawn on; a per-class error rate's alarm is
    drawn on recall's or specificity's line, so it names both (``recall (FN rate)``) when
    that line is ``drawn``."""
    line, complement = plotted_as(alarm.measure)
    if line not in drawn:
        line, complement = alarm.measure, False
    if alarm.detector == "threshold":
        return f"{name_of(line)} below threshold\n@ {alarm.event_count:,}"
    measure = name_of(line)
    if complement:
        measure += f" ({SHORT_NAMES.get(alarm.measure, name_of(alarm.measure))})"
    if normalized:
        measure += " (normalized)"
    return f"{detector}: {measure}\n{alarm.level} @ {alarm.event_count:,}"


def _draw_strip(axes: Any, series: Series, axis: _Axis) -> None:
    x, share = axis.values, series.positive_share
    axes.fill_between(x, share, color="#adb5bd", alpha=0.55, lw=0, step="post")
    axes.plot(x, share, color="#495057", lw=1.0, drawstyle="steps-post")
    finite = [v for v in share if not math.isnan(v)]
    axes.set_ylim(0, min(1.0, max(finite, default=0.5) * 1.35 + 0.02))
    axes.set_ylabel("positives\nin window", fontsize=8.5)
    axes.grid(True, color="#dee2e6", lw=0.6)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def _html(result: ReplayResult, png: bytes) -> str:
    from driftwatch.replay.report import alarm_header, alarm_rows

    title = f"driftwatch replay · {result.source}"
    kafka = any(a.partition is not None for a in result.alarms)
    header = "".join(f"<th>{html.escape(name)}</th>" for name in alarm_header(kafka))
    rows = "\n".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in alarm_rows(result.alarms)
    ) or '<tr><td colspan="9">no alarms</td></tr>'
    image = base64.b64encode(png).decode("ascii")
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #212529; }}
img {{ max-width: 100%; height: auto; }}
table {{ border-collapse: collapse; font-size: 0.9em; }}
th, td {{ padding: 0.25em 0.8em; border-bottom: 1px solid #dee2e6; text-align: left; }}
</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
<p>{result.records:,} records, {result.events:,} events, {result.rejected_total:,} rejected,
{len(result.snapshots)} model(s).</p>
<img alt="prequential measures over events, with alarms" src="data:image/png;base64,{image}">
<h2>Alarms</h2>
<table>
<tr>{header}</tr>
{rows}
</table>
</body>
</html>
"""
