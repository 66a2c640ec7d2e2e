"""An agent run in-process on a memory source (no broker: nothing here is about Kafka) with
its real metrics server on a free loopback port, and one HTTP scrape of it after every record
went through its pipeline: what the exporter's tests read."""

from __future__ import annotations

import urllib.request
from contextlib import ExitStack

from prometheus_client.parser import text_string_to_metric_families

from driftwatch.agent.loop import Agent
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.sources import MemorySource

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape_after(settings: Settings, batch: list[Record]) -> str:
    """The text of ``/metrics`` once the agent has processed ``batch``."""
    agent = Agent(settings, source=lambda hook: MemorySource(batch, on_assigned=hook))
    with ExitStack() as resources:
        source = agent._start(resources)
        assert agent.metrics_server is not None
        while polled := source.poll():
            agent.process_batch(polled)
        agent._update_readiness()
        agent.publish_now()  # the scrape shows every record processed
        with urllib.request.urlopen(agent.metrics_server.url, timeout=10) as response:
            return response.read().decode()


def samples(text: str) -> Samples:
    """Every sample of a scrape by (name, sorted labels)."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}
