"""Stopping and restarting the agent: SIGTERM mid-stream loses and double-counts nothing.

The agent checkpoints its monitors together with the offsets they reflect, commits on stop,
and on restart seeks to the checkpoint's offsets; so a run interrupted by SIGTERM and resumed
must end in exactly the state of a run that was never interrupted: same event counts, same
alarm counts, the same value of every measure, bit for bit. The reference run consumes the
same records in its own group with its own checkpoint directory, at the same time.
"""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient

from driftwatch.exits import EXIT_CHECKPOINT, EXIT_INVALID
from driftwatch.simulate import generate
from driftwatch.state.checkpoint import FILENAME
from tests.broker import Broker
from tests.integration.helpers import (
    JOIN_S,
    STATE_METRICS,
    STOP_S,
    Metrics,
    StartAgent,
    create_topics,
    event_json,
    produce,
    wait_for,
)

PER_MODEL = 12_000
TOTAL = 2 * PER_MODEL
CHUNK = 800
PAUSE_S = 0.15
"""Records are produced in chunks with pauses (about 5 s in all), so the agent is stopped
while the stream is still arriving, not after it has caught up."""
STOP_AFTER = PER_MODEL + 1000
"""SIGTERM once this many events were processed: both models are then past their change
point (the middle of each stream), so the checkpoint holds detectors in the middle of a
change, not only ones that have seen a stationary stream."""

SETTINGS = {
    "monitoring": {
        "defaults": {
            "window_size": 500,
            "sample_every": 25,
            "watches": [
                {"measure": "auc", "detectors": [
                    {"name": "page_hinkley", "params": {"threshold": 1.0, "min_samples": 10}},
                    {"name": "adwin"},
                ]},
                {"measure": "gmean", "normalized": True, "floor": 0.8, "detectors": [
                    {"name": "page_hinkley", "params": {"threshold": 1.0, "min_samples": 10}},
                ]},
                {"measure": "error_stream", "detectors": [{"name": "ddm"}]},
            ],
        }
    },
}
"""Every kind of state a monitor checkpoints: the window, Page-Hinkley, ADWIN, DDM on every
event, and a floor with its raw threshold and threshold alarms."""

def records() -> list[bytes]:
    """Two models, interleaved: a sudden AUC drop, and a gradual one."""
    drop = list(generate("sudden_auc_drop", seed=21, length=PER_MODEL, auc=0.95, drop=0.3))
    slide = list(generate("gradual_auc_drop", seed=22, length=PER_MODEL, auc=0.9, drop=0.3))
    return [value for pair in zip(drop, slide, strict=True)
            for value in (event_json(pair[0], "drop"), event_json(pair[1], "slide"))]


def test_sigterm_mid_stream_then_restart_equals_an_uninterrupted_run(
    broker: Broker, topic: str, start_agent: StartAgent
) -> None:
    reference = start_agent("reference", SETTINGS)
    interrupted = start_agent("interrupted", SETTINGS)
    reference.wait_ready()
    interrupted.wait_ready()

    values = records()
    failures: list[BaseException] = []

    def produce_slowly() -> None:
        try:
            for start in range(0, TOTAL, CHUNK):
                produce(broker.bootstrap, topic, values[start:start + CHUNK])
                time.sleep(PAUSE_S)
        except BaseException as exc:  # reported by the test's thread below
            failures.append(exc)

    producing = threading.Thread(target=produce_slowly, daemon=True)
    producing.start()
    try:
        interrupted.wait_metrics(
            lambda m: m.total("driftwatch_events_processed_total") >= STOP_AFTER,
            "the interrupted agent to be under way",
        )
        assert producing.is_alive(), "the stream must still be arriving when SIGTERM comes"
        code, took = interrupted.stop(signal.SIGTERM)
    finally:
        producing.join(timeout=60)
    assert not producing.is_alive() and not failures, failures
    assert code == 0, interrupted.log()
    assert took < STOP_S
    # A final save, unless a periodic one had just covered every record read (then there is
    # nothing to save: seen on Apache Kafka, whose fetches can leave a pause at that moment).
    assert ("stopping: saving a checkpoint" in interrupted.output()
            or "stopping: nothing consumed since the last save" in interrupted.output())

    # It stopped mid-stream, and committed exactly what its checkpoint reflects.
    state_dir = interrupted.directory / "interrupted-state"
    checkpoint = json.loads((state_dir / FILENAME).read_text())
    (stopped_at,) = checkpoint["payload"]["offsets"].values()
    assert 0 < stopped_at < TOTAL, stopped_at
    assert sum(m["events"] for m in checkpoint["payload"]["monitors"].values()) == stopped_at
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        group = "group-interrupted"
        committed = admin.list_group_offsets({group: [KafkaTopicPartition(topic, 0)]})[group]
    finally:
        admin.close()
    assert {tp.partition: o.offset for tp, o in committed.items()} == {0: stopped_at}

    # Restarted with the same settings, checkpoint and group, it finishes the stream.
    interrupted.start()
    resumed = interrupted.wait_processed(TOTAL)
    uninterrupted = reference.wait_processed(TOTAL)
    assert "restoring checkpoint" in interrupted.output()

    assert resumed.by_label("driftwatch_events_processed_total", "model") == {
        "drop": PER_MODEL, "slide": PER_MODEL
    }
    assert uninterrupted.total("driftwatch_alarms_total", level="drift") > 0, "alarms to compare"
    assert uninterrupted.total("driftwatch_alarms_total", level="threshold") > 0
    assert_same(resumed, uninterrupted)


