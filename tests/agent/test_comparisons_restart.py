"""The agent's comparisons across a restart: saved with the checkpoint, restored exactly."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from driftwatch.agent.loop import Agent
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.state.checkpoint import CheckpointError, CheckpointStore


def settings(directory: Path) -> Settings:
    return Settings.model_validate({
        "checkpoint": {"backend": "file", "directory": str(directory)},
        "monitoring": {"defaults": {"window_size": 100}},
        "comparisons": [{"name": "v2", "model": "m", "challenger_score_field": "q",
                         "block_size": 50, "blocks": 6}],
    })


def records(start: int, count: int) -> list[Record]:
    rng = random.Random(start)
    out = []
    for offset in range(start, start + count):
        y = int(rng.random() < 0.4)
        value = {"label": y, "score": round(rng.random(), 3), "model": "m",
                 "q": round(min(1.0, 0.4 * y + rng.random()), 3)}
        out.append(Record("events", 0, offset, None, json.dumps(value).encode(),
                          1_700_000_000_000 + offset))
    return out


def test_comparisons_survive_a_restart(tmp_path: Path) -> None:
    agent = Agent(settings(tmp_path))
    for record in records(0, 400):
        agent.process(record)
    assert agent.checkpoint()
    again = Agent(settings(tmp_path))
    again.restore()
    assert again.comparisons.export_state() == agent.comparisons.export_state()
    for record in records(400, 200):
        agent.process(record)
        again.process(record)
    assert again.comparisons.export_state() == agent.comparisons.export_state()
    assert again.comparisons.snapshots()[0].events == 600


def test_a_broken_comparison_state_is_refused(tmp_path: Path) -> None:
    agent = Agent(settings(tmp_path))
    for record in records(0, 50):
        agent.process(record)
    assert agent.checkpoint()
    store = CheckpointStore(tmp_path)
    payload = store.load()
    assert payload is not None
    payload["comparisons"]["v2"]["window"]["size"] = 0
    store.save(payload)
    with pytest.raises(CheckpointError, match="a comparison state in the checkpoint"):
        Agent(settings(tmp_path)).restore()
