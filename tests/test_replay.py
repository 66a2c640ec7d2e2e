"""``driftwatch replay``: the example's documented alarms, CSV mapping, bad lines, figures,
the examples' settings, the reproducible sample, and a Kafka topic range on a real broker."""

from __future__ import annotations

import base64
import json
import os
import re
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from driftwatch.commands.main import main
from driftwatch.decoding.decoder import EventFormat
from driftwatch.replay.progress import Progress
from driftwatch.replay.sources import CsvSource, SourceError, parse_columns
from tests.conftest import tool_missing

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SAMPLE = EXAMPLES / "events-drift.jsonl"
SIDECAR = EXAMPLES / "sidecar.yaml"
MULTI_MODEL = EXAMPLES / "multi-model.yaml"

CHANGE_AT = 10_000
"""The sample's AUC drops from 0.9 to 0.8 at this 0-based index (examples/make_sample.py)."""

DOCUMENTED_ALARMS = [
    # (event, measure, detector, level): docs/replay.md's list for
    # driftwatch replay examples/events-drift.jsonl --config examples/sidecar.yaml
    (10_500, "gmean", "threshold", "threshold"),
    (10_591, "auc", "cusum", "drift"),
    (10_591, "false_positive_rate", "cusum", "drift"),
]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("DRIFTWATCH_"):
            monkeypatch.delenv(name)


@pytest.fixture
def matplotlib_available() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        tool_missing("matplotlib", "the plot extra: pip install 'driftwatch-agent[plot]'")


