"""Every query of the Grafana dashboard, run against a real Prometheus scraping a real agent.

Grafana is not available here, so the dashboard (``helm/driftwatch/files/dashboard.json``) is
checked the way Grafana would use it: its template variables are resolved by running their
``label_values`` queries against Prometheus, each panel query and annotation query gets the
variables substituted as Grafana does (multi-value "All" as the variable's ``allValue`` or a
regex alternation; ``$__interval``, ``$__rate_interval`` and ``$__range`` from the queried
range and the 1 s scrape interval), and is then sent as a range query (or an instant query for
targets marked ``instant``). Every one must parse and return data.

The data comes from the real thing: a Tansu broker, the agent as a subprocess, two models
(one with a sudden AUC drop, so that detector drifts and floor crossings exist and the alarm
annotations have something to show), a few malformed records (rejections by reason), and
the Debian ``prometheus`` binary scraping every second, with the shipped alert rules loaded
(so the rule file also runs in a real server, not only under promtool).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from driftwatch.core.join import Prediction
from driftwatch.decoding.decoder import EventFormat
from driftwatch.decoding.joinable import JoinFormat
from driftwatch.demo.feed import encode_joinable
from driftwatch.simulate import delayed_labels, generate
from tests.broker import Broker
from tests.integration.helpers import (
    PrometheusProcess,
    StartAgent,
    StartPrometheus,
    event_json,
    produce,
    sample_values,
    wait_for,
)

pytestmark = pytest.mark.brokers(
    "tansu", reason="the dashboard's queries against Prometheus;"
                    " the broker only carries the records"
)

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "helm" / "driftwatch" / "files" / "dashboard.json"
RULES = ROOT / "helm" / "driftwatch" / "files" / "alerts.yaml"

JOB = "driftwatch"
DRIFTING, STEADY = "fraud", "churn"
LENGTH, CHANGE_AT = 4000, 2000
SCRAPE_S = 1
RATE_INTERVAL = f"{4 * SCRAPE_S}s"
"""Grafana's $__rate_interval: max($__interval + scrape interval, 4 × scrape interval)."""

# As in test_end_to_end: a 500-event window sampled every 25 events, Page-Hinkley tuned for
# AUC and ADWIN on AUC, plus normalized floors on G-mean and F1 so that adjusted thresholds
# are exported. Offline with seed 11 the drifting model raises a Page-Hinkley drift and both
# floor crossings within 450 events of the change, and nothing before it.
SETTINGS = {
    "events": {"model_source": "field"},
    "monitoring": {
        "defaults": {
            "window_size": 500,
            "sample_every": 25,
            # The AUC panel's estimated line: calibrated on each model's first 1000 labels
            # (the simulated scores are not calibrated probabilities, and an assumed
            # calibration would raise calibration-drift alarms on the steady model).
            "estimation": {"enabled": True, "calibration": "first_n", "first_n": 1000},
            "watches": [
                {
                    "measure": "auc",
                    "detectors": [
                        {"name": "page_hinkley", "params": {"threshold": 1.0, "min_samples": 10}},
                        {"name": "adwin"},
                    ],
                },
                {"measure": "gmean", "normalized": True, "floor": 0.8,
                 "detectors": [{"name": "adwin"}]},
                {"measure": "f1", "normalized": True, "floor": 0.8},
                # Blocks watches with a budgeted CUSUM: the false-alarm budget's panels.
                {"measure": "false_negative_rate", "feed": "blocks",
                 "detectors": [{"name": "cusum"}]},
                {"measure": "false_positive_rate", "feed": "blocks",
                 "detectors": [{"name": "cusum"}]},
            ],
        }
    },
    # Per-model alert thresholds: the drifting model's floor is above its AUC after the drop.
    "alerts": {"defaults": {"auc_floor": 0.5}, "models": {DRIFTING: {"auc_floor": 0.8}}},
}

BAD_RECORDS = [b"not json {", b'{"model": "fraud", "label": 7, "score": 0.5}',
               b'{"model": "churn", "label": 1}']

WAIT_S = 20.0
"""Bound on Prometheus catching up with the agent (one scrape a second)."""


# ------------------------------------------------------------------------------------------
# the dashboard, as Grafana reads it


@dataclass(frozen=True)
class Query:
    where: str  # "panel 7 'AUC' A", "annotation 'Drift alarms'"
    expr: str
    instant: bool


def dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text(encoding="utf-8")))


