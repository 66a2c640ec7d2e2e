"""The sinks the ``exporters`` settings enable, started: :func:`start_sinks`, the one call the
agent's start makes. The metrics endpoint (``metrics`` settings) always runs, for the
Kubernetes probes; the Prometheus sink is the agent's families on its ``/metrics``."""

from __future__ import annotations

import logging
from contextlib import ExitStack
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from driftwatch.sinks.export_stats import ExportStats
from driftwatch.sinks.prometheus.export_collector import ExportCollector
from driftwatch.sinks.prometheus.measures import measure_collectors
from driftwatch.sinks.prometheus.server import MetricsServer
from driftwatch.sinks.prometheus.sink import PrometheusSink
from driftwatch.sinks.sink import Published, Sink

if TYPE_CHECKING:
    from driftwatch.settings import Settings

__all__ = ["start_sinks"]

log = logging.getLogger(__name__)


def start_sinks(published: Published, settings: Settings, resources: ExitStack
                ) -> MetricsServer:
    """Start every sink ``settings.exporters`` enables, reading ``published``, and the
    metrics endpoint, each entered into ``resources`` (which closes them in reverse order:
    the endpoint first, then the sinks, a push sink after its last export). Returns the
    running endpoint."""
    exporters = settings.exporters
    registry = CollectorRegistry(auto_describe=True)
    sinks: list[Sink] = []
    pushed: dict[str, ExportStats] = {}  # the push sinks' counts, shown on /metrics
    if exporters.otlp.enabled:
        # Imported here: the otlp extra may be missing when the exporter is off.
        from driftwatch.sinks.otlp.sink import OtlpSink

        otlp = OtlpSink(published, exporters.otlp, settings.alerts.thresholds,
                        per_model=settings.metrics.per_model,
                        per_model_overrides=settings.metrics.per_model_overrides)
        pushed[otlp.name] = otlp.stats
        sinks.append(otlp)
    if exporters.prometheus.enabled:
        collectors = measure_collectors(
            published, settings.alerts.thresholds,
            deprecated=settings.metrics.export_deprecated_metrics,
            per_model=settings.metrics.per_model,
            per_model_overrides=settings.metrics.per_model_overrides)
        if pushed:
            collectors.append(ExportCollector(pushed))
        sinks.insert(0, PrometheusSink(registry, collectors))
    for sink in sinks:
        sink.start()
        resources.callback(sink.close)
    log.info("sinks: %s", ", ".join(sink.name for sink in sinks) or "none (/metrics shows "
             "only the endpoint's own series)")
    server = resources.enter_context(metrics_server(registry, published, settings))
    log.info("metrics at %s", server.url)
    return server


def metrics_server(registry: CollectorRegistry, published: Published, settings: Settings
                   ) -> MetricsServer:
    """The endpoint the ``metrics`` settings describe, exposing ``registry``."""
    metrics = settings.metrics
    basic_auth = None
    if metrics.basic_auth_username is not None and metrics.basic_auth_password is not None:
        basic_auth = (metrics.basic_auth_username,
                      metrics.basic_auth_password.get_secret_value())
    tls = (metrics.tls_certfile, metrics.tls_keyfile) if metrics.tls_certfile and \
        metrics.tls_keyfile else None
    return MetricsServer(registry, metrics.host, metrics.port, ready=published.ready,
                         not_ready_reasons=published.not_ready_reasons,
                         basic_auth=basic_auth, tls=tls,
                         max_connections=metrics.max_connections,
                         request_timeout=metrics.request_timeout_seconds)