def replay(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``driftwatch replay ARGS`` in this process: (status, stdout, stderr)."""
    status = main(["replay", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def replay_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    status, out, err = replay(capsys, *args, "--json")
    assert status == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def alarm_list(report: dict[str, Any]) -> list[tuple[int, str, str, str]]:
    return [(a["event"], a["measure"], a["detector"], a["level"]) for a in report["alarms"]]


def sample_lines(count: int) -> list[str]:
    with SAMPLE.open(encoding="utf-8") as sample:
        return [next(sample).rstrip("\n") for _ in range(count)]


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def run_module(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.upper().startswith("DRIFTWATCH_")}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                          env=environment, timeout=120)


# ------------------------------------------------------------------------------------------
# the example file


def test_example_file_gives_the_documented_alarms(capsys: pytest.CaptureFixture[str]) -> None:
    report = replay_json(capsys, str(SAMPLE), "--config", str(SIDECAR))

    assert alarm_list(report) == DOCUMENTED_ALARMS
    assert all(event > CHANGE_AT for event, *_ in alarm_list(report))  # nothing before the drop
    assert ("auc", "cusum", "drift") in {alarm[1:] for alarm in alarm_list(report)}
    assert report["records"] == report["events"] == 20_000
    assert report["rejected_total"] == 0
    (model,) = report["models"]
    assert model == "credit-risk"  # sidecar.yaml: model_source constant
    first = report["alarms"][0]
    assert first["line"] == 10_500  # one event per line, no rejections
    assert first["time"] == 1_717_200_000 + 10_499  # one event per second from ts 1717200000
    auc = report["models"][model]["measures"]["auc"]
    assert 0.75 < auc < 0.85  # the AUC after the drop is 0.8


def test_example_file_summary_table(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = replay(capsys, str(SAMPLE), "--config", str(SIDECAR))

    assert status == 0
    assert out.startswith("Replayed ")
    assert "20,000 records, 20,000 events, 0 rejected, 1 model" in out
    assert re.search(r"10,591\s+10,591\s+2024-06-01 02:56:30\s+credit-risk\s+auc\s+cusum\s+"
                     r"drift\s+0\.748", out), out
    assert re.search(r"gmean\s+0\.7\d\d\s+0\.8\d\d\s+0\.767", out), out  # raw, norm., threshold


# ------------------------------------------------------------------------------------------
# CSV


def write_csv(path: Path, lines: list[str]) -> None:
    """The sample's events as CSV with other column names, in another order, plus a model."""
    rows = ["time;prob;y;extra;m"]
    for line in lines:
        event = json.loads(line)
        rows.append(f"{event['ts']};{event['score']};{event['label']};x;churn")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def test_csv_with_a_column_mapping_replays_like_json_lines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = sample_lines(3000)
    jsonl = tmp_path / "events.jsonl"
    jsonl.write_text("\n".join(lines) + "\n", encoding="utf-8")
    csv_path = tmp_path / "events.csv"
    write_csv(csv_path, lines)

    from_json = replay_json(capsys, str(jsonl))
    from_csv = replay_json(capsys, str(csv_path), "--columns", "label=y,score=prob,ts=time,model=m",
                           "--delimiter", ";")

    assert from_csv["events"] == from_json["events"] == 3000
    assert from_csv["rejected_total"] == 0
    assert list(from_csv["models"]) == ["churn"]
    assert from_csv["models"]["churn"]["measures"] == from_json["models"]["default"]["measures"]


def test_csv_missing_mapped_column_is_named(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    csv_path = tmp_path / "events.csv"
    write_csv(csv_path, sample_lines(10))

    status, out, err = replay(capsys, str(csv_path), "--columns", "label=y,score=p",
                              "--delimiter", ";")

    assert status == 2
    assert out == ""
    assert "no column 'p' (mapped to score by --columns)" in err
    assert "the header has: time, prob, y, extra, m" in err


def test_csv_without_the_settings_label_column_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv_path = tmp_path / "events.csv"
    csv_path.write_text("y,score\n1,0.5\n", encoding="utf-8")

    status, _, err = replay(capsys, str(csv_path))

    assert status == 2
    assert "no column 'label'" in err and "--columns label=COLUMN" in err


def test_csv_cells_are_typed_like_json_and_string_classes_match(tmp_path: Path) -> None:
    path = tmp_path / "events.csv"
    path.write_text("label,score,decision,ts\nfraud,0.9,legit,2024-06-01T00:00:00Z\n"
                    "1,NaN,,17e8\n", encoding="utf-8")
    fmt = EventFormat(positive_label="fraud", negative_label="legit")

    rows = [json.loads(record.value or b"")
            for record in CsvSource(str(path), fmt, parse_columns("prediction=decision"))]

    assert rows[0] == {"label": "fraud", "score": 0.9, "decision": "legit",
                       "ts": "2024-06-01T00:00:00Z"}
    assert rows[1]["label"] == 1 and rows[1]["ts"] == 1.7e9 and "decision" not in rows[1]
    assert rows[1]["score"] != rows[1]["score"]  # NaN: the decoder rejects it (bad_score)


@pytest.mark.parametrize(("spec", "message"), [
    ("label", "'label' is not ROLE=COLUMN"),
    ("lable=y", "unknown role 'lable'"),
    ("label=y,label=z", "label is mapped twice"),
])
def test_bad_column_mappings_are_refused(spec: str, message: str) -> None:
    with pytest.raises(SourceError, match=re.escape(message)):
        parse_columns(spec)


# ------------------------------------------------------------------------------------------
# bad lines


def test_bad_lines_are_reported_with_line_numbers_and_skipped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = sample_lines(2000)
    lines.insert(2, "{not json")  # line 3
    lines.insert(9, '{"label": 1, "score": "high"}')  # line 10
    lines.insert(99, "")  # line 100: blank, skipped silently
    lines.insert(1499, '{"label": 7, "score": 0.5}')  # line 1500
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    status, out, err = replay(capsys, str(path), "--json")

    assert status == 0
    report = json.loads(out)
    assert report["events"] == 2000
    assert report["records"] == 2003
    assert report["rejected_total"] == 3
    assert {k: v for k, v in report["rejected"].items() if v} == \
        {"not_json": 1, "bad_score": 1, "bad_label": 1}
    assert [(b["line"], b["reason"]) for b in report["bad_records"]] == \
        [(3, "not_json"), (10, "bad_score"), (1500, "bad_label")]
    assert f"{path}: line 3: not_json: " in err
    assert f"{path}: line 10: bad_score: score='high' is not a finite number" in err
    assert report["models"]["default"]["events"] == 2000  # the run went on after them


def test_bad_lines_in_the_summary_table(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("[1, 2]\n" + "\n".join(sample_lines(50)) + "\n", encoding="utf-8")

    status, out, _ = replay(capsys, str(path))

    assert status == 0
    assert "Rejected lines (1): not_object 1" in out
    assert "  line 1: not_object: top-level JSON list, expected an object" in out


def test_models_beyond_the_limit_are_rejected_and_counted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text("limits: {max_models: 1}\n", encoding="utf-8")
    path = tmp_path / "events.jsonl"
    path.write_text('{"model": "a", "label": 1, "score": 0.5}\n'
                    '{"model": "b", "label": 1, "score": 0.5}\n', encoding="utf-8")

    report = replay_json(capsys, str(path), "--config", str(settings))

    assert report["rejected"]["too_many_models"] == 1
    assert list(report["models"]) == ["a"]


def test_missing_file_and_invalid_settings_exit_2(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = replay(capsys, str(tmp_path / "nope.jsonl"))
    assert status == 2
    assert "nope.jsonl: no such file" in err

    settings = tmp_path / "settings.yaml"
    settings.write_text("monitoring: {defaults: {window_size: 0}}\n", encoding="utf-8")
    status, _, err = replay(capsys, str(SAMPLE), "--config", str(settings))
    assert status == 2
    assert "monitoring.defaults.window_size" in err


def test_file_replay_reads_the_model_field_when_settings_use_the_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text("events: {model_source: key}\n", encoding="utf-8")
    path = tmp_path / "events.jsonl"
    path.write_text('{"model": "fraud", "label": 1, "score": 0.5}\n', encoding="utf-8")

    status, out, err = replay(capsys, str(path), "--config", str(settings), "--json")

    assert status == 0
    assert list(json.loads(out)["models"]) == ["fraud"]
    assert "reading the model id from the 'model' field" in err


def test_progress_bar_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = replay(capsys, str(SAMPLE), "--progress")

    assert status == 0
    assert "100%" in err and "20,000 records" in err
    assert err.count("\r") >= 2  # drawn, then erased


def test_progress_bar_redraws_at_most_every_interval() -> None:
    class Stream:
        encoding = "ascii"
        text = ""

        def write(self, text: str) -> None:
            self.text += text

        def flush(self) -> None:
            pass

    stream = Stream()
    progress = Progress(stream, "x", interval_s=3600)  # type: ignore[arg-type]
    progress.update(50, 100, 5, 0)
    progress.update(60, 100, 6, 0)  # too soon: not drawn
    assert stream.text.count("\r") == 1
    assert "[" not in stream.text and "##############--------------   50%" in stream.text
    assert re.search(r"ETA \d+:\d\d$", stream.text)  # half done: as long again as so far


# ------------------------------------------------------------------------------------------
# figures


def test_png_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                    matplotlib_available: None) -> None:
    out = tmp_path / "replay.png"
    status, _, err = replay(capsys, str(SAMPLE), "--config", str(SIDECAR), "--plot", str(out),
                            "--measures", "gmean,kappa")

    assert status == 0, err
    data = out.read_bytes()
    width, height = png_size(data)
    assert width >= 1200 and height >= 500
    assert len(data) > 50_000  # curves, not a blank canvas
    assert f"figure written to {out} (1 model)" in err


def test_svg_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                    matplotlib_available: None) -> None:
    out = tmp_path / "replay.svg"
    lines = sample_lines(3000)
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    status, _, err = replay(capsys, str(path), "--plot", str(out))

    assert status == 0, err
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<?xml") and "<svg" in text and text.rstrip().endswith("</svg>")


def test_html_figure_is_self_contained(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       matplotlib_available: None) -> None:
    out = tmp_path / "replay.html"
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(sample_lines(3000)) + "\n", encoding="utf-8")

    status, _, err = replay(capsys, str(path), "--plot", str(out))

    assert status == 0, err
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    assert "<script" not in page.lower()
    assert re.search(r'src="(?!data:)', page) is None  # nothing loaded from elsewhere
    embedded = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert embedded is not None
    png_size(base64.b64decode(embedded.group(1)))


def test_multi_model_figure_has_a_panel_per_model(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], matplotlib_available: None) -> None:
    path = tmp_path / "events.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for i, line in enumerate(sample_lines(2000)):
            event = json.loads(line)
            event["model"] = "a" if i % 2 else "b"
            out.write(json.dumps(event) + "\n")
    one, two = tmp_path / "one.png", tmp_path / "two.png"

    assert replay(capsys, str(path), "--plot", str(two))[0] == 0
    assert replay(capsys, str(path), "--plot", str(one), "--model", "a")[0] == 0

    (_, height_two), (_, height_one) = png_size(two.read_bytes()), png_size(one.read_bytes())
    assert height_two > 1.7 * height_one


