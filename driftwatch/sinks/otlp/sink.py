"""The OTLP sink: the agent's metrics pushed to an OpenTelemetry receiver (a Collector, or
a backend that takes OTLP/HTTP) every ``exporters.otlp.interval_seconds``, and once more when
the agent stops, so its last values are not lost with it (a push
:class:`~driftwatch.sinks.sink.Sink`).

Each export collects the same collectors as ``/metrics`` (:func:`~driftwatch.sinks.prometheus.
measures.measure_collectors`, without the names deprecated in 0.2.0: OTLP has no reader of
them), translates them (:mod:`~driftwatch.sinks.otlp.translate`) and POSTs them as protobuf
(gzipped unless ``compression: none``) with the OpenTelemetry SDK's OTLP/HTTP exporter,
which retries a transient failure within ``timeout_seconds``. An export that still fails is
logged (the first of a run of failures as a warning, the recovery at info), counted
(``driftwatch_exporter_export_failures_total{exporter="otlp"}``, on ``/metrics`` and in the
later exports), and its values are dropped: the next export carries the values of its own
time, cumulative counters included, so only resolution is lost.

The resource names the agent: ``service.name`` ``driftwatch``, ``service.version``, and
``service.instance.id`` the host name (the pod's name in Kubernetes), plus whatever
``OTEL_RESOURCE_ATTRIBUTES`` adds.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from driftwatch.sinks.export_stats import ExportStats
from driftwatch.sinks.otlp.translate import metrics_data
from driftwatch.sinks.prometheus.export_collector import ExportCollector
from driftwatch.sinks.prometheus.measures import measure_collectors
from driftwatch.sinks.sink import Published
from driftwatch.version import __version__

if TYPE_CHECKING:
    from driftwatch.settings import AlertThresholds, OtlpExporterSettings

__all__ = ["OtlpSink"]

log = logging.getLogger(__name__)


class OtlpSink:
    """Exports ``published`` to ``settings.endpoint`` every ``settings.interval_seconds`` on
    a daemon thread, from :meth:`start` to :meth:`close` (which exports a last time).

    Parameters:
        published: what the agent publishes.
        settings: ``exporters.otlp``.
        thresholds: each model's alert thresholds, exported with its measures.
        per_model, per_model_overrides: how much each model exports (``metrics.per_model``),
            as on ``/metrics``.
        stats: where its exports are counted (``driftwatch_exporter_*``, on ``/metrics`` and
            in its own exports); a new one when not given.
    """

    name = "otlp"

    def __init__(self, published: Published, settings: OtlpExporterSettings,
                 thresholds: Callable[[str], AlertThresholds] | None, *,
                 per_model: str = "all",
                 per_model_overrides: Mapping[str, str] | None = None,
                 stats: ExportStats | None = None) -> None:
        self.settings = settings
        self.stats = ExportStats() if stats is None else stats
        self._collectors = [*measure_collectors(published, thresholds, deprecated=False,
                                                per_model=per_model,
                                                per_model_overrides=per_model_overrides),
                            ExportCollector({self.name: self.stats})]
        self._exporter: MetricExporter = OTLPMetricExporter(
            endpoint=settings.endpoint,
            headers={name: value.get_secret_value() for name, value in settings.headers.items()},
            timeout=settings.timeout_seconds,
            compression=Compression.Gzip if settings.compression == "gzip" else
            Compression.NoCompression)
        self._resource = Resource.create({
            "service.name": "driftwatch",
            "service.version": __version__,
            "service.instance.id": socket.gethostname(),
        })
        self._scope = InstrumentationScope("driftwatch", __version__)
        self._start_ns = time.time_ns()
        self._lock = threading.Lock()  # one export at a time: the interval's or close's
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False
        self._closed = False

    def start(self) -> None:
        """Start exporting every interval (the first export one interval from now)."""
        self._thread = threading.Thread(target=self._run, name="driftwatch-otlp", daemon=True)
        self._thread.start()
        log.info("exporting metrics over OTLP to %s every %g s", self.settings.endpoint,
                 self.settings.interval_seconds)

    def _run(self) -> None:
        while not self._stopping.wait(self.settings.interval_seconds):
            self.publish()

    def publish(self) -> None:
        """Export the published values now; a failure is logged, never raised."""
        with self._lock:
            if self._closed:
                return
            self.stats.attempted()
            try:
                data = metrics_data(self._collectors, self._resource, self._scope,
                                    self._start_ns, time.time_ns())
                result = self._exporter.export(
                    data, timeout_millis=self.settings.timeout_seconds * 1000)
            except Exception:
                log.exception("OTLP export to %s failed", self.settings.endpoint)
                result = MetricExportResult.FAILURE
            self._note(result)

    def _note(self, result: MetricExportResult) -> None:
        self.stats.finished(result is MetricExportResult.SUCCESS)
        if result is MetricExportResult.SUCCESS:
            if self._failing:
                log.info("OTLP exports to %s succeed again", self.settings.endpoint)
            self._failing = False
        elif not self._failing:
            self._failing = True
            log.warning("OTLP export to %s failed; these values are dropped, the next "
                        "export (in %g s) sends current ones", self.settings.endpoint,
                        self.settings.interval_seconds)

    def close(self) -> None:
        """Stop the interval, export a last time, and close the exporter; idempotent."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._closed:
            return
        self.publish()
        with self._lock:
            self._closed = True
            self._exporter.shutdown()
