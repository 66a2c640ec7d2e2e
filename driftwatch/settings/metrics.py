"""``metrics`` and ``readiness``: the Prometheus endpoint and when ``/readyz`` reports a
broker outage."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, StringConstraints, model_validator
from pydantic_core import InitErrorDetails

from driftwatch.settings.common import Name, _file_problem, _problem, _raise, _Section

ExportLevel = Literal["all", "standard", "minimal"]
"""How much a model exports (``metrics.per_model``; docs/fleet.md, Export levels)."""


class MetricsSettings(_Section):
    """The Prometheus endpoint (``/metrics``, plus health and readiness)."""

    host: Annotated[str, StringConstraints(min_length=1, max_length=255)] = Field(
        default="0.0.0.0",
        description=(
            "Address to listen on. 0.0.0.0 (every interface) because Prometheus and the "
            "Kubernetes probes reach the pod from outside; use 127.0.0.1 to keep it local."
        ),
    )
    port: int = Field(
        default=9108,
        ge=0,
        le=65535,
        description="Port to listen on (0: any free port, for tests).",
    )
    basic_auth_username: Annotated[str, StringConstraints(min_length=1, max_length=1024)] | None = (
        Field(default=None, description="Require HTTP basic auth with this user and password.")
    )
    basic_auth_password: SecretStr | None = Field(
        default=None,
        description=(
            "Password for HTTP basic auth; must not be empty (set both or neither: "
            "configured auth is always enforced). Masked in logs and `config show`."
        ),
    )
    tls_certfile: Path | None = Field(
        default=None,
        description=(
            "Serve HTTPS with this certificate (PEM), together with tls_keyfile; both must "
            "be readable files."
        ),
    )
    tls_keyfile: Path | None = Field(
        default=None, description="Private key (PEM) of tls_certfile."
    )
    max_connections: int = Field(
        default=32,
        ge=1,
        le=1000,
        description=(
            "Most HTTP connections served at once (one thread and one descriptor each). "
            "When all are taken, the one idle longest (connected, no complete request yet) "
            "is closed for the newcomer; a connection that finds every slot busy with a "
            "request is closed at once. Counted in driftwatch_http_connections_closed_total. "
            "Prometheus and the probes need a few."
        ),
    )
    request_timeout_seconds: float = Field(
        default=10.0,
        ge=0.1,
        le=300,
        description=(
            "Longest a connection may take from accept to the end of its response (TLS "
            "handshake, request, answer); it is then closed. Bounds what a slow or idle "
            "client holds. At least Prometheus' scrape_timeout (10 s by default)."
        ),
    )
    export_deprecated_metrics: bool = Field(
        default=True,
        description=(
            "Also export the metric names deprecated in 0.2.0 (removed in 0.3.0; each one's "
            "HELP and docs/metrics.md name its replacement), copies of the new families' "
            "values. Set false once no rule or dashboard of yours reads them."
        ),
    )
    per_model: ExportLevel = Field(
        default="all",
        description=(
            "How many series each model exports (docs/fleet.md, Export levels): all (52 a "
            "model at the defaults); standard (driftwatch_measure and _normalized only for "
            "the measures the model's watches watch, and AUC: 31); minimal (events processed "
            "and in the window, AUC and its standard error, alarms, the last-processed time "
            "and the alert thresholds, what the paging alerts read: 20). For fleets too large "
            "for a Prometheus' series budget."
        ),
    )
    per_model_overrides: dict[Name, ExportLevel] = Field(
        default_factory=dict,
        description=(
            "Export level of single models by id, instead of per_model: e.g. all for the "
            "few models you look into on a minimal fleet."
        ),
    )

    @model_validator(mode="after")
    def _pairs(self) -> MetricsSettings:
        problems: list[InitErrorDetails] = []
        for first, second in (
            ("basic_auth_username", "basic_auth_password"),
            ("tls_certfile", "tls_keyfile"),
        ):
            if (getattr(self, first) is None) != (getattr(self, second) is None):
                missing = first if getattr(self, first) is None else second
                other = second if missing == first else first
                problems.append(_problem((missing,), f"required when {other} is set"))
        password = self.basic_auth_password
        if password is not None and not password.get_secret_value():
            problems.append(_problem(
                ("basic_auth_password",),
                "must not be empty (an empty password would leave /metrics open)",
            ))
        for key in ("tls_certfile", "tls_keyfile"):
            path = getattr(self, key)
            problem = None if path is None else _file_problem(path)
            if problem is not None:
                problems.append(_problem((key,), problem, str(path)))
        _raise(type(self).__name__, problems)
        return self


class ReadinessSettings(_Section):
    """When ``/readyz`` answers 503 because of the broker, and when 200 again.

    The agent asks the broker for its partitions' end offsets every ``probe_interval_seconds``
    while no records arrive (records arriving prove the broker is there), each request bounded
    by ``kafka.request_timeout_seconds``. Failures must go on for ``not_ready_after_seconds``
    before the agent reports not ready, and after that successes must go on for
    ``ready_after_seconds`` before it reports ready again: one lost request does not turn
    the pod away, and a broker that comes and goes does not make readiness flap. With the
    defaults an outage shows within 5 + 5 + 5 = 15 s at most (the next probe, its timeout,
    then a second failure; inside two periods of Kubernetes' default 10 s readiness probe)
    and recovery about 10 s after the broker's return.
    At start the agent is ready as soon as it has partitions. A failing checkpoint save
    makes it not ready at once, until a save succeeds.
    """

    probe_interval_seconds: float = Field(
        default=5.0,
        ge=0.1,
        le=300,
        description=(
            "How often an idle agent checks the broker (one ListOffsets request); also how "
            "often consumer lag is refreshed."
        ),
    )
    not_ready_after_seconds: float = Field(
        default=5.0,
        ge=0,
        le=3600,
        description="Broker failures must last this long before /readyz answers 503.",
    )
    ready_after_seconds: float = Field(
        default=10.0,
        ge=0,
        le=3600,
        description=(
            "After being not ready, the broker must answer for this long before /readyz "
            "answers 200 again (no flapping)."
        ),
    )