def test_unsupported_figure_type_is_refused_before_replaying(
        capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = replay(capsys, str(SAMPLE), "--plot", "replay.jpg")

    assert status == 2
    assert out == ""
    assert "unsupported file type '.jpg'" in err


def test_missing_matplotlib_is_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError

    status, out, err = replay(capsys, str(SAMPLE), "--plot", str(tmp_path / "replay.png"))

    assert status == 2
    assert out == ""
    assert "pip install 'driftwatch-agent[plot]'" in err


def test_unknown_measure_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = replay(capsys, str(SAMPLE), "--measures", "gmean,auroc")

    assert status == 2
    assert "unknown measure 'auroc'" in err


# ------------------------------------------------------------------------------------------
# the examples


def test_example_settings_validate() -> None:
    result = run_module("-m", "driftwatch", "config", "validate", str(SIDECAR), str(MULTI_MODEL))

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"{SIDECAR}: ok\n{MULTI_MODEL}: ok\n"


def test_docs_sample_and_figure_are_reproducible(tmp_path: Path,
                                                 matplotlib_available: None) -> None:
    sample = tmp_path / "events-drift.jsonl"
    figure = tmp_path / "replay.png"

    made = run_module(str(EXAMPLES / "make_sample.py"), "--out", str(sample))
    assert made.returncode == 0, made.stderr
    assert sample.read_bytes() == SAMPLE.read_bytes()

    # docs/replay.md's command, with the figure written to tmp instead of examples/replay.png.
    replayed = run_module("-m", "driftwatch", "replay", str(sample), "--config", str(SIDECAR),
                          "--plot", str(figure), "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert alarm_list(json.loads(replayed.stdout)) == DOCUMENTED_ALARMS
    png_size(figure.read_bytes())
    png_size((EXAMPLES / "replay.png").read_bytes())  # the committed figure is a PNG too


def test_the_documented_alarms_are_the_docs_table() -> None:
    """docs/replay.md's table of the example's alarms is the list the replay is checked
    against (event, measure, detector)."""
    text = (ROOT / "docs" / "replay.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([\d,]+) \| (\w+)[^|]*\| (\w+) \|", text, flags=re.MULTILINE)
    assert [(int(event.replace(",", "")), measure, detector) for event, measure, detector
            in rows] == [(event, measure, detector) for event, measure, detector, _
                         in DOCUMENTED_ALARMS]


def test_sample_stays_small() -> None:
    assert SAMPLE.stat().st_size < 2_000_000


# ------------------------------------------------------------------------------------------
# a Kafka topic range


@pytest.fixture
def topic_with_sample(broker: Any) -> Iterator[tuple[str, list[str]]]:
    """Topic ``recorded``: in partition 0 the sample's first 1000 events, a bad record at
    offset 1000, then events 1000–2999; in partition 1 five events of another model."""
    lines = sample_lines(3000)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("recorded", 2, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    try:
        values = [line.encode() for line in lines]
        for value in [*values[:1000], b"{oops", *values[1000:]]:
            producer.send("recorded", value=value, partition=0)
        for value in values[:5]:
            other = json.dumps({**json.loads(value), "model": "other"}).encode()
            producer.send("recorded", value=other, partition=1)
        producer.flush(timeout=10)
    finally:
        producer.close(timeout=5)
    yield broker.bootstrap, lines


def test_kafka_topic_range_replays_like_the_file(
        topic_with_sample: tuple[str, list[str]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap, lines = topic_with_sample
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines[1000:2500]) + "\n", encoding="utf-8")

    # Offsets [1000, 2501) of every partition: the bad record and events 1000–2499 of
    # partition 0; nothing of partition 1, which ends at offset 5.
    from_kafka = replay_json(capsys, "--kafka-topic", "recorded", "--bootstrap", bootstrap,
                             "--from-offset", "1000", "--to-offset", "2501")
    from_file = replay_json(capsys, str(path))

    assert from_kafka["records"] == 1501
    assert from_kafka["events"] == 1500
    assert [(b["partition"], b["offset"], b["reason"]) for b in from_kafka["bad_records"]] == \
        [(0, 1000, "not_json")]
    assert list(from_kafka["models"]) == ["default"]
    assert from_kafka["models"]["default"]["measures"] == \
        from_file["models"]["default"]["measures"]

    everything = replay_json(capsys, "--kafka-topic", "recorded", "--bootstrap", bootstrap)
    assert everything["records"] == 3006
    assert everything["models"]["other"]["events"] == 5


def test_kafka_unknown_topic_exits_2(broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = replay(capsys, "--kafka-topic", "absent", "--bootstrap", broker.bootstrap)

    assert status == 2
    assert "kafka topic absent: no such topic" in err


# ------------------------------------------------------------------------------------------
# exit codes and hints scripts and people can trust


def test_every_record_rejected_fails_and_names_the_fields(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"y": 1, "p": 0.9, "when": 1717200000}\n'
                    '{"y": 0, "p": 0.2, "when": 1717200001, "extra": true}\n', encoding="utf-8")

    status, out, err = replay(capsys, str(path), "--json")

    assert status == 1
    assert json.loads(out)["rejected"]["missing_field"] == 2  # the report is still printed
    assert "no record became an event: all 2 rejected (missing_field 2)" in err
    assert "the fields 'y', 'p', 'when', 'extra'" in err
    assert "expects label 'label', score 'score'" in err


@pytest.mark.parametrize("content", ["", "\n\n", "label,score\n"])
@pytest.mark.parametrize("plot", [False, True])
def test_no_record_at_all_fails_with_or_without_a_figure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, plot: bool,
        matplotlib_available: None) -> None:
    # A CI backtest on an empty export must not pass, and must not leave a figure of nothing.
    path = tmp_path / ("events.csv" if "," in content else "events.jsonl")
    path.write_text(content, encoding="utf-8")
    figure = tmp_path / "replay.png"

    status, out, err = replay(capsys, str(path), "--json",
                              *(["--plot", str(figure)] if plot else []))

    assert status == 1
    assert json.loads(out)["records"] == 0  # the report is still printed
    assert f"{path} holds no records: nothing was replayed" in err
    assert not figure.exists()


def test_a_figure_without_a_sample_fails_and_names_the_models(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], matplotlib_available: None) -> None:
    # 999 events: one short of the window (d = 1000), so no model has a sample yet.
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(sample_lines(999)) + "\n", encoding="utf-8")
    figure = tmp_path / "replay.png"

    status, out, err = replay(capsys, str(path), "--plot", str(figure))

    assert status == 1
    assert "999 events" in out  # the replay itself ran and reported
    assert "not drawn, no sample yet" in err and "default (999 events, window 1,000)" in err
    assert f"no figure written to {figure}: no model has a sample to draw" in err
    assert not figure.exists()

    path.write_text("\n".join(sample_lines(1000)) + "\n", encoding="utf-8")
    status, _, err = replay(capsys, str(path), "--plot", str(figure))
    assert status == 0, err  # one more event: the first sample, and the figure
    assert f"figure written to {figure} (1 model)" in err


