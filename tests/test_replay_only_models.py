"""``events.only_models`` in ``driftwatch replay``: what the agent does with the same settings.

A file of three models replayed with ``only_models`` naming one gives exactly the replay of a
file holding only that model's records (its monitor, alarms and final snapshot; no monitor
for the others, which take no place among ``limits.max_models``) and counts the others'
records as skipped, apart from the rejected ones. The same from the chunked JSON Lines path,
split between processes, from CSV, from a Kafka range (a real broker, the model ids in the
keys, as a sidecar reads them) and through the command (text, ``--json``, exit status).
"""

from __future__ import annotations

import csv
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from benchmarks.replay import comparable
from driftwatch.commands.main import main
from driftwatch.replay.kafka_range import KafkaRangeSource
from driftwatch.replay.parallel import jobs_for, run_parallel
from driftwatch.replay.report import to_json
from driftwatch.replay.run import Replay, ReplayResult, run
from driftwatch.replay.sources import CsvSource, JsonLinesSource
from driftwatch.settings import Settings
from driftwatch.simulate import generate
from tests.broker import Broker

WATCHED = "b"
MODELS = ("a", "b", "c")
LENGTH = 3000
BAD = [b"{oops", b'{"model": "b", "label": 7, "score": 0.5}', b"[1]"]
"""Rejected whatever their model: decoded before the model is known."""
SETTINGS = {"events": {"only_models": [WATCHED]}, "limits": {"max_models": 1}}
"""One monitor at most: a skipped model that took a place would leave none for b."""


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("DRIFTWATCH_"):
            monkeypatch.delenv(name)


def events() -> list[tuple[str, dict[str, Any]]]:
    """The three models' drifting streams, interleaved in a fixed random mix (each in its
    order), with the bad records among them; (model, record) pairs, model "" for bad ones."""
    streams = {model: iter([{"label": e.y_true, "score": e.y_score, "ts": e.ts}
                            for e in generate("sudden_auc_drop", seed=seed, length=LENGTH)])
               for seed, model in enumerate(MODELS)}
    order = [model for model in MODELS for _ in range(LENGTH)]
    random.Random(7).shuffle(order)
    mixed = [(model, next(streams[model])) for model in order]
    for index, bad in enumerate(BAD * 3):
        mixed.insert(1000 * index + 17, ("", {"bad": bad.decode()}))
    return mixed


def value(model: str, record: dict[str, Any], *, with_model: bool = True) -> bytes:
    if not model:
        return str(record["bad"]).encode()
    return json.dumps({**record, "model": model} if with_model else record).encode()


def write_jsonl(path: Path, models: tuple[str, ...]) -> Path:
    path.write_bytes(b"".join(value(m, r) + b"\n" for m, r in events() if m in ("", *models)))
    return path


def settings() -> Settings:
    return Settings.model_validate(SETTINGS)


def replay(config: Settings, **options: Any) -> Replay:
    return Replay(config.events.event_format(), config.monitoring.monitor_config,
                  config.limits.max_models, only_models=config.events.only_models, **options)


def others() -> dict[str, int]:
    """The skipped records by model, in order of first sight."""
    counts: dict[str, int] = {}
    for model, _ in events():
        if model and model != WATCHED:
            counts[model] = counts.get(model, 0) + 1
    return counts