def assert_same(got: Metrics, want: Metrics) -> None:
    """Every sample about the monitors equal (floats exactly); see ``Metrics.state``."""
    got_samples, want_samples = got.state(), want.state()
    assert got_samples.keys() == want_samples.keys()
    different = {
        (name, tuple(sorted(labels))): (got_samples[(name, labels)], value)
        for (name, labels), value in want_samples.items()
        if got_samples[(name, labels)] != value
    }
    assert not different, f"restarted != uninterrupted (got, want): {different}"
    assert {name for name, _ in want_samples} == STATE_METRICS


def test_a_second_sigint_exits_at_once(
    broker: Broker, topic: str, start_agent: StartAgent
) -> None:
    """The first SIGINT starts a clean stop, whose final commit waits (up to its 5 s request
    timeout) for a broker that has hung; a second SIGINT cuts it short with status 130."""
    agent = start_agent("impatient", {
        # Nothing is saved or committed before the stop: the final commit has work to do.
        "checkpoint": {"interval_seconds": 3600},
    })
    produce(broker.bootstrap, topic, [event_json(e) for e in generate("stationary", seed=1,
                                                                     length=200)])
    agent.wait_processed(200)
    broker.pause()  # hung, not gone: requests are neither answered nor refused
    try:
        agent.send_signal(signal.SIGINT)
        wait_for(lambda: "stopping: saving a checkpoint" in agent.output(), STOP_S,
                 "the clean stop to begin", diagnostics=agent.log)
        time.sleep(1.0)
        assert agent.running, "the clean stop should still be waiting for the hung broker"
        second = time.monotonic()
        agent.send_signal(signal.SIGINT)
        code = agent.wait_exit(2.0)
        took = time.monotonic() - second
    finally:
        broker.resume()
    assert code == 130, agent.log()
    assert took < 1.0, took
    assert "stopped" not in agent.output().split("stopping: saving a checkpoint")[-1]


def test_an_incompatible_checkpoint_is_refused_and_left_untouched(
    broker: Broker, topic: str, start_agent: StartAgent
) -> None:
    agent = start_agent("versioned")
    produce(broker.bootstrap, topic, [event_json(e) for e in generate("stationary", seed=2,
                                                                     length=100)])
    agent.wait_processed(100)
    assert agent.stop()[0] == 0

    path = agent.directory / "versioned-state" / FILENAME
    envelope = json.loads(path.read_text())
    assert envelope["version"] == 1
    envelope["version"] = 99
    path.write_text(json.dumps(envelope))
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns

    agent.launch()
    code = agent.wait_exit(JOIN_S)
    assert code == EXIT_CHECKPOINT, agent.log()
    log = agent.output()
    assert "cannot restore the checkpoint" in log
    assert str(path) in log and "version 99" in log
    assert "Traceback" not in log
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in path.parent.iterdir()) == [FILENAME]


@pytest.mark.brokers("apache", reason="Tansu 0.6 describes no topic configuration to check")
def test_a_state_topic_that_is_not_compacted_is_refused_at_start(
    broker: Broker, topic: str, start_agent: StartAgent
) -> None:
    """A state topic created by hand with the broker's default policy (delete): the agent
    refuses to start (exit 2) with one line naming the setting, the topic and the fix,
    before it reads or commits anything."""
    create_topics(broker.bootstrap, "refused-state")  # the default name: <group_id>-state
    produce(broker.bootstrap, topic, [event_json(e) for e in generate("stationary", seed=3,
                                                                     length=10)])
    agent = start_agent("refused", {"checkpoint": {"backend": "kafka"}}, group="refused",
                        start=False)
    agent.launch()
    assert agent.wait_exit(JOIN_S) == EXIT_INVALID, agent.log()
    log = agent.output()
    assert "checkpoint.topic (DRIFTWATCH_CHECKPOINT__TOPIC): state topic refused-state " \
        "exists with cleanup.policy=delete, not compact: " in log, log
    assert "Traceback" not in log and "partitions assigned" not in log
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        assert "refused" not in {group["group_id"] for group in admin.list_groups()}
    finally:
        admin.close()
