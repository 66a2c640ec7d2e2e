"""``replay`` ≡ the agent: the same records, produced to a topic of a real Tansu broker and
consumed by the agent (a real process), replayed from the Kafka range and from a JSON Lines
dump of the same values, give identical alarms and identical final metrics.

The records hold two drifting models, a third one beyond ``limits.max_models`` and bad
records of several kinds, so every branch of the one processing step (fast decoder,
general decoder, rejections, the model limit) is taken on both sides. The agent publishes
its alarms to a topic; the replays' final snapshots are rendered by the exporter's own
collector and compared sample by sample with the agent's scrape. Once more with
``events.only_models`` naming one model (a sidecar's settings on a shared topic): the other
models' records are skipped and counted alike, and only that model is monitored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from driftwatch.core.monitor import Alarm
from driftwatch.replay.kafka_range import KafkaRangeSource
from driftwatch.replay.run import Replay, ReplayResult, run
from driftwatch.replay.sources import JsonLinesSource
from driftwatch.settings import Settings
from driftwatch.simulate import generate
from driftwatch.sinks.alarms import alarm_record
from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.snapshot import AgentSnapshot
from tests.broker import Broker
from tests.integration.helpers import (
    JOIN_S,
    TOPIC,
    Metrics,
    StartAgent,
    consume,
    create_topics,
    deep_merge,
    event_json,
    produce,
)

ALARMS_TOPIC = "alarms"
LENGTH = 5000
OVERRIDES: dict[str, Any] = {
    "limits": {"max_models": 2},
    "kafka": {"alarms_topic": ALARMS_TOPIC},
}
BAD = [b"not json", b"[1]", b'{"model": "a", "score": 0.5}', b'{"model": "b", "label": 1, '
       b'"score": "high"}', b'{"model": "a", "label": 1, "score": 0.5, "ts": "2024-01-01"}',
       b'{"model": "a", "label": true, "score": 0.5, "ts": "2024-01-01T00:00:00Z"}']

BEYOND = json.dumps({"model": "c", "label": 1, "score": 0.9}).encode()


def values() -> list[bytes]:
    """Models a and b (drifting), c (beyond the limit), and bad records, interleaved."""
    a = [event_json(e, "a") for e in generate("sudden_auc_drop", seed=11, length=LENGTH)]
    b = [event_json(e, "b") for e in generate("sudden_auc_drop", seed=12, length=LENGTH)]
    result: list[bytes] = []
    for index, (x, y) in enumerate(zip(a, b, strict=True)):
        result += [x, y]
        if index % 500 == 250:
            result.append(BAD[(index // 500) % len(BAD)])
        if index % 700 == 300:
            result.append(BEYOND)
    return result


def metrics_of(result: ReplayResult, settings: Settings) -> Metrics:
    """The replay's final state as the agent's exporter renders it."""
    snapshot = AgentSnapshot(monitors=tuple(result.snapshots.values()),
                             rejected=result.rejected, consumer_lag={}, ready=True,
                             started_time=0.0, skipped=result.skipped)
    registry = CollectorRegistry(auto_describe=True)
    registry.register(SnapshotCollector(lambda: snapshot, settings.alerts.thresholds))
    return Metrics.parse(generate_latest(registry).decode())


def state(metrics: Metrics) -> dict[Any, str]:
    """The monitors' samples and the skip counts, values as text so that NaN equals NaN."""
    skipped = {key: value for key, value in metrics.samples.items()
               if key[0] == "driftwatch_events_skipped_total"}
    return {key: repr(value) for key, value in {**metrics.state(), **skipped}.items()}


def published(alarm: Alarm) -> dict[str, Any]:
    """An alarm as the agent publishes it (JSON, sorted keys, non-finite as null)."""
    record: dict[str, Any] = json.loads(json.dumps(alarm_record(alarm), sort_keys=True))
    return record


@pytest.mark.parametrize("only_models", [[], ["b"]], ids=["every model", "only_models"])
def test_replay_gives_the_agent_s_alarms_and_final_metrics(
    broker: Broker, start_agent: StartAgent, tmp_path: Path, only_models: list[str]
) -> None:
    create_topics(broker.bootstrap, TOPIC, ALARMS_TOPIC)
    records = values()
    produce(broker.bootstrap, TOPIC, records)
    agent = start_agent(overrides=deep_merge(OVERRIDES,
                                             {"events": {"only_models": only_models}}))
    settings = Settings.model_validate(agent.settings)
    fmt = settings.events.event_format()

    def replay() -> Replay:
        return Replay(fmt, settings.monitoring.monitor_config, settings.limits.max_models,
                      only_models=settings.events.only_models)

    dump = tmp_path / "records.jsonl"
    dump.write_bytes(b"".join(value + b"\n" for value in records))
    from_file = run(JsonLinesSource(str(dump)), replay(), str(dump))
    from_kafka = run(KafkaRangeSource(TOPIC, settings.kafka.consumer_config()), replay(),
                     TOPIC)
    assert from_file.records == from_kafka.records == len(records)
    if only_models:  # a and c skipped: b alone, within the limit
        assert list(from_file.skipped_models) == ["a", "c"]
        assert from_file.skipped_models["c"] == records.count(BEYOND)
        assert from_file.skipped_models["a"] >= LENGTH  # and two BAD records that decode
        assert from_file.rejected["too_many_models"] == 0 < from_file.rejected_total
        assert list(from_file.snapshots) == ["b"] and len(from_file.alarms) > 1
    else:
        assert from_file.skipped == {}
        assert from_file.rejected["too_many_models"] > 0 and from_file.rejected_total > \
            from_file.rejected["too_many_models"], "the limit and the decoder both reject"
        assert len(from_file.alarms) > 2, "both drifts raise alarms"

    # The agent has taken every record once the events, rejections and skips add up.
    def done(metrics: Metrics) -> bool:
        return metrics.total("driftwatch_events_processed_total") == from_file.events and \
            metrics.total("driftwatch_events_rejected_total") == from_file.rejected_total \
            and metrics.total("driftwatch_events_skipped_total") == from_file.skipped_total

    scraped = agent.wait_metrics(done, "every record processed", JOIN_S)
    assert scraped.series("driftwatch_measure", model="b"), "the state compared is not empty"
    alarms = [json.loads(r.value) for r in consume(broker.bootstrap, ALARMS_TOPIC,
                                                   len(from_file.alarms))]

    for result in (from_file, from_kafka):
        assert [published(found.alarm) for found in result.alarms] == alarms
        assert state(metrics_of(result, settings)) == state(scraped)
