"""The Prometheus rules shipped with driftwatch: checked and unit-tested by the real promtool.

``helm/driftwatch/files/alerts.yaml`` is the single source (the chart renders it into a
PrometheusRule, ``examples/alerts.yaml`` links to it); ``tests/promtool/alerts_test.yaml``
holds the ``promtool test rules`` cases. Besides running promtool, these tests check that the
cases cover every alert both ways (firing and not firing), that every alert carries what an
on-call engineer needs (``for:``, a severity, summary, description, a ``runbook_url`` to its
section of ``docs/runbook.md`` and a ``dashboard_url``), that model thresholds come from the
exported per-model threshold gauges rather than constants, and that the promtool suite
notices when a rule is changed.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from tests.test_dashboard_json import exported_metric_names

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "helm" / "driftwatch" / "files" / "alerts.yaml"
EXAMPLE_RULES = ROOT / "examples" / "alerts.yaml"
PROMTOOL_TESTS = ROOT / "tests" / "promtool" / "alerts_test.yaml"
RUNBOOK = ROOT / "docs" / "runbook.md"
RUNBOOK_URL = "https://github.com/driftwatch/driftwatch/blob/main/docs/runbook.md#"
DASHBOARD_PATH = "/d/driftwatch/driftwatch?var-job={{ $labels.job }}"
NOT_YET_EXPORTED: set[str] = set()
"""Gauges the rules read that the exporter does not export yet (none: every metric a rule
reads must exist)."""
SEVERITIES = {"critical", "warning", "info"}
PROMTOOL_REASON = "Debian package: apt-get install -y prometheus (ships promtool)"

RequireTool = Callable[[str, str], str]


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def rules() -> list[dict[str, Any]]:
    return [rule for group in load(RULES)["groups"] for rule in group["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def promtool(binary: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60,
                          cwd=cwd, check=False)


def test_promtool_check_rules(require_tool: RequireTool) -> None:
    binary = require_tool("promtool", PROMTOOL_REASON)
    result = promtool(binary, "check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules())} rules found" in result.stdout


def test_promtool_test_rules(require_tool: RequireTool) -> None:
    binary = require_tool("promtool", PROMTOOL_REASON)
    result = promtool(binary, "test", "rules", PROMTOOL_TESTS.name, cwd=PROMTOOL_TESTS.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_example_is_the_chart_file() -> None:
    # A symlink, so there is nothing to keep in sync; this catches a checkout that turned it
    # into a stale copy (core.symlinks=false) or a link that points elsewhere.
    assert EXAMPLE_RULES.resolve() == RULES.resolve()
    assert EXAMPLE_RULES.read_bytes() == RULES.read_bytes()


def test_the_issue_s_alerts_are_all_there() -> None:
    names = {rule["alert"] for rule in alerts()}
    assert {
        "DriftwatchAucBelowFloor", "DriftwatchAucSignificantlyBelowFloor",
        "DriftwatchAucDropped", "DriftwatchDriftDetected",
        "DriftwatchMeasureBelowAdjustedThreshold", "DriftwatchNoEvents",
        "DriftwatchBatchEventsOverdue", "DriftwatchModelDisappeared",
        "DriftwatchRejectedEvents", "DriftwatchAgentDown", "DriftwatchAgentNotReady",
        "DriftwatchConsumerLagGrowing",
    } <= names
    exprs = {rule["alert"]: " ".join(rule["expr"].split()) for rule in alerts()}
    # Per-model thresholds from the exported gauges, not constants in the rules.
    per_model = "max without (instance, pod) "
    assert f"< ignoring (measure) {per_model}(driftwatch_auc_floor_threshold)" in exprs[
        "DriftwatchAucBelowFloor"]
    assert f"< {per_model}(driftwatch_auc_floor_threshold)" in exprs[
        "DriftwatchAucSignificantlyBelowFloor"]
    assert "driftwatch_auc_standard_error" in exprs["DriftwatchAucSignificantlyBelowFloor"]
    assert f"> ignoring (measure) {per_model}(driftwatch_auc_max_drop_threshold)" in exprs[
        "DriftwatchAucDropped"]
    for name in ("DriftwatchNoEvents", "DriftwatchBatchEventsOverdue"):
        assert "(driftwatch_no_events_threshold_seconds)" in exprs[name]
        assert "(driftwatch_batch_labels_enabled) == 1" in exprs[name]
    for name in ("DriftwatchAucBelowFloor", "DriftwatchAucSignificantlyBelowFloor",
                 "DriftwatchAucDropped", "DriftwatchNoEvents"):
        assert not re.search(r"[<>] *0\.\d", exprs[name]), f"{name} compares with a constant"
    assert "driftwatch_measure - driftwatch_measure_threshold" in " ".join(
        rule["expr"] for rule in rules() if "record" in rule)
    assert f'{per_model}(increase(driftwatch_alarms_total{{level="drift"}}[10m])) > 0' in exprs[
        "DriftwatchDriftDetected"]
    # One alert per model, however many agents (sidecar replicas) export it.
    for name in ("DriftwatchAucBelowFloor", "DriftwatchAucSignificantlyBelowFloor",
                 "DriftwatchAucDropped", "DriftwatchDriftDetected",
                 "DriftwatchMeasureBelowAdjustedThreshold", "DriftwatchChallengerBetter",
                 "DriftwatchChallengerWorse", "DriftwatchScoreDrift"):
        assert exprs[name].startswith(("max without (instance, pod)", "(")), name
    assert exprs["DriftwatchAgentNotReady"] == "driftwatch_ready == 0"


def test_every_metric_is_exported() -> None:
    exported = exported_metric_names()
    recorded = {rule["record"] for rule in rules() if "record" in rule}
    for rule in rules():
        for name in re.findall(r"\bdriftwatch[_:][\w:]+", rule["expr"]):
            assert name in exported | recorded | NOT_YET_EXPORTED, \
                f"{name} is neither exported nor recorded"


@pytest.mark.parametrize("alert", alerts(), ids=lambda rule: rule["alert"])
def test_every_alert_is_actionable(alert: dict[str, Any]) -> None:
    assert re.fullmatch(r"Driftwatch[A-Z][A-Za-z]+", alert["alert"])
    assert "for" in alert, "an explicit for: (0m when the expression already debounces)"
    assert alert["labels"]["severity"] in SEVERITIES
    annotations = alert["annotations"]
    assert set(annotations) == {"summary", "description", "runbook_url", "dashboard_url"}
    assert annotations["runbook_url"] == RUNBOOK_URL + alert["alert"].lower()
    assert annotations["dashboard_url"].startswith(DASHBOARD_PATH)
    # The labels that say what is wrong (model, measure, detector, reason, topic...) are
    # named in the text; the promtool cases show which labels the alert's series keep.
    text = annotations["summary"] + annotations["description"]
    kept = {label for case in _alert_cases().get(alert["alert"], [])
            for expected in case.get("exp_alerts") or [] for label in expected["exp_labels"]}
    pinned = set(re.findall(r'(\w+)="', alert["expr"]))  # e.g. measure="auc": no news
    targets = {"job", "instance", "pod", "namespace", "container"}  # where, not what
    for label in kept - pinned - targets - {"severity"}:
        assert f"$labels.{label}" in text, f"the text does not name the {label}"
    # The dashboard opens on the alert's model when the alert has one.
    assert ("model" in kept) == ("&var-model={{ $labels.model }}" in annotations["dashboard_url"])


def _seconds(duration: str) -> int:
    units = {"ms": 0, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    return sum(int(n) * units[unit] for n, unit in re.findall(r"(\d+)(ms|[smhdwy])", duration))


@pytest.mark.parametrize("alert", alerts(), ids=lambda rule: rule["alert"])
def test_a_stated_hold_includes_the_for(alert: dict[str, Any]) -> None:
    """A description says at most once how long its condition has held, in the form the chart
    moves with a tuned ``for:`` ("for N minutes", the look-back plus ``for:``); an alert held
    for minutes or more says it."""
    stated = re.findall(r"[Ff]or (\d+) minutes?", alert["annotations"]["description"])
    assert len(stated) <= 1, stated
    if stated:
        assert int(stated[0]) * 60 >= _seconds(alert["for"])
    else:
        assert _seconds(alert["for"]) < 600, "a hold of 10 minutes or more is stated"


def _alert_cases() -> dict[str, list[dict[str, Any]]]:
    cases: dict[str, list[dict[str, Any]]] = {}
    for test in load(PROMTOOL_TESTS)["tests"]:
        assert test.get("input_series"), f"test {test['name']!r} has no input series"
        for case in test.get("alert_rule_test", []):
            cases.setdefault(case["alertname"], []).append(case)
    return cases


def _runbook_sections() -> dict[str, str]:
    text = RUNBOOK.read_text(encoding="utf-8")
    parts = re.split(r"^## (\S+)\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.parametrize("alert", alerts(), ids=lambda rule: rule["alert"])
def test_every_alert_has_a_runbook_section(alert: dict[str, Any]) -> None:
    # GitHub's anchor for "## DriftwatchNoEvents" is #driftwatchnoevents: runbook_url's.
    section = _runbook_sections().get(alert["alert"])
    assert section, f"docs/runbook.md has no section ## {alert['alert']}"
    for part in ("**What it means.**", "**How to check.**", "**What to do.**"):
        assert part in section, f"{alert['alert']}: no {part}"


def test_the_runbook_has_no_section_without_an_alert() -> None:
    assert set(_runbook_sections()) == {rule["alert"] for rule in alerts()}


@pytest.mark.parametrize("alert", alerts(), ids=lambda rule: rule["alert"])
def test_every_alert_is_tested_firing_and_not_firing(alert: dict[str, Any]) -> None:
    cases = _alert_cases().get(alert["alert"], [])
    assert any(case.get("exp_alerts") for case in cases), "no firing case"
    assert any(not case.get("exp_alerts") for case in cases), "no not-firing case"
    for case in cases:
        for expected in case.get("exp_alerts") or []:
            assert expected["exp_labels"]["severity"] == alert["labels"]["severity"]
            assert set(expected["exp_annotations"]) == set(alert["annotations"])


# Each a plausible edit that changes what the rules do; the promtool cases must notice.
MUTATIONS = {
    "one floor for all models": (
        "< ignoring (measure)\n"
        "          max without (instance, pod) (driftwatch_auc_floor_threshold)",
        "< 0.70"),
    "instant auc instead of max_over_time": (
        'max_over_time(driftwatch_measure{measure="auc"}[5m]))\n            < ignoring',
        'driftwatch_measure{measure="auc"})\n            < ignoring',
    ),
    "auc floor per replica": (
        'max without (instance, pod) (max_over_time(driftwatch_measure{measure="auc"}[5m]))\n'
        '            < ignoring (measure)\n'
        '          max without (instance, pod) (driftwatch_auc_floor_threshold)',
        'max_over_time(driftwatch_measure{measure="auc"}[5m])\n'
        '            < ignoring (measure)\n'
        '          driftwatch_auc_floor_threshold'),
    "auc floor when any replica is below": (
        'max without (instance, pod) (max_over_time(driftwatch_measure{measure="auc"}[5m]))\n'
        '            < ignoring (measure)',
        'min without (instance, pod) (max_over_time(driftwatch_measure{measure="auc"}[5m]))\n'
        '            < ignoring (measure)'),
    "drift per replica": (
        'max without (instance, pod) (increase(driftwatch_alarms_total{level="drift"}[10m]))',
        'increase(driftwatch_alarms_total{level="drift"}[10m])'),
    "floor without the standard error": ("1.645 * max without", "0 * max without"),
    "instant standard error": ("max_over_time(driftwatch_auc_standard_error[5m])",
                               "driftwatch_auc_standard_error"),
    "baseline without offset": ("[6h] offset 10m)\n            )\n", "[6h])\n            )\n"),
    "one allowed drop for all models": (
        "> ignoring (measure) max without (instance, pod) (driftwatch_auc_max_drop_threshold)",
        "> 0.05"),
    "drift alarms including warnings": ('{level="drift"}', '{level=~"drift|warning"}'),
    "no events per replica": (
        "max without (instance, pod) (driftwatch_last_processed_timestamp_seconds)",
        "min without (instance, pod) (driftwatch_last_processed_timestamp_seconds)"),
    "one tolerance for all models": (
        "> max without (instance, pod) (driftwatch_no_events_threshold_seconds)", "> 1200"),
    "batch models page": ("unless\n          max without (instance, pod) "
                          "(driftwatch_batch_labels_enabled) == 1",
                          "unless\n          max without (instance, pod) "
                          "(driftwatch_batch_labels_enabled) == 2"),
    "rejections without idle agents": (" * 0\n          )\n            +",
                                       " * 1\n          )\n            +"),
    "rejections among the watched models only": (
        "sum without (reason) (rate(driftwatch_events_skipped_total[10m]))",
        "0 * sum without (reason) (rate(driftwatch_events_skipped_total[10m]))"),
    "lag that is merely high": ("deriv(driftwatch_consumer_lag_records[15m]) > 0",
                                "deriv(driftwatch_consumer_lag_records[15m]) > -1"),
    "no labels even without predictions": (
        "sum by (job) (increase(driftwatch_join_predictions_total[1h])) > 0",
        "sum by (job) (increase(driftwatch_join_predictions_total[1h])) >= 0"),
    "labels stopped after a short gap": ("(increase(driftwatch_join_labels_total[1h])) == 0",
                                         "(increase(driftwatch_join_labels_total[5m])) == 0"),
    "record time judged on the timed models": ("(driftwatch_record_time) == 0",
                                                 "(driftwatch_record_time) >= 0"),
    "score drift that never resolves": ("increase(driftwatch_score_drift_alarms_total[10m])",
                                        "increase(driftwatch_score_drift_alarms_total[1h])"),
}


@pytest.mark.parametrize("mutation", MUTATIONS.values(), ids=list(MUTATIONS))
def test_the_promtool_cases_catch_a_changed_rule(
    require_tool: RequireTool, tmp_path: Path, mutation: tuple[str, str]
) -> None:
    binary = require_tool("promtool", PROMTOOL_REASON)
    before, after = mutation
    text = RULES.read_text(encoding="utf-8")
    assert before in text
    mutated = tmp_path / "alerts.yaml"
    mutated.write_text(text.replace(before, after), encoding="utf-8")
    tests = PROMTOOL_TESTS.read_text(encoding="utf-8")
    original = "../../helm/driftwatch/files/alerts.yaml"
    assert original in tests
    (tmp_path / "alerts_test.yaml").write_text(tests.replace(original, str(mutated)),
                                               encoding="utf-8")
    assert promtool(binary, "check", "rules", str(mutated)).returncode == 0, "still valid"
    result = promtool(binary, "test", "rules", "alerts_test.yaml", cwd=tmp_path)
    assert result.returncode != 0, f"the promtool cases did not notice {before!r} → {after!r}"
    assert "FAILED" in result.stdout + result.stderr
