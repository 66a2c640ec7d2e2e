"""The comparison figure: both models' prequential AUC over the run, and the running tests.

Top panel: the champion's and the challenger's prequential AUC over the same window of d
events (Brzezinski & Stefanowski's (2017) Fig. 4 view, one line per model), with each complete
block's AUC as a short horizontal step in the same colour (the tumbling view of a batch report,
Brzezinski & Stefanowski 2017 §4). Bottom panel: the running tests' p-values on a log scale,
DeLong's over the current window and Wilcoxon's over the recent blocks, with the significance level
α as a line: the challenger is significantly different where a curve is below it.

Same conventions as the replay figure (:mod:`driftwatch.replay.plot`): matplotlib's object
API only, ``.png``, ``.svg``, or ``.html`` (the PNG embedded with the summary).
"""

from __future__ import annotations

import base64
import html
import io
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from driftwatch.compare.report import render_text
from driftwatch.compare.run import CompareResult
from driftwatch.replay.plot import PlotError, check_plot, plot_kind

__all__ = ["PlotError", "check_plot", "write_plot"]

CHAMPION_COLOR = "#1d3557"
CHALLENGER_COLOR = "#e76f51"
DELONG_COLOR = "#2a9d8f"
WILCOXON_COLOR = "#8e6bbf"
P_FLOOR = 1e-12
"""p-values below this are drawn at it (a log axis has no 0)."""


XAxis = Literal["auto", "events", "time"]
X_AXES: tuple[XAxis, ...] = ("auto", "events", "time")


def over_time(result: CompareResult, x_axis: XAxis) -> bool:
    """Whether to draw over event time: asked for (``time``) or by default (``auto``), when
    every sampled event carried a time and they span more than an instant."""
    times = result.series.times
    if x_axis == "events" or not times or any(t is None for t in times):
        return False
    known = [t for t in times if t is not None]
    return max(known) > min(known)


def write_plot(
    result: CompareResult,
    path: str,
    *,
    alpha: float = 0.05,
    min_difference: float = 0.0,
    x_axis: XAxis = "auto",
) -> bool:
    """Draw the figure of ``result`` into ``path`` (``.png``, ``.svg`` or ``.html``); return
    whether it is drawn over event time (UTC) rather than over paired events."""
    kind = plot_kind(path)
    timed = over_time(result, x_axis)
    figure = _figure(result, alpha, timed)
    if kind == ".html":
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
        Path(path).write_text(
            _html(result, buffer.getvalue(), alpha, min_difference), encoding="utf-8"
        )
    elif kind == ".svg":
        figure.savefig(path, format="svg", metadata={"Date": None})
    else:
        figure.savefig(path, format="png", dpi=130, metadata={"Software": None})
    return timed


def _figure(result: CompareResult, alpha: float, timed: bool) -> Any:
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    figure = Figure(figsize=(12.5, 7.2), layout="constrained")
    grid = figure.add_gridspec(2, 1, height_ratios=[3.0, 1.6])
    figure.suptitle(
        f"driftwatch compare · {_name(result.challenger, 'challenger')} vs "
        f"{_name(result.champion, 'champion')} · {result.source}",
        fontsize=13,
        fontweight="bold",
        x=0.01,
        ha="left",
    )
    series = result.series
    main = figure.add_subplot(grid[0, 0])
    tests = figure.add_subplot(grid[1, 0], sharex=main)
    if not series.positions:
        main.text(
            0.5,
            0.5,
            "no samples recorded (fewer paired events than --every?)",
            ha="center",
            va="center",
            transform=main.transAxes,
        )
        main.set_axis_off()
        tests.set_axis_off()
        return figure
    x: list[Any] = (
        [_utc(t) for t in series.times if t is not None] if timed else list(series.positions)
    )
    main.plot(
        x,
        series.champion_auc,
        color=CHAMPION_COLOR,
        lw=1.6,
        label=_name(result.champion, "champion"),
    )
    main.plot(
        x,
        series.challenger_auc,
        color=CHALLENGER_COLOR,
        lw=1.6,
        label=_name(result.challenger, "challenger"),
    )
    if result.whole is not None:
        size = result.block_size
        for k, (a, b) in enumerate(result.whole.block_aucs):
            start, end = result.whole.block_times[k]
            span: tuple[Any, Any] = (k * size, (k + 1) * size)
            if timed:
                if math.isnan(start) or math.isnan(end):
                    continue
                span = (_utc(start), _utc(end))
            for value, color in ((a, CHAMPION_COLOR), (b, CHALLENGER_COLOR)):
                if not math.isnan(value):
                    main.plot(
                        span, (value, value), color=color, lw=3.0, alpha=0.35, solid_capstyle="butt"
                    )
        main.plot([], [], color="#6c757d", lw=3.0, alpha=0.35, label=f"block AUC ({size:,} events)")
    main.set_title(
        f"prequential AUC over the same window of d = {result.window:,} events, "
        f"sampled every {result.every:,} paired events",
        loc="left",
        fontsize=10.5,
    )
    main.set_ylabel("AUC")
    main.tick_params(labelbottom=False)
    main.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8.5, frameon=False)

    def floor(values: list[float]) -> list[float]:
        return [max(v, P_FLOOR) if not math.isnan(v) else math.nan for v in values]

    tests.plot(x, floor(series.delong_p), color=DELONG_COLOR, lw=1.4, label="DeLong, window")
    tests.plot(
        x,
        floor(series.wilcoxon_p),
        color=WILCOXON_COLOR,
        lw=1.4,
        drawstyle="steps-post",
        label="Wilcoxon, recent blocks",
    )
    tests.axhline(alpha, color="#c1121f", lw=1.0, ls="--", label=f"α = {alpha:g}")
    tests.set_yscale("log")
    tests.set_ylim(top=1.5)
    tests.set_ylabel("p-value (two-sided)")
    if timed:
        tests.set_xlabel("event time (UTC)")
        locator = AutoDateLocator()  # type: ignore[no-untyped-call]
        tests.xaxis.set_major_locator(locator)
        tests.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    else:
        tests.set_xlabel("paired events")
        tests.xaxis.set_major_formatter(
            FuncFormatter(lambda v, _pos: f"{v / 1000:g}k" if abs(v) >= 1000 else f"{v:g}")
        )
    tests.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8.5, frameon=False)
    main.set_xlim(x[0] if timed else 0, x[-1])
    for axes in (main, tests):
        for side in ("top", "right"):
            axes.spines[side].set_visible(False)
    return figure


def _utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def _name(model: str, role: str) -> str:
    """``champion`` for the default name, ``champion v1`` for a model id."""
    return role if model == role else f"{role} {model}"


def _html(result: CompareResult, png: bytes, alpha: float, min_difference: float) -> str:
    title = f"driftwatch compare · {result.source}"
    image = base64.b64encode(png).decode("ascii")
    summary = html.escape(render_text(result, alpha=alpha, min_difference=min_difference))
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #212529; }}
img {{ max-width: 100%; height: auto; }}
pre {{ font-size: 0.85em; background: #f8f9fa; padding: 1em; overflow-x: auto; }}
</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
<img alt="both models' prequential AUC and the running tests" src="data:image/png;base64,{image}">
<pre>{summary}</pre>
</body>
</html>
"""
