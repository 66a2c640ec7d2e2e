"""The simulated models' producer: the record format the agent decodes, pacing, and failure,
against a real broker (Tansu, one per test). Every wait is bounded."""

from __future__ import annotations

import itertools
import json
import threading
import time

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from driftwatch.core.events import Event
from driftwatch.decoding.decoder import Decoded, EventFormat, decode
from driftwatch.demo import feed as feed_module
from driftwatch.demo.feed import BrokersUnreachable, Feed, encode_record, ensure_topic
from driftwatch.simulate import generate
from tests.broker import TansuBroker, free_port

pytestmark = pytest.mark.brokers(
    "tansu", reason="the demo's feed, which always runs on the demo's embedded Tansu"
)

TOPIC = "events"
WAIT_S = 20.0


def read_all(bootstrap: str, topic: str, count: int) -> list[tuple[bytes, bytes]]:
    """``(key, value)`` of the first ``count`` records of partition 0 (fails after WAIT_S)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False)
    try:
        consumer.assign([KafkaTopicPartition(topic, 0)])
        records: list[tuple[bytes, bytes]] = []
        deadline = time.monotonic() + WAIT_S
        while len(records) < count and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend((r.key, r.value) for r in batch)
        assert len(records) == count, f"{len(records)} records, {count} expected"
        return records
    finally:
        consumer.close()


# -- the record format ---------------------------------------------------------------------


def test_encode_record_default_format_decodes_to_the_same_event() -> None:
    event = Event(0, 0.25, ts=1_700_000_000.5)
    key, value = encode_record(event, "churn")
    assert key == b"churn"
    assert json.loads(value) == {"label": 0, "score": 0.25, "ts": 1_700_000_000.5,
                                 "model": "churn"}
    assert decode(value, key, EventFormat()) == Decoded("churn", event)


@pytest.mark.parametrize("model_source", ["field", "key", "constant"])
def test_encode_record_follows_a_custom_format(model_source: str) -> None:
    fmt = EventFormat(label_field="y", score_field="p", prediction_field="yhat", time_field="t",
                      model_field="m", model_source=model_source,  # type: ignore[arg-type]
                      positive_label="fraud", negative_label="ok")
    event = Event(1, 3.5, y_pred=0)
    key, value = encode_record(event, "m1", fmt)
    fields = json.loads(value)
    assert fields["y"] == "fraud" and fields["p"] == 3.5 and fields["yhat"] == "ok"
    assert ("m" in fields) == (model_source == "field") and "t" not in fields
    expected_model = "default" if model_source == "constant" else "m1"
    assert decode(value, key, fmt) == Decoded(expected_model, event)


# -- producing -----------------------------------------------------------------------------


def test_feed_sends_every_model_keyed_and_paced(broker: TansuBroker) -> None:
    streams = {f"model-{k}": list(generate("stationary", seed=k, length=300)) for k in (1, 2)}
    assert ensure_topic({"bootstrap_servers": broker.bootstrap}, TOPIC)
    assert not ensure_topic({"bootstrap_servers": broker.bootstrap}, TOPIC)  # exists now
    feed = Feed({"bootstrap_servers": broker.bootstrap}, TOPIC, streams, rate=3000)
    started = time.monotonic()
    feed.run(threading.Event())
    elapsed = time.monotonic() - started
    stats = feed.stats()
    assert (stats.sent, stats.delivered, stats.failed) == (600, 600, 0)
    assert feed.exhausted
    assert elapsed >= 299 / 3000  # event 299 of each model is due 0.0997 s after the start
    records = read_all(broker.bootstrap, TOPIC, 600)
    fmt = EventFormat()
    for model, events in streams.items():
        decoded = [decode(value, key, fmt) for key, value in records if key == model.encode()]
        assert decoded == [Decoded(model, event) for event in events]  # in order, each once


def test_feed_stops_after_its_duration(broker: TansuBroker) -> None:
    stream = generate("stationary", seed=1, length=10_000)
    feed = Feed({"bootstrap_servers": broker.bootstrap}, TOPIC, {"m": stream}, rate=200,
                duration_s=0.5)
    feed.run(threading.Event())
    stats = feed.stats()
    assert stats.sent == 100, stats  # due in the first 0.5 s at 200/s, however slow the runner
    assert stats.delivered == stats.sent and not feed.exhausted


def test_a_feed_behind_at_its_end_still_sends_what_was_due(broker: TansuBroker) -> None:
    """A stalled feed (its clock leaps 0.15 s at every look, as on a starved runner) sends,
    at the end of its duration, every event due before it."""
    ticks = itertools.count()
    feed = Feed({"bootstrap_servers": broker.bootstrap}, TOPIC,
                {"m": generate("stationary", seed=1, length=1000)}, rate=200, duration_s=0.5,
                clock=lambda: next(ticks) * 0.15)
    feed.run(threading.Event())
    assert feed.stats().sent == 100


def test_feed_stops_when_asked(broker: TansuBroker) -> None:
    stream = generate("stationary", seed=1, length=10_000)
    feed = Feed({"bootstrap_servers": broker.bootstrap}, TOPIC, {"m": stream}, rate=100)
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    started = time.monotonic()
    feed.run(stop)
    assert time.monotonic() - started < 5.0
    assert 0 < feed.stats().sent < 100 and not feed.exhausted


def test_unreachable_brokers_are_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feed_module, "CONNECT_TIMEOUT_S", 0.5)
    config = {"bootstrap_servers": f"127.0.0.1:{free_port()}"}
    with pytest.raises(BrokersUnreachable, match=r"^cannot reach 127\.0\.0\.1:"):
        ensure_topic(config, TOPIC)
    feed = Feed(config, TOPIC, {"m": [Event(1, 0.5)]}, rate=10)
    with pytest.raises(BrokersUnreachable, match=r"^cannot reach 127\.0\.0\.1:"):
        feed.run(threading.Event())


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"^rate "):
        Feed({}, TOPIC, {"m": []}, rate=0)
    with pytest.raises(ValueError, match=r"^duration_s "):
        Feed({}, TOPIC, {"m": []}, rate=1, duration_s=0)
    with pytest.raises(ValueError, match=r"^streams "):
        Feed({}, TOPIC, {}, rate=1)
