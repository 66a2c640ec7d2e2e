"""Predictions and labels as separate records, joined by the agent, against a real broker.

Records go to one topic with one partition (settings ``join.kind_field``), so the agent
reads them in exactly the order they were produced, and the offline reference (the core's
:class:`~driftwatch.core.delayed.DelayedLabels` and one :class:`~driftwatch.core.monitor.Monitor`
per model, fed the same records in the same order) must end in exactly the agent's state:
the monitors' windows and detectors and the join's pending records and counts, as the
agent's checkpoint holds them. The records include labels before their predictions,
replayed duplicates of both kinds, predictions never labelled (they expire or overflow) and
labels never predicted. The two-topic form is checked on what does not depend on how the
consumer interleaves the topics.
"""

from __future__ import annotations

import json
import random
import signal
from pathlib import Path
from typing import Any

from driftwatch.core.join import Label, Prediction
from driftwatch.core.monitor import Monitor
from driftwatch.settings import Settings
from driftwatch.simulate import delayed_labels, generate
from driftwatch.state.checkpoint import FILENAME
from tests.broker import Broker
from tests.integration.helpers import TOPIC, Metrics, StartAgent, create_topics, produce

JOIN = {
    "enabled": True,
    "kind_field": "kind",
    "max_pending": 100,
    "max_age_seconds": 600.0,
    "max_pending_labels": 10,
    "max_label_age_seconds": 30.0,
    "remember": 2000,
    "score_drift": {"window": 200, "block_size": 100, "reference_size": 500, "arl": 20},
}
MONITORING = {"defaults": {"window_size": 300, "sample_every": 25}}
OVERRIDES = {"join": JOIN, "monitoring": MONITORING, "events": {"model_source": "field"}}


