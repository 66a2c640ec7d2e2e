"""Plug-ins reach ``driftwatch run``: a distribution laid out as pip installs one (on the
agent's ``PYTHONPATH``) declares a source (``driftwatch.sources``) and a measure
(``driftwatch.measures``); the real agent process reads its records from the plug-in source,
exports the plug-in measure on its real ``/metrics`` endpoint (checked against the mean
computed here) and a detector watching it raises the drift the scores were given."""

from __future__ import annotations

import math
import os
import random
from pathlib import Path

import pytest

from tests.broker import free_port
from tests.integration.helpers import HOST, AgentProcess
from tests.plugin_dist import write_distribution

PLUGIN = '''
import json
import math

from driftwatch.core.measures.registry import Measure
from driftwatch.sources import MemorySource, Record


def _mean_score(window, tally):
    events = window.export_state()["events"]
    return math.fsum(score for _, score, _ in events) / len(events) if events else math.nan


MEAN_SCORE = Measure("mean_score", "mean score", "The mean score of the window's events.",
                     "the window is empty", window=_mean_score)


def scores(context, *, model: str, values: list[float]):
    """One record per score, labelled by its rank (the confusion counts never move)."""
    records = [Record("scores", 0, offset,
                      None, json.dumps({"model": model, "label": int(value >= 0.5),
                                        "score": value}).encode(), 0)
               for offset, value in enumerate(values)]
    return MemorySource(records, on_assigned=context.on_assigned)
'''

WINDOW = 200
MODEL = "m1"


def test_a_plugin_source_feeds_driftwatch_run_and_a_plugin_measure_is_exported_and_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    plugins = tmp_path / "site"
    write_distribution(plugins, {"driftwatch.sources": {"scores": "{mod}:scores"},
                                 "driftwatch.measures": {"mean_score": "{mod}:MEAN_SCORE"}},
                       PLUGIN)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        filter(None, [str(plugins), os.environ.get("PYTHONPATH")])))
    rng = random.Random(7)
    # The scores fall by 0.25 at event 2000; labels follow the scores, so every confusion
    # measure stays put: only a measure of the scores can see it.
    values = [round(rng.uniform(0.3, 1.0) - (0.25 if i >= 2000 else 0.0), 6)
              for i in range(3000)]
    settings = {
        "source": {"kind": "scores", "options": {"model": MODEL, "values": values}},
        "metrics": {"host": HOST, "port": free_port()},
        "checkpoint": {"directory": str(tmp_path / "state"), "interval_seconds": 1},
        "monitoring": {"defaults": {"window_size": WINDOW, "sample_every": 10, "watches": [
            {"measure": "mean_score", "detectors": [
                {"name": "page_hinkley", "params": {"threshold": 2.0, "delta": 0.02}}]}]}},
    }
    agent = AgentProcess(settings, tmp_path, "plugin-agent").start()
    metrics = agent.wait_processed(len(values))
    assert metrics.get("driftwatch_measure", model=MODEL, measure="mean_score") == \
        pytest.approx(math.fsum(values[-WINDOW:]) / WINDOW, abs=1e-12)
    drifts = metrics.total("driftwatch_alarms_total", model=MODEL, measure="mean_score",
                           level="drift")
    assert drifts >= 1, agent.log()
    assert agent.stop()[0] == 0, agent.log()
