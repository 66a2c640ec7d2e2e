"""The measure registry's contract: every measure has what each consumer reads from it.

Walks :mod:`driftwatch.core.measures.registry` (so a measure added to it is checked too) and
asks each consumer for the measure: the window reports every window measure by the registry's
formula and in its order, within its declared range; the monitor watches each one in its
declared direction and normalizes exactly the normalizable ones; normalization counts like
brute-force enumeration of the grid with the measure's own formula; the settings accept every
name; the figure labels it; the generated metrics reference lists it.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from driftwatch.core.measures import registry
from driftwatch.core.measures.registry import Measure
from driftwatch.core.monitor import (
    BLOCK_MEASURES,
    DetectorSpec,
    Monitor,
    MonitorConfig,
    Watch,
)
from driftwatch.core.normalization import count_at_most
from driftwatch.core.prediction_watch import SIGNAL_MEASURES
from driftwatch.core.score_drift import SIGNALS
from driftwatch.core.window import PrequentialWindow
from driftwatch.replay.plot import name_of
from driftwatch.settings import WatchSettings

MEASURES = registry.measures()
WINDOW_MEASURES = [m for m in MEASURES if m.kind == "window"]
NORMALIZABLE = [m for m in MEASURES if m.normalizable]
ids = [m.name for m in MEASURES]


def same(a: float, b: float) -> bool:
    """Equal floats, or both NaN."""
    return a == b or (math.isnan(a) and math.isnan(b))


def windows() -> list[PrequentialWindow]:
    """Small windows of every shape: empty, one class, both, all right, all wrong, random."""
    rng = random.Random(3)
    shapes = [[], [(1, 0.9)], [(0, 0.1)] * 4, [(1, 0.9), (0, 0.1)] * 3,
              [(1, 0.1), (0, 0.9)] * 3]
    shapes += [[(int(rng.random() < p), rng.random()) for _ in range(n)]
               for p in (0.1, 0.5, 0.9) for n in (5, 30)]
    result = []
    for events in shapes:
        window = PrequentialWindow(size=20)
        for label, score in events:
            window.update(label, score)
        result.append(window)
    return result


@pytest.mark.parametrize("measure", MEASURES, ids=ids)
def test_every_measure_is_described(measure: Measure) -> None:
    for text in (measure.label, measure.description, measure.undefined):
        assert text.strip() and text == " ".join(text.split())
    assert measure.minimum < measure.maximum
    if measure.kind == "block":
        assert measure.name in BLOCK_MEASURES
        assert registry.get(measure.counterpart or "").kind == "window"


@pytest.mark.parametrize("measure", WINDOW_MEASURES, ids=[m.name for m in WINDOW_MEASURES])
def test_the_window_reports_every_window_measure_by_its_formula(measure: Measure) -> None:
    for window in windows():
        value = window.measure(measure.name)
        reported = window.measures()
        assert list(reported) == [m.name for m in registry.window_measures()]
        assert same(reported[measure.name], value)
        if measure.counts is not None:
            c = window.confusion
            expected = measure.counts(c.tp, c.fp, c.fn, c.tn)
            assert same(expected, value)
        assert math.isnan(value) or measure.minimum <= value <= measure.maximum
    assert math.isnan(PrequentialWindow(size=5).measure(measure.name))  # empty: undefined


@pytest.mark.parametrize("measure", MEASURES, ids=ids)
def test_the_monitor_and_the_settings_watch_every_measure(measure: Measure) -> None:
    feed = "blocks" if measure.kind == "block" else "window"
    if measure.kind == "score":  # label-free: the join's own detectors watch it, named
        for build in (lambda: Watch(measure.name), lambda: WatchSettings(measure=measure.name)):
            with pytest.raises(ValueError, match=r"label-free score signal.*join\.score_drift"):
                build()
        return
    watch = Watch(measure.name, feed=feed)
    assert watch.effective_direction == ("down" if measure.higher_is_better else "up")
    assert WatchSettings(measure=measure.name, feed=feed).measure == measure.name
    if measure.kind != "window":
        return
    if measure.normalizable:
        assert Watch(measure.name, normalized=True, floor=0.5).floor == 0.5
    else:
        with pytest.raises(ValueError, match="no class-ratio normalization"):
            Watch(measure.name, floor=0.5)
    ddm = (DetectorSpec("ddm"),)  # needs inputs in [0, 1]
    if measure.unit_range:
        assert Watch(measure.name, ddm).detectors == ddm
    else:
        with pytest.raises(ValueError, match="needs inputs in"):
            Watch(measure.name, ddm)


def test_a_snapshot_normalizes_exactly_the_normalizable_measures() -> None:
    monitor = Monitor("m", MonitorConfig(window_size=50, watches=()))
    rng = random.Random(5)
    for _ in range(80):
        label = int(rng.random() < 0.4)
        monitor.update_values(label, rng.random(), None, None)
    snapshot = monitor.snapshot()
    assert list(snapshot.values) == [m.name for m in WINDOW_MEASURES]
    assert list(snapshot.normalized) == [m.name for m in WINDOW_MEASURES if m.normalizable]


@pytest.mark.parametrize("measure", NORMALIZABLE, ids=[m.name for m in NORMALIZABLE])
@pytest.mark.parametrize(("positives", "negatives"), [(0, 0), (0, 4), (3, 0), (4, 7), (9, 2)])
def test_normalization_counts_the_measures_own_grid(measure: Measure, positives: int,
                                                    negatives: int) -> None:
    assert measure.counts is not None
    cells = [measure.counts(tp, fp, positives - tp, negatives - fp)
             for tp in range(positives + 1) for fp in range(negatives + 1)]
    values = np.sort(np.nan_to_num(np.array(cells, dtype=np.float64), nan=0.0))
    for x in [*np.unique(values), -math.inf, math.inf, 0.5]:
        expected = int(np.searchsorted(values, x, side="right"))
        assert count_at_most(measure.name, positives, negatives, float(x)) == expected
    if measure.normalization is not None and measure.normalization.bounds is not None:
        low, high = measure.normalization.bounds
        assert low <= values[0] and values[-1] <= high


@pytest.mark.parametrize("measure", MEASURES, ids=ids)
def test_the_figure_and_the_docs_name_every_measure(measure: Measure) -> None:
    assert name_of(measure.name) == measure.label
    docs = (Path(__file__).resolve().parent.parent / "docs" / "metrics.md").read_text()
    row = next(line for line in docs.splitlines() if line.startswith(f"| `{measure.name}` |"))
    assert measure.description.replace("|", "\\|") in row
    assert measure.undefined in row


def test_the_registry_holds_every_label_free_signal() -> None:
    """What the prediction watch reports and alarms on is in the registry, in its order."""
    assert registry.names("score") == tuple(SIGNAL_MEASURES[signal] for signal in SIGNALS)
    assert set(registry.names("score")).isdisjoint(registry.watchable_names())
