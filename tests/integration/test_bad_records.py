"""Malformed records among good ones: each counted under its reason, dead-lettered with it,
and none of them stops the agent or costs a good event.

About the 5 MB record: Tansu 0.6 accepts it at produce time (it has no message size limit
by default); Apache Kafka refuses records above 1 MiB by default, so the topics of this test
are created as an operator who lets such records through would: ``max.message.bytes`` of
8 MiB. The test producer raises kafka-python's own 1 MiB ``max_request_size``, and
kafka-python's consumer delivers the record although it exceeds ``max_partition_fetch_bytes``
(KIP-74: an oversized first batch is returned whole). So the 5 MB path runs for real, next to
a record one byte above a small configured ``events.max_record_bytes`` and one exactly at it.

Hostile records are among them: a 400-digit integer score (which used to raise out of the
decoder and crash-loop the agent), model ids with a lone surrogate (which used to take
``/metrics`` down for every model) or a newline, and nesting deeper than the JSON parser's
recursion limit. Their dead-letter ``detail`` headers are short printable ASCII.
"""

from __future__ import annotations

import json
import os
import resource
import socket

from driftwatch.decoding.decoder import MAX_DETAIL_CHARS, REJECTION_REASONS
from driftwatch.simulate import generate
from tests.broker import Broker
from tests.integration.helpers import (
    MAX_PRODUCE_BYTES,
    TOPIC,
    StartAgent,
    consume,
    create_topics,
    event_json,
    produce,
)

MODEL = "scorer"
DEAD_LETTER_TOPIC = "events-rejected"
MAX_RECORD_BYTES = 65_536
GOOD = 450


def padded(size: int) -> bytes:
    """A valid event of exactly ``size`` bytes (padded with an ignored field)."""
    head = b'{"label": 1, "score": 0.75, "model": "' + MODEL.encode() + b'", "pad": "'
    tail = b'"}'
    value = head + b"x" * (size - len(head) - len(tail)) + tail
    assert len(value) == size
    json.loads(value)
    return value


BAD: list[tuple[bytes | None, str]] = [
    (b"this is not JSON {", "not_json"),
    (b'{"label": 1, "model": "scorer"}', "missing_field"),  # no score
    (b'{"score": 0.3, "model": "scorer"}', "missing_field"),  # no label
    (b'{"label": 1, "score": NaN, "model": "scorer"}', "bad_score"),
    (b'{"label": 0, "score": Infinity, "model": "scorer"}', "bad_score"),
    (b'{"label": 7, "score": 0.4, "model": "scorer"}', "bad_label"),
    (padded(MAX_RECORD_BYTES + 1), "too_large"),  # just above the configured limit
    (padded(5 * 1024 * 1024), "too_large"),  # 5 MiB
    (b"[1, 2, 3]", "not_object"),
    (None, "empty"),  # a tombstone
    (b'{"label": 1, "score": 0.2, "model": ""}', "bad_model"),
    (b'{"model": "scorer", "label": 1, "score": 1' + b"0" * 400 + b"}", "bad_score"),
    (b'{"label": 1, "score": 0.5, "model": "\\ud800"}', "bad_model"),
    (b'{"label": 1, "score": 0.5, "model": "a\\nforged log line"}', "bad_model"),
    # 20 000 deep: past the JSON parser's limit on every CPython we support (3.13 parses
    # 2 000 deep, 3.11 and 3.12 do not), so the record cap is 64 KiB here.
    (b'{"label": 1, "score": ' + b"[" * 20_000 + b"]" * 20_000 + b"}", "not_json"),
]


