"""Several models in one topic: one monitor and one set of series each, bounded in number.

The expected values are computed here from the records themselves (the last ``WINDOW``
events of each model): the Mann-Whitney AUC by brute force over every positive/negative pair
(ties count one half), the class counts and the accuracy at the 0.5 threshold. The agent's
exported values must equal them, so a model's series cannot mix in another model's events.
"""

from __future__ import annotations

import math

import pytest

from driftwatch.core.events import Event
from driftwatch.simulate import generate
from tests.broker import Broker
from tests.integration.helpers import StartAgent, event_json, produce

pytestmark = pytest.mark.brokers(
    "tansu", reason="per-model series and the model limit; the broker only carries the records"
)

WINDOW = 400
PER_MODEL = 1200
MODELS = {"good": 0.95, "poor": 0.65}
"""Population AUC of each admitted model's scores."""
EXTRA = "third"
"""A third model: beyond limits.max_models=2, its events are rejected."""


def brute_force_auc(events: list[Event]) -> float:
    positives = [e.y_score for e in events if e.y_true == 1]
    negatives = [e.y_score for e in events if e.y_true == 0]
    pairs = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    return pairs / (len(positives) * len(negatives))


def test_models_get_separate_series_and_the_limit_holds(
    broker: Broker, topic: str, start_agent: StartAgent
) -> None:
    agent = start_agent("models", {
        "limits": {"max_models": 2},
        "monitoring": {"defaults": {"window_size": WINDOW, "sample_every": 50}},
    })
    streams = {
        model: list(generate("stationary", seed=seed, length=PER_MODEL, auc=auc))
        for seed, (model, auc) in enumerate(MODELS.items())
    }
    streams[EXTRA] = list(generate("stationary", seed=7, length=PER_MODEL, auc=0.8))
    # Round robin: good, poor, third, good, ...: the first two take the two slots.
    values = [
        event_json(streams[model][i], model)
        for i in range(PER_MODEL)
        for model in (*MODELS, EXTRA)
    ]
    produce(broker.bootstrap, topic, values)

    metrics = agent.wait_metrics(
        lambda m: m.total("driftwatch_events_processed_total")
        + m.total("driftwatch_events_rejected_total") >= len(values),
        f"all {len(values)} records to be processed or rejected",
    )

    assert metrics.by_label("driftwatch_events_processed_total", "model") == dict.fromkeys(
        MODELS, PER_MODEL
    )
    rejected = metrics.by_label("driftwatch_events_rejected_total", "reason")
    assert rejected["too_many_models"] == PER_MODEL
    assert sum(rejected.values()) == PER_MODEL
    # No series at all for the model beyond the limit.
    assert not [key for key in metrics.samples if ("model", EXTRA) in key[1]]

    aucs = metrics.by_label("driftwatch_measure", "model", measure="auc")
    assert set(aucs) == set(MODELS)
    for model, population_auc in MODELS.items():
        window = streams[model][-WINDOW:]
        positives = sum(e.y_true for e in window)
        assert aucs[model] == pytest.approx(brute_force_auc(window), rel=1e-12, abs=0), model
        # Sampling error of a 400-event window: well within 0.06 of the population AUC.
        assert math.isclose(aucs[model], population_auc, abs_tol=0.06), (model, aucs[model])
        window_events = metrics.by_label("driftwatch_window_events", "class", model=model)
        assert window_events == {"positive": positives, "negative": WINDOW - positives}
        correct = sum((e.y_score >= 0.5) == (e.y_true == 1) for e in window)
        accuracy = metrics.get("driftwatch_measure", model=model, measure="accuracy")
        assert accuracy == pytest.approx(correct / WINDOW, rel=1e-12, abs=0), model
    assert aucs["good"] > aucs["poor"] + 0.2
