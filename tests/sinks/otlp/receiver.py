"""A real OTLP/HTTP metrics receiver for tests: an HTTP server on a free loopback port that
takes ``POST /v1/metrics``, decodes the protobuf body as an ``ExportMetricsServiceRequest``
(opentelemetry-proto's own message, as an OpenTelemetry Collector does) and keeps every
request, so a test can read what an exporter sent."""

from __future__ import annotations

import gzip
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.client import HTTPMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the otlp extra: imported where used, so a missing extra is reported by
    # the otlp_extra fixture (tests/sinks/otlp/conftest.py), not as a collection error
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


class Receiver:
    """The requests received (:attr:`requests`), in order; :attr:`url` is where to send."""

    def __init__(self, status: int = 200) -> None:
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceRequest,
            ExportMetricsServiceResponse,
        )

        self.status = status
        self.requests: list[ExportMetricsServiceRequest] = []
        self.headers: list[HTTPMessage] = []  # each request's, names case-insensitive
        self.sizes: list[int] = []  # each request's body, as it came (compressed or not)
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                size = len(body)
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/metrics" or \
                        self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_error(404 if self.path != "/v1/metrics" else 415)
                    return
                request = ExportMetricsServiceRequest.FromString(body)
                with receiver.arrived:
                    receiver.requests.append(request)
                    receiver.headers.append(self.headers)
                    receiver.sizes.append(size)
                    receiver.arrived.notify_all()
                answer = ExportMetricsServiceResponse().SerializeToString()
                self.send_response(receiver.status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/metrics"

    def wait_for(self, count: int, timeout: float = 30.0) -> None:
        """Block until ``count`` requests have arrived (fail after ``timeout`` seconds: a
        bound on a hang, not a timing assertion)."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.requests) >= count, timeout):
                raise AssertionError(f"{len(self.requests)} of {count} OTLP requests arrived")


@contextmanager
def otlp_receiver(status: int = 200) -> Iterator[Receiver]:
    """A running :class:`Receiver` answering ``status``, stopped on exit."""
    receiver = Receiver(status)
    thread = threading.Thread(target=receiver.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()
        thread.join()


def _le(bound: float) -> str:
    return "+Inf" if math.isinf(bound) else repr(float(bound))


def samples(request: ExportMetricsServiceRequest) -> Samples:
    """The request's data points as ``/metrics`` samples by (name, sorted labels): a gauge's
    or sum's point under its metric's name, a histogram's as ``_bucket`` (cumulative, ``le``
    written as :func:`normalized` writes it), ``_sum`` and ``_count``."""
    out: Samples = {}
    for resource in request.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                kind = metric.WhichOneof("data")
                if kind in ("gauge", "sum"):
                    for point in getattr(metric, kind).data_points:
                        key = (metric.name, _attributes(point.attributes))
                        assert key not in out, f"{key} sent twice"
                        out[key] = point.as_double
                elif kind == "histogram":
                    for hist in metric.histogram.data_points:
                        labels = _attributes(hist.attributes)
                        total = 0
                        bounds = [*hist.explicit_bounds, math.inf]
                        assert len(hist.bucket_counts) == len(bounds)
                        for bound, count in zip(bounds, hist.bucket_counts, strict=True):
                            total += count
                            key = (metric.name + "_bucket",
                                   tuple(sorted((*labels, ("le", _le(bound))))))
                            out[key] = float(total)
                        out[(metric.name + "_sum", labels)] = hist.sum
                        out[(metric.name + "_count", labels)] = float(hist.count)
                else:
                    raise AssertionError(f"{metric.name}: unexpected OTLP data {kind}")
    return out


def normalized(scraped: Samples) -> Samples:
    """Scraped samples with ``le`` written as :func:`samples` writes it."""
    return {(name, tuple(sorted((k, _le(float(v)) if k == "le" else v) for k, v in labels))):
            value for (name, labels), value in scraped.items()}


def differences(sent: Samples, shown: Samples) -> dict[Any, tuple[float, float]]:
    """The series of ``sent`` whose value is not ``shown``'s (NaN equal to NaN)."""
    return {key: (sent[key], shown[key]) for key in sent
            if sent[key] != shown[key] and not (math.isnan(sent[key]) and math.isnan(shown[key]))}


def _attributes(attributes: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((item.key, item.value.string_value) for item in attributes))


def resource_attributes(request: ExportMetricsServiceRequest) -> dict[str, str]:
    """The first resource's attributes (an export of one agent has one resource)."""
    return {item.key: item.value.string_value
            for item in request.resource_metrics[0].resource.attributes}