def test_bad_records_are_counted_dead_lettered_and_skipped(
    broker: Broker, start_agent: StartAgent
) -> None:
    # Created by the operator, with one partition so that its order is the source's (an
    # auto-created topic has four on Tansu), for records up to 8 MiB (see above).
    topic = TOPIC
    create_topics(broker.bootstrap, topic, DEAD_LETTER_TOPIC,
                  configs={"max.message.bytes": str(MAX_PRODUCE_BYTES)})
    agent = start_agent("bad", {
        "events": {"max_record_bytes": MAX_RECORD_BYTES},
        "kafka": {"dead_letter_topic": DEAD_LETTER_TOPIC},
    })
    good = [event_json(e, MODEL) for e in generate("stationary", seed=5, length=GOOD)]
    good.append(padded(MAX_RECORD_BYTES))  # exactly at the limit: accepted
    # Interleave: a bad record after every 30 good ones, the first before any good one.
    values: list[bytes | None] = []
    bad_at: dict[int, tuple[bytes | None, str]] = {}
    for i, record in enumerate(good):
        if i % 30 == 0 and i // 30 < len(BAD):
            bad_at[len(values)] = BAD[i // 30]
            values.append(BAD[i // 30][0])
        values.append(record)
    assert len(bad_at) == len(BAD)
    # Keyed by model, as producers usually do (a tombstone needs a key anyway).
    offsets = produce(broker.bootstrap, topic, values, keys=[MODEL.encode()] * len(values))

    metrics = agent.wait_metrics(
        lambda m: m.total("driftwatch_events_processed_total")
        + m.total("driftwatch_events_rejected_total") >= len(values),
        f"all {len(values)} records to be processed or rejected",
    )

    # Every good event reached the monitor, every bad record its reason, nothing else.
    assert metrics.by_label("driftwatch_events_processed_total", "model") == {
        MODEL: len(good)
    }
    expected = dict.fromkeys((*REJECTION_REASONS, "too_many_models"), 0)
    for _, reason in BAD:
        expected[reason] += 1
    assert metrics.by_label("driftwatch_events_rejected_total", "reason") == expected
    assert metrics.get("driftwatch_window_events", model=MODEL, **{"class": "positive"}) \
        + metrics.get("driftwatch_window_events", model=MODEL, **{"class": "negative"}) \
        == len(good)  # the default window (1000) holds them all

    # The agent is alive and well.
    assert agent.running
    assert agent.readyz() == 200

    # Each rejected record is on the dead-letter topic, byte for byte, with its reason and
    # where it came from; nothing else is (consume() reads one poll past the count).
    letters = consume(broker.bootstrap, DEAD_LETTER_TOPIC, len(BAD))
    assert len(letters) == len(BAD)
    got = [
        (letter.value, letter.key, dict(letter.headers)["reason"].decode(),
         int(dict(letter.headers)["source_offset"]), dict(letter.headers)["source_topic"])
        for letter in letters
    ]
    want = [
        (value, MODEL.encode(), reason, offsets[index], topic.encode())
        for index, (value, reason) in sorted(bad_at.items())
    ]
    assert [g[1:] for g in got] == [w[1:] for w in want]
    for (got_value, reason, *_), (want_value, *_) in zip(got, want, strict=True):
        assert got_value == want_value, f"{reason}: value changed ({len(got_value or b'')} "\
            f"bytes instead of {len(want_value or b'')})"
    for letter in letters:
        detail = dict(letter.headers)["detail"].decode("utf-8")
        assert detail and len(detail) <= MAX_DETAIL_CHARS, detail
        assert detail.isascii() and detail.isprintable(), detail


IDLE_CLIENTS = 400
DESCRIPTOR_LIMIT = 128


def test_a_crowd_of_idle_clients_cannot_exhaust_the_agent(
    broker: Broker, topic: str, start_agent: StartAgent
) -> None:
    """The agent's descriptor limit lowered to 128, then 400 connections that never send a
    request: the agent holds at most metrics.max_connections of them, keeps consuming,
    checkpointing (every second here) and answering scrapes, and stops cleanly."""
    agent = start_agent("crowd", {"metrics": {"max_connections": 16}})
    assert agent.proc is not None
    pid = agent.proc.pid
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (DESCRIPTOR_LIMIT, DESCRIPTOR_LIMIT))
    idle: list[socket.socket] = []
    try:
        for _ in range(IDLE_CLIENTS):
            idle.append(socket.create_connection(("127.0.0.1", agent.port), timeout=5))
        held = len(os.listdir(f"/proc/{pid}/fd"))
        assert held < DESCRIPTOR_LIMIT
        events = [event_json(e, MODEL) for e in generate("stationary", seed=3, length=300)]
        produce(broker.bootstrap, topic, events)
        metrics = agent.wait_processed(len(events))  # scrapes get through the crowd
        assert metrics.get("driftwatch_http_connections") <= 16
        assert metrics.get("driftwatch_http_connections_closed_total", reason="evicted") \
            >= IDLE_CLIENTS - 16
        for more in (1, 2):  # two more checkpoints with the crowd still there (a save
            # follows new records: nothing is saved while nothing is consumed)
            saves = agent.scrape().get("driftwatch_checkpoint_saves_total") or 0
            produce(broker.bootstrap, topic, events[:10])
            agent.wait_processed(len(events) + 10 * more)
            agent.wait_metrics(
                lambda m, saves=saves: (m.get("driftwatch_checkpoint_saves_total") or 0)
                > saves, "one more checkpoint save")
        assert agent.running, agent.log()
        assert len(os.listdir(f"/proc/{pid}/fd")) < DESCRIPTOR_LIMIT
    finally:
        for sock in idle:
            sock.close()
    code, _ = agent.stop()
    assert code == 0, agent.log()
    assert "Too many open files" not in agent.output()
    assert "Traceback" not in agent.output()
    assert (agent.directory / "crowd-state" / "checkpoint.json").exists()
