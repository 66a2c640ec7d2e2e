"""``driftwatch replay --block-auc N``: block and batch AUC beside the prequential AUC
(Brzezinski & Stefanowski 2017, §4), equal to the pure functions on the same events, in one process
or several."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from driftwatch.commands.main import main
from driftwatch.core.measures.block import average_auc, batch_auc, block_aucs

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "events-drift.jsonl"
SIDECAR = ROOT / "examples" / "sidecar.yaml"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("DRIFTWATCH_"):
            monkeypatch.delenv(name)


def replay_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    status = main(["replay", *args, "--json"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    report: dict[str, Any] = json.loads(captured.out)
    report.pop("seconds")
    return report


def test_block_and_batch_auc_of_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    labels = [r["label"] for r in records]
    scores = [r["score"] for r in records]
    report = replay_json(capsys, str(SAMPLE), "--config", str(SIDECAR), "--block-auc", "1000")
    (model,) = report["models"].values()
    assert model["block_auc"]["size"] == 1000
    assert model["block_auc"]["values"] == block_aucs(labels, scores, 1000)
    assert model["block_auc"]["mean"] == average_auc(block_aucs(labels, scores, 1000))
    assert model["batch_auc"] == batch_auc(labels, scores)
    # The drop at event 10 000 shows in the blocks after it, not in the batch value alone.
    values = model["block_auc"]["values"]
    assert min(values[:10]) > max(values[10:])
    plain = replay_json(capsys, str(SAMPLE), "--config", str(SIDECAR))
    assert "block_auc" not in next(iter(plain["models"].values()))
    assert plain["alarms"] == report["alarms"]  # the option changes no alarm
    assert main(["replay", str(SAMPLE), "--config", str(SIDECAR), "--block-auc", "500"]) == 0
    text = capsys.readouterr().out
    assert "AUC views: batch 0.856 over all events; block 0.854 = mean of 40 blocks of 500" in text


def test_one_or_several_processes_give_the_same_blocks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = SAMPLE.read_text().splitlines()[:6000]
    path = tmp_path / "two-models.jsonl"
    path.write_text(
        "".join(
            json.dumps({**json.loads(line), "model": "a" if i % 3 else "b"}) + "\n"
            for i, line in enumerate(lines)
        )
    )
    reports = [
        replay_json(capsys, str(path), "--block-auc", "700", "--jobs", jobs) for jobs in ("1", "2")
    ]
    assert reports[0] == reports[1]
    assert len(reports[0]["models"]["a"]["block_auc"]["values"]) == 4000 // 700
