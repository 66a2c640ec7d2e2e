"""Fixtures of the integration tests: agents and Prometheus servers, never outliving a test.

Each test gets its own Tansu broker (the ``broker`` fixture of ``tests/conftest.py``), starts
agents with :func:`start_agent` and Prometheus with :func:`start_prometheus`; whatever is
still running at teardown is killed and reaped, and the agents' logs are printed, so that a
failing test shows them under "Captured stdout teardown".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.broker import Broker, free_port
from tests.integration.helpers import (
    TOPIC,
    AgentProcess,
    PrometheusProcess,
    StartAgent,
    StartPrometheus,
    agent_settings,
    create_topics,
)


@pytest.fixture
def topic(broker: Broker) -> str:
    """The events topic, created (one partition) on this test's broker."""
    create_topics(broker.bootstrap, TOPIC)
    return TOPIC


@pytest.fixture
def start_agent(tmp_path: Path, broker: Broker) -> Iterator[StartAgent]:
    """``start_agent(name="agent", overrides=None, *, group=None, start=True)``.

    An :class:`AgentProcess` consuming :data:`TOPIC` of this test's broker, with its metrics on
    a free loopback port, its checkpoint in ``tmp_path/<name>-state`` and its group
    ``group-<name>`` unless ``group`` is given; started (and answering ``/healthz``) unless
    ``start=False``. Every agent is killed at teardown if it is still running.
    """
    agents: list[AgentProcess] = []

    def start(
        name: str = "agent",
        overrides: Mapping[str, Any] | None = None,
        *,
        group: str | None = None,
        start: bool = True,
    ) -> AgentProcess:
        settings = agent_settings(
            broker.bootstrap,
            port=free_port(),
            group=group or f"group-{name}",
            checkpoint_dir=tmp_path / f"{name}-state",
            overrides=overrides,
        )
        agent = AgentProcess(settings, tmp_path, name)
        agents.append(agent)
        return agent.start() if start else agent

    yield start
    for agent in agents:
        agent.kill()
        print(agent.log(limit=20_000))


@pytest.fixture
def start_prometheus(
    tmp_path: Path, require_tool: Callable[[str, str], str]
) -> Iterator[StartPrometheus]:
    """``start_prometheus(config, rules)``: the real Prometheus (Debian package) on a free
    loopback port, ready; stopped at teardown. Requires the ``prometheus`` binary (skipped
    locally without it, a failure with DRIFTWATCH_REQUIRE_TOOLS=1)."""
    binary = require_tool("prometheus", "Debian package: apt-get install -y prometheus")
    servers: list[PrometheusProcess] = []

    def start(config: Mapping[str, Any], rules: Mapping[str, Any] | None = None
              ) -> PrometheusProcess:
        server = PrometheusProcess(binary, tmp_path / f"prometheus-{len(servers)}", free_port(),
                                   config, rules)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()
        print(server.log())
