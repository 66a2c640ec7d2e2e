"""``driftwatch demo --prometheus``'s pure parts: the chart's rules with time compressed (every
duration divided by 60, checked duration by duration and by the real promtool) and the alert
states read from Prometheus' API. The demo itself, with a real Prometheus: tests/test_demo.py.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from driftwatch.demo.prometheus import (
    CHART_RULES,
    TIME_SCALE,
    AlertStates,
    compress_expression,
    compress_rules,
    scale_duration,
)
from tests.conftest import require_tool

UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def milliseconds(duration: str) -> int:
    parts = re.findall(r"(\d+)(ms|[smhd])", duration)
    assert "".join(n + u for n, u in parts) == duration, duration
    return sum(int(n) * UNIT_MS[u] for n, u in parts)


def durations(expression: str) -> list[int]:
    """Every duration of an expression, in order: ranges, subquery steps, offsets."""
    found = re.findall(r"\[(\w+)(?::(\w+))?\]|offset\s+(\w+)", expression)
    return [milliseconds(d) for group in found for d in group if d]


def chart_rules() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(CHART_RULES.read_text(encoding="utf-8"))
    return loaded


@pytest.mark.parametrize(("duration", "scaled"), [
    ("5m", "5s"), ("10m", "10s"), ("6h", "6m"), ("1h30m", "90s"), ("90s", "1500ms"),
    ("30s", "500ms"), ("0m", "0s"), ("1d", "24m"), ("1ms", "0s")])
def test_durations_are_divided_by_the_scale(duration: str, scaled: str) -> None:
    assert scale_duration(duration) == scaled
    assert milliseconds(scaled) == milliseconds(duration) // TIME_SCALE


@pytest.mark.parametrize("text", ["", "5", "m", "5 m", "5m ", "-5m", "5min"])
def test_a_bad_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a Prometheus duration"):
        scale_duration(text)


def test_subqueries_and_offsets_are_compressed() -> None:
    assert compress_expression("max_over_time(rate(x[5m])[1h:1m] offset 10m) > 0") == \
        "max_over_time(rate(x[5s])[1m:1s] offset 10s) > 0"
    # Durations outside ranges and offsets (a threshold, a label value) are not durations.
    assert compress_expression('x{window="5m"} > 60') == 'x{window="5m"} > 60'


def test_every_duration_of_the_chart_rules_is_divided_and_nothing_else_changes() -> None:
    original = chart_rules()
    compressed = compress_rules(original)
    pairs = [(a, b) for g, h in zip(original["groups"], compressed["groups"], strict=True)
             for a, b in zip(g["rules"], h["rules"], strict=True)]
    seen = 0
    for before, after in pairs:
        assert set(after) == set(before)
        assert {k: v for k, v in after.items() if k not in ("expr", "for")} == \
            {k: v for k, v in before.items() if k not in ("expr", "for")}
        old, new = durations(before["expr"]), durations(after["expr"])
        assert new == [ms // TIME_SCALE for ms in old], before["expr"]
        assert re.sub(r"\[[^\]]*\]|offset\s+\w+", "", after["expr"]) == \
            re.sub(r"\[[^\]]*\]|offset\s+\w+", "", before["expr"])
        if "for" in before:
            assert milliseconds(after["for"]) == milliseconds(before["for"]) // TIME_SCALE
        seen += len(old)
    assert seen > 20  # the rules have ranges and offsets to compress


def test_the_compressed_rules_pass_promtool(tmp_path: Path) -> None:
    promtool = require_tool("promtool", "Debian package: apt-get install -y prometheus")
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(compress_rules(chart_rules())), encoding="utf-8")
    checked = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True,
                             text=True, timeout=60, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_alert_states_report_each_change_once() -> None:
    states = AlertStates()
    auc = {"alertname": "DriftwatchDriftDetected", "model": "m", "measure": "auc",
           "job": "j", "instance": "i:1", "severity": "warning"}
    fpr = {**auc, "measure": "false_positive_rate"}
    assert [c.describe() for c in states.update([{"labels": auc, "state": "pending"}])] == \
        ["pending  DriftwatchDriftDetected  measure=auc model=m"]
    assert states.update([{"labels": auc, "state": "pending"}]) == []
    changes = states.update([{"labels": auc, "state": "firing"},
                             {"labels": fpr, "state": "firing"}])
    assert [(c.state, dict(c.labels)["measure"]) for c in changes] == \
        [("firing", "auc"), ("firing", "false_positive_rate")]
    changes = states.update([{"labels": fpr, "state": "firing"}])
    assert [(c.state, dict(c.labels)["measure"]) for c in changes] == [("resolved", "auc")]
