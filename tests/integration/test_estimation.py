"""The estimate in a running agent, against a real broker: predictions and labels as separate
records on one topic, the estimate exported beside the realized measures, checkpointed and
restored across a restart exactly.

The offline reference is the core fed the same records in the same order (the settings'
join with each model's monitor, predictions entering its estimate as the agent's pipeline
does): the agent's checkpoint must hold exactly its state, and the scrape its values.
"""

from __future__ import annotations

import json
import math
import random
import signal
from pathlib import Path
from typing import Any

from driftwatch.core.join import Label, Prediction
from driftwatch.core.monitor import Monitor
from driftwatch.settings import Settings
from driftwatch.state.checkpoint import FILENAME
from tests.broker import Broker
from tests.integration.helpers import TOPIC, Metrics, StartAgent, produce

T0 = 1_750_000_000.0
OVERRIDES = {
    "join": {"enabled": True, "kind_field": "kind", "score_drift": {"enabled": False}},
    "events": {"model_source": "field"},
    "monitoring": {"defaults": {"window_size": 500,
                                "estimation": {"enabled": True, "check_arl": 50}}},
}


def records(seed: int, length: int) -> list[Prediction | Label]:
    """Calibrated scores σ(−1.4 + 1.5·x) of one model, each label 300 s after its
    prediction (one a second), a tenth never labelled; from half-way the labels of scores in
    [0.6, 0.9) flip (a concept change the scores do not show)."""
    rng = random.Random(seed)
    out: list[tuple[float, Prediction | Label]] = []
    for i in range(length):
        p = 1.0 / (1.0 + math.exp(-(-1.4 + 1.5 * rng.gauss(0.0, 1.0))))
        y = int(rng.random() < p)
        if i >= length // 2 and 0.6 <= p < 0.9:
            y = 1 - y
        out.append((T0 + i, Prediction(f"e{i}", "fraud", p, None, T0 + i)))
        if rng.random() < 0.9:
            out.append((T0 + i + 300.0, Label(f"e{i}", y, T0 + i + 300.0)))
    out.sort(key=lambda pair: pair[0])
    return [record for _, record in out]


def as_json(record: Prediction | Label) -> bytes:
    if isinstance(record, Prediction):
        value: dict[str, Any] = {"kind": "prediction", "event_id": record.event_id,
                                 "model": record.model, "score": record.y_score,
                                 "ts": record.ts}
    else:
        value = {"kind": "label", "event_id": record.event_id, "label": record.y_true,
                 "ts": record.ts}
    return json.dumps(value).encode()


def offline(rs: list[Prediction | Label], settings: Settings) -> Monitor:
    labels = settings.join.delayed_labels(lambda model: 0.5)
    monitor = Monitor("fraud", settings.monitoring.monitor_config("fraud"))
    for r in rs:
        if isinstance(r, Prediction):
            joined = labels.add_prediction(r, monitor.estimate)[0]
        else:
            joined = labels.add_label(r)
        if joined is not None:
            monitor.update(joined.event())
    return monitor


def wait_all(agent: Any, rs: list[Prediction | Label]) -> Metrics:
    labels = sum(isinstance(r, Label) for r in rs)
    predictions = len(rs) - labels
    metrics: Metrics = agent.wait_metrics(
        lambda m: m.total("driftwatch_join_predictions_total") == predictions
        and m.total("driftwatch_join_labels_total") == labels,
        f"{predictions} predictions and {labels} labels read")
    return metrics


def test_the_estimate_is_exported_checkpointed_and_restored(
        broker: Broker, topic: str, start_agent: StartAgent, tmp_path: Path) -> None:
    rs = records(seed=12, length=8_000)
    half = len(rs) // 2
    agent = start_agent("agent", OVERRIDES)
    produce(broker.bootstrap, TOPIC, [as_json(r) for r in rs[:half]])
    wait_all(agent, rs[:half])
    assert agent.stop(signal.SIGTERM)[0] == 0
    agent.start()  # restored from its checkpoint, estimate included
    produce(broker.bootstrap, TOPIC, [as_json(r) for r in rs[half:]])
    metrics = wait_all(agent, rs)
    assert agent.stop(signal.SIGTERM)[0] == 0

    monitor = offline(rs, Settings.model_validate(agent.settings))
    saved = json.loads((tmp_path / "agent-state" / FILENAME).read_text())["payload"]
    assert saved["monitors"]["fraud"] == json.loads(json.dumps(monitor.export_state()))
    view = monitor.snapshot().estimate
    assert view is not None
    for measure, estimate in view.estimates.items():
        assert metrics.get("driftwatch_measure_estimated", model="fraud",
                           measure=measure) == estimate.value
        assert metrics.get("driftwatch_measure_estimated_standard_error", model="fraud",
                           measure=measure) == estimate.standard_error
    assert metrics.get("driftwatch_estimate_trusted", model="fraud") == \
        (1.0 if view.trusted else 0.0)
    # The concept change half-way was caught by the self-check once its labels came.
    alarms = metrics.get("driftwatch_alarms_total", model="fraud", measure="calibration_drift",
                         detector="cusum", level="drift")
    assert alarms is not None and alarms >= 1
    assert alarms == monitor.snapshot().alarms[("calibration_drift", "cusum", "drift")]
