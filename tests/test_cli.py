"""The ``driftwatch config`` commands: exit codes, messages, schema and effective settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from driftwatch.commands.main import main
from driftwatch.settings import load_settings


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("DRIFTWATCH_"):
            monkeypatch.delenv(name)


def write(tmp_path: Path, text: str, name: str = "settings.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run_module(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m driftwatch ARGS`` in a fresh interpreter, without DRIFTWATCH_* variables
    except those in ``env``."""
    environment = {k: v for k, v in os.environ.items() if not k.upper().startswith("DRIFTWATCH_")}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "driftwatch", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )


# ------------------------------------------------------------------------------------------
# config validate (through python -m driftwatch, as a user or CI runs it)


def test_validate_valid_file_exits_0(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        kafka: {topics: [scores]}
        monitoring:
          defaults:
            watches:
              - measure: error_stream
                detectors: [{name: ddm}]
    """,
    )
    result = run_module("config", "validate", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{path}: ok\n"
    assert result.stderr == ""


def test_validate_invalid_file_exits_2_with_one_line_per_problem(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        kafka:
          bootstrap_server: [a:9092]
          heartbeat_interval_ms: 6000
        monitoring:
          defaults:
            window_size: -1
            watches:
              - measure: kappa
                detectors: [{name: ddm}, {name: page_hinkley, params: {delta: -1}}]
    """,
    )
    result = run_module("config", "validate", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    # Field errors first: the heartbeat rule (a cross-key check of kafka) and DDM on raw
    # kappa (a check of the whole watch) are reported once their keys are valid.
    assert result.stderr.splitlines() == [
        f"{path}: 3 problems",
        "kafka.bootstrap_server (DRIFTWATCH_KAFKA__BOOTSTRAP_SERVER): unknown key; "
        "did you mean 'bootstrap_servers'?",
        "monitoring.defaults.window_size (DRIFTWATCH_MONITORING__DEFAULTS__WINDOW_SIZE): "
        "Input should be greater than or equal to 1, got -1",
        "monitoring.defaults.watches.0.detectors.1.params.delta "
        "(DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): must be a finite number in "
        "[0, ∞], got -1.0",
    ]


def test_validate_applies_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, "kafka: {group_id: g}\n")
    result = run_module("config", "validate", str(path), env={"DRIFTWATCH_KAFKA__POLL_BATCH": "0"})
    assert result.returncode == 2
    assert "kafka.poll_batch (DRIFTWATCH_KAFKA__POLL_BATCH): " in result.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "no such file"),
        ("kafka:\n  topics: [a\n", "invalid YAML"),
        ("just a string\n", "the top level must be a mapping"),
    ],
)
def test_validate_unreadable_file_exits_2_without_traceback(
    tmp_path: Path, text: str | None, message: str
) -> None:
    path = tmp_path / "settings.yaml"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    result = run_module("config", "validate", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"{path}") and message in line


