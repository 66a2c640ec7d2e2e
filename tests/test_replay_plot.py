"""The replay figure says what it draws: each line's legend entry names what the line shows,
no legend entry names a line hidden under another, an alarm is labelled by the line it is
drawn on, and a blocks alarm's marker (the value of the block that raised it, not the
window's) is explained, coloured like its line and inside the axes. Checked on the figure
object matplotlib draws, for the example of docs/replay.md and its settings."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest

from driftwatch.replay.plot import (
    BLOCK_MARKER_LABEL,
    INDISTINCT,
    _figure,
    alarm_markers,
    figure_models,
    line_colors,
    name_of,
    plotted_as,
)
from driftwatch.replay.run import Replay, ReplayResult, run
from driftwatch.replay.sources import JsonLinesSource
from driftwatch.settings import load_settings
from tests.conftest import tool_missing

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "events-drift.jsonl"
SIDECAR = ROOT / "examples" / "sidecar.yaml"
MODEL = "credit-risk"  # the sidecar's model_constant


@pytest.fixture(scope="module")
def example() -> ReplayResult:
    """``driftwatch replay examples/events-drift.jsonl --config examples/sidecar.yaml``."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("DRIFTWATCH_")}
    try:
        settings = load_settings(str(SIDECAR), check_files=False)
    finally:
        os.environ.update(saved)
    replay = Replay(settings.events.event_format(), settings.monitoring.monitor_config,
                    settings.limits.max_models, series_models=None)
    return run(JsonLinesSource(str(SAMPLE)), replay, str(SAMPLE))


@pytest.fixture(scope="module")
def figure(example: ReplayResult) -> Any:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        tool_missing("matplotlib", "the plot extra: pip install 'driftwatch-agent[plot]'")
    return _figure(example, [MODEL])


def legend(figure: Any) -> list[str]:
    return [text.get_text() for text in figure.axes[0].get_legend().get_texts()]


def lines_by_label(figure: Any) -> dict[str, Any]:
    return {line.get_label(): line for line in figure.axes[0].get_lines()
            if not line.get_label().startswith("_")}


def test_the_example_has_the_alarms_this_file_is_about(example: ReplayResult) -> None:
    # A window AUC alarm, a blocks AUC alarm and a per-class error-rate one (the false-negative
    # rate's rise in the example stays within the default minimum effect: no alarm).
    measures = {a.alarm.measure for a in example.alarms}
    assert {"auc", "false_positive_rate", "gmean"} <= measures


def test_no_legend_entry_for_a_normalized_line_hidden_under_its_raw_line(
        example: ReplayResult, figure: Any) -> None:
    series = example.series[MODEL]
    low, high = figure.axes[0].get_ylim()
    drawn = lines_by_label(figure)
    for name, normalized in series.normalized.items():
        apart = max(abs(a - b) for a, b in zip(series.raw[name], normalized, strict=True)
                    if not (math.isnan(a) or math.isnan(b)))
        (entry,) = [e for e in legend(figure) if e.startswith(f"{name_of(name)} (")
                    or e == name_of(name)]
        if f"{name_of(name)}, normalized" in drawn:
            assert apart > 0.5 * INDISTINCT * (high - low)  # visibly apart
            assert "not drawn" not in entry
        else:  # it would lie under the raw line: the legend says how close, instead
            assert apart < INDISTINCT * (high - low)
            assert f"normalized: within {max(apart, 0.0005):.3f}, not drawn" in entry
    # On the example: recall's normalized value is (TP + 1)/(P + 1), within 1/(P + 1) of
    # TP/P (P ≈ 300), so it is named, not drawn; G-mean's normalized line is far apart.
    assert "recall, normalized" not in drawn and "G-mean, normalized" in drawn


LINE_OF_ALARM = {"false_positive_rate": "specificity (FP rate)",
                 "false_negative_rate": "recall (FN rate)", "auc": "AUC"}


def test_per_class_error_alarms_name_the_lines_they_are_drawn_on(
        example: ReplayResult, figure: Any) -> None:
    texts = [t.get_text() for t in figure.axes[0].texts]
    blocks = [a.alarm for a in example.alarms
              if a.alarm.model == MODEL and a.alarm.detector == "cusum"]
    assert {alarm.measure for alarm in blocks} >= {"auc", "false_positive_rate"}
    for alarm in blocks:
        assert f"CUSUM: {LINE_OF_ALARM[alarm.measure]}\ndrift @ {alarm.event_count:,}" in texts
    entries = legend(figure)
    assert any(e.startswith("recall (= 1 − false-negative rate)") for e in entries)
    assert "specificity (= 1 − false-positive rate)" in entries


def test_block_alarm_markers_are_the_blocks_values_explained_and_inside(
        example: ReplayResult, figure: Any) -> None:
    alarms = [a for a in example.alarms if a.alarm.model == MODEL]
    series = example.series[MODEL]
    markers = alarm_markers(series, alarms, example.configs[MODEL])
    low, high = figure.axes[0].get_ylim()
    colors = line_colors(series)
    drawn = [line for line in figure.axes[0].get_lines() if line.get_marker() == "D"]

    blocks = [(a.alarm, y) for a, y in zip(alarms, markers, strict=True)
              if a.alarm.detector == "cusum"]
    assert len(drawn) == len(blocks) >= 2
    for (alarm, y), line in zip(blocks, drawn, strict=True):
        # The block's own value, in the units of the line it sits on.
        _, complement = plotted_as(alarm.measure)
        assert y == pytest.approx(1.0 - alarm.value if complement else alarm.value)
        assert list(line.get_ydata()) == [y]
        assert low < y < high
        assert line.get_markerfacecolor() == colors[plotted_as(alarm.measure)[0]]
    auc = next(alarm for alarm, _ in blocks if alarm.measure == "auc")
    window_auc = series.raw["auc"][series.events.index(auc.event_count - auc.event_count % 25)]
    assert abs(auc.value - window_auc) > 0.02  # why it needs explaining: it is not the window's
    assert BLOCK_MARKER_LABEL in legend(figure)
    assert "not the window" in BLOCK_MARKER_LABEL


def test_figure_models_leaves_out_models_without_a_sample(example: ReplayResult) -> None:
    assert figure_models(example) == ([MODEL], [])
    assert figure_models(example, ["other", MODEL]) == ([MODEL], [])
