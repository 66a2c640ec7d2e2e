"""The names deprecated in 0.2.0, scraped from a real agent's /metrics endpoint.

An agent runs in-process on a memory source with its real metrics server on a free loopback
port and per-model alert thresholds; each deprecated family must carry exactly the samples of
its replacement (same labels, same values), say so in its HELP, and disappear with
``metrics.export_deprecated_metrics: false`` while the new names stay.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.sinks.prometheus.deprecated import DEPRECATED_NAMES, REMOVED_IN
from tests.sinks.prometheus.in_process import scrape_after

OLD_START_TIME = "driftwatch_start_time_seconds"


def settings(tmp_path: Path, **metrics: Any) -> Settings:
    return Settings(
        checkpoint={"backend": "file", "directory": str(tmp_path)},
        metrics={"host": "127.0.0.1", "port": 0, **metrics},
        monitoring={"defaults": {"window_size": 50}},
        alerts={"defaults": {"auc_floor": 0.7, "no_events_seconds": 900},
                "models": {"daily": {"batch_labels": True, "auc_max_drop": 0.1,
                                     "no_events_seconds": 93_600}}})


def scrape(settings: Settings) -> dict[str, Any]:
    """The families of one scrape of an agent that processed events of two models, by name
    (the parser's: without ``_total`` on counters)."""
    values = [json.dumps({"model": model, "label": i % 2, "score": (i % 7) / 7}).encode()
              for i in range(200) for model in ("fraud", "daily")]
    batch = [Record("events", 0, i, None, value, 0) for i, value in enumerate(values)]
    text = scrape_after(settings, batch)
    return {family.name: family for family in text_string_to_metric_families(text)}


def values(samples: list[Sample]) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(sample.labels.items())): sample.value for sample in samples}


def test_deprecated_names_repeat_their_replacements_and_say_so(tmp_path: Path) -> None:
    families = scrape(settings(tmp_path))
    expected = {  # (fraud: the defaults, daily: its overrides)
        "driftwatch_auc_floor_threshold": {"fraud": 0.7, "daily": 0.7},
        "driftwatch_auc_max_drop_threshold": {"fraud": 0.05, "daily": 0.1},
        "driftwatch_no_events_threshold_seconds": {"fraud": 900, "daily": 93_600},
        "driftwatch_batch_labels_enabled": {"fraud": 0, "daily": 1},
    }
    assert set(DEPRECATED_NAMES.values()) == set(expected)
    for old, new in DEPRECATED_NAMES.items():
        assert {s.labels["model"]: s.value for s in families[new].samples} == expected[new]
        assert families[old].type == families[new].type == "gauge"
        assert values(families[old].samples) == values(families[new].samples), old
        assert families[old].documentation.startswith(
            f"Deprecated: use {new} (removed in {REMOVED_IN}). "), old
        assert not families[new].documentation.startswith("Deprecated"), new
    start = families[OLD_START_TIME]
    assert start.documentation.startswith(
        f"Deprecated: use process_start_time_seconds (removed in {REMOVED_IN}). ")
    if sys.platform == "linux":  # prometheus_client's process collector reads /proc
        process_start = families["process_start_time_seconds"].samples[0].value
        # This process's start, read from /proc (boot time + start ticks), and before the
        # agent's (by however long the test run has been going).
        assert process_start == pytest.approx(_process_start(), abs=1.0)
        assert process_start <= start.samples[0].value


def _process_start() -> float:
    with open("/proc/stat", encoding="ascii") as stat:
        boot = next(float(line.split()[1]) for line in stat if line.startswith("btime "))
    with open("/proc/self/stat", encoding="ascii") as own:
        ticks = float(own.read().rsplit(")", 1)[1].split()[19])
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def test_deprecated_names_can_be_turned_off(tmp_path: Path) -> None:
    families = scrape(settings(tmp_path, export_deprecated_metrics=False))
    for old, new in DEPRECATED_NAMES.items():
        assert old not in families
        assert len(families[new].samples) == 2, new
    assert OLD_START_TIME not in families
    assert "driftwatch_measure" in families


@pytest.mark.parametrize("bad", ["maybe", 2])
def test_the_switch_is_a_boolean(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="export_deprecated_metrics"):
        settings(tmp_path, export_deprecated_metrics=bad)
