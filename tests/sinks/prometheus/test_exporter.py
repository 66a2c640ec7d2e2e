"""The Prometheus collector and the metrics HTTP server
(driftwatch.sinks.prometheus.collector, .server)."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import http.client
import importlib
import importlib.util
import math
import os
import random
import re
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics import exposition as om_exposition
from prometheus_client.openmetrics import parser as om_parser
from prometheus_client.parser import text_string_to_metric_families

from driftwatch.core.events import Event
from driftwatch.core.monitor import DetectorSpec, Monitor, MonitorConfig, Snapshot, Watch
from driftwatch.settings import AlertsSettings
from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.prometheus.server import MetricsServer
from driftwatch.sinks.snapshot import AgentSnapshot, LatencyHistogram, Operations
from driftwatch.version import __version__, revision

NAN = math.nan
T0 = 1_700_000_000.0

FRAUD = Snapshot(
    model="fraud",
    events=1500,
    positives=100,
    negatives=900,
    values={"auc": 0.91, "gmean": 0.8, "precision": 0.75, "kappa": -0.05},
    normalized={"gmean": 0.93, "precision": 0.6},
    thresholds={"gmean": 0.71},
    detector_states={
        ("auc", "page_hinkley"): "stable",
        ("auc", "adwin"): "drift",
        ("gmean", "page_hinkley"): "warning",
    },
    alarms={
        ("auc", "adwin", "drift"): 2,
        ("gmean", "page_hinkley", "warning"): 1,
        ("gmean", "threshold", "threshold"): 1,
    },
    last_event_time=T0 + 12.5,
    last_alarm_time=T0 + 3.25,
    auc_standard_error=0.0125,
)

# A window with no positive yet: AUC and precision are undefined, the threshold not sampled.
CHURN = Snapshot(
    model="churn",
    events=40,
    positives=0,
    negatives=40,
    values={"auc": NAN, "gmean": 0.0, "precision": NAN, "kappa": 0.0},
    normalized={"gmean": NAN, "precision": NAN},
    thresholds={"gmean": NAN},
    detector_states={("auc", "page_hinkley"): "stable"},
    alarms={},
    last_event_time=None,
    last_alarm_time=None,
)

AGENT = AgentSnapshot(
    monitors=(FRAUD, CHURN),
    rejected={"invalid_json": 3, "too_many_models": 2, "missing_field": 0},
    skipped={"unwatched_model": 7},
    consumer_lag={("events", 0): 5, ("events", 1): 0},
    ready=True,
    started_time=T0,
    last_processed={"fraud": T0 + 60.0, "churn": T0},
    operations=Operations(consumer_group="scoring",
                          lag_seconds={("events", 0): 2.5, ("events", 1): 0.0}),
)

ALERTS = AlertsSettings(
    defaults={"auc_floor": 0.75, "no_events_seconds": 600},
    models={"churn": {"auc_floor": 0.6, "batch_labels": True, "no_events_seconds": 90_000},
            "absent": {"auc_floor": 0.9}},
)

EXPECTED_FAMILIES = {
    # name as exposed in the text format: (type, label names)
    "driftwatch_events_processed_total": ("counter", {"model"}),
    "driftwatch_events_rejected_total": ("counter", {"reason"}),
    "driftwatch_events_skipped_total": ("counter", {"reason"}),
    "driftwatch_measure": ("gauge", {"model", "measure"}),
    "driftwatch_measure_normalized": ("gauge", {"model", "measure"}),
    "driftwatch_measure_threshold": ("gauge", {"model", "measure"}),
    "driftwatch_auc_standard_error": ("gauge", {"model"}),
    "driftwatch_window_events": ("gauge", {"model", "class"}),
    "driftwatch_detector_state": ("gauge", {"model", "measure", "detector"}),
    "driftwatch_alarms_total": ("counter", {"model", "measure", "detector", "level"}),
    "driftwatch_false_alarm_budget_seconds": ("gauge", {"model"}),
    "driftwatch_expected_false_alarms_per_month": ("gauge", {"model"}),
    "driftwatch_block_duration_seconds": ("gauge", {"model"}),
    "driftwatch_record_time": ("gauge", {"model"}),
    "driftwatch_min_effect": ("gauge", {"model", "measure"}),
    "driftwatch_measure_estimated": ("gauge", {"model", "measure"}),
    "driftwatch_measure_estimated_standard_error": ("gauge", {"model", "measure"}),
    "driftwatch_estimate_trusted": ("gauge", {"model"}),
    "driftwatch_estimate_calibration_error": ("gauge", {"model", "statistic"}),
    "driftwatch_estimate_check_z": ("gauge", {"model"}),
    "driftwatch_estimate_skipped_total": ("counter", {"model"}),
    "driftwatch_last_event_timestamp_seconds": ("gauge", {"model"}),
    "driftwatch_last_alarm_timestamp_seconds": ("gauge", {"model"}),
    "driftwatch_last_processed_timestamp_seconds": ("gauge", {"model"}),
    "driftwatch_auc_floor_threshold": ("gauge", {"model"}),
    "driftwatch_auc_max_drop_threshold": ("gauge", {"model"}),
    "driftwatch_no_events_threshold_seconds": ("gauge", {"model"}),
    "driftwatch_batch_labels_enabled": ("gauge", {"model"}),
    "driftwatch_consumer_lag_records": ("gauge", {"topic", "partition", "group"}),
    "driftwatch_consumer_lag_seconds": ("gauge", {"topic", "partition", "group"}),
    "driftwatch_ready": ("gauge", set()),
    "driftwatch_not_ready": ("gauge", {"reason"}),
    "driftwatch_checkpoint_saves_total": ("counter", set()),
    "driftwatch_checkpoint_save_failures_total": ("counter", set()),
    "driftwatch_checkpoint_last_success_timestamp_seconds": ("gauge", set()),
    "driftwatch_checkpoint_save_duration_seconds": ("gauge", set()),
    "driftwatch_commits_total": ("counter", set()),
    "driftwatch_commit_failures_total": ("counter", set()),
    "driftwatch_dead_letter_failures_total": ("counter", set()),
    "driftwatch_alarm_publish_failures_total": ("counter", set()),
    "driftwatch_broker_reconnects_total": ("counter", set()),
    "driftwatch_offset_resets_total": ("counter", {"topic", "partition", "reason"}),
    "driftwatch_batch_processing_seconds": ("histogram", set()),
    "driftwatch_loop_pause_seconds": ("histogram", set()),
    "driftwatch_state_split_models": ("gauge", set()),
    "driftwatch_state_partitions_restoring": ("gauge", set()),
    "driftwatch_state_restore_seconds_per_partition": ("gauge", set()),
    "driftwatch_snapshot_refresh_seconds": ("gauge", set()),
    "driftwatch_build_info": ("gauge", {"version", "revision"}),
    "driftwatch_scrape_dropped_series_total": ("counter", set()),
}


OPERATIONS_FAMILIES = {
    name.removesuffix("_total") for name in EXPECTED_FAMILIES
    if name.startswith(("driftwatch_checkpoint", "driftwatch_commit", "driftwatch_dead_letter",
                        "driftwatch_alarm_publish", "driftwatch_broker", "driftwatch_offset",
                        "driftwatch_batch", "driftwatch_loop", "driftwatch_not_ready",
                        "driftwatch_consumer_lag_seconds"))
}


def registry_for(agent: AgentSnapshot) -> CollectorRegistry:
    """The collector without the names deprecated until 0.3.0 (test_deprecated.py has them)."""
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: agent, ALERTS.thresholds, deprecated=False))
    return registry


@pytest.fixture
def registry() -> CollectorRegistry:
    return registry_for(AGENT)


# ------------------------------------------------------------------------------------------------
# Collector


def test_processed_and_rejected_counters(registry: CollectorRegistry) -> None:
    value = registry.get_sample_value
    assert value("driftwatch_events_processed_total", {"model": "fraud"}) == 1500
    assert value("driftwatch_events_processed_total", {"model": "churn"}) == 40
    assert value("driftwatch_events_rejected_total", {"reason": "invalid_json"}) == 3
    assert value("driftwatch_events_rejected_total", {"reason": "too_many_models"}) == 2
    assert value("driftwatch_events_rejected_total", {"reason": "missing_field"}) == 0
    assert value("driftwatch_events_skipped_total", {"reason": "unwatched_model"}) == 7
    assert value("driftwatch_events_rejected_total", {"reason": "unwatched_model"}) is None


def test_measures_normalized_and_thresholds(registry: CollectorRegistry) -> None:
    value = registry.get_sample_value
    for measure, raw in FRAUD.values.items():
        assert value("driftwatch_measure", {"model": "fraud", "measure": measure}) == raw
    assert value("driftwatch_measure_normalized", {"model": "fraud", "measure": "gmean"}) == 0.93
    assert value("driftwatch_measure_normalized", {"model": "fraud", "measure": "precision"}) == 0.6
    assert value("driftwatch_measure_threshold", {"model": "fraud", "measure": "gmean"}) == 0.71
    assert value("driftwatch_auc_standard_error", {"model": "fraud"}) == 0.0125
    assert value("driftwatch_auc_standard_error", {"model": "churn"}) is None  # NaN: omitted
    # Only floored measures have a threshold.
    assert value("driftwatch_measure_threshold", {"model": "fraud", "measure": "auc"}) is None
    assert value("driftwatch_measure", {"model": "churn", "measure": "gmean"}) == 0.0
    assert value("driftwatch_measure", {"model": "churn", "measure": "kappa"}) == 0.0


def test_undefined_values_are_omitted_not_nan(registry: CollectorRegistry) -> None:
    value = registry.get_sample_value
    assert value("driftwatch_measure", {"model": "churn", "measure": "auc"}) is None
    assert value("driftwatch_measure", {"model": "churn", "measure": "precision"}) is None
    assert value("driftwatch_measure_normalized", {"model": "churn", "measure": "gmean"}) is None
    assert value("driftwatch_measure_threshold", {"model": "churn", "measure": "gmean"}) is None
    assert b"NaN" not in generate_latest(registry)
    # The explanation stays visible: the window holds no positive.
    assert value("driftwatch_window_events", {"model": "churn", "class": "positive"}) == 0


def test_window_class_counts(registry: CollectorRegistry) -> None:
    value = registry.get_sample_value
    assert value("driftwatch_window_events", {"model": "fraud", "class": "positive"}) == 100
    assert value("driftwatch_window_events", {"model": "fraud", "class": "negative"}) == 900
    assert value("driftwatch_window_events", {"model": "churn", "class": "negative"}) == 40


def test_detector_state_is_an_ordinal_gauge(registry: CollectorRegistry) -> None:
    def state(model: str, measure: str, detector: str) -> float | None:
        return registry.get_sample_value(
            "driftwatch_detector_state", {"model": model, "measure": measure, "detector": detector}
        )

    assert state("fraud", "auc", "page_hinkley") == 0
    assert state("fraud", "gmean", "page_hinkley") == 1
    assert state("fraud", "auc", "adwin") == 2
    assert state("churn", "auc", "page_hinkley") == 0


def test_alarm_counters_exist_at_zero_before_the_first_alarm(registry: CollectorRegistry) -> None:
    def alarms(model: str, measure: str, detector: str, level: str) -> float | None:
        return registry.get_sample_value(
            "driftwatch_alarms_total",
            {"model": model, "measure": measure, "detector": detector, "level": level},
        )

    assert alarms("fraud", "auc", "adwin", "drift") == 2
    assert alarms("fraud", "gmean", "page_hinkley", "warning") == 1
    assert alarms("fraud", "gmean", "threshold", "threshold") == 1
    # Not fired yet, but present, so increase() sees the first one.
    assert alarms("fraud", "auc", "adwin", "warning") == 0
    assert alarms("fraud", "auc", "page_hinkley", "drift") == 0
    assert alarms("churn", "auc", "page_hinkley", "drift") == 0
    assert alarms("churn", "auc", "page_hinkley", "warning") == 0
    assert alarms("churn", "gmean", "threshold", "threshold") == 0


def test_timestamps_lag_ready_start_and_build(registry: CollectorRegistry) -> None:
    value = registry.get_sample_value
    assert value("driftwatch_last_event_timestamp_seconds", {"model": "fraud"}) == T0 + 12.5
    assert value("driftwatch_last_alarm_timestamp_seconds", {"model": "fraud"}) == T0 + 3.25
    # Nothing happened yet: no series rather than a misleading 0 (1970).
    assert value("driftwatch_last_event_timestamp_seconds", {"model": "churn"}) is None
    assert value("driftwatch_last_alarm_timestamp_seconds", {"model": "churn"}) is None
    lag = {"topic": "events", "group": "scoring"}
    assert value("driftwatch_consumer_lag_records", {**lag, "partition": "0"}) == 5
    assert value("driftwatch_consumer_lag_records", {**lag, "partition": "1"}) == 0
    assert value("driftwatch_consumer_lag_seconds", {**lag, "partition": "0"}) == 2.5
    assert value("driftwatch_consumer_lag_seconds", {**lag, "partition": "1"}) == 0
    assert value("driftwatch_ready") == 1
    assert value("driftwatch_build_info", {"version": __version__, "revision": revision()}) == 1


def test_alert_thresholds_and_last_processed_per_model(registry: CollectorRegistry) -> None:
    value = registry.get_sample_value
    expected = {  # (fraud: the defaults, churn: its overrides)
        "driftwatch_auc_floor_threshold": (0.75, 0.6),
        "driftwatch_auc_max_drop_threshold": (0.05, 0.05),
        "driftwatch_no_events_threshold_seconds": (600, 90_000),
        "driftwatch_batch_labels_enabled": (0, 1),
        "driftwatch_last_processed_timestamp_seconds": (T0 + 60.0, T0),
    }
    for name, (fraud, churn) in expected.items():
        assert value(name, {"model": "fraud"}) == fraud, name
        assert value(name, {"model": "churn"}) == churn, name
        # Only monitored models: an override for a model never seen exports nothing.
        assert value(name, {"model": "absent"}) is None, name
    # Without thresholds (an embedding program) the families stay empty.
    bare = CollectorRegistry()
    bare.register(SnapshotCollector(lambda: AGENT))
    assert bare.get_sample_value("driftwatch_auc_floor_threshold", {"model": "fraud"}) is None
    assert bare.get_sample_value("driftwatch_measure", {"model": "fraud", "measure": "auc"})


def test_thresholds_join_the_measures_they_judge(registry: CollectorRegistry) -> None:
    # `driftwatch_measure{measure="auc"} < ignoring(measure) driftwatch_auc_floor_threshold` joins
    # one to one: the threshold's labels are the measure's without `measure`.
    text = generate_latest(registry).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    auc = {s.labels["model"] for s in families["driftwatch_measure"].samples
           if s.labels["measure"] == "auc"}
    floors = [s.labels for s in families["driftwatch_auc_floor_threshold"].samples]
    assert auc == {"fraud"}  # churn's AUC is undefined: no series, so no comparison
    assert sorted(label["model"] for label in floors) == ["churn", "fraud"]


def test_not_ready_and_empty_agent() -> None:
    registry = registry_for(AgentSnapshot.empty(T0))
    assert registry.get_sample_value("driftwatch_ready") == 0
    text = generate_latest(registry).decode()
    assert "# HELP driftwatch_measure " in text  # families are described even when empty


def test_families_names_help_and_types_follow_conventions(registry: CollectorRegistry) -> None:
    text = generate_latest(registry).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    # The parser strips _total from counter family names; map back to exposed names.
    exposed = {(f"{n}_total" if f.type == "counter" else n): f for n, f in families.items()}
    assert set(exposed) == set(EXPECTED_FAMILIES)
    for name, family in exposed.items():
        kind, labels = EXPECTED_FAMILIES[name]
        assert family.type == kind, name
        assert re.fullmatch(r"driftwatch(_[a-z]+)+", name), name
        assert family.documentation.strip(), f"{name} has no HELP text"
        assert f"# HELP {name} " in text
        for sample in family.samples:
            assert set(sample.labels) - ({"le"} if kind == "histogram" else set()) == labels, (
                name, sample)
            if kind == "counter":
                assert sample.name.endswith("_total"), sample
        if name.endswith(("_seconds", "_records", "_total", "_info")):
            continue
        # Unitless gauges: no stray unit suffixes in non-base units.
        assert not re.search(r"_(milliseconds|ms|minutes|hours|percent|bytes_kb)$", name)


def test_measure_and_threshold_share_label_sets(registry: CollectorRegistry) -> None:
    # So that `driftwatch_measure < on(model, measure) driftwatch_measure_threshold` joins.
    text = generate_latest(registry).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    measure = {tuple(sorted(s.labels.items())) for s in families["driftwatch_measure"].samples}
    for sample in families["driftwatch_measure_threshold"].samples:
        assert tuple(sorted(sample.labels.items())) in measure


def test_openmetrics_exposition_parses(registry: CollectorRegistry) -> None:
    text = om_exposition.generate_latest(registry).decode()  # type: ignore[no-untyped-call]
    assert text.endswith("# EOF\n")
    families = {
        f.name: f
        for f in om_parser.text_string_to_metric_families(text)  # type: ignore[no-untyped-call]
    }
    assert families["driftwatch_events_processed"].type == "counter"
    assert families["driftwatch_build"].type == "info"
    assert families["driftwatch_alarms"].type == "counter"


def test_describe_does_not_call_the_source() -> None:
    def source() -> AgentSnapshot:
        raise AssertionError("describe() must not scrape")

    registry = CollectorRegistry()
    collector = SnapshotCollector(source)
    registry.register(collector)  # uses describe()
    names = {m.name for m in collector.describe()}
    assert "driftwatch_measure" in names and "driftwatch_events_processed" in names


def test_agent_snapshot_copies_its_mappings_and_refuses_duplicate_models() -> None:
    rejected = {"invalid_json": 1}
    agent = AgentSnapshot((FRAUD,), rejected, {}, True, T0)
    rejected["invalid_json"] = 99
    assert agent.rejected["invalid_json"] == 1
    with pytest.raises(TypeError):
        agent.rejected["x"] = 1  # type: ignore[index]
    with pytest.raises(ValueError, match="fraud"):
        AgentSnapshot((FRAUD, FRAUD), {}, {}, True, T0)


def test_unknown_detector_state_is_not_exported() -> None:
    odd = Snapshot("m", 1, 1, 0, {}, {}, {}, {("auc", "x"): "confused"}, {}, None, None)
    registry = registry_for(AgentSnapshot((odd,), {}, {}, True, T0))
    labels = {"model": "m", "measure": "auc", "detector": "x"}
    assert registry.get_sample_value("driftwatch_detector_state", labels) is None


# ------------------------------------------------------------------------------------------------
# Consistency under concurrent swaps


def generation(i: int) -> AgentSnapshot:
    """A snapshot whose every number is ``i``, so a mixed-up scrape is visible."""
    models = ("a", "b") if i % 2 else ("c",)
    snaps = tuple(
        Snapshot(
            m,
            i,
            i,
            i,
            {"auc": float(i)},
            {"gmean": float(i)},
            {"gmean": float(i)},
            {("auc", "adwin"): "stable"},
            {("auc", "adwin", "drift"): i},
            float(i),
            float(i),
        )
        for m in models
    )
    return AgentSnapshot(snaps, {"invalid_json": i}, {("t", 0): i}, bool(i % 2), float(i))


def test_collector_reads_one_snapshot_while_another_thread_swaps_them() -> None:
    holder = SimpleNamespace(latest=generation(1))
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: holder.latest))
    stop = threading.Event()
    errors: list[BaseException] = []
    scrapes = 0

    def swap() -> None:
        i = 1
        while not stop.is_set():
            i += 1
            holder.latest = generation(i)

    def scrape() -> None:
        nonlocal scrapes
        try:
            while not stop.is_set():
                text = generate_latest(registry).decode()
                numbers: set[float] = set()
                for family in text_string_to_metric_families(text):
                    if family.name in (
                        "driftwatch_build_info",
                        "driftwatch_ready",
                        "driftwatch_detector_state",
                        "driftwatch_scrape_dropped_series",
                    ) or family.name.removesuffix("_total") in OPERATIONS_FAMILIES:
                        continue  # operations are not part of the generations here
                    numbers.update(
                        s.value for s in family.samples if s.labels.get("level") in (None, "drift")
                    )
                assert len(numbers) == 1, numbers  # every value from the same generation
                scrapes += 1
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=swap), *(threading.Thread(target=scrape) for _ in range(3))]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    stop.set()
    for thread in threads:
        thread.join(5)
    assert not errors, errors[0]
    assert scrapes > 10


# ------------------------------------------------------------------------------------------------
# HTTP


@dataclass
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()


def get(
    url: str, headers: Mapping[str, str] | None = None, context: ssl.SSLContext | None = None
) -> Response:
    handlers: list[Any] = [urllib.request.ProxyHandler({})]  # never via an environment proxy
    if context is not None:
        handlers.append(urllib.request.HTTPSHandler(context=context))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with opener.open(request, timeout=5) as response:
            return Response(response.status, dict(response.headers), response.read())
    except urllib.error.HTTPError as error:
        return Response(error.code, dict(error.headers), error.read())


@dataclass
class Agent:
    """What a test toggles behind a running server."""

    snapshot: AgentSnapshot = AGENT
    is_ready: bool = True
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.registry.register(SnapshotCollector(lambda: self.snapshot))

    def ready(self) -> bool:
        return self.is_ready


@pytest.fixture
def agent() -> Agent:
    return Agent()


@pytest.fixture
def server(agent: Agent) -> Iterator[MetricsServer]:
    with MetricsServer(agent.registry, "127.0.0.1", 0, agent.ready) as running:
        yield running


def base(server: MetricsServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def test_scrape_over_http(server: MetricsServer) -> None:
    assert server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}/metrics"
    response = get(server.url)
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name for f in text_string_to_metric_families(response.text)}
    assert {"driftwatch_measure", "driftwatch_events_processed", "driftwatch_ready"} <= families
    assert 'driftwatch_measure{measure="auc",model="fraud"} 0.91' in response.text


def test_scrape_negotiates_openmetrics_gzip_and_name_filter(server: MetricsServer) -> None:
    response = get(
        server.url,
        {"Accept": "application/openmetrics-text; version=1.0.0", "Accept-Encoding": "gzip"},
    )
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("application/openmetrics-text")
    assert response.headers["Content-Encoding"] == "gzip"
    text = gzip.decompress(response.body).decode()
    assert text.endswith("# EOF\n")
    filtered = get(server.url + "?name[]=driftwatch_ready")
    assert filtered.text.strip().splitlines()[-1] == "driftwatch_ready 1.0"
    assert "driftwatch_measure" not in filtered.text


def test_healthz_readyz_and_404(server: MetricsServer, agent: Agent) -> None:
    health = get(base(server) + "/healthz")
    assert (health.status, health.text) == (200, "ok")
    assert get(base(server) + "/readyz").status == 200
    agent.is_ready = False
    assert get(base(server) + "/readyz").status == 503
    agent.is_ready = True
    assert get(base(server) + "/readyz").status == 200
    assert get(base(server) + "/metricsx").status == 404
    assert get(base(server) + "/metrics/x").status == 404


def test_not_ready_body_names_the_reasons(agent: Agent) -> None:
    reasons: set[str] = {"kafka", "checkpoint"}
    agent.is_ready = False
    with MetricsServer(agent.registry, "127.0.0.1", 0, agent.ready,
                       not_ready_reasons=lambda: reasons) as server:
        answer = get(base(server) + "/readyz")
        assert (answer.status, answer.text) == (503, "not ready: checkpoint; kafka")
        reasons.clear()
        assert get(base(server) + "/readyz").text == "not ready"
        agent.is_ready = True
        assert get(base(server) + "/readyz").text == "ready"


def test_readiness_check_that_raises_means_not_ready(agent: Agent) -> None:
    def broken() -> bool:
        raise RuntimeError("boom")

    with MetricsServer(agent.registry, "127.0.0.1", 0, broken) as server:
        assert get(base(server) + "/readyz").status == 503
        assert get(base(server) + "/healthz").status == 200


def test_failing_source_answers_500_then_recovers(
    agent: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    healthy = agent.snapshot
    with MetricsServer(agent.registry, "127.0.0.1", 0, agent.ready) as server:
        agent.snapshot = None  # type: ignore[assignment]  # collect() now raises
        assert get(server.url).status == 500
        assert get(server.url).status == 500
        agent.snapshot = healthy
        assert get(server.url).status == 200
    logged = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(logged) == 1  # once per run of failures, not per scrape


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def test_basic_auth(agent: Agent) -> None:
    with MetricsServer(
        agent.registry, "127.0.0.1", 0, agent.ready, basic_auth=("prom", "s3cret:with colon")
    ) as server:
        anonymous = get(server.url)
        assert anonymous.status == 401
        assert anonymous.headers["WWW-Authenticate"].startswith("Basic realm=")
        assert get(server.url, basic("prom", "wrong")).status == 401
        assert get(server.url, basic("other", "s3cret:with colon")).status == 401
        assert get(server.url, {"Authorization": "Basic !!!"}).status == 401
        assert get(server.url, {"Authorization": "Bearer x"}).status == 401
        assert get(server.url, basic("prom", "s3cret:with colon")).status == 200
        # Probes stay open: kubelet carries no credentials.
        assert get(base(server) + "/healthz").status == 200
        assert get(base(server) + "/readyz").status == 200


def make_self_signed(directory: Path, require_tool: Callable[[str, str], str]) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, via `cryptography` if installed, else openssl.

    Without either the test is skipped locally and fails in CI (``require_tool``).
    """
    cert, key = directory / "cert.pem", directory / "key.pem"
    if importlib.util.find_spec("cryptography") is not None:
        x509: Any = importlib.import_module("cryptography.x509")
        hashes: Any = importlib.import_module("cryptography.hazmat.primitives.hashes")
        serialization: Any = importlib.import_module("cryptography.hazmat.primitives.serialization")
        ec: Any = importlib.import_module("cryptography.hazmat.primitives.asymmetric.ec")
        oid: Any = importlib.import_module("cryptography.x509.oid")
        ipaddress = importlib.import_module("ipaddress")
        datetime = importlib.import_module("datetime")
        private = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(oid.NameOID.COMMON_NAME, "127.0.0.1")])
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(private.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False,
            )
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(private, hashes.SHA256())
        )
        cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        key.write_bytes(
            private.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return cert, key
    openssl = require_tool(
        "openssl",
        "the TLS test makes its self-signed certificate with "
        "openssl when the cryptography package is not installed",
    )
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return cert, key


def test_tls(
    agent: Agent,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    require_tool: Callable[[str, str], str],
) -> None:
    cert, key = make_self_signed(tmp_path, require_tool)
    with MetricsServer(
        agent.registry, "127.0.0.1", 0, agent.ready, basic_auth=("u", "p"), tls=(cert, key)
    ) as server:
        assert server.url.startswith("https://")
        client = ssl.create_default_context(cafile=str(cert))
        response = get(server.url, basic("u", "p"), context=client)
        assert response.status == 200
        assert "driftwatch_ready 1.0" in response.text
        # Plain HTTP to the TLS port fails for that client only, quietly.
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            get(base(server) + "/healthz")
        # A client that does not trust the certificate is refused by its own TLS check.
        with pytest.raises(urllib.error.URLError):
            get(server.url, context=ssl.create_default_context())
        assert get(f"https://127.0.0.1:{server.port}/healthz", context=client).status == 200
    assert "Traceback" not in capfd.readouterr().err


def test_tls_with_missing_files_names_them(agent: Agent, tmp_path: Path) -> None:
    server = MetricsServer(
        agent.registry,
        "127.0.0.1",
        0,
        agent.ready,
        tls=(tmp_path / "nope.pem", tmp_path / "nokey.pem"),
    )
    with pytest.raises(OSError, match=r"nope\.pem") as caught:
        server.start()
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_port_in_use_is_a_clear_error(agent: Agent) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = MetricsServer(agent.registry, "127.0.0.1", port, agent.ready)
        with pytest.raises(
            OSError, match=rf"cannot listen on 127\.0\.0\.1:{port}: .*in use"
        ) as caught:
            server.start()
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    with pytest.raises(RuntimeError):
        _ = server.port


def test_stop_is_bounded_idempotent_and_frees_the_port(agent: Agent) -> None:
    server = MetricsServer(agent.registry, "127.0.0.1", 0, agent.ready)
    server.start()
    port = server.port
    assert get(server.url).status == 200
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2.0
    server.stop()
    with pytest.raises(urllib.error.URLError):
        get(f"http://127.0.0.1:{port}/healthz")
    with pytest.raises(RuntimeError):
        server.start()
    # The port can be bound again at once.
    with MetricsServer(agent.registry, "127.0.0.1", port, agent.ready) as again:
        assert get(again.url).status == 200


def test_invalid_arguments() -> None:
    registry = CollectorRegistry()
    with pytest.raises(ValueError, match="port"):
        MetricsServer(registry, "127.0.0.1", 70000, lambda: True)
    with pytest.raises(ValueError, match="user"):
        MetricsServer(registry, "127.0.0.1", 0, lambda: True, basic_auth=("", "x"))


def test_concurrent_http_scrapes_during_swaps(agent: Agent) -> None:
    stop = threading.Event()
    failures: list[str] = []

    def swap() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            agent.snapshot = generation(i)
            time.sleep(0.0005)  # swap often, but leave the GIL to the server threads

    def scrape(server: MetricsServer) -> None:
        for _ in range(15):
            response = get(server.url)
            if response.status != 200:
                failures.append(response.text)

    with MetricsServer(agent.registry, "127.0.0.1", 0, agent.ready) as server:
        swapper = threading.Thread(target=swap)
        swapper.start()
        scrapers = [threading.Thread(target=scrape, args=(server,)) for _ in range(4)]
        for thread in scrapers:
            thread.start()
        for thread in scrapers:
            thread.join(10)
        stop.set()
        swapper.join(5)
    assert failures == []


# ------------------------------------------------------------------------------------------------
# With a real monitor


def test_a_real_monitor_snapshot_exports_consistently() -> None:
    monitor = Monitor(
        "fraud",
        MonitorConfig(
            window_size=200,
            sample_every=10,
            watches=(
                Watch("auc", (DetectorSpec("page_hinkley"), DetectorSpec("adwin"))),
                Watch("gmean", (DetectorSpec("page_hinkley"),), normalized=True, floor=0.8),
            ),
        ),
    )
    rng = random.Random(7)
    for i in range(2000):
        y_true = int(rng.random() < 0.2)
        signal = 1.0 if y_true and i < 1000 else 0.0  # the model goes blind halfway
        monitor.update(Event(y_true, rng.gauss(signal, 1.0), ts=T0 + i))
    snap = monitor.snapshot()
    registry = registry_for(AgentSnapshot((snap,), {}, {}, True, T0))
    value = registry.get_sample_value
    for measure, raw in snap.values.items():
        exported = value("driftwatch_measure", {"model": "fraud", "measure": measure})
        assert exported is None if math.isnan(raw) else exported == raw, measure
    for measure, norm in snap.normalized.items():
        exported = value("driftwatch_measure_normalized", {"model": "fraud", "measure": measure})
        assert exported is None if math.isnan(norm) else exported == norm, measure
    assert (
        value("driftwatch_measure_threshold", {"model": "fraud", "measure": "gmean"})
        == snap.thresholds["gmean"]
    )
    for (measure, detector, level), count in snap.alarms.items():
        labels = {"model": "fraud", "measure": measure, "detector": detector, "level": level}
        assert value("driftwatch_alarms_total", labels) == count
    assert sum(snap.alarms.values()) > 0
    assert value("driftwatch_last_event_timestamp_seconds", {"model": "fraud"}) == T0 + 1999


# ------------------------------------------------------------------------------------------------
# One series never fails a scrape


BAD_MODEL = dataclasses.replace(FRAUD, model="fraud-\ud800")  # a lone surrogate: not UTF-8


def series_of(snapshot: Snapshot) -> int:
    """How many series the collector writes for one model (measured, not assumed)."""
    registry = registry_for(AgentSnapshot((snapshot,), {}, {}, True, T0))
    text = generate_latest(registry).decode()
    return sum(1 for line in text.splitlines() if f'model="{snapshot.model}"' in line)


def test_a_model_id_that_cannot_be_encoded_is_dropped_not_the_scrape(
    agent: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    agent.snapshot = AgentSnapshot((FRAUD,), {}, {}, True, T0)
    with MetricsServer(agent.registry, "127.0.0.1", 0, agent.ready) as server:
        # The bad model is a copy of this one: it has as many series.
        per_model = get(server.url).text.count('model="fraud"')
        assert per_model > 10
        agent.snapshot = AgentSnapshot((FRAUD, BAD_MODEL, CHURN), {"not_json": 1}, {}, True, T0)
        for _ in range(2):
            for accept in ("", "application/openmetrics-text; version=1.0.0"):
                response = get(server.url, {"Accept": accept})
                assert response.status == 200
                families = {f.name: f for f in parse(response)}
                models = {s.labels.get("model") for f in families.values() for s in f.samples}
                assert models == {None, "fraud", "churn"}
                # Everything else is there, exactly as without the bad model.
                assert 'driftwatch_measure{measure="auc",model="fraud"} 0.91' in \
                    response.text.replace(', ', ',')
        dropped = [s.value for s in families["driftwatch_scrape_dropped_series"].samples
                   if s.name.endswith("_total")]
        assert dropped == [4 * per_model]  # a counter: every series of that model, per scrape
    warnings = [r for r in caplog.records if "cannot be exported" in r.getMessage()]
    assert len(warnings) == 1  # logged once per model, not per scrape
    assert "\\ud800" in warnings[0].getMessage()  # escaped: the log line itself is UTF-8


def parse(response: Response) -> list[Any]:
    if response.headers["Content-Type"].startswith("application/openmetrics-text"):
        return list(om_parser.text_string_to_metric_families(response.text))
    return list(text_string_to_metric_families(response.text))


def test_unencodable_label_values_outside_the_models_drop_only_their_sample() -> None:
    agent = AgentSnapshot((FRAUD,), {"not_json": 2, "bad\udfffreason": 1},
                          {("t\ud800", 0): 3, ("events", 1): 4}, True, T0)
    text = generate_latest(registry_for(agent)).decode()
    assert 'driftwatch_events_rejected_total{reason="not_json"} 2.0' in text
    assert ('driftwatch_consumer_lag_records{group="",partition="1",topic="events"} 4.0'
            in text)
    assert "driftwatch_scrape_dropped_series_total 2.0" in text


def test_a_model_whose_series_cannot_be_built_is_dropped_whole() -> None:
    broken = dataclasses.replace(CHURN, values={"auc": "not a number"})  # type: ignore[dict-item]
    text = generate_latest(registry_for(AgentSnapshot((FRAUD, broken), {}, {}, True, T0)))
    assert 'model="churn"' not in text.decode() and 'model="fraud"' in text.decode()
    same_shape = dataclasses.replace(CHURN, values={"auc": 0.5})
    assert f"driftwatch_scrape_dropped_series_total {series_of(same_shape)}.0" in text.decode()


# ------------------------------------------------------------------------------------------------
# HEAD and the landing page


def raw_request(port: int, method: str, path: str,
                headers: Mapping[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request(method, path, headers=dict(headers or {}))
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("path", ["/metrics", "/healthz", "/readyz", "/", "/nope"])
def test_head_answers_as_get_without_the_body(server: MetricsServer, agent: Agent,
                                              path: str) -> None:
    for ready in (True, False):
        agent.is_ready = ready
        get_status, get_headers, get_body = raw_request(server.port, "GET", path)
        head_status, head_headers, head_body = raw_request(server.port, "HEAD", path)
        assert head_status == get_status != 501
        assert head_body == b""
        for name in ("Content-Type", "Content-Length", "Content-Encoding"):
            assert head_headers.get(name) == get_headers.get(name), name
        assert int(head_headers["Content-Length"]) == len(get_body) > 0


def test_head_respects_basic_auth(agent: Agent) -> None:
    with MetricsServer(agent.registry, "127.0.0.1", 0, agent.ready,
                       basic_auth=("prom", "pw")) as server:
        assert raw_request(server.port, "HEAD", "/metrics")[0] == 401
        assert raw_request(server.port, "HEAD", "/metrics", basic("prom", "pw"))[0] == 200
        assert raw_request(server.port, "HEAD", "/healthz")[0] == 200


def test_landing_page_links_to_every_endpoint(server: MetricsServer) -> None:
    page = get(base(server) + "/")
    assert page.status == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    links = re.findall(r'href="([^"]+)"', page.text)
    assert sorted(links) == ["healthz", "metrics", "readyz"]
    for link in links:
        assert get(urllib.parse.urljoin(base(server) + "/", link)).status == 200


# ------------------------------------------------------------------------------------------------
# Bounded connections: idle and slow clients


def server_side_descriptors(port: int) -> int | None:
    """Descriptors this process holds for connections to ``port`` on the server side (the
    local port is ``port``), from /proc; None where /proc/net/tcp does not exist."""
    try:
        table = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return None
    inodes = set()
    for line in table:
        fields = line.split()
        local_port = int(fields[1].split(":")[1], 16)
        if local_port == port and fields[3] != "0A":  # 0A: LISTEN
            inodes.add(fields[9])
    held = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            held += 1
    return held


def http_stats(port: int) -> dict[str, float]:
    status, _, body = raw_request(port, "GET", "/metrics")
    assert status == 200
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(body.decode()):
        if family.name.startswith("driftwatch_http_connections"):
            for sample in family.samples:
                reason = sample.labels.get("reason")
                values[sample.name + (f"{{{reason}}}" if reason else "")] = sample.value
    return values


def closed_by_peer(sock: socket.socket, timeout: float = 10.0) -> bool:
    """Whether the server closed ``sock`` (EOF or reset) within ``timeout`` seconds."""
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


IDLE_CLIENTS = 200


def test_idle_connections_are_bounded_and_scrapes_still_succeed(agent: Agent) -> None:
    limit = 8
    with MetricsServer(agent.registry, "127.0.0.1", 0, agent.ready, max_connections=limit,
                       request_timeout=60.0) as server:
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(IDLE_CLIENTS)]
        try:
            # A normal scrape gets through the crowd: the idle connection oldest is evicted.
            response = get(server.url)
            assert response.status == 200
            stats = http_stats(server.port)
            assert stats["driftwatch_http_connections"] <= limit
            # Every client beyond the limit was evicted (closed by the server), not served.
            closed = sum(closed_by_peer(sock, timeout=0.05) for sock in idle)
            assert closed >= IDLE_CLIENTS - limit
            evicted = stats["driftwatch_http_connections_closed_total{evicted}"]
            assert evicted >= IDLE_CLIENTS - limit
            held = server_side_descriptors(server.port)
            assert held is None or held <= limit
            # The survivors are real connections that the server still answers.
            survivors = [sock for sock in idle if sock.fileno() != -1]
            for sock in idle[-3:]:
                sock.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
                sock.settimeout(5)
                assert sock.recv(100).startswith(b"HTTP/1.0 200")
            assert survivors
        finally:
            for sock in idle:
                sock.close()


def test_a_trickling_client_is_cut_at_the_request_timeout(agent: Agent) -> None:
    with MetricsServer(agent.registry, "127.0.0.1", 0, agent.ready,
                       request_timeout=0.5) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as slow:
            # Slowloris: a byte every 0.1 s never trips a per-read timeout, only the deadline.
            slow.settimeout(0.1)
            request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 200
            cut = False
            for byte in request:
                try:
                    slow.sendall(bytes([byte]))
                    if slow.recv(1) == b"":
                        cut = True
                        break
                except TimeoutError:
                    continue
                except (ConnectionResetError, BrokenPipeError):
                    cut = True
                    break
            assert cut, "the server never closed a connection that sent 1 byte per 0.1 s"
        assert http_stats(server.port)["driftwatch_http_connections_closed_total{timeout}"] >= 1
        assert get(server.url).status == 200


def test_when_every_slot_is_answering_newcomers_are_refused(agent: Agent) -> None:
    release = threading.Event()
    entered = threading.Semaphore(0)

    class Slow(SnapshotCollector):
        def collect(self) -> Iterator[Any]:
            entered.release()
            release.wait(10)
            return super().collect()

    registry = CollectorRegistry()
    registry.register(Slow(lambda: AGENT))
    results: list[int] = []
    with MetricsServer(registry, "127.0.0.1", 0, agent.ready, max_connections=2) as server:
        scrapes = [threading.Thread(target=lambda: results.append(get(server.url).status))
                   for _ in range(2)]
        for thread in scrapes:
            thread.start()
        assert entered.acquire(timeout=5) and entered.acquire(timeout=5)  # both busy
        with socket.create_connection(("127.0.0.1", server.port)) as late:
            assert closed_by_peer(late), "a third connection was held although both were busy"
        release.set()
        for thread in scrapes:
            thread.join(10)
        assert results == [200, 200]  # the busy ones were never evicted
        stats = http_stats(server.port)
        assert stats["driftwatch_http_connections_closed_total{refused}"] == 1
        assert stats["driftwatch_http_connections_closed_total{evicted}"] == 0


def test_stop_closes_idle_connections(agent: Agent) -> None:
    server = MetricsServer(agent.registry, "127.0.0.1", 0, agent.ready, request_timeout=60.0)
    server.start()
    idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(5)]
    try:
        assert get(server.url).status == 200  # the idle ones were accepted before it
        server.stop()
        assert all(closed_by_peer(sock) for sock in idle)
    finally:
        for sock in idle:
            sock.close()


def test_limits_and_empty_credentials_are_refused() -> None:
    registry = CollectorRegistry()
    with pytest.raises(ValueError, match="password must not be empty"):
        MetricsServer(registry, "127.0.0.1", 0, lambda: True, basic_auth=("prom", ""))
    with pytest.raises(ValueError, match="max_connections"):
        MetricsServer(registry, "127.0.0.1", 0, lambda: True, max_connections=0)
    with pytest.raises(ValueError, match="request_timeout"):
        MetricsServer(registry, "127.0.0.1", 0, lambda: True, request_timeout=0)


def test_clients_stalled_in_the_tls_handshake_are_evicted_too(
    agent: Agent, tmp_path: Path, require_tool: Callable[[str, str], str]
) -> None:
    cert, key = make_self_signed(tmp_path, require_tool)
    with MetricsServer(agent.registry, "127.0.0.1", 0, agent.ready, tls=(cert, key),
                       max_connections=3, request_timeout=60.0) as server:
        # Plain TCP clients that never start the handshake hold its thread in do_handshake.
        stalled = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(20)]
        try:
            client = ssl.create_default_context(cafile=str(cert))
            assert get(server.url, context=client).status == 200
            assert sum(closed_by_peer(sock, timeout=0.05) for sock in stalled) >= 20 - 3
        finally:
            for sock in stalled:
                sock.close()


def test_operations_are_exported() -> None:
    histogram = LatencyHistogram((0.01, 0.1))
    for seconds in (0.005, 0.01, 0.05, 3.0):
        histogram.observe(seconds)
    pauses = LatencyHistogram((0.5, 5.0))
    for seconds in (0.2, 0.7, 12.0):
        pauses.observe(seconds)
    operations = Operations(
        consumer_group="g", not_ready=frozenset({"checkpoint"}), checkpoint_saves=7,
        checkpoint_save_failures=2, checkpoint_last_success_time=T0, checkpoint_save_seconds=0.25,
        commits=6, commit_failures=1, dead_letter_failures=3, alarm_publish_failures=4,
        broker_reconnects=5, offset_resets={("events", 2, "beyond_log_end"): 1},
        batch_seconds=histogram.value(), loop_pause_seconds=pauses.value(),
    )
    registry = registry_for(AgentSnapshot(monitors=(), rejected={}, consumer_lag={}, ready=False,
                                          started_time=T0, operations=operations))
    value = registry.get_sample_value
    assert value("driftwatch_not_ready", {"reason": "checkpoint"}) == 1
    assert value("driftwatch_not_ready", {"reason": "kafka"}) == 0
    assert [value(f"driftwatch_{name}_total") for name in (
        "checkpoint_saves", "checkpoint_save_failures", "commits", "commit_failures",
        "dead_letter_failures", "alarm_publish_failures", "broker_reconnects")] == [
        7, 2, 6, 1, 3, 4, 5]
    assert value("driftwatch_checkpoint_last_success_timestamp_seconds") == T0
    assert value("driftwatch_checkpoint_save_duration_seconds") == 0.25
    assert value("driftwatch_offset_resets_total",
                 {"topic": "events", "partition": "2", "reason": "beyond_log_end"}) == 1
    buckets = {le: value("driftwatch_batch_processing_seconds_bucket", {"le": le})
               for le in ("0.01", "0.1", "+Inf")}
    assert buckets == {"0.01": 2, "0.1": 3, "+Inf": 4}  # le is inclusive
    assert value("driftwatch_batch_processing_seconds_count") == 4
    assert value("driftwatch_batch_processing_seconds_sum") == 0.005 + 0.01 + 0.05 + 3.0
    assert [value("driftwatch_loop_pause_seconds_bucket", {"le": le})
            for le in ("0.5", "5.0", "+Inf")] == [1, 2, 3]
    assert value("driftwatch_loop_pause_seconds_sum") == 0.2 + 0.7 + 12.0
    # Nothing saved yet: no timestamp or duration rather than a misleading 0.
    empty = registry_for(AgentSnapshot.empty(T0)).get_sample_value
    assert empty("driftwatch_checkpoint_last_success_timestamp_seconds") is None
    assert empty("driftwatch_checkpoint_save_duration_seconds") is None
    assert empty("driftwatch_checkpoint_saves_total") == 0
