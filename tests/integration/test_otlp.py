"""The OTLP sink in a real agent: ``driftwatch run`` over a real broker pushes its metrics to a
real OTLP receiver started here on every interval, and once more when SIGTERM stops it.

The receiver (tests/sinks/otlp/receiver.py) decodes each request with opentelemetry-proto.
The export at the stop carries the last published snapshot: the monitors' series
(:data:`~tests.integration.helpers.STATE_METRICS`) equal the agent's own ``/metrics`` scraped
once every event was processed. (The in-process round trip, tests/sinks/otlp/
test_round_trip.py, compares every series; here saves and polls go on between the scrape
and the stop, so only the monitors' state stands still.)
"""

from __future__ import annotations

import importlib.util
import time
from typing import TYPE_CHECKING

import pytest

from driftwatch.simulate import generate
from tests.broker import Broker
from tests.conftest import tool_missing
from tests.integration.helpers import STATE_METRICS, StartAgent, event_json, produce, wait_for
from tests.sinks.otlp.receiver import (
    Samples,
    differences,
    normalized,
    otlp_receiver,
    samples,
)

if TYPE_CHECKING:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

pytestmark = pytest.mark.brokers(
    "tansu", reason="the metrics' way out over OTLP; the broker only carries the records")

MODEL = "fraud"
EVENTS = 3000


def state(sent: Samples) -> Samples:
    return {key: value for key, value in sent.items() if key[0] in STATE_METRICS}


def exported_ns(request: ExportMetricsServiceRequest) -> int:
    """When the request's values were collected (every data point carries the same time)."""
    metric = request.resource_metrics[0].scope_metrics[0].metrics[0]
    return int(getattr(metric, metric.WhichOneof("data")).data_points[0].time_unix_nano)


def processed(request: ExportMetricsServiceRequest) -> float:
    return samples(request).get(("driftwatch_events_processed_total", (("model", MODEL),)), 0.0)


def test_a_running_agent_exports_over_otlp_and_once_more_at_sigterm(
        broker: Broker, topic: str, start_agent: StartAgent) -> None:
    if importlib.util.find_spec("opentelemetry.exporter") is None:
        tool_missing("opentelemetry-exporter-otlp-proto-http", "the otlp extra")
    with otlp_receiver() as receiver:
        agent = start_agent("otlp", {
            "events": {"model_source": "constant", "model_constant": MODEL},
            "exporters": {"otlp": {"enabled": True, "endpoint": receiver.url,
                                   "interval_seconds": 1, "timeout_seconds": 1}}})
        receiver.wait_for(1)  # the interval's exports begin before any event
        stream = generate("stationary", seed=2, length=EVENTS)
        produce(broker.bootstrap, topic, [event_json(event) for event in stream])
        scrape = agent.wait_processed(EVENTS)
        wait_for(lambda: processed(receiver.requests[-1]) == EVENTS, 20,
                 "an interval export of every event", diagnostics=agent.log)
        signalled_ns = time.time_ns()
        code, _ = agent.stop()
        assert code == 0, agent.log()
    # The last request was exported after the signal: the sink's close, which comes after
    # the loop stopped (interval exports may come between the signal and the stop too).
    assert exported_ns(receiver.requests[-1]) >= signalled_ns
    shown = normalized({(name, tuple(sorted(labels))): value
                        for (name, labels), value in scrape.state().items()})
    sent = state(samples(receiver.requests[-1]))
    assert sent.keys() == shown.keys()
    assert {"driftwatch_measure", "driftwatch_alarms_total"} <= {name for name, _ in sent}
    assert differences(sent, shown) == {}
