"""End to end: a sudden AUC drop goes from Kafka through the agent to a firing Prometheus alert.

Real parts only: a Tansu broker, the agent as a subprocess, kafka-python producing the
simulator's events, the agent's own ``/metrics``, and the Debian ``prometheus`` binary
scraping it every second and evaluating alert rules every second.

The stream is sent in two halves, so that each state is observed rather than raced past
(the agent processes a few thousand events in about a second): first the good concept
(AUC 0.95), during which nothing may alarm or fire, then the worse one (AUC 0.65).
"""

from __future__ import annotations

import pytest

from driftwatch.simulate import generate
from tests.broker import Broker
from tests.integration.helpers import (
    StartAgent,
    StartPrometheus,
    event_json,
    produce,
    sample_values,
    wait_for,
)

pytestmark = pytest.mark.brokers(
    "tansu", reason="metrics and alerts through Prometheus; the broker only carries the records"
)

MODEL = "fraud"
LENGTH = 4000
CHANGE_AT = 2000
AUC_BEFORE, DROP = 0.95, 0.3

# A 500-event window sampled every 25 events: Page-Hinkley with a threshold suited to AUC
# values (cumulative deviation 1.0; its default of 50 is meant for unbounded measures)
# detects this drop some 300-400 events after the change and raises nothing on the 2000
# stationary events before it (checked offline with seeds 0-4, and asserted below).
SETTINGS = {
    "events": {"model_source": "constant", "model_constant": MODEL},
    "monitoring": {
        "defaults": {
            "window_size": 500,
            "sample_every": 25,
            "watches": [
                {
                    "measure": "auc",
                    "detectors": [
                        {"name": "page_hinkley", "params": {"threshold": 1.0, "min_samples": 10}},
                        {"name": "adwin"},
                    ],
                },
            ],
        }
    },
}

DRIFT_ALERT = "DriftwatchAucDrift"
LOW_AUC_ALERT = "DriftwatchAucLow"
RULES = {
    "groups": [
        {
            "name": "driftwatch",
            "interval": "1s",
            "rules": [
                {
                    "alert": DRIFT_ALERT,
                    "expr": (
                        'increase(driftwatch_alarms_total{level="drift",measure="auc"}[1m]) > 0'
                    ),
                    "for": "0s",
                    "labels": {"severity": "page"},
                },
                {
                    "alert": LOW_AUC_ALERT,
                    "expr": 'driftwatch_measure{measure="auc"} < 0.85',
                    "for": "0s",
                    "labels": {"severity": "page"},
                },
            ],
        }
    ]
}

PROMETHEUS_WAIT_S = 20.0
"""Bound on Prometheus catching up: a scrape and a rule evaluation every second each."""


def test_sudden_auc_drop_reaches_metrics_and_fires_prometheus_alerts(
    broker: Broker, topic: str, start_agent: StartAgent, start_prometheus: StartPrometheus
) -> None:
    agent = start_agent("e2e", SETTINGS)
    prometheus = start_prometheus(
        {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                       "evaluation_interval": "1s"},
            "scrape_configs": [
                {"job_name": "driftwatch",
                 "static_configs": [{"targets": [f"127.0.0.1:{agent.port}"]}]},
            ],
        },
        RULES,
    )
    stream = generate("sudden_auc_drop", seed=11, length=LENGTH, auc=AUC_BEFORE, drop=DROP,
                      change_at=CHANGE_AT)
    values = [event_json(event) for event in stream]

    # -- the good concept ------------------------------------------------------------------
    produce(broker.bootstrap, topic, values[:CHANGE_AT])
    before = agent.wait_processed(CHANGE_AT)
    auc_before = before.get("driftwatch_measure", model=MODEL, measure="auc")
    assert auc_before is not None and auc_before > 0.9, auc_before
    drift_alarms = {"model": MODEL, "measure": "auc", "level": "drift"}
    assert before.series("driftwatch_alarms_total", **drift_alarms), "counters exist at 0"
    assert before.total("driftwatch_alarms_total") == 0, "no alarm on the stationary part"
    assert agent.readyz() == 200

    # Prometheus must have the alarm counters at 0 before they move, or increase() cannot
    # see the first alarm; and nothing may fire on the good concept.
    def zeros_scraped() -> bool:
        counters = prometheus.query('driftwatch_alarms_total{level="drift",measure="auc"}')
        processed = sample_values(prometheus.query("driftwatch_events_processed_total"))
        return (len(counters) == 2 and all(float(c["value"][1]) == 0 for c in counters)
                and processed == {MODEL: CHANGE_AT})

    wait_for(zeros_scraped, PROMETHEUS_WAIT_S, "Prometheus to scrape the first half",
             diagnostics=prometheus.log)
    assert sample_values(prometheus.query('driftwatch_measure{measure="auc"}')) == {
        MODEL: auc_before
    }
    assert prometheus.firing() == set()

    # -- the drop ---------------------------------------------------------------------------
    produce(broker.bootstrap, topic, values[CHANGE_AT:])
    after = agent.wait_processed(LENGTH)
    auc_after = after.get("driftwatch_measure", model=MODEL, measure="auc")
    assert auc_after is not None and auc_after < 0.8, auc_after
    assert auc_after < auc_before - 0.2
    assert after.total("driftwatch_alarms_total", **drift_alarms) >= 1
    assert after.get("driftwatch_alarms_total", detector="page_hinkley", **drift_alarms) >= 1
    assert after.get("driftwatch_events_processed_total", model=MODEL) == LENGTH
    assert after.total("driftwatch_events_rejected_total") == 0

    firing = wait_for(
        lambda: (f := prometheus.firing()) >= {DRIFT_ALERT, LOW_AUC_ALERT} and f,
        PROMETHEUS_WAIT_S,
        f"{DRIFT_ALERT} and {LOW_AUC_ALERT} to fire",
        interval_s=0.5,
        diagnostics=lambda: f"alerts: {prometheus.alerts()}\n{prometheus.log()}",
    )
    assert firing == {DRIFT_ALERT, LOW_AUC_ALERT}

    # The alert may start firing on a scrape taken mid-drop; its value follows the final one.
    def firing_alerts() -> dict[str, dict]:
        return {a["labels"]["alertname"]: a for a in prometheus.alerts() if a["state"] == "firing"}

    alerts = wait_for(
        lambda: (a := firing_alerts()) and float(a[LOW_AUC_ALERT]["value"]) == auc_after and a,
        PROMETHEUS_WAIT_S,
        f"{LOW_AUC_ALERT} to carry the final AUC {auc_after}",
        interval_s=0.5,
        diagnostics=lambda: f"alerts: {prometheus.alerts()}",
    )
    assert alerts[LOW_AUC_ALERT]["labels"]["model"] == MODEL
    assert alerts[DRIFT_ALERT]["labels"]["model"] == MODEL
    assert alerts[DRIFT_ALERT]["labels"]["severity"] == "page"

    # The series are queryable, with the values the agent exports.
    assert sample_values(prometheus.query('driftwatch_measure{measure="auc"}')) == {
        MODEL: auc_after
    }
    drifts = prometheus.query('sum by (model) (driftwatch_alarms_total{level="drift"})')
    assert sample_values(drifts) == {
        MODEL: after.total("driftwatch_alarms_total", **drift_alarms)
    }
    assert sample_values(prometheus.query(
        'driftwatch_window_events{class="positive"} + ignoring(class) '
        'driftwatch_window_events{class="negative"}'
    )) == {MODEL: 500.0}
    (target,) = prometheus.api("targets")["activeTargets"]
    assert target["health"] == "up", target
