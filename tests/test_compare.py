"""``driftwatch compare`` end to end on the example data: the numbers against independent
computations, the three input layouts agreeing, bad input, and the reproducible example."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from sklearn.metrics import roc_auc_score

from driftwatch.commands.main import main
from driftwatch.compare.pairing import Pairer, Pairing
from driftwatch.core.comparison.delong import delong
from driftwatch.core.comparison.resampling import fold_aucs
from driftwatch.core.comparison.wilcoxon import wilcoxon_signed_rank
from driftwatch.decoding.decoder import EventFormat, Rejected
from tests.conftest import tool_missing

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SAMPLE = EXAMPLES / "champion-challenger.jsonl"
FIELDS = ["--challenger-score", "challenger_score"]
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


def sample_records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines()]


def compare_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    status = main(["compare", *argv, "--json", "--replicates", "50"])
    out = capsys.readouterr().out
    assert status == 0, out
    document: dict[str, Any] = json.loads(out)
    return document


def test_example_against_independent_computations(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, matplotlib_available: None
) -> None:
    figure = tmp_path / "compare.png"
    document = compare_json(capsys, str(SAMPLE), *FIELDS, "--plot", str(figure))
    records = sample_records()
    y = np.array([r["label"] for r in records])
    a = np.array([r["score"] for r in records])
    b = np.array([r["challenger_score"] for r in records])
    assert (document["records"], document["paired"], document["rejected"]) == (8000, 8000, {})
    whole = document["whole_run"]
    assert whole["batch_auc"] == pytest.approx([roc_auc_score(y, a), roc_auc_score(y, b)])
    reference = delong(y, a, b)
    assert whole["delong"]["p_value"] == pytest.approx(reference.p_value)
    assert whole["delong"]["difference"] == pytest.approx(reference.difference)
    low, high = whole["bootstrap"]["ci"]
    assert low < reference.difference < high
    # Blocks of the window size (1000, the settings' default): 8 per-block AUC pairs.
    blocks = [
        (
            roc_auc_score(y[k : k + 1000], a[k : k + 1000]),
            roc_auc_score(y[k : k + 1000], b[k : k + 1000]),
        )
        for k in range(0, 8000, 1000)
    ]
    flat = [value for pair in whole["blocks"] for value in pair]
    assert flat == pytest.approx([value for pair in blocks for value in pair])
    expected = wilcoxon_signed_rank([p for p, _ in blocks], [q for _, q in blocks])
    assert whole["wilcoxon"]["p_value"] == pytest.approx(expected.p_value) == 2 / 256
    right_a, right_b = (a >= 0.5) == y, (b >= 0.5) == y
    assert whole["mcnemar"]["challenger_only"] == int((right_b & ~right_a).sum())
    assert whole["mcnemar"]["champion_only"] == int((right_a & ~right_b).sum())
    folds = fold_aucs(y, a, b, folds=10, seed=0)
    expected_folds = wilcoxon_signed_rank(folds.champion, folds.challenger)
    assert whole["folds_wilcoxon"]["p_value"] == pytest.approx(expected_folds.p_value)
    assert document["verdict"] == "better"
    # The final window's AUCs are the last 1000 events'.
    assert document["final_window"]["champion_auc"] == pytest.approx(
        roc_auc_score(y[-1000:], a[-1000:])
    )
    assert document["series"]["event"][:2] == [100, 200] and document["series"]["event"][-1] == 8000
    assert figure.read_bytes().startswith(PNG_SIGNATURE)


def test_markdown_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(SAMPLE), *FIELDS, "--replicates", "20", "--time-rows", "3"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("## Challenger against champion\n")
    assert (
        "**The challenger is significantly better than the champion (Wilcoxon signed-rank" in text
    )
    assert "| AUC, all events" in text and "| DeLong, all events" in text
    assert "bootstrap, 20 Poisson(1) replicates" in text
    assert text.count("2024-06-01") == 3  # three rows over time, with event times


def test_join_and_csv_layouts_give_the_same_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    records = sample_records()[:3000]
    fields = tmp_path / "fields.jsonl"
    fields.write_text("".join(json.dumps(r) + "\n" for r in records))
    # One record per model and event, the challenger's written first for odd ids, with
    # noise the join must skip or reject.
    joined = tmp_path / "joined.jsonl"
    lines = []
    for i, r in enumerate(records):
        mine = {"label": r["label"], "score": r["score"], "ts": r["ts"], "model": "v1", "id": i}
        theirs = {"label": r["label"], "score": r["challenger_score"], "model": "v2", "id": i}
        pair = [mine, theirs] if i % 2 == 0 else [theirs, mine]
        lines += [json.dumps(x) for x in pair]
    lines += [
        json.dumps({"label": 1, "score": 0.5, "model": "v3", "id": 1}),
        json.dumps({"label": 1, "score": 0.5, "model": "v1"}),
        json.dumps({"label": 1, "score": 0.5, "model": "v1", "id": "x"}),
        json.dumps({"label": 0, "score": 0.5, "model": "v2", "id": "x"}),
        json.dumps({"label": 1, "score": 0.5, "model": "v1", "id": "lonely"}),
    ]
    joined.write_text("\n".join(lines) + "\n")
    csv_file = tmp_path / "scores.csv"
    csv_file.write_text(
        "y;p;q\n" + "".join(f"{r['label']};{r['score']};{r['challenger_score']}\n" for r in records)
    )
    by_fields = compare_json(capsys, str(fields), *FIELDS)
    by_join = compare_json(
        capsys, str(joined), "--join", "id", "--champion", "v1", "--challenger", "v2"
    )
    by_csv = compare_json(
        capsys,
        str(csv_file),
        "--columns",
        "label=y,score=p",
        "--challenger-score",
        "q",
        "--delimiter",
        ";",
    )
    assert by_join["rejected"] == {
        "other_model": 1,
        "missing_id": 1,
        "label_mismatch": 1,
        "unpaired": 1,
    }
    assert (by_join["champion"], by_join["challenger"]) == ("v1", "v2")
    for document in (by_join, by_csv):
        assert document["paired"] == 3000
        assert document["whole_run"] == by_fields["whole_run"]
        assert document["final_window"] == by_fields["final_window"]


def test_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["compare", str(SAMPLE)]) == 2
    assert "give --challenger-score FIELD" in capsys.readouterr().err
    assert main(["compare", str(SAMPLE), "--join", "id", "--champion", "a"]) == 2
    assert "--join needs --champion MODEL and --challenger MODEL" in capsys.readouterr().err
    assert main(["compare", str(SAMPLE), *FIELDS, "--plot", "x.gif"]) == 2
    assert "unsupported file type '.gif'" in capsys.readouterr().err
    # Every record lacks the challenger's field: exit 1, saying what was expected.
    assert main(["compare", str(SAMPLE), "--challenger-score", "other"]) == 1
    captured = capsys.readouterr()
    assert "0 paired events" in captured.out
    assert "no record became a paired event (missing_field 8,000)" in captured.err
    assert "challenger: no 'other' field" in captured.err
    # An empty export: exit 1 too, so a CI check on it fails.
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["compare", str(empty), *FIELDS]) == 1
    assert f"no records in {empty}" in capsys.readouterr().err
    csv_file = tmp_path / "scores.csv"
    csv_file.write_text("label,score\n1,0.5\n")
    assert main(["compare", str(csv_file), "--challenger-score", "q"]) == 2
    assert "no column 'q'" in capsys.readouterr().err


def test_pairer_holds_a_bounded_number_of_records() -> None:
    pairer = Pairer(
        EventFormat(), Pairing("join", id_field="id", champion="a", challenger="b", max_pending=2)
    )
    feed = [
        {"label": 1, "score": 0.1, "model": "a", "id": 1},
        {"label": 1, "score": 0.2, "model": "a", "id": 2},
        {"label": 1, "score": 0.3, "model": "a", "id": 2},
        {"label": 1, "score": 0.4, "model": "a", "id": 3},
        {"label": 1, "score": 0.5, "model": "b", "id": 2},
        {"label": 1, "score": 0.6, "model": "b", "id": 1},
    ]
    outcomes = [pairer.feed(json.dumps(r).encode(), None, i) for i, r in enumerate(feed)]
    assert outcomes[0] is None and outcomes[1] is None
    assert isinstance(outcomes[2], Rejected) and outcomes[2].reason == "duplicate_id"
    assert isinstance(outcomes[3], Rejected) and outcomes[3].reason == "unpaired"  # a's 1 dropped
    paired = outcomes[4]
    assert not isinstance(paired, Rejected) and paired is not None
    assert (paired.champion_score, paired.challenger_score, paired.position) == (0.2, 0.5, 4)
    assert outcomes[5] is None  # a's 1 was dropped: b's record waits now
    assert pairer.finish() == 2  # a's 3 and b's 1


def test_example_is_reproducible(tmp_path: Path) -> None:
    sample = tmp_path / "champion-challenger.jsonl"
    made = subprocess.run(
        [sys.executable, str(EXAMPLES / "make_compare_sample.py"), "--out", str(sample)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    assert sample.read_bytes() == SAMPLE.read_bytes()


def test_undefined_values_are_null_in_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    one_class = tmp_path / "one.jsonl"
    one_class.write_text(
        "".join(json.dumps({"label": 1, "score": 0.5, "q": 0.4}) + "\n" for _ in range(30))
    )
    document = compare_json(capsys, str(one_class), "--challenger-score", "q", "--window", "10")
    assert document["whole_run"]["batch_auc"] == [None, None]
    assert document["verdict"] == "undecided"
    assert document["whole_run"]["bootstrap"] is None
    assert not math.isnan(document["whole_run"]["accuracy"][0])


def test_min_difference_and_html(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, matplotlib_available: None
) -> None:
    page = tmp_path / "compare.html"
    # The example's AUC difference is 0.034: significant, and below 0.05 it is negligible.
    document = compare_json(capsys, str(SAMPLE), *FIELDS, "--min-difference", "0.05")
    assert document["verdict"] == "negligible"
    assert compare_json(capsys, str(SAMPLE), *FIELDS, "--min-difference", "0.03")["verdict"] == (
        "better"
    )
    assert main(["compare", str(SAMPLE), *FIELDS, "--replicates", "0", "--plot", str(page)]) == 0
    text = capsys.readouterr().out
    assert "bootstrap" not in text
    content = page.read_text()
    assert content.startswith("<!doctype html>") and "data:image/png;base64," in content
    assert "significantly better" in content


def test_kafka_topic_range_compares_like_the_file(
    broker: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each model's records on a real broker (keyed by model), joined by id; offsets
    [500, 2500) of the one partition are the file's events 250–1249."""
    records = sample_records()[:2000]
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("shadow", 1, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    try:
        for i, r in enumerate(records):
            for model, score in (("v1", r["score"]), ("v2", r["challenger_score"])):
                value = json.dumps({"label": r["label"], "score": score, "id": i, "model": model})
                producer.send("shadow", value=value.encode(), partition=0)
        producer.send("shadow", value=b"{oops", partition=0)
        producer.flush(timeout=10)
    finally:
        producer.close(timeout=5)
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records[250:1250]))
    join = ["--join", "id", "--champion", "v1", "--challenger", "v2"]
    kafka = ["--kafka-topic", "shadow", "--bootstrap", broker.bootstrap]
    from_kafka = compare_json(capsys, *kafka, "--from-offset", "500", "--to-offset", "2500", *join)
    from_file = compare_json(capsys, str(path), *FIELDS)
    assert (from_kafka["records"], from_kafka["paired"]) == (2000, 1000)
    assert from_kafka["whole_run"] == from_file["whole_run"]
    everything = compare_json(capsys, *kafka, *join)
    assert everything["paired"] == 2000
    assert everything["rejected"] == {"not_json": 1}
    assert everything["bad_records"] == [
        {
            "position": 4000,
            "partition": 0,
            "reason": "not_json",
            "detail": everything["bad_records"][0]["detail"],
        }
    ]
    assert main(["compare", *kafka, str(path), *FIELDS]) == 2
    assert "give a FILE or --kafka-topic (one of them)" in capsys.readouterr().err


