"""``exporters``: where the agent's metrics go. Prometheus (scraped from the ``metrics``
endpoint, on by default) and OpenTelemetry metrics pushed over OTLP/HTTP (off by default; the
``otlp`` extra). docs/exporters.md describes what each sends."""

from __future__ import annotations

import importlib.util
import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, StringConstraints, model_validator
from pydantic_core import InitErrorDetails

from driftwatch.settings.common import _problem, _raise, _Section

OTLP_EXTRA_MODULE = "opentelemetry.exporter.otlp.proto.http"
"""What ``pip install 'driftwatch-agent[otlp]'`` brings: the OTLP/HTTP exporter (with the
OpenTelemetry SDK and the protobuf messages)."""

OTLP_INSTALL = "pip install 'driftwatch-agent[otlp]'"

_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
"""An HTTP header name: a token (RFC 9110, section 5.1)."""


class PrometheusExporterSettings(_Section):
    """The Prometheus exposition: the agent's families on ``/metrics`` of the ``metrics``
    endpoint, whose address, auth, TLS and limits stay under ``metrics`` (that endpoint also
    serves ``/healthz`` and ``/readyz``, with or without this exporter)."""

    enabled: bool = Field(
        default=True,
        description=(
            "Expose the agent's metrics on /metrics. When false, /metrics shows only the "
            "endpoint's own connection series; the probes keep working."
        ),
    )


class OtlpExporterSettings(_Section):
    """OpenTelemetry metrics over OTLP/HTTP (protobuf), pushed every ``interval_seconds`` and
    once more at shutdown. Needs the ``otlp`` extra."""

    enabled: bool = Field(
        default=False,
        description=f"Push the agent's metrics over OTLP/HTTP (needs `{OTLP_INSTALL}`).",
    )
    endpoint: Annotated[str, StringConstraints(min_length=1, max_length=2048)] = Field(
        default="http://localhost:4318/v1/metrics",
        description=(
            "The full URL metrics are POSTed to, path included (an OpenTelemetry Collector's "
            "OTLP/HTTP receiver listens on port 4318, path /v1/metrics). https:// verifies "
            "the server with the system's CA certificates."
        ),
    )
    interval_seconds: float = Field(
        default=60.0,
        ge=1,
        le=3600,
        description=(
            "How often the metrics are exported (OpenTelemetry's default is 60 s; match your "
            "dashboards' resolution)."
        ),
    )
    timeout_seconds: float = Field(
        default=10.0,
        ge=0.1,
        le=300,
        description=(
            "Longest one export may take, retries included; at most interval_seconds. A "
            "failed export is logged and the next one sends the values of its time."
        ),
    )
    compression: Literal["gzip", "none"] = Field(
        default="gzip",
        description=(
            "Compress each export (Content-Encoding: gzip): 3 times fewer bytes for one "
            "model, 18 times for 100, for 15 to 45 % more CPU per export "
            "(benchmarks/results.md, otlp). none for a receiver that refuses gzip (the "
            "OpenTelemetry Collector takes it)."
        ),
    )
    headers: dict[Annotated[str, StringConstraints(min_length=1, max_length=256)], SecretStr] = (
        Field(
            default_factory=dict,
            description=(
                "HTTP headers sent with every export, e.g. an API key of the backend; values "
                "are masked in logs and `config show`."
            ),
        )
    )

    @model_validator(mode="after")
    def _usable(self) -> OtlpExporterSettings:
        problems: list[InitErrorDetails] = []
        url = urlsplit(self.endpoint)
        if url.scheme not in ("http", "https") or not url.hostname:
            problems.append(_problem(
                ("endpoint",), "must be an http:// or https:// URL with a host, e.g. "
                "http://otel-collector:4318/v1/metrics", self.endpoint))
        if self.timeout_seconds > self.interval_seconds:
            problems.append(_problem(
                ("timeout_seconds",), f"must be at most interval_seconds "
                f"({self.interval_seconds:g}): an export outlasting the interval delays the "
                "next", self.timeout_seconds))
        for name in self.headers:
            if not _HEADER_NAME.match(name):
                problems.append(_problem(
                    ("headers", name), "is not an HTTP header name (letters, digits and "
                    "!#$%&'*+.^_`|~- only)", name))
        if self.enabled and not _installed(OTLP_EXTRA_MODULE):
            problems.append(_problem(
                ("enabled",), f"the OTLP exporter is not installed: {OTLP_INSTALL}", True))
        _raise(type(self).__name__, problems)
        return self


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported (its parent packages are, without running it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


class ExportersSettings(_Section):
    """Where the agent's metrics go: Prometheus (pulled) and OTLP (pushed), each on or off;
    both may run at once and send the same series."""

    prometheus: PrometheusExporterSettings = Field(
        default_factory=PrometheusExporterSettings,
        description="The Prometheus exposition on the metrics endpoint's /metrics.",
    )
    otlp: OtlpExporterSettings = Field(
        default_factory=OtlpExporterSettings,
        description="OpenTelemetry metrics pushed over OTLP/HTTP (the otlp extra).",
    )