def records(seed: int, length: int) -> list[Prediction | Label]:
    """Two models' predictions and labels (exponential delays around 100 s, a tenth never
    labelled), some labels moved before their prediction, some records delivered twice,
    and a few labels whose prediction never comes."""
    rng = random.Random(seed)
    out: list[Prediction | Label] = []
    for model, scenario in (("fraud", "sudden_auc_drop"), ("churn", "stationary")):
        out += delayed_labels(generate(scenario, seed=seed, length=length), seed=seed + 1,
                              model=model, mean_delay=100.0, unlabelled=0.1,
                              id_prefix=f"{model}-")
    out.sort(key=lambda r: r.ts)
    for i in range(len(out) - 1, 0, -1):
        if isinstance(out[i], Label) and rng.random() < 0.05:  # label overtakes prediction
            j = next((j for j in range(i - 1, -1, -1) if out[j].event_id == out[i].event_id),
                     None)
            if j is not None:
                out.insert(j, out.pop(i))
    for i in sorted(rng.sample(range(len(out)), len(out) // 50), reverse=True):
        out.insert(min(len(out), i + rng.randrange(1, 200)), out[i])  # a replay
    out += [Label(f"ghost-{i}", 1, out[-1].ts + i) for i in range(20)]
    return out


def as_json(record: Prediction | Label) -> bytes:
    if isinstance(record, Prediction):
        value: dict[str, Any] = {"kind": "prediction", "event_id": record.event_id,
                                 "model": record.model, "score": record.y_score,
                                 "ts": record.ts}
    else:
        value = {"kind": "label", "event_id": record.event_id, "label": record.y_true,
                 "ts": record.ts}
    return json.dumps(value).encode()


def offline(rs: list[Prediction | Label], settings: Settings) -> tuple[dict[str, Any],
                                                                      dict[str, Any]]:
    """Monitor and join states after the records, computed in-process."""
    labels = settings.join.delayed_labels(
        lambda model: settings.monitoring.monitor_config(model).threshold)
    monitors: dict[str, Monitor] = {}
    for r in rs:
        joined = labels.add_prediction(r)[0] if isinstance(r, Prediction) else labels.add_label(r)
        if isinstance(r, Prediction) and r.model not in monitors:
            monitors[r.model] = Monitor(r.model, settings.monitoring.monitor_config(r.model))
        if joined is not None:
            monitors[joined.model].update(joined.event())
    plain = json.loads(json.dumps({m: mon.export_state() for m, mon in monitors.items()}))
    return plain, json.loads(json.dumps(labels.export_state()))


def checkpoint(directory: Path) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads((directory / FILENAME).read_text())["payload"]
    return payload


def wait_all(agent: Any, rs: list[Prediction | Label]) -> Metrics:
    """Until the agent has read every record (accepted, duplicate or late)."""
    labels = sum(isinstance(r, Label) for r in rs)
    predictions = len(rs) - labels

    def done(m: Metrics) -> bool:
        seen = m.total("driftwatch_join_predictions_total") + m.total(
            "driftwatch_join_dropped_total", stream="prediction", reason="duplicate")
        return seen == predictions and m.total("driftwatch_join_labels_total") == labels

    return agent.wait_metrics(done, f"{predictions} predictions and {labels} labels read")


def test_one_topic_equals_the_offline_join(broker: Broker, topic: str,
                                           start_agent: StartAgent, tmp_path: Path) -> None:
    rs = records(seed=3, length=2500)
    agent = start_agent("agent", OVERRIDES)
    produce(broker.bootstrap, TOPIC, [as_json(r) for r in rs])
    metrics = wait_all(agent, rs)
    assert agent.stop(signal.SIGTERM)[0] == 0
    settings = Settings.model_validate(agent.settings)
    monitors, join = offline(rs, settings)
    saved = checkpoint(tmp_path / "agent-state")
    assert saved["monitors"] == monitors
    assert saved["join"] == join
    # The label-free watches saw every prediction once, and their CUSUMs (tuned to alarm
    # often here: 20 blocks between false alarms) alarmed on the drifting model's scores,
    # exported as the checkpoint holds them.
    for model, watch in join["watches"].items():
        assert watch["drift"]["seen"] == join["models"][model][0]
        alarms = sum(n for _, _, n in watch["alarms"])
        assert alarms > 0 or model == "churn"
        assert metrics.total("driftwatch_score_drift_alarms_total", model=model) == alarms
    # Every reason happened, and the metrics say what the checkpoint says.
    dropped = join["join"]["dropped"]
    assert all(dropped[f"{s}/{r}"] > 0 for s in ("prediction", "label")
               for r in ("duplicate", "late", "expired", "overflow")), dropped
    for model in ("fraud", "churn"):
        assert metrics.get("driftwatch_join_matched_total", model=model) == \
            join["models"][model][1] > 1000
        assert metrics.get("driftwatch_join_pending_predictions", model=model) == \
            sum(1 for p in join["join"]["predictions"] if p[1] == model)
        assert metrics.get("driftwatch_label_delay_seconds_count", model=model) == \
            join["models"][model][1]
    assert metrics.get("driftwatch_join_dropped_total", stream="label",
                       reason="duplicate") == dropped["label/duplicate"]


def test_restart_with_pending_predictions_loses_and_double_counts_nothing(
        broker: Broker, topic: str, start_agent: StartAgent, tmp_path: Path) -> None:
    rs = records(seed=4, length=2000)
    half = len(rs) // 2
    agent = start_agent("agent", OVERRIDES)
    produce(broker.bootstrap, TOPIC, [as_json(r) for r in rs[:half]])
    wait_all(agent, rs[:half])
    assert agent.stop(signal.SIGTERM)[0] == 0
    pending = checkpoint(tmp_path / "agent-state")["join"]["join"]["predictions"]
    assert len(pending) > 50  # the restart has predictions waiting for their labels
    agent.start()
    produce(broker.bootstrap, TOPIC, [as_json(r) for r in rs[half:]])
    wait_all(agent, rs)
    assert agent.stop(signal.SIGTERM)[0] == 0
    monitors, join = offline(rs, Settings.model_validate(agent.settings))
    saved = checkpoint(tmp_path / "agent-state")
    assert saved["monitors"] == monitors
    assert saved["join"] == join


def test_flood_of_never_labelled_predictions_stays_bounded(
        broker: Broker, topic: str, start_agent: StartAgent, tmp_path: Path) -> None:
    flood = 40_000
    agent = start_agent("agent", OVERRIDES)
    produce(broker.bootstrap, TOPIC, [
        json.dumps({"kind": "prediction", "event_id": f"p{i}", "model": "fraud",
                    "score": (i % 97) / 97, "ts": 1.7e9 + i / 10}).encode()
        for i in range(flood)])
    metrics = agent.wait_metrics(
        lambda m: m.total("driftwatch_join_predictions_total") == flood,
        f"{flood} predictions read")
    bound = JOIN["max_pending"]
    assert metrics.get("driftwatch_join_pending_predictions", model="fraud") == bound
    assert metrics.get("driftwatch_join_dropped_total", stream="prediction",
                       reason="overflow") == flood - bound
    assert agent.stop(signal.SIGTERM)[0] == 0
    # What survives a restart is bounded too: the newest predictions, nothing else.
    saved = checkpoint(tmp_path / "agent-state")["join"]["join"]
    assert sorted(int(p[0][1:]) for p in saved["predictions"]) == list(range(flood - bound,
                                                                               flood))
    assert (tmp_path / "agent-state" / FILENAME).stat().st_size < 100_000


def test_two_topics(broker: Broker, start_agent: StartAgent) -> None:
    """Predictions and labels on their own topics: however the consumer interleaves them,
    with bounds that are never reached every prediction meets its label exactly once."""
    create_topics(broker.bootstrap, "predictions", "labels")
    rs = [r for r in records(seed=5, length=1500) if not r.event_id.startswith("ghost")]
    join = {"enabled": True, "predictions_topic": "predictions", "labels_topic": "labels",
            "max_age_seconds": 1e9, "max_label_age_seconds": 1e9,
            "score_drift": {"enabled": False}}
    agent = start_agent("agent", {"join": join, "events": {"model_source": "field"},
                                  "kafka": {"topics": ["predictions", "labels"]},
                                  "monitoring": {"defaults": {"window_size": 5000}}})
    produce(broker.bootstrap, "labels", [as_json(r) for r in rs if isinstance(r, Label)])
    produce(broker.bootstrap, "predictions",
            [as_json(r) for r in rs if isinstance(r, Prediction)])
    metrics = wait_all(agent, rs)
    pairs = {r.event_id for r in rs if isinstance(r, Label)} & {
        r.event_id for r in rs if isinstance(r, Prediction)}
    assert metrics.total("driftwatch_join_matched_total") == len(pairs)
    assert metrics.total("driftwatch_events_processed_total") == len(pairs)
    assert metrics.total("driftwatch_join_pending_predictions") == len(
        {r.event_id for r in rs if isinstance(r, Prediction)}) - len(pairs)
    # The windows hold every pair: their class counts are the labels', whatever the order.
    truth = {r.event_id: r.y_true for r in rs if isinstance(r, Label)}
    for model in ("fraud", "churn"):
        positives = sum(truth[i] for i in pairs if i.startswith(model))
        assert metrics.get("driftwatch_window_events", model=model, **{"class": "positive"}) \
            == positives
