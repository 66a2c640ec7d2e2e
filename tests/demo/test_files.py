"""``driftwatch simulate --output FILE``: the records the agent reads, in a file that
``driftwatch replay`` reads back to exactly the simulated events (checked against monitors fed
the simulator's events directly), in JSON Lines and CSV, with custom field names and in the
two-stream form; bad combinations are refused before anything is written, and a failed write
leaves no partial file."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from driftwatch.commands.main import main
from driftwatch.core.monitor import Monitor
from driftwatch.decoding.decoder import EventFormat
from driftwatch.decoding.joinable import JoinFormat
from driftwatch.demo.files import joinable_records, labelled_records, output_file
from driftwatch.settings import Settings
from driftwatch.simulate import delayed_labels, generate

START_TS = 1_717_200_000.0


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("DRIFTWATCH_"):
            monkeypatch.delenv(name)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def replay_report(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> dict[str, Any]:
    status, out, err = run(capsys, "replay", str(path), "--jobs", "1", "--json", *args)
    assert status == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def expected_alarms(scenario: str, seeds: dict[str, int], settings: Settings, **params: Any
                    ) -> list[tuple[int, str, str, str]]:
    """The alarms of monitors fed the simulator's events directly (no file, no decoder)."""
    alarms = []
    for model, seed in seeds.items():
        monitor = Monitor(model, settings.monitoring.monitor_config(model))
        for event in generate(scenario, seed=seed, **params):
            alarms += [(a.event_count, model, a.measure, a.detector)
                       for a in monitor.update(event)]
    return sorted(alarms)


def replayed_alarms(report: dict[str, Any]) -> list[tuple[int, str, str, str]]:
    return sorted((a["event"], a["model"], a["measure"], a["detector"])
                  for a in report["alarms"])


