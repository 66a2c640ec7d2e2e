"""The false-alarm budget's metrics, scraped from a real agent's /metrics endpoint.

The agent runs in-process on a memory source (no broker: nothing here is about Kafka) with its
real metrics server on a free loopback port; records go through its pipeline and monitors,
and the test reads what an HTTP scrape shows, against values computed here from the records
and the settings.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from tests.sinks.prometheus.in_process import samples as scraped
from tests.sinks.prometheus.in_process import scrape_after

T0 = 1_750_000_000.0
RATE = 20.0  # events per second of record time
MINUTES = 8


def records() -> list[Record]:
    """Two models, 8 minutes of record time at 20 events a second each, 1:1: ``timed``
    carries its event time, ``untimed`` none."""
    rng = random.Random(41)
    out = []
    for i in range(int(RATE * 60 * MINUTES)):
        ts = T0 + i / RATE
        for model in ("timed", "untimed"):
            label = int(rng.random() < 0.5)
            value = {"model": model, "label": label, "score": rng.gauss(1.8 * label, 1.0)}
            if model == "timed":
                value["ts"] = ts
            out.append(Record("events", 0, len(out), None, json.dumps(value).encode(),
                              int(ts * 1000)))
    return out


def test_budget_metrics_on_the_real_endpoint(tmp_path: Path) -> None:
    settings = Settings(checkpoint={"backend": "file", "directory": str(tmp_path)},
                        metrics={"host": "127.0.0.1", "port": 0},
                        monitoring={"defaults": {"days_per_false_alarm": 45.0},
                                    "models": {"untimed": {"min_effect_auc": 0.03}}})
    samples = scraped(scrape_after(settings, records()))

    def value(name: str, **labels: str) -> float | None:
        return samples.get((name, tuple(sorted(labels.items()))))

    # The budget, in seconds (base units), per model.
    for model in ("timed", "untimed"):
        assert value("driftwatch_false_alarm_budget_seconds", model=model) == 45 * 86_400
    # Record time: the timed model's blocks close on time, every 30 s (at 20 events a second
    # both classes have 20 events long before); the untimed one's on information.
    assert value("driftwatch_record_time", model="timed") == 1.0
    assert value("driftwatch_record_time", model="untimed") == 0.0
    duration = value("driftwatch_block_duration_seconds", model="timed")
    assert duration is not None and 30.0 <= duration < 31.0
    assert value("driftwatch_block_duration_seconds", model="untimed") is None
    # Expected false alarms per 30 days at this traffic: three budgeted CUSUMs, each with the
    # run length 3 · 45 days / (the block's seconds), rounded up to the grid 2^(j/4).
    arl = 2.0 ** (math.ceil(4 * math.log2(3 * 45 * 86_400 / duration)) / 4)
    expected = 3 * (30 * 86_400 / duration) / arl
    assert value("driftwatch_expected_false_alarms_per_month", model="timed") == \
        pytest.approx(expected, rel=1e-12)
    assert 30 / 45 * 2 ** -0.25 <= expected <= 30 / 45
    assert value("driftwatch_expected_false_alarms_per_month", model="untimed") is None
    # The indifference zones, per model and measure.
    assert value("driftwatch_min_effect", model="timed", measure="auc") == 0.02
    assert value("driftwatch_min_effect", model="untimed", measure="auc") == 0.03
    for model in ("timed", "untimed"):
        for measure in ("false_negative_rate", "false_positive_rate"):
            assert value("driftwatch_min_effect", model=model, measure=measure) == 0.05
