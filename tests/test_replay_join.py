"""``driftwatch replay`` of predictions and labels as separate records (settings ``join``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from driftwatch.commands.main import main
from driftwatch.core.join import Label, Prediction
from driftwatch.core.monitor import Monitor
from driftwatch.settings import Settings
from driftwatch.simulate import delayed_labels, generate

JOIN = {"enabled": True, "kind_field": "kind", "max_pending": 80,
        "score_drift": {"enabled": False}}


def line(record: Prediction | Label) -> str:
    if isinstance(record, Prediction):
        return json.dumps({"kind": "prediction", "event_id": record.event_id,
                           "model": record.model, "score": record.y_score, "ts": record.ts})
    return json.dumps({"kind": "label", "event_id": record.event_id, "label": record.y_true,
                       "ts": record.ts})


def write(tmp_path: Path, records: list[Any], join: dict[str, Any]) -> tuple[Path, Path]:
    data = tmp_path / "records.jsonl"
    data.write_text("".join((r if isinstance(r, str) else line(r)) + "\n" for r in records))
    config = tmp_path / "settings.yaml"
    config.write_text(yaml.safe_dump({"join": join}))
    return data, config


def test_replay_joins_as_the_agent_does(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    records: list[Any] = list(delayed_labels(generate("sudden_auc_drop", seed=1, length=3000),
                                             seed=2, model="m", mean_delay=60.0,
                                             unlabelled=0.1))
    records.insert(10, records.pop(next(i for i, r in enumerate(records)
                                        if isinstance(r, Label))))  # a label first
    records += [records[5], '{"kind": "score", "event_id": "x"}']  # a replay, a bad kind
    data, config = write(tmp_path, records, JOIN)
    status = main(["replay", str(data), "--config", str(config), "--json"])
    out = capsys.readouterr().out
    assert status == 0
    report = json.loads(out)
    # Offline: the settings' join and a monitor, the same records in the same order.
    settings = Settings.model_validate({"join": JOIN})
    delayed = settings.join.delayed_labels(lambda model: 0.5)
    monitor = Monitor("m", settings.monitoring.monitor_config("m"))
    for r in records:
        if isinstance(r, str):
            continue
        joined = delayed.add_prediction(r)[0] if isinstance(r, Prediction) \
            else delayed.add_label(r)
        if joined is not None:
            monitor.update(joined.event())
    assert report["records"] == len(records)
    assert report["events"] == monitor.events > 2000
    assert report["rejected"]["bad_kind"] == 1 and report["rejected_total"] == 1
    health = delayed.snapshot()
    assert report["join"]["matched"] == {"m": health.matched["m"]} == {"m": monitor.events}
    assert report["join"]["pending"] == {"m": health.pending["m"]} and health.pending["m"] > 0
    assert report["join"]["dropped"]["prediction/duplicate"] == 1
    expected = monitor.snapshot()
    ours = report["models"]["m"]
    assert (ours["positives"], ours["negatives"]) == (expected.positives, expected.negatives)
    assert ours["measures"]["auc"] == pytest.approx(expected.values["auc"], abs=0)
    # The table says the same in a line.
    assert main(["replay", str(data), "--config", str(config)]) == 0
    assert f"Joined {monitor.events:,} of " in capsys.readouterr().out


def test_replay_of_a_join_needs_a_kind_field(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    join = {"enabled": True, "predictions_topic": "p", "labels_topic": "l"}
    data, config = write(tmp_path, ['{"kind": "label"}'], join)
    config.write_text(yaml.safe_dump({"join": join, "kafka": {"topics": ["p", "l"]}}))
    assert main(["replay", str(data), "--config", str(config)]) == 2
    assert "join.kind_field" in capsys.readouterr().err