def test_validate_several_files_reports_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path, "limits: {max_models: 3}\n", "good.yaml")
    bad = write(tmp_path, "limits: {max_models: 0}\n", "bad.yaml")
    assert main(["config", "validate", str(good), str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out == f"{good}: ok\n"
    assert captured.err.splitlines() == [
        f"{bad}: 1 problem",
        "limits.max_models (DRIFTWATCH_LIMITS__MAX_MODELS): "
        "Input should be greater than or equal to 1, got 0",
    ]


# ------------------------------------------------------------------------------------------
# config schema


def _fields_without_description(node: Any, path: str = "#") -> list[str]:
    """Every property of every object schema that lacks a description (the ``if`` parts of
    conditional schemas only select a branch and are skipped)."""
    missing: list[str] = []
    if isinstance(node, dict):
        for key, value in (node.get("properties") or {}).items():
            if "description" not in value:
                missing.append(f"{path}/properties/{key}")
        for key, value in node.items():
            if key != "if":
                missing += _fields_without_description(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            missing += _fields_without_description(value, f"{path}/{index}")
    return missing


def test_schema_is_json_with_a_description_for_every_field(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["config", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["properties"]) == {
        "kafka",
        "source",
        "events",
        "monitoring",
        "alerts",
        "limits",
        "metrics",
        "exporters",
        "checkpoint",
        "readiness",
        "logging",
        "comparisons",
        "join",
    }
    assert _fields_without_description(schema) == []
    defs = schema["$defs"]
    assert len(defs) >= 10
    # Unknown keys are refused in every section, as in validation.
    assert all(d.get("additionalProperties") is False for d in defs.values() if "properties" in d)
    # Bounds and choices reach editors.
    assert defs["MonitorDefaults"]["properties"]["window_size"]["minimum"] == 1
    assert defs["KafkaSettings"]["properties"]["auto_offset_reset"]["enum"] == [
        "earliest",
        "latest",
    ]
    assert "error_stream" in defs["WatchSettings"]["properties"]["measure"]["enum"]
    assert defs["SourceSettings"]["properties"]["kind"]["enum"][:2] == ["kafka", "jsonl"]
    # Detector names, and each detector's own parameters.
    detector = defs["DetectorSettings"]
    assert {"page_hinkley", "adwin", "ddm"} <= set(detector["properties"]["name"]["enum"])
    branches = {
        b["if"]["properties"]["name"]["const"]: b["then"]["properties"]["params"]
        for b in detector["allOf"]
    }
    assert "delta" in branches["page_hinkley"]["properties"]
    assert branches["ddm"]["additionalProperties"] is False


# ------------------------------------------------------------------------------------------
# config show


SECRETS = {
    "DRIFTWATCH_KAFKA__SECURITY_PROTOCOL": "SASL_SSL",
    "DRIFTWATCH_KAFKA__SASL_MECHANISM": "SCRAM-SHA-256",
    "DRIFTWATCH_KAFKA__SASL_PLAIN_USERNAME": "agent",
    "DRIFTWATCH_KAFKA__SASL_PLAIN_PASSWORD": "sasl-hunter2",
    "DRIFTWATCH_METRICS__BASIC_AUTH_USERNAME": "prometheus",
    "DRIFTWATCH_METRICS__BASIC_AUTH_PASSWORD": "metrics-hunter2",
}


def test_show_masks_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    path = write(tmp_path, "kafka: {group_id: from-file}\n")
    assert main(["config", "show", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "hunter2" not in out
    shown = yaml.safe_load(out)
    assert shown["kafka"]["group_id"] == "from-file"
    assert shown["kafka"]["sasl_plain_username"] == "agent"
    assert shown["kafka"]["sasl_plain_password"] == "**********"
    assert shown["metrics"]["basic_auth_password"] == "**********"


def test_show_prints_effective_settings_that_load_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        """
        kafka: {topic_pattern: "scores-.*"}
        monitoring:
          models:
            fraud: {window_size: 200}
    """,
    )
    monkeypatch.setenv("DRIFTWATCH_CONFIG", str(path))
    monkeypatch.setenv("DRIFTWATCH_LIMITS__MAX_MODELS", "9")
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    shown = yaml.safe_load(out)
    assert shown["limits"]["max_models"] == 9
    assert shown["monitoring"]["models"]["fraud"]["window_size"] == 200
    # The defaults are spelled out, the default watches included.
    from driftwatch.core.monitor import DEFAULT_WATCHES

    shown_watches = shown["monitoring"]["defaults"]["watches"]
    assert [w["measure"] for w in shown_watches] == [w.measure for w in DEFAULT_WATCHES]
    monkeypatch.delenv("DRIFTWATCH_CONFIG")
    monkeypatch.delenv("DRIFTWATCH_LIMITS__MAX_MODELS")
    copy = tmp_path / "shown.yaml"
    copy.write_text(out, encoding="utf-8")
    assert load_settings(copy) == load_settings(path).model_copy(
        update={"limits": load_settings(copy).limits}
    )


def test_show_invalid_settings_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "metrics: {prot: 9100}\n")
    assert main(["config", "show", "--config", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "metrics.prot (DRIFTWATCH_METRICS__PROT): unknown key; did you mean 'port'?" in (
        captured.err
    )


# ------------------------------------------------------------------------------------------
# The command line itself


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main([])
    assert caught.value.code == 2
    assert "usage: driftwatch" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from driftwatch.version import __version__, revision

    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out == f"driftwatch {__version__} ({revision()})\n"


def test_a_command_imports_its_own_module_only(tmp_path: Path) -> None:
    """``driftwatch replay`` builds its own parser, not the demo's: the simulator, the demo,
    the figure and the comparisons' statistics are not imported (together a tenth of a short
    replay's start-up), nor PyYAML without a settings file; ``--help`` still lists every
    command."""
    events = tmp_path / "events.jsonl"
    events.write_text('{"label": 1, "score": 0.9}\n{"label": 0, "score": 0.2}\n')
    script = textwrap.dedent(f"""
        import contextlib, io, sys
        from driftwatch.commands.main import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["replay", {str(events)!r}, "--json"]) == 0
        print(sorted(m for m in sys.modules if m.split(".")[:2] in (
            ["driftwatch", "demo"], ["driftwatch", "simulate"], ["driftwatch", "compare"])
            or m in ("driftwatch.replay.plot", "driftwatch.core.comparison", "yaml")))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, check=True)
    assert done.stdout.strip() == "[]"
    listed = subprocess.run([sys.executable, "-m", "driftwatch", "--help"], capture_output=True,
                            text=True, check=True).stdout
    assert all(command in listed for command in
               ("run", "config", "demo", "simulate", "replay", "compare"))


# ------------------------------------------------------------------------------------------
# Typos: a suggestion, under the usage of the command they were made in


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as caught:
        main(list(argv))
    assert caught.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


@pytest.mark.parametrize("argv", [["demo", "--duraton", "5"], ["demo", "--duraton=5"]])
def test_a_mistyped_option_is_answered_with_the_command_usage_and_a_suggestion(
        capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    err = usage_error(capsys, *argv)

    assert err.startswith("usage: driftwatch demo ")  # demo's usage, not the top level's
    assert "--duration SECONDS" in err
    assert err.rstrip().endswith(f"driftwatch demo: error: unrecognized arguments: "
                                 f"{' '.join(argv[1:])}; did you mean --duration?")


def test_every_mistyped_option_gets_its_own_suggestion(
        capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(capsys, "replay", "events.jsonl", "--jsn", "--modle", "a", "--zzzzzz")

    assert err.startswith("usage: driftwatch replay ")
    assert err.rstrip().endswith(
        "unrecognized arguments: --jsn --modle a --zzzzzz; did you mean --json (for --jsn), "
        "--model (for --modle)?")


def test_nothing_close_means_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(capsys, "demo", "--xyzzy")

    assert err.rstrip().endswith("driftwatch demo: error: unrecognized arguments: --xyzzy")


@pytest.mark.parametrize(("argv", "wrong", "usage", "suggestion"), [
    (["replya", "events.jsonl"], "replya", "usage: driftwatch [-h]", "'replay'"),
    (["config", "valdate", "x.yaml"], "valdate", "usage: driftwatch config ", "'validate'"),
    (["demo", "--scenario", "sudden_auc_dorp"], "sudden_auc_dorp", "usage: driftwatch demo ",
     "'sudden_auc_drop'"),
])
def test_a_mistyped_command_or_choice_gets_a_suggestion(
        capsys: pytest.CaptureFixture[str], argv: list[str], wrong: str, usage: str,
        suggestion: str) -> None:
    err = usage_error(capsys, *argv)

    assert err.startswith(usage)
    assert f"invalid choice: {wrong!r}" in err
    assert err.rstrip().endswith(f"; did you mean {suggestion}?")


def test_the_suggestion_leaves_other_messages_alone() -> None:
    from driftwatch.commands.suggest import with_choice_suggestion

    assert with_choice_suggestion("argument --port: not a port: '99999'") == \
        "argument --port: not a port: '99999'"
    assert with_choice_suggestion(
        "argument X: invalid choice: 'qqq' (choose from 'run', 'demo')") == \
        "argument X: invalid choice: 'qqq' (choose from 'run', 'demo')"