def test_x_axis(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, matplotlib_available: None
) -> None:
    untimed = tmp_path / "untimed.jsonl"
    untimed.write_text(
        "".join(
            json.dumps({k: v for k, v in r.items() if k != "ts"}) + "\n"
            for r in sample_records()[:3000]
        )
    )
    figure = tmp_path / "figure.svg"
    assert main(["compare", str(untimed), *FIELDS, "--plot", str(figure), "--x-axis", "time"]) == 0
    err = capsys.readouterr().err
    assert "--x-axis time: drawn over paired events" in err
    assert "paired events" in figure.read_text()
    assert main(["compare", str(SAMPLE), *FIELDS, "--plot", str(figure), "--replicates", "0"]) == 0
    capsys.readouterr()
    assert "event time (UTC)" in figure.read_text()


def test_crisp_predictions_from_fields_and_columns(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each model's own prediction, when the records carry one, decides McNemar and κ."""
    rows = [
        # label, champion score, its prediction, challenger score, its prediction
        (1, 0.9, 0, 0.8, 1),
        (0, 0.2, 1, 0.3, 0),
        (1, 0.7, 1, 0.6, 1),
        (0, 0.4, 0, 0.1, 1),
    ] * 10
    jsonl = tmp_path / "preds.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps({"label": y, "score": a, "prediction": pa, "q": b, "qp": pb}) + "\n"
            for y, a, pa, b, pb in rows
        )
    )
    csv_file = tmp_path / "preds.csv"
    csv_file.write_text(
        "label,score,prediction,q,qp\n" + "".join(",".join(map(str, r)) + "\n" for r in rows)
    )
    options = ["--challenger-score", "q", "--challenger-prediction", "qp", "--window", "20"]
    documents = [compare_json(capsys, str(path), *options) for path in (jsonl, csv_file)]
    assert documents[0]["whole_run"] == documents[1]["whole_run"]
    mcnemar = documents[0]["whole_run"]["mcnemar"]
    # Champion right on rows 3 and 4 of each group, challenger on 1, 2 and 3.
    assert (mcnemar["challenger_only"], mcnemar["champion_only"]) == (20, 10)
    assert documents[0]["whole_run"]["accuracy"] == [0.5, 0.75]


def test_worse_challenger_and_the_delong_fallback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    swapped = tmp_path / "swapped.csv"
    swapped.write_text(
        "y,old,new\n"
        + "".join(f"{r['label']},{r['challenger_score']},{r['score']}\n" for r in sample_records())
    )
    columns = ["--columns", "label=y,score=old", "--challenger-score", "new", "--replicates", "0"]
    assert main(["compare", str(swapped), *columns, "--time-rows", "0"]) == 0
    text = capsys.readouterr().out
    assert "**The challenger is significantly worse than the champion (Wilcoxon" in text
    # Blocks of 2 000 events: 4 blocks, too few for the block test; DeLong decides, and says so.
    assert main(["compare", str(swapped), *columns, "--block-size", "2000"]) == 0
    text = capsys.readouterr().out
    assert "significantly worse than the champion (DeLong's test over all events" in text
    assert "too few blocks (4 with a difference) for the block test" in text