JOIN_ROW = "Delayed labels"
"""The row whose panels need an agent that joins predictions and labels (settings ``join``):
checked against one in ``test_delayed_labels_panels_return_data``, the rest here."""


def panels(board: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every panel, including those nested in collapsed rows."""
    for panel in board["panels"]:
        yield panel
        yield from panel.get("panels", [])


def queries(board: Mapping[str, Any], join: bool = False) -> list[Query]:
    """The queries of the panels outside the join row, and the annotations; with ``join``,
    those of the join row only."""
    row_of: dict[int, str | None] = {}
    row = None
    for panel in board["panels"]:
        if panel["type"] == "row":
            row = panel["title"]
        for member in [panel, *panel.get("panels", [])]:
            row_of[member["id"]] = row
    found = [
        Query(f"panel {panel['id']} {panel['title']!r} {target['refId']}", target["expr"],
              bool(target.get("instant")) and not target.get("range"))
        for panel in panels(board)
        if (row_of.get(panel["id"]) == JOIN_ROW) == join
        for target in panel.get("targets", [])
    ]
    if not join:
        found += [
            Query(f"annotation {annotation['name']!r}", annotation["expr"], False)
            for annotation in board["annotations"]["list"]
            if not annotation.get("builtIn")
        ]
    return found


def query_variables(board: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [v for v in board["templating"]["list"] if v["type"] == "query"]


def substitute(expr: str, values: Mapping[str, str]) -> str:
    """Grafana's interpolation of ``$name``, ``${name}`` and ``[[name]]``."""
    for name in sorted(values, key=len, reverse=True):
        value = values[name]
        expr = expr.replace(f"${{{name}}}", value).replace(f"[[{name}]]", value)
        # a function as replacement: the value is a regex full of backslashes
        expr = re.sub(rf"\${re.escape(name)}\b", lambda _, v=value: v, expr)
    return expr


def all_value(variable: Mapping[str, Any], options: list[str]) -> str:
    """What Grafana substitutes for "All": ``allValue``, or the options as a regex."""
    if variable.get("allValue"):
        return str(variable["allValue"])
    escaped = [re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", option) for option in options]
    return escaped[0] if len(escaped) == 1 else f"({'|'.join(escaped)})"


LABEL_VALUES = re.compile(r"^label_values\((?:(?P<match>.+),\s*)?(?P<label>\w+)\)$")


def resolve_variables(board: Mapping[str, Any], prometheus: PrometheusProcess,
                      builtins: Mapping[str, str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Run each query variable (in order: later ones may use earlier ones); return the
    values Grafana substitutes when "All" is selected (with ``builtins``), and the options
    of each variable. Every variable must have options."""
    values = dict(builtins)
    options_by_name: dict[str, list[str]] = {}
    for variable in query_variables(board):
        query = variable["query"]
        text = query["query"] if isinstance(query, Mapping) else query
        parsed = LABEL_VALUES.match(substitute(text, values))
        assert parsed, f"variable {variable['name']}: not a label_values() query: {text}"
        params = {}
        if parsed["match"]:
            params["match[]"] = parsed["match"]
        options = sorted(prometheus.api(f"label/{parsed['label']}/values", **params))
        assert options, f"variable {variable['name']}: {text} has no values"
        values[variable["name"]] = all_value(variable, options)
        options_by_name[variable["name"]] = options
    return values, options_by_name


def wait_for_scrapes(prometheus: PrometheusProcess, count: int) -> None:
    """Wait until Prometheus has scraped the agent ``count`` more times (counted in its
    ``up`` samples): a loaded runner may scrape late, and a rate() needs two samples in its
    window."""

    def scrapes() -> int:
        result = prometheus.query(f'count_over_time(up{{job="{JOB}"}}[1h])')
        return int(float(result[0]["value"][1])) if result else 0

    target = scrapes() + count
    wait_for(lambda: scrapes() >= target, WAIT_S, f"{count} more scrapes of the agent",
             diagnostics=prometheus.log)


# ------------------------------------------------------------------------------------------
# the test


def test_every_dashboard_query_returns_data_from_a_real_agent(
    broker: Broker, topic: str, start_agent: StartAgent, start_prometheus: StartPrometheus
) -> None:
    board = dashboard()
    started = time.time()
    agent = start_agent(JOB, SETTINGS)
    prometheus = start_prometheus(
        {
            "global": {"scrape_interval": f"{SCRAPE_S}s", "scrape_timeout": f"{SCRAPE_S}s",
                       "evaluation_interval": f"{SCRAPE_S}s"},
            "scrape_configs": [
                {"job_name": JOB,
                 "static_configs": [{"targets": [f"127.0.0.1:{agent.port}"]}]},
            ],
        },
        yaml.safe_load(RULES.read_text(encoding="utf-8")),
    )
    start_ts = started - LENGTH / 100  # event times in the recent past, 100 events/s
    streams = {
        DRIFTING: list(generate("sudden_auc_drop", seed=11, length=LENGTH, auc=0.95, drop=0.3,
                                change_at=CHANGE_AT, rate=100.0, start_ts=start_ts)),
        STEADY: list(generate("stationary", seed=12, length=LENGTH, rate=100.0,
                              start_ts=start_ts)),
    }

    def half(part: slice) -> list[bytes | None]:
        return [event_json(event, model) for model, events in streams.items()
                for event in events[part]]

    # The good concept first, and Prometheus sees it, so that the alarm counters are scraped
    # at 0 before they move: the alarm annotations look for increases.
    produce(broker.bootstrap, topic, half(slice(0, CHANGE_AT)))
    agent.wait_processed(2 * CHANGE_AT)

    def scraped(expr: str, expected: float) -> bool:
        values = sample_values(prometheus.query(expr))
        return set(values) == {DRIFTING, STEADY} and set(values.values()) == {expected}

    wait_for(lambda: scraped("driftwatch_events_processed_total", CHANGE_AT), WAIT_S,
             "Prometheus to scrape the first half", diagnostics=prometheus.log)
    assert scraped('sum by (model) (driftwatch_alarms_total{level="drift"})', 0)

    # The drop, and a few malformed records among it.
    produce(broker.bootstrap, topic, [*BAD_RECORDS, *half(slice(CHANGE_AT, LENGTH))])
    metrics = agent.wait_processed(2 * LENGTH)
    assert metrics.total("driftwatch_alarms_total", model=DRIFTING, level="drift") >= 1
    assert metrics.total("driftwatch_alarms_total", model=DRIFTING, level="threshold") >= 1
    assert metrics.total("driftwatch_events_rejected_total") == len(BAD_RECORDS)
    assert metrics.series("driftwatch_consumer_lag_records"), "lag is exported"

    def caught_up() -> bool:
        return (scraped("driftwatch_events_processed_total", LENGTH)
                and bool(prometheus.query('driftwatch_alarms_total{level="threshold"} > 0'))
                and bool(prometheus.query('driftwatch_alarms_total{level="drift"} > 0'))
                and bool(prometheus.query("sum(driftwatch_events_rejected_total) > 0")))

    wait_for(caught_up, WAIT_S, "Prometheus to scrape the drop and the rejections",
             diagnostics=prometheus.log)
    # A few more scrapes, so that every rate() over $__rate_interval (4 s) at the end of the
    # range has the two samples it needs.
    wait_for_scrapes(prometheus, 3)

    end = time.time()
    span = max(int(end - started) + 1, 1)
    builtins = {"__interval": f"{SCRAPE_S}s", "__interval_ms": str(SCRAPE_S * 1000),
                "__rate_interval": RATE_INTERVAL, "__range": f"{span}s",
                "__range_s": str(span), "__range_ms": str(span * 1000)}
    variables, options = resolve_variables(board, prometheus, builtins)
    assert options["job"] == [JOB]
    assert options["model"] == sorted([DRIFTING, STEADY])
    assert "auc" not in options["measure"] and {"gmean", "f1", "kappa"} <= set(options["measure"])

    all_queries = queries(board)
    assert len(all_queries) >= 20
    # "All" (what the dashboard opens with), and one model picked in the model variable.
    selections = {"all models": variables, f"model {DRIFTING}": {**variables,
                                                                 "model": DRIFTING}}
    failures = []
    for selection, values in selections.items():
        for query in all_queries:
            expr = substitute(query.expr, values)
            assert "$" not in expr and "[[" not in expr, f"{query.where}: unresolved: {expr}"
            try:  # api() asserts HTTP 200 and status "success": the query parsed and ran
                if query.instant:
                    data = prometheus.api("query", query=expr, time=str(end))
                else:
                    data = prometheus.api("query_range", query=expr, start=str(started),
                                          end=str(end), step=f"{SCRAPE_S}s")
            except AssertionError as error:
                failures.append(f"{selection}, {query.where}: {expr}\n    {error}")
                continue
            if not data["result"]:
                failures.append(f"{selection}, {query.where}: no data for {expr}")
    assert not failures, "\n".join(failures)

    # The shipped rules ran in the real server: the recording rules have data and the
    # detector's drift fired its alert for the drifting model only.
    assert sample_values(prometheus.query("driftwatch:up")) == {"": 1.0}
    assert prometheus.query("driftwatch:records_consumed:rate10m")
    assert {(a["labels"]["alertname"], a["labels"]["model"]) for a in prometheus.alerts()
            if a["labels"]["alertname"] == "DriftwatchDriftDetected"} == {
        ("DriftwatchDriftDetected", DRIFTING)}
    # The per-model thresholds reach Prometheus with the measures' labels, so the rules'
    # joins work on real series: only the drifting model is below its own floor, and both
    # models had events within the default no-events tolerance.
    assert sample_values(prometheus.query("driftwatch_auc_floor_threshold")) == {DRIFTING: 0.8,
                                                                       STEADY: 0.5}
    below = prometheus.query(
        'driftwatch_measure{measure="auc"} < ignoring (measure) driftwatch_auc_floor_threshold')
    assert set(sample_values(below)) == {DRIFTING}
    silent = sample_values(prometheus.query(
        "time() - max without (instance) (driftwatch_last_processed_timestamp_seconds)"))
    assert set(silent) == {DRIFTING, STEADY}
    assert all(0 <= seconds < 1200 for seconds in silent.values())


def test_delayed_labels_panels_return_data(
    broker: Broker, topic: str, start_agent: StartAgent, start_prometheus: StartPrometheus
) -> None:
    """The "Delayed labels" row against an agent that joins predictions and labels (one topic,
    kind field) and watches the scores without labels: every query returns data."""
    board = dashboard()
    started = time.time()
    settings = {"join": {"enabled": True, "kind_field": "kind",
                         "score_drift": {"window": 200, "block_size": 100,
                                         "reference_size": 1000, "arl": 100}},
                "events": {"model_source": "field"}}
    agent = start_agent(JOB, settings)
    prometheus = start_prometheus(
        {"global": {"scrape_interval": f"{SCRAPE_S}s", "scrape_timeout": f"{SCRAPE_S}s",
                    "evaluation_interval": f"{SCRAPE_S}s"},
         "scrape_configs": [{"job_name": JOB,
                             "static_configs": [{"targets": [f"127.0.0.1:{agent.port}"]}]}]},
        yaml.safe_load(RULES.read_text(encoding="utf-8")),
    )
    fmt, join = EventFormat(), JoinFormat(kind_field="kind")
    start_ts = started - LENGTH / 100
    records = list(delayed_labels(
        generate("sudden_auc_drop", seed=11, length=LENGTH, auc=0.95, drop=0.3,
                 change_at=CHANGE_AT, rate=100.0, start_ts=start_ts),
        seed=3, model=DRIFTING, mean_delay=20.0, unlabelled=0.1))
    # Two halves with scrapes between, so that rates over the interval have data.
    half = len(records) // 2
    for part in (records[:half], records[half:]):
        produce(broker.bootstrap, topic, [encode_joinable(r, fmt, join)[1] for r in part])
        predictions = sum(isinstance(r, Prediction) for r in part)
        agent.wait_metrics(lambda m, n=predictions: m.total(
            "driftwatch_join_predictions_total") >= n, "predictions read")
        wait_for_scrapes(prometheus, 4)
    wait_for(lambda: bool(prometheus.query("driftwatch_score_drift_z")), WAIT_S,
             "Prometheus to scrape the label-free signals", diagnostics=prometheus.log)
    end = time.time()
    span = max(int(end - started) + 1, 1)
    builtins = {"__interval": f"{SCRAPE_S}s", "__interval_ms": str(SCRAPE_S * 1000),
                "__rate_interval": "30s", "__range": f"{span}s",
                "__range_s": str(span), "__range_ms": str(span * 1000)}
    variables, _ = resolve_variables(board, prometheus, builtins)
    failures = []
    for query in queries(board, join=True):
        expr = substitute(query.expr, variables)
        data = prometheus.api("query_range", query=expr, start=str(started), end=str(end),
                              step=f"{SCRAPE_S}s")
        if not data["result"]:
            failures.append(f"{query.where}: no data for {expr}")
    assert not failures, "\n".join(failures)
