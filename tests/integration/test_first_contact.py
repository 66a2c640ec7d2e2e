"""First contact, tried as a new user tries it: ``driftwatch run`` pointed where no broker is.

The real command in a subprocess, its real log, ``/readyz`` and ``/metrics``, a real SIGINT.
Where no broker answers, the agent must say so in one line naming the address and
``kafka.bootstrap_servers``, show the reason on ``/readyz``, attempt no save (it consumed
nothing), retry with backoff, and stop promptly with the exit status ``driftwatch run``
documents (1: never ready; nothing lost). An address that answers but is no Kafka listener is
a setting to fix: exit 2 at once. The time to the first line and to the stop is measured by
``python -m benchmarks first_contact`` (tests assert no wall-clock time); the bounds here only
decide when a stuck run fails.

A topic that does not exist is named, waited for and read once created. Refused credentials,
TLS mismatches and ACLs need Apache Kafka: tests/integration/test_security.py.
"""

from __future__ import annotations

import re
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient

from driftwatch.exits import EXIT_INVALID, EXIT_NEVER_READY, EXIT_OK
from driftwatch.simulate import generate
from tests.broker import Broker, free_port
from tests.integration.helpers import (
    AgentProcess,
    agent_settings,
    create_topics,
    event_json,
    http_get,
    produce,
    wait_for,
)

LINE_S = 30.0
"""Bound on the first error line (it comes within milliseconds of the start on an idle
machine: benchmarks/results.md); only decides when a stuck run fails."""

WATCH_S = 4.0
"""How long the agent is left retrying before it is stopped: with the backoff of the test
settings (0.1 s doubling to 1 s) that is several rounds of first contact."""

SNAPSHOT_S = 10.0
"""Bound on /readyz showing what the log said: it answers from the snapshot the loop
publishes every second (benchmarks aside, the bound only decides when a stuck run fails)."""


def readyz_says(agent: AgentProcess, body: str) -> None:
    """Wait until /readyz answers 503 with ``body`` (the published snapshot, refreshed every
    second, catches up with the log line)."""
    wait_for(lambda: http_get(f"{agent.url}/readyz") == (503, body.encode()), SNAPSHOT_S,
             f"/readyz to answer 503 {body!r}",
             diagnostics=lambda: f"{http_get(f'{agent.url}/readyz')}\n{agent.log()}")


ERROR_LINE = re.compile(r"ERROR driftwatch\.kafka\.first_contact: (cannot reach .*)$",
                        re.MULTILINE)


