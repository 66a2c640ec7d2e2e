"""Hostile records through the agent's whole path, without Kafka: decode → monitors →
snapshot → collector → a real HTTP scrape, then a checkpoint round trip.

Whatever the records hold (huge integers, lone surrogates, deep nesting, NaN literals,
invalid encodings), nothing raises, every record is counted once (processed by a model or
rejected by reason), every scrape answers 200 with no series dropped (the decoder refuses
what the exposition could not carry), and the checkpoint holds every model id.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from driftwatch.agent.loop import Agent
from driftwatch.decoding.decoder import REJECTION_REASONS
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.prometheus.server import MetricsServer
from tests.decoding.test_decoder import hostile_records

MODELS = ["churn", "modèle", "模型", "a b", "🙂"]

good_records = st.builds(
    lambda model, label, score: json.dumps(
        {"model": model, "label": label, "score": score}, ensure_ascii=False
    ).encode(),
    st.sampled_from(MODELS),
    st.sampled_from([0, 1]),
    st.floats(-1e6, 1e6, allow_nan=False),
)
records = st.lists(st.one_of(good_records, hostile_records(), st.binary(max_size=64)),
                   min_size=1, max_size=30)


@dataclass
class Harness:
    agent: Agent
    server: MetricsServer
    sent: int = 0
    offsets: dict[int, int] = field(default_factory=dict)

    def scrape(self) -> dict[str, dict[str, float]]:
        """Each family's samples, keyed by their label values; asserts status 200."""
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            self.server.url, timeout=5
        ) as response:
            assert response.status == 200
            text = response.read().decode("utf-8")
        families: dict[str, dict[str, float]] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                key = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                families.setdefault(sample.name, {})[key] = sample.value
        return families


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    directory = tmp_path_factory.mktemp("checkpoint")
    agent = Agent(Settings(checkpoint={"backend": "file", "directory": str(directory)},
                           limits={"max_models": 4}),  # some models beyond: too_many_models
                  snapshot_interval_s=0.0)
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: agent.snapshot))
    with MetricsServer(registry, "127.0.0.1", 0, lambda: True) as server:
        yield Harness(agent, server)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(batch=records, keys=st.lists(st.none() | st.binary(max_size=6), min_size=30, max_size=30))
def test_hostile_records_through_decode_monitors_and_a_real_scrape(
    harness: Harness, batch: list[bytes], keys: list[bytes | None]
) -> None:
    agent = harness.agent
    for value, key in zip(batch, keys, strict=False):
        partition = harness.sent % 3
        offset = harness.offsets.get(partition, 0)
        agent.process(Record("events", partition, offset, key, value, 0))
        harness.offsets[partition] = offset + 1
        harness.sent += 1
    agent._publish_snapshot()
    metrics = harness.scrape()
    processed = sum(metrics.get("driftwatch_events_processed_total", {}).values())
    rejected = metrics["driftwatch_events_rejected_total"]
    assert processed + sum(rejected.values()) == harness.sent  # each record counted once
    assert {key.removeprefix("reason=") for key in rejected} == {
        *REJECTION_REASONS, "too_many_models"
    }
    assert rejected["reason=undecodable"] == 0  # the last resort never had to act
    assert metrics["driftwatch_scrape_dropped_series_total"][""] == 0
    assert set(agent.positions.offsets.values()) <= set(harness.offsets.values())


def test_after_the_fuzz_the_checkpoint_holds_every_model(harness: Harness) -> None:
    agent = harness.agent
    for i, model in enumerate(MODELS):  # whether or not the fuzz above ran first
        value = json.dumps({"model": model, "label": i % 2, "score": 0.5}).encode()
        agent.process(Record("other", 0, i, None, value, 0))
    assert agent.checkpoint()
    again = Agent(agent.settings)
    again.restore()
    restored, saved = again.monitors.export_state(), agent.monitors.export_state()
    assert json.dumps(restored, sort_keys=True) == json.dumps(saved, sort_keys=True)
    assert set(restored) <= set(MODELS) and restored
