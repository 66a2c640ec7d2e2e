"""The comparison figure: both models' prequential AUC over the run, and the running tests.

Top panel: the champion's and the challenger's prequential AUC over the same window of d
events (paper 000's Fig. 4 view, one line per model), with each complete block's AUC as a
short horizontal step in the same colour (the tumbling view of a batch report, paper 000
§4). Bottom panel: the running tests' p-values on a log scale, DeLong's over the current
window and Wilcoxon's over the recent blocks, with the significance level α as a line: the
challenger is significantly different where a curve is below it.

Same conventions as the replay figure (:mod:`driftwatch.replay.plot`): matplotlib's object
API only, ``.png``, ``.svg``, or ``.html`` (the PNG embedded with the summary).
"""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path
from typing import Any

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


def write_plot(
    result: CompareResult, path: str, *, alpha: float = 0.05, min_difference: float = 0.0
) -> None:
    """Draw the figure of ``result`` into ``path`` (``.png``, ``.svg`` or ``.html``)."""
    kind = plot_kind(path)
    figure = _figure(result, alpha)
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


def _figure(result: CompareResult, alpha: float) -> Any:
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
    x = series.positions
    main.plot(
        x, series.champion_auc, color=CHAMPION_COLOR, lw=1.6, label=f"champion {result.champion}"
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
            span = (k * size, (k + 1) * size)
            for value, color in ((a, CHAMPION_COLOR), (b, CHALLENGER_COLOR)):
                if not math.isnan(value):
                    main.plot(
                        span, (value, value), color=color, lw=3.0, alpha=0.35, solid_capstyle="butt"
                    )
        main.plot([], [], color="#6c757d", lw=3.0, alpha=0.35, label=f"block AUC ({size:,} events)")
    main.set_title(
        f"prequential AUC over the same window of d = {result.window:,} events, "
        f"sampled every {x[1] - x[0] if len(x) > 1 else x[0]:,}",
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
    tests.set_xlabel("paired events")
    tests.xaxis.set_major_formatter(
        FuncFormatter(lambda v, _pos: f"{v / 1000:g}k" if abs(v) >= 1000 else f"{v:g}")
    )
    tests.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8.5, frameon=False)
    main.set_xlim(0, x[-1])
    for axes in (main, tests):
        for side in ("top", "right"):
            axes.spines[side].set_visible(False)
    return figure


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