@contextmanager
def counting_listener(answer: Callable[[socket.socket], None]) -> Iterator[tuple[str, list[int]]]:
    """A loopback server that hands each connection to ``answer``; its address and a list
    that grows by one per accepted connection."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    accepted: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            accepted.append(1)
            with connection:
                answer(connection)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}", accepted
    finally:
        stop.set()
        thread.join(5)
        server.close()


def agent_at(tmp_path: Path, bootstrap: str, backend: str = "kafka") -> AgentProcess:
    """An agent bootstrapping from ``bootstrap``; its state in the state topic (the default,
    with which the first contact used to log a failed save every interval) or a file."""
    settings = agent_settings(bootstrap, port=free_port(), group="first-contact",
                              checkpoint_dir=tmp_path / "state",
                              overrides={"checkpoint": {"backend": backend}})
    return AgentProcess(settings, tmp_path, f"agent-{backend}")


@pytest.mark.parametrize("backend", ["kafka", "file"])
def test_no_broker_at_the_address_explains_itself_saves_nothing_and_stops_at_once(
        tmp_path: Path, backend: str) -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    agent = agent_at(tmp_path, address, backend).start()
    line = wait_for(lambda: ERROR_LINE.search(agent.output()), LINE_S,
                    "the line saying which address cannot be reached", diagnostics=agent.log)
    assert line.group(1).startswith(
        f"cannot reach any broker of kafka.bootstrap_servers: {address} (connection refused); "
        "nothing consumed yet; trying again in 0.1 s"), line.group(1)
    readyz_says(agent, f"not ready: kafka: cannot reach any broker of "
                f"kafka.bootstrap_servers: {address} (connection refused)")

    time.sleep(WATCH_S)  # several rounds of first contact
    metrics = agent.scrape()
    assert metrics.get("driftwatch_ready") == 0
    assert metrics.get("driftwatch_not_ready", reason="kafka") == 1
    assert metrics.get("driftwatch_not_ready", reason="checkpoint") == 0
    assert agent.running

    code, _ = agent.stop(signal.SIGINT)
    output = agent.output()
    assert code == EXIT_NEVER_READY, output
    assert len(ERROR_LINE.findall(output)) == 1, "one line, not one per retry"
    assert "save failed" not in output and "final checkpoint" not in output, output
    assert "stopping: nothing consumed since the last save, so nothing to save" in output
    assert output.rstrip().endswith(
        f"driftwatch: stopped before it was ever ready: cannot reach any broker of "
        f"kafka.bootstrap_servers: {address} (connection refused); nothing was consumed or "
        "saved, so nothing is lost"), output
    assert not (tmp_path / "state" / "checkpoint.json").exists()
    assert "Traceback" not in output


def test_a_listener_that_hangs_up_is_retried_with_backoff_not_stormed(tmp_path: Path) -> None:
    """Something accepts the connection and hangs up (a broker starting, a proxy without
    its backend): possibly passing, so retried, with backoff: a bounded number of
    connections, the reason on /readyz, and the stop as prompt as with nothing listening."""
    with counting_listener(lambda connection: None) as (address, accepted):
        agent = agent_at(tmp_path, address).start()
        wait_for(lambda: ERROR_LINE.search(agent.output()), LINE_S, "the first error line",
                 diagnostics=agent.log)
        first = len(accepted)
        wait_for(lambda: len(accepted) >= first + 3, LINE_S, "three more attempts",
                 diagnostics=agent.log)
        wait_for(lambda: http_get(f"{agent.url}/readyz")[1].startswith(
            f"not ready: kafka: cannot reach any broker of kafka.bootstrap_servers: {address} "
            "(accepted the connection, then ".encode()), SNAPSHOT_S, "/readyz to say why",
            diagnostics=agent.log)
        before = len(accepted)
        time.sleep(WATCH_S)
        during = len(accepted) - before
        code, _ = agent.stop(signal.SIGINT)
    # Backoff 0.1 s doubling to 1 s (the test settings): at most one attempt per 1 s once
    # it has grown, so about WATCH_S attempts in WATCH_S seconds (+1 for the round under
    # way); a retry storm would be hundreds.
    assert 1 <= during <= WATCH_S + 2, during
    assert code == EXIT_NEVER_READY, agent.log()


def test_a_listener_that_is_not_kafka_is_a_setting_to_fix(tmp_path: Path) -> None:
    def http(connection: socket.socket) -> None:
        connection.recv(1024)
        connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    with counting_listener(http) as (address, accepted):
        agent = agent_at(tmp_path, address).launch()
        code = agent.wait_exit(LINE_S)
    output = agent.output()
    assert code == EXIT_INVALID, output
    assert output.rstrip().endswith(
        f'driftwatch: {address} is not a Kafka listener (it answered "HTTP/1.1 400 Bad '
        'Request"): check kafka.bootstrap_servers'), output
    assert len(accepted) == 1, "a refusal is not retried"
    assert "save" not in output


def test_a_topic_that_does_not_exist_is_named_not_created_and_a_stop_says_so(
        tmp_path: Path, broker: Broker) -> None:
    """The consumer must not create the topic it reads (a misspelt name would become an
    empty topic, watched for ever): it names it once, /readyz says so, and a stop before the
    topic exists exits 1 with the reason. That the records come once the topic is created is
    tested on Apache Kafka (tests/integration/test_security.py): on Tansu kafka-python does
    not rejoin its group when a subscribed topic appears, so there the agent reads it after
    a restart."""
    topic = "created-later"
    settings = agent_settings(broker.bootstrap, port=free_port(), group="waiting",
                              checkpoint_dir=tmp_path / "state", topic=topic,
                              overrides={"checkpoint": {"backend": "kafka"}})
    agent = AgentProcess(settings, tmp_path, "waiting").start()
    expected = (f"topic {topic} (kafka.topics) does not exist on the brokers; waiting for it "
                "to be created (the agent does not create the topics it reads)")
    wait_for(lambda: f"ERROR driftwatch.kafka.offsets: {expected}" in agent.output(), LINE_S,
             "the line naming the missing topic", diagnostics=agent.log)
    readyz_says(agent, f"not ready: kafka: {expected}")
    time.sleep(WATCH_S)  # several probes
    assert topic not in list_topics(broker.bootstrap), "the agent created the topic it reads"
    code, _ = agent.stop(signal.SIGINT)
    output = agent.output()
    assert code == EXIT_NEVER_READY, output
    assert output.count(expected) == 2, "one line while waiting, one at the stop"
    assert output.rstrip().endswith(f"driftwatch: stopped before it was ever ready: {expected}; "
                                    "nothing was consumed or saved, so nothing is lost")

    create_topics(broker.bootstrap, topic)  # and once it exists, the agent reads it
    events = [event_json(e, "m") for e in generate("stationary", seed=4, length=200)]
    produce(broker.bootstrap, topic, events)
    agent.start().wait_processed(len(events))
    code, _ = agent.stop(signal.SIGTERM)
    assert code == EXIT_OK, agent.log()


def list_topics(bootstrap: str) -> list[str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return list(admin.list_topics())
    finally:
        admin.close()
