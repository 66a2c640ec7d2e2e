"""``driftwatch run`` without Kafka: the real agent process reads a JSON Lines file through
the ``jsonl`` source, exports the window's AUC on its real ``/metrics`` endpoint (checked
against a brute-force AUC), and after a stop and more lines resumes at the checkpoint's line:
every line counted once."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.broker import free_port
from tests.integration.helpers import HOST, AgentProcess

WINDOW = 100
MODEL = "m1"


def brute_force_auc(events: list[tuple[int, float]]) -> float:
    """The share of (positive, negative) pairs whose scores are in order, ties half."""
    positives = [s for y, s in events if y == 1]
    negatives = [s for y, s in events if y == 0]
    pairs = sum(1.0 if p > n else 0.5 if p == n else 0.0
                for p in positives for n in negatives)
    return pairs / (len(positives) * len(negatives))


def lines(events: list[tuple[int, float]]) -> bytes:
    return b"".join(json.dumps({"model": MODEL, "label": y, "score": s}).encode() + b"\n"
                    for y, s in events)


def test_run_reads_a_jsonl_file_exports_its_auc_and_resumes_where_the_checkpoint_ends(
    tmp_path: Path,
) -> None:
    rng = random.Random(5)
    events = [(y, round(rng.uniform(0.0, 0.6) + 0.4 * y, 6))
              for y in (int(rng.random() < 0.4) for _ in range(250))]
    data = tmp_path / "events.jsonl"
    data.write_bytes(lines(events[:150]))
    settings = {
        "source": {"kind": "jsonl",
                   "options": {"path": str(data), "poll_interval_seconds": 0.1}},
        "metrics": {"host": HOST, "port": free_port()},
        "checkpoint": {"directory": str(tmp_path / "state"), "interval_seconds": 1},
        "monitoring": {"defaults": {"window_size": WINDOW, "sample_every": 10}},
    }
    agent = AgentProcess(settings, tmp_path, "jsonl-agent").start()
    agent.wait_ready()
    metrics = agent.wait_processed(150)
    assert metrics.get("driftwatch_measure", model=MODEL, measure="auc") == pytest.approx(
        brute_force_auc(events[150 - WINDOW:150]), abs=1e-12)
    assert agent.stop()[0] == 0, agent.log()

    with data.open("ab") as writer:
        writer.write(lines(events[150:]))
    agent.start()
    metrics = agent.wait_processed(250)  # fails if a line before the checkpoint came again
    assert metrics.get("driftwatch_measure", model=MODEL, measure="auc") == pytest.approx(
        brute_force_auc(events[-WINDOW:]), abs=1e-12)
    assert agent.stop()[0] == 0, agent.log()