def test_model_without_events_is_named_and_fails_only_when_nothing_is_drawn(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], matplotlib_available: None) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(sample_lines(1200)) + "\n", encoding="utf-8")
    figure = tmp_path / "replay.png"

    status, _, err = replay(capsys, str(path), "--plot", str(figure), "--model", "nope")
    assert status == 2
    assert "--model: no events of nope; models seen: default" in err
    assert not figure.exists()

    status, _, err = replay(capsys, str(path), "--plot", str(figure), "--model", "nope",
                            "--model", "default")
    assert status == 0, err
    assert "no events of nope" in err and "(1 model)" in err


def test_records_with_mapped_fields_pass_again(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text("events: {label_field: y, score_field: p}\n", encoding="utf-8")
    path = tmp_path / "events.jsonl"
    path.write_text('{"y": 1, "p": 0.9}\n{"y": 0, "p": 0.2}\n', encoding="utf-8")

    status, _, err = replay(capsys, str(path), "--config", str(settings))

    assert status == 0, err
    assert "no record became an event" not in err


def test_rejected_labels_name_the_classes(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"label": "yes", "score": 0.9}\n', encoding="utf-8")

    status, _, err = replay(capsys, str(path))

    assert status == 1
    assert "(bad_label 1)" in err and "label classes 1/0" in err


def test_semicolon_csv_gets_a_delimiter_hint(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.csv"
    path.write_text("label;score\n1;0.9\n0;0.2\n", encoding="utf-8")

    status, _, err = replay(capsys, str(path))

    assert status == 2
    assert "the header looks ';'-separated: try --delimiter ';'" in err
    status, _, err = replay(capsys, str(path), "--delimiter", ";")
    assert status == 0, err


def test_tsv_files_default_to_tabs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.tsv"
    path.write_text("label\tscore\n1\t0.9\n0\t0.2\n", encoding="utf-8")

    report = replay_json(capsys, str(path))

    assert report["events"] == 2


def test_cli_docstring_lists_every_command() -> None:
    import driftwatch.commands.main
    from driftwatch.commands.main import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in commands:
        assert f"driftwatch {name}" in (driftwatch.commands.main.__doc__ or ""), name
