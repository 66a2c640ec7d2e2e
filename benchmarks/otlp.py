"""The OTLP sink's cost per export beside a Prometheus scrape of the same agent state.

For 1, 100 and 1000 models with full default windows (d = 1000, the default watches; the
monitors of ``benchmarks/checkpoint.py``), the same collectors
(:func:`~driftwatch.sinks.prometheus.measures.measure_collectors`, without the deprecated
names) rendered two ways, in the same run:

- **scrape**: ``generate_latest`` of a registry holding them, the Prometheus text format
  ``/metrics`` answers (the reference);
- **OTLP export**: :func:`~driftwatch.sinks.otlp.translate.metrics_data` and the OTLP
  exporter's protobuf encoding (``encode_metrics``, serialized): what one export POSTs,
  without the network; and **gzipped** as the exporter sends it by default.

Reported: CPU milliseconds per render (median of the repeats), bytes per render, and the
ratio OTLP / scrape of both (plain and gzipped); the share of one core the OTLP sink takes at
the default interval (60 s), and the megabytes it sends in 30 days at that interval.
``python -m benchmarks otlp`` (``--quick``: 1 and 100 models, fewer repeats).
Needs the ``otlp`` extra.
"""

from __future__ import annotations

import gzip
import io
import statistics
import time
from collections.abc import Callable

from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from prometheus_client import CollectorRegistry, generate_latest

from benchmarks.checkpoint import _monitors
from driftwatch.sinks.otlp.translate import metrics_data
from driftwatch.sinks.prometheus.measures import measure_collectors
from driftwatch.sinks.sink import Published
from driftwatch.sinks.snapshot import AgentSnapshot

MODELS = (1, 100, 1000)
QUICK_MODELS = (1, 100)
INTERVAL_S = 60.0


def _median_cpu_ms(render: Callable[[], bytes], repeats: int) -> tuple[float, int]:
    """Median CPU milliseconds of ``render`` (this process' CPU time: the machine is shared,
    so wall time would count other jobs) and the bytes it returned."""
    times, size = [], 0
    for _ in range(repeats):
        started = time.process_time()
        size = len(render())
        times.append(time.process_time() - started)
    return statistics.median(times) * 1000, size


def measure(count: int, repeats: int) -> dict[str, float]:
    snapshot = AgentSnapshot(monitors=_monitors(count).snapshots(), rejected={},
                             consumer_lag={}, ready=True, started_time=time.time())
    published = Published(snapshot=lambda: snapshot, comparisons=None, ready=lambda: True,
                          not_ready_reasons=lambda: ())
    collectors = measure_collectors(published, None, deprecated=False)
    registry = CollectorRegistry(auto_describe=True)
    for collector in collectors:
        registry.register(collector)
    resource = Resource.create({"service.name": "driftwatch"})
    scope = InstrumentationScope("driftwatch")

    def otlp() -> bytes:
        now = time.time_ns()
        data = metrics_data(collectors, resource, scope, now, now)
        return encode_metrics(data).SerializeToString()

    def otlp_gzip() -> bytes:  # as the exporter compresses (exporters.otlp.compression)
        buffer = io.BytesIO()
        with gzip.GzipFile(fileobj=buffer, mode="w") as compressed:
            compressed.write(otlp())
        return buffer.getvalue()

    scrape_ms, scrape_bytes = _median_cpu_ms(lambda: generate_latest(registry), repeats)
    otlp_ms, otlp_bytes = _median_cpu_ms(otlp, repeats)
    gzip_ms, gzip_bytes = _median_cpu_ms(otlp_gzip, repeats)
    return {"scrape_ms": scrape_ms, "scrape_bytes": scrape_bytes, "otlp_ms": otlp_ms,
            "otlp_bytes": otlp_bytes, "gzip_ms": gzip_ms, "gzip_bytes": gzip_bytes}


def main(quick: bool = False) -> None:
    repeats = 5 if quick else 15
    print("| models | scrape CPU ms | OTLP export CPU ms | ratio | gzipped | scrape kB | "
          f"OTLP kB | ratio | gzipped | OTLP gzipped: share of a core at {INTERVAL_S:g} s | "
          "MB per month |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for count in QUICK_MODELS if quick else MODELS:
        m = measure(count, repeats)
        exports_per_month = 30 * 86400 / INTERVAL_S
        print(f"| {count} | {m['scrape_ms']:.1f} | {m['otlp_ms']:.1f} | "
              f"{m['otlp_ms'] / m['scrape_ms']:.2f} | {m['gzip_ms'] / m['scrape_ms']:.2f} | "
              f"{m['scrape_bytes'] / 1000:.1f} | {m['otlp_bytes'] / 1000:.1f} | "
              f"{m['otlp_bytes'] / m['scrape_bytes']:.2f} | "
              f"{m['gzip_bytes'] / m['scrape_bytes']:.2f} | "
              f"{m['gzip_ms'] / 1000 / INTERVAL_S:.3%} | "
              f"{m['gzip_bytes'] * exports_per_month / 1e6:,.0f} |")