def unplaced(alarms: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The alarms without where their records were (the files' lines differ)."""
    return [{k: v for k, v in a.items() if k not in ("line", "partition", "offset")}
            for a in alarms]


def assert_same_model(mixed: ReplayResult, alone: ReplayResult) -> None:
    """The mixed replay is the watched model's alone, plus the skipped records."""
    mixed_report, alone_report = to_json(mixed), to_json(alone)
    assert list(mixed_report["models"]) == [WATCHED]
    assert mixed_report["models"] == alone_report["models"]
    assert mixed.alarms, "the watched model's drift raises alarms"
    assert unplaced(mixed_report["alarms"]) == unplaced(alone_report["alarms"])
    assert mixed.events == alone.events == LENGTH
    assert mixed.rejected == alone.rejected and mixed.rejected_total == len(BAD) * 3
    assert mixed.skipped == {"unwatched_model": 2 * LENGTH}
    assert alone.skipped == {"unwatched_model": 0}
    assert list(mixed.skipped_models.items()) == list(others().items())
    assert mixed.records == alone.records + 2 * LENGTH


def test_json_lines_skip_the_other_models(tmp_path: Path) -> None:
    mixed = write_jsonl(tmp_path / "mixed.jsonl", MODELS)
    alone = write_jsonl(tmp_path / "alone.jsonl", (WATCHED,))

    assert_same_model(run(JsonLinesSource(str(mixed)), replay(settings()), str(mixed)),
                      run(JsonLinesSource(str(alone)), replay(settings()), str(alone)))


@pytest.mark.parametrize("jobs", [2, 3])
def test_processes_skip_the_other_models_as_one_does(tmp_path: Path, jobs: int) -> None:
    mixed = write_jsonl(tmp_path / "mixed.jsonl", MODELS)
    alone = write_jsonl(tmp_path / "alone.jsonl", (WATCHED,))
    config = settings()

    single = run(JsonLinesSource(str(mixed)), replay(config), str(mixed))
    split = run_parallel(str(mixed), lambda share: replay(config, share=share), jobs)

    assert comparable(split) == comparable(single)
    assert list(split.skipped_models) == list(single.skipped_models)
    assert_same_model(split, run(JsonLinesSource(str(alone)), replay(config), str(alone)))
    assert jobs_for(str(mixed), config.events.event_format(), None, [WATCHED]) == 1, \
        "one process: the other models are only decoded"


def test_csv_skips_the_other_models(tmp_path: Path) -> None:
    def write_csv(path: Path, models: tuple[str, ...]) -> CsvSource:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["label", "score", "ts", "model"])
            for model, record in events():
                if model in models:
                    writer.writerow([record["label"], repr(record["score"]), record["ts"],
                                     model])
                elif not model:
                    writer.writerow(["7", "0.5", "0", WATCHED])  # a bad label, rejected
        return CsvSource(str(path), settings().events.event_format())

    mixed = write_csv(tmp_path / "mixed.csv", MODELS)
    alone = write_csv(tmp_path / "alone.csv", (WATCHED,))
    from_mixed = run(mixed, replay(settings()), mixed.name)

    assert_same_model(from_mixed, run(alone, replay(settings()), alone.name))
    from_jsonl = write_jsonl(tmp_path / "alone.jsonl", (WATCHED,))
    assert to_json(from_mixed)["models"] == \
        to_json(run(JsonLinesSource(str(from_jsonl)), replay(settings()), ""))["models"]


def test_a_kafka_range_keyed_by_model_skips_the_other_models(broker: Broker,
                                                             tmp_path: Path) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("shared", len(MODELS), 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
    try:
        for model, record in events():
            # The sidecar's topic: model ids in the keys, not in the values.
            partition = MODELS.index(model) if model else MODELS.index(WATCHED)
            producer.send("shared", key=model.encode() or None, partition=partition,
                          value=value(model, record, with_model=False))
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=5)
    keyed = Settings.model_validate({**SETTINGS, "events": {**SETTINGS["events"],
                                                            "model_source": "key"}})
    alone = write_jsonl(tmp_path / "alone.jsonl", (WATCHED,))

    from_kafka = run(KafkaRangeSource("shared", {"bootstrap_servers": broker.bootstrap}),
                     replay(keyed), "shared")

    assert_same_model(from_kafka, run(JsonLinesSource(str(alone)), replay(settings()),
                                      str(alone)))


# ------------------------------------------------------------------------------------------
# the command


def command(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["replay", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def settings_file(tmp_path: Path) -> str:
    path = tmp_path / "settings.json"  # JSON is YAML
    path.write_text(json.dumps(SETTINGS), encoding="utf-8")
    return str(path)


def test_the_report_shows_the_skipped_records(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    mixed = str(write_jsonl(tmp_path / "mixed.jsonl", MODELS))
    config = settings_file(tmp_path)

    status, out, _ = command(capsys, mixed, "--config", config, "--json", "--jobs", "1")
    assert status == 0
    report = json.loads(out)
    assert report["skipped"] == {"unwatched_model": 2 * LENGTH}
    assert report["skipped_total"] == 2 * LENGTH
    assert report["skipped_models"] == others()
    assert report["rejected_total"] == len(BAD) * 3, "skipped is not rejected"
    assert list(report["models"]) == [WATCHED]
    _, split, _ = command(capsys, mixed, "--config", config, "--json", "--jobs", "2")
    assert {**json.loads(split), "seconds": 0} == {**report, "seconds": 0}

    status, out, _ = command(capsys, mixed, "--config", config)
    assert status == 0
    assert f"{len(BAD) * 3} rejected, {2 * LENGTH:,} skipped, 1 model in" in out
    counts = ", ".join(f"{model} {count:,}" for model, count in others().items())
    assert f"Skipped records of models not in events.only_models ({2 * LENGTH:,}): " \
           f"{counts}\n" in out


def test_a_replay_that_skips_everything_exits_1(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    others_only = str(write_jsonl(tmp_path / "others.jsonl", ("a", "c")))
    config = settings_file(tmp_path)
    counts = ", ".join(f"{model!r} {count:,}" for model, count in others().items())

    status, out, err = command(capsys, others_only, "--config", config, "--json")

    assert status == 1, "as a replay where everything is rejected: nothing was watched"
    assert json.loads(out)["models"] == {}
    assert f"no record became an event: {len(BAD) * 3} rejected (" in err
    assert f"; {2 * LENGTH:,} skipped as other models' (not in events.only_models: " \
           f"{counts}). The rejected records have the fields" in err

    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(b"".join(line for line in Path(others_only).read_bytes().splitlines(True)
                               if line.rstrip(b"\n") not in BAD))
    status, _, err = command(capsys, str(clean), "--config", config)
    assert status == 1
    assert f"no record became an event: all {2 * LENGTH:,} skipped as other models' (not in " \
           f"events.only_models: {counts}). Check events.only_models against the model ids " \
           f"in the records' 'model' field" in err


def test_only_models_and_a_join_are_refused_together() -> None:
    # The settings refuse both (label records name no model, so a label could not be
    # skipped); a Replay built by hand refuses them too.
    joined = Settings.model_validate({"join": {"enabled": True, "kind_field": "kind"}})
    join = (joined.join.delayed_labels(lambda _model: 0.5), joined.join.join_format())
    with pytest.raises(ValueError, match="cannot skip models"):
        Replay(joined.events.event_format(), joined.monitoring.monitor_config, 10, join=join,
               only_models=[WATCHED])
    with pytest.raises(ValueError, match=r"events\.only_models"):
        Settings.model_validate({**SETTINGS, "join": {"enabled": True, "kind_field": "kind"}})