# -- the command, read back by replay ------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".tsv"])
def test_the_file_replays_to_the_simulated_events(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    path = tmp_path / f"events{suffix}"
    status, out, err = run(capsys, "simulate", "--output", str(path), "--scenario",
                           "sudden_auc_drop", "--seed", "2", "--models", "2", "--length", "16000",
                           "--start-ts", str(START_TS), "--rate", "50")
    assert status == 0, err
    assert f"wrote 32000 records to {path}" in out

    report = replay_report(capsys, path)

    assert (report["records"], report["events"], report["rejected_total"]) == (32000, 32000, 0)
    assert set(report["models"]) == {"model-1", "model-2"}
    expected = expected_alarms("sudden_auc_drop", {"model-1": 2, "model-2": 3}, Settings(),
                               length=16000, start_ts=START_TS, rate=50.0)
    assert expected  # the drop is found: the comparison is not between two empty lists
    assert replayed_alarms(report) == expected
    first = report["alarms"][0]
    assert first["time"] == pytest.approx(START_TS + (first["event"] - 1) / 500.0)


def test_the_file_follows_the_settings_field_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "settings.yaml"
    config.write_text("events:\n  label_field: outcome\n  score_field: p\n  time_field: at\n"
                      "  model_source: key\n  positive_label: fraud\n  negative_label: ok\n",
                      encoding="utf-8")
    path = tmp_path / "events.jsonl"

    status, _, err = run(capsys, "simulate", "--config", str(config), "--output", str(path),
                         "--scenario", "stationary", "--length", "500", "--start-ts", "0")
    assert status == 0, err

    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    # A file has no record keys: the model goes in the model field, where replay reads it.
    assert set(first) == {"outcome", "p", "at", "model"}
    assert first["outcome"] in ("fraud", "ok")
    report = replay_report(capsys, path, "--config", str(config))
    assert (report["events"], report["rejected_total"]) == (500, 0)
    assert list(report["models"]) == ["model-1"]


def test_the_two_stream_form_replays_through_the_join(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "settings.yaml"
    config.write_text("join:\n  enabled: true\n  kind_field: kind\n", encoding="utf-8")
    path = tmp_path / "joinable.jsonl"

    status, _, err = run(capsys, "simulate", "--config", str(config), "--output", str(path),
                         "--scenario", "stationary", "--length", "2000", "--start-ts", "0",
                         "--rate", "10", "--label-delay", "30", "--unlabelled", "0.1")
    assert status == 0, err

    values = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    kinds = [v["kind"] for v in values]
    labels = kinds.count("label")
    assert kinds.count("prediction") == 2000 and 1700 < labels < 1900  # 10 % unlabelled
    assert [v["ts"] for v in values] == sorted(v["ts"] for v in values)  # merged by time
    report = replay_report(capsys, path, "--config", str(config))
    assert report["rejected_total"] == 0
    assert report["events"] == labels  # every label joined its prediction


def test_calibrated_writes_the_calibrated_scenario(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.jsonl"
    status, _, err = run(capsys, "simulate", "--output", str(path), "--scenario",
                         "sudden_auc_drop", "--calibrated", "--length", "300",
                         "--start-ts", str(START_TS))
    assert status == 0, err
    scores = [json.loads(line)["score"] for line in path.read_text().splitlines()]
    expected = generate("sudden_auc_drop", seed=1, length=300, output="calibrated")
    assert scores == [event.y_score for event in expected]
    assert scores != [event.y_score for event in generate("sudden_auc_drop", seed=1,
                                                          length=300)]


@pytest.mark.parametrize(("args", "settings", "message"), [
    (["--calibrated", "--param", "output=latent"], "",
     "--calibrated and --param output=latent disagree"),
    (["--output", "x.csv"], "join:\n  enabled: true\n  kind_field: kind\n",
     "CSV holds labelled events only"),
    (["--output", "x.jsonl"], "kafka:\n  topics: [p, l]\njoin:\n  enabled: true\n"
     "  predictions_topic: p\n  labels_topic: l\n", "--output needs join.kind_field"),
    (["--output", "x.jsonl", "--topic", "t", "--partitions", "3"], "",
     "--topic, --partitions: Kafka options, not for --output"),
    (["--format", "csv"], "", "--format applies to --output"),
])
def test_bad_combinations_are_refused_before_writing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        args: list[str], settings: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "settings.yaml"
    config.write_text(settings or "{}\n", encoding="utf-8")

    status, out, err = run(capsys, "simulate", "--config", str(config), *args)

    assert status == 2
    assert message in err and out == ""
    assert list(tmp_path.iterdir()) == [config]


def test_standard_output_holds_the_records_and_stderr_the_notes(
        capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "simulate", "--output", "-", "--scenario", "stationary",
                           "--length", "5", "--start-ts", "0", "--rate", "2")

    assert status == 0, err
    assert [json.loads(line)["ts"] for line in out.splitlines()] == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert "wrote 5 records to standard output" in err


def test_duration_keeps_what_a_live_run_of_that_long_sends(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.jsonl"

    status, _, err = run(capsys, "simulate", "--output", str(path), "--models", "3",
                         "--rate", "100", "--duration", "2.5", "--start-ts", "0")

    assert status == 0, err
    values = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(values) == 3 * 250
    assert max(v["ts"] for v in values) < 2.5


def test_an_unwritable_file_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "simulate", "--output", str(tmp_path / "no" / "x.jsonl"))

    assert status == 2
    assert err.strip().endswith("cannot write: No such file or directory")


# -- the module ----------------------------------------------------------------------------


def test_labelled_records_interleave_the_models_event_by_event() -> None:
    streams = {m: generate("stationary", seed=s, length=3, start_ts=0.0)
               for m, s in (("a", 1), ("b", 2))}

    records = list(labelled_records(streams, EventFormat(), rate=1.0))

    assert [(r["model"], r["ts"]) for r in records] == [
        ("a", 0.0), ("b", 0.0), ("a", 1.0), ("b", 1.0), ("a", 2.0), ("b", 2.0)]
    assert [r["score"] for r in records[::2]] == [e.y_score for e in streams["a"]]


def test_labelled_records_of_a_duration_are_the_feeds() -> None:
    stream = generate("stationary", seed=1, length=100)
    for duration, expected in ((0.001, 1), (0.5, 5), (0.51, 6), (20.0, 100)):
        records = labelled_records({"a": stream}, EventFormat(), rate=10.0, duration_s=duration)
        assert len(list(records)) == min(100, math.ceil(duration * 10)) == expected


def test_joinable_records_merge_the_models_by_time() -> None:
    streams = {m: delayed_labels(generate("stationary", seed=s, length=50), seed=s, model=m,
                                 mean_delay=5.0, id_prefix=f"{m}-")
               for m, s in (("a", 1), ("b", 2))}

    records = list(joinable_records(streams, EventFormat(), JoinFormat(kind_field="kind"),
                                    duration_s=30.0))

    assert [r["ts"] for r in records] == sorted(r["ts"] for r in records)
    assert max(r["ts"] for r in records) < 30.0
    assert {r["event_id"][0] for r in records} == {"a", "b"}


def test_a_failed_write_leaves_no_file_and_an_older_one_untouched(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("older\n", encoding="utf-8")

    with pytest.raises(KeyboardInterrupt), output_file(str(path)) as out:
        out.write("half a file\n")
        raise KeyboardInterrupt

    assert path.read_text(encoding="utf-8") == "older\n"
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left either

    with output_file(str(path)) as out:
        out.write("new\n")
    assert path.read_text(encoding="utf-8") == "new\n"
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
