"""The Grafana dashboard's JSON, checked without Grafana or Prometheus.

Its queries are run against a real Prometheus in ``tests/integration/test_dashboard.py``;
here: the structure Grafana needs (datasource variable, ids, layout, refIds), the variables,
that every metric it names is one the exporter exports, and that the panels the issue asks
for are there.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.prometheus.comparison_collector import ComparisonCollector
from driftwatch.sinks.prometheus.join_collector import JoinCollector
from driftwatch.sinks.snapshot import AgentSnapshot

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "helm" / "driftwatch" / "files" / "dashboard.json"
EXAMPLE = ROOT / "examples" / "dashboard.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def exported_metric_names() -> set[str]:
    """The sample names the exporter can produce (from its metric families), without the names
    deprecated until 0.3.0: the dashboard reads the new ones."""
    suffix = {"counter": ("_total",), "info": ("_info",),
              "histogram": ("_bucket", "_sum", "_count")}
    snapshot = SnapshotCollector(lambda: AgentSnapshot.empty(0.0), deprecated=False)
    families = [*snapshot.describe(),
                *ComparisonCollector(lambda: ()).describe(),
                *JoinCollector(lambda: None).describe()]
    return {family.name + end for family in families for end in suffix.get(family.type, ("",))}


def board() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text(encoding="utf-8")))


def panels() -> Iterator[dict[str, Any]]:
    for panel in board()["panels"]:
        yield panel
        yield from panel.get("panels", [])


def query_panels() -> list[dict[str, Any]]:
    return [panel for panel in panels() if panel["type"] != "row"]


def exprs() -> list[str]:
    found = [target["expr"] for panel in query_panels() for target in panel["targets"]]
    found += [a["expr"] for a in board()["annotations"]["list"] if not a.get("builtIn")]
    return found


def variables() -> dict[str, Mapping[str, Any]]:
    return {v["name"]: v for v in board()["templating"]["list"]}


def test_the_example_is_the_chart_file() -> None:
    assert EXAMPLE.resolve() == DASHBOARD.resolve()
    assert EXAMPLE.read_bytes() == DASHBOARD.read_bytes()


def test_dashboard_identity() -> None:
    dashboard = board()
    assert dashboard["uid"] == "driftwatch"
    assert dashboard["title"] == "driftwatch"
    assert 39 <= dashboard["schemaVersion"] < 42
    assert "id" not in dashboard or dashboard["id"] is None, "no instance id: importable"


def test_datasource_is_a_variable_everywhere() -> None:
    datasource = variables()["datasource"]
    assert datasource["type"] == "datasource"
    assert datasource["query"] == "prometheus"
    for panel in query_panels():
        assert panel["datasource"] == DATASOURCE, panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, (panel["title"], target["refId"])
    for annotation in board()["annotations"]["list"]:
        if not annotation.get("builtIn"):
            assert annotation["datasource"] == DATASOURCE, annotation["name"]


def test_model_variable() -> None:
    model = variables()["model"]
    assert model["type"] == "query"
    assert re.fullmatch(r"label_values\(driftwatch_events_processed_total(\{[^}]*\})?, model\)",
                        model["query"]["query"])
    assert model["definition"] == model["query"]["query"]
    assert model["multi"] and model["includeAll"]
    names = list(variables())
    # Grafana resolves variables in order: each may only use earlier ones.
    for i, name in enumerate(names):
        later = names[i:]
        text = json.dumps(variables()[name].get("query"))
        assert not any(f"${other}" in text for other in later), name


def test_ids_layout_and_ref_ids() -> None:
    all_panels = list(panels())
    ids = [panel["id"] for panel in all_panels]
    assert len(ids) == len(set(ids))
    cells: dict[tuple[int, int], str] = {}
    for panel in all_panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["w"] > 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        for cell in itertools.product(range(grid["x"], grid["x"] + grid["w"]),
                                      range(grid["y"], grid["y"] + grid["h"])):
            assert cell not in cells, f"{panel['title']!r} overlaps {cells[cell]!r}"
            cells[cell] = panel["title"]
    for panel in query_panels():
        assert panel["targets"], panel["title"]
        ref_ids = [target["refId"] for target in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), panel["title"]
        assert panel.get("description"), panel["title"]


@pytest.mark.parametrize("expr", exprs())
def test_every_metric_is_exported(expr: str) -> None:
    exported = exported_metric_names()
    for name in re.findall(r"\bdriftwatch_\w+", expr):
        assert name in exported, f"{name} is not a metric the exporter exports"


@pytest.mark.parametrize("expr", exprs())
def test_windows_follow_the_dashboard(expr: str) -> None:
    # Fixed windows break at other scrape intervals and zoom levels: Grafana's variables.
    for window in re.findall(r"\[([^\]]+)\]", expr):
        assert window in {"$__rate_interval", "$__range"}, f"fixed window [{window}]"


def test_the_issue_s_panels_are_there() -> None:
    def panel_with(*fragments: str, kind: str = "timeseries") -> None:
        for panel in query_panels():
            exprs = " ".join(target["expr"] for target in panel["targets"])
            if panel["type"] == kind and all(fragment in exprs for fragment in fragments):
                return
        raise AssertionError(f"no {kind} panel queries {fragments}")

    panel_with('driftwatch_measure{job=~"$job", model=~"$model", measure="auc"}')
    panel_with("driftwatch_measure{", 'measure!="auc"')  # crisp, raw
    panel_with("driftwatch_measure_normalized{")
    panel_with("driftwatch_measure_threshold")
    panel_with('class="positive"', 'class="negative"', " / ")  # class ratio
    panel_with("driftwatch_detector_state{", kind="state-timeline")
    panel_with("rate(driftwatch_events_processed_total{")
    panel_with("sum by (reason) (rate(driftwatch_events_rejected_total{")
    panel_with("driftwatch_consumer_lag_records{")
    panel_with("driftwatch_ready{", kind="state-timeline")
    # Each model against its own alert thresholds (settings: alerts), as the rules compare.
    panel_with('measure="auc"}', "driftwatch_auc_floor_threshold{")
    panel_with("driftwatch_last_processed_timestamp_seconds{",
               "driftwatch_no_events_threshold_seconds{")
    # The false-alarm budget and what it implies at the current traffic (issue 20).
    panel_with("driftwatch_expected_false_alarms_per_month{",
               "driftwatch_false_alarm_budget_seconds{")
    panel_with("driftwatch_block_duration_seconds{")
    panel_with("driftwatch_record_time{", kind="stat")
    annotations = [a for a in board()["annotations"]["list"] if not a.get("builtIn")]
    assert any("driftwatch_alarms_total" in a["expr"] and 'level="drift"' in a["expr"]
               for a in annotations)
