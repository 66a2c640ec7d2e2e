"""The broker goes away and comes back: the agent lives on, says so on /readyz, loses nothing.

On Tansu (memory storage) the broker that comes back (same port) is empty: no topic, no
group, no committed offset, and the new log restarts at offset 0 while the agent's position
is still where the old log ended. The test recreates the topic and, as in
tests/kafka/test_source_and_producers.py's broker-loss test, produces only once the agent is ready
again.
Then the new log is shorter than the agent's old position. Kafka would answer a fetch there
with OFFSET_OUT_OF_RANGE (and the client would apply auto_offset_reset); Tansu 0.6 answers
with no records, so the agent must notice by itself (KafkaSource resets a position past the
end of the log). The first records after the return are fewer than before the outage: were
the new log already past the old position, no client could tell the old position from a valid
one (with Kafka neither). Once those are processed, more records than before the outage
follow, and all of them must arrive too.

On Apache Kafka (disk storage) the broker comes back with its log, group and committed
offsets: the agent resumes at its position, nothing is reset and nothing read twice.
"""

from __future__ import annotations

import time

from driftwatch.simulate import generate
from tests.broker import Broker
from tests.integration.helpers import (
    StartAgent,
    create_topics,
    event_json,
    http_get,
    produce,
    wait_for,
)

MODEL = "churn"
BEFORE = 300
RIGHT_AFTER = 100  # < BEFORE: see the module docstring
LATER = 500  # > BEFORE
OUTAGE_S = 40.0
"""Bound on /readyz turning 503: with the default readiness settings an idle agent probes the
broker every 5 s, a probe of a dead broker fails after its 5 s request timeout, and failures
must last 5 s: 15 s, plus margin for a loaded runner."""
RETURN_S = 60.0
"""Bound on /readyz turning 200 after the broker's return: the agent finds itself evicted
(its next heartbeat or commit), joins the new broker's group (about 3 s on Tansu, 9 s seen
under load) and the broker must then answer for ready_after_seconds (10 s by default): about
15 s on an idle machine; the rest is margin for a loaded runner."""


def test_agent_survives_broker_loss_and_processes_everything_after_it(
    broker: Broker, topic: str, start_agent: StartAgent
) -> None:
    agent = start_agent("survivor", {"events": {"model_source": "constant",
                                                "model_constant": MODEL}})
    stream = generate("stationary", seed=9, length=BEFORE + RIGHT_AFTER + LATER)
    events = [event_json(e) for e in stream]
    produce(broker.bootstrap, topic, events[:BEFORE])
    agent.wait_processed(BEFORE)
    assert agent.readyz() == 200

    broker.stop()
    wait_for(lambda: agent.readyz() == 503, OUTAGE_S, "/readyz to turn 503 without a broker",
             diagnostics=agent.log)
    # Alive, healthy, and still serving what it knows, for a while.
    for _ in range(3):
        assert agent.running
        assert http_get(f"{agent.url}/healthz")[0] == 200
        metrics = agent.scrape()
        assert metrics.get("driftwatch_events_processed_total", model=MODEL) == BEFORE
        assert metrics.get("driftwatch_ready") == 0
        assert metrics.get("driftwatch_not_ready", reason="kafka") == 1
        assert agent.readyz() == 503

    broker.start()  # same port; empty on Tansu, as it was on Apache Kafka
    if not broker.persistent:
        create_topics(broker.bootstrap, topic)
    agent.wait_ready(RETURN_S)
    assert agent.running
    # Once ready again it stays ready: no flapping while the group settles.
    answers = []
    for _ in range(40):
        answers.append(agent.readyz())
        time.sleep(0.2)
    assert set(answers) == {200}, answers

    produce(broker.bootstrap, topic, events[BEFORE:BEFORE + RIGHT_AFTER])
    agent.wait_processed(BEFORE + RIGHT_AFTER)
    produce(broker.bootstrap, topic, events[BEFORE + RIGHT_AFTER:])
    metrics = agent.wait_processed(len(events))
    assert metrics.get("driftwatch_ready") == 1
    assert metrics.get("driftwatch_not_ready", reason="kafka") == 0
    assert metrics.total("driftwatch_events_rejected_total") == 0
    # Counted: the broker's return, and on Tansu the new log that no longer reached the old
    # position (Apache Kafka kept the log: no reset).
    assert metrics.get("driftwatch_broker_reconnects_total") >= 1
    batches = metrics.get("driftwatch_batch_processing_seconds_count")
    assert batches is not None and batches >= 1
    assert metrics.get("driftwatch_batch_processing_seconds_bucket", le="+Inf") == batches
    resets = {frozenset({("topic", topic), ("partition", "0"), ("reason", "beyond_log_end")}):
              1.0} if not broker.persistent else {}
    assert metrics.series("driftwatch_offset_resets_total") == resets
    assert agent.readyz() == 200
    assert agent.running
