"""The handshake against real listeners on loopback: where it stops, and what it read there.

Each listener is a real socket server: nothing listening, one that hangs up, one that never
answers, one that speaks HTTP, one that answers with a TLS alert (what a TLS listener sends to
a plaintext client), and a real broker (Tansu). TLS, SASL and ACLs, which need Apache Kafka,
are in tests/integration/test_security.py.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from driftwatch.kafka.handshake import TopicAccess, handshake
from tests.broker import Broker, free_port
from tests.integration.helpers import create_topics

TLS_ALERT = b"\x15\x03\x03\x00\x02\x02\x50"
"""A TLS 1.2 alert record (fatal, internal error), as a TLS listener answers bytes that are
not a ClientHello."""


@contextmanager
def listener(answer: Callable[[socket.socket], None]) -> Iterator[str]:
    """A loopback server that hands each accepted connection to ``answer``; its address."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                answer(connection)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        server.close()


def hang_up(connection: socket.socket) -> None:
    connection.recv(1024)


def reply(data: bytes) -> Callable[[socket.socket], None]:
    def send(connection: socket.socket) -> None:
        connection.recv(1024)
        connection.sendall(data)
    return send


def test_nothing_listening_is_refused_at_connect() -> None:
    shake = handshake(f"127.0.0.1:{free_port()}", {})
    assert (shake.stage, shake.kind, shake.detail) == ("connect", "refused", "connection refused")
    assert not shake.answered and not shake.done


def test_a_name_that_does_not_resolve_stops_at_resolve() -> None:
    shake = handshake("no-such-broker.invalid:9092", {})  # .invalid never resolves (RFC 6761)
    assert (shake.stage, shake.kind) == ("resolve", "unknown_host")
    assert shake.detail


def test_a_listener_that_hangs_up_closed_the_connection() -> None:
    with listener(hang_up) as address:
        shake = handshake(address, {})
    assert (shake.stage, shake.kind) == ("api_versions", "closed")
    assert shake.answered


def test_a_listener_that_never_answers_times_out() -> None:
    silent = threading.Event()
    with listener(lambda connection: silent.wait(5)) as address:
        shake = handshake(address, {}, timeout_s=0.3)
        silent.set()
    assert (shake.stage, shake.kind) == ("api_versions", "timeout")


def test_a_tls_listener_answering_plaintext_is_recognized() -> None:
    with listener(reply(TLS_ALERT)) as address:
        shake = handshake(address, {})
    assert (shake.stage, shake.kind) == ("api_versions", "tls_listener")


def test_a_listener_that_is_not_kafka_is_quoted() -> None:
    with listener(reply(b"HTTP/1.1 400 Bad Request\r\n\r\n")) as address:
        shake = handshake(address, {})
    assert (shake.stage, shake.kind) == ("api_versions", "not_kafka")
    assert shake.detail == 'it answered "HTTP/1.1 400 Bad Request"'  # 24 bytes at most


def test_a_broker_answers_every_step_and_creates_no_topic(broker: Broker,
                                                          broker_kind: str) -> None:
    create_topics(broker.bootstrap, "events")
    shake = handshake(broker.bootstrap, {"client_id": "test"}, topics=["events", "absent"],
                      group="g")
    assert shake.done and shake.answered
    assert shake.authenticated is None  # no SASL
    # Tansu reports no permitted operations (it has no ACLs); Apache Kafka without an
    # authorizer permits every one (with one: tests/integration/test_security.py).
    every = None if broker_kind == "tansu" else frozenset(
        {"READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS",
         "ALTER_CONFIGS"})
    assert shake.topics == {"events": TopicAccess(exists=True, operations=every),
                            "absent": TopicAccess(exists=False, operations=every)}
    assert shake.group_authorized is True
    again = handshake(broker.bootstrap, {}, topics=["absent"])
    assert again.topics == {"absent": TopicAccess(exists=False, operations=every)}, \
        "asking created it"
