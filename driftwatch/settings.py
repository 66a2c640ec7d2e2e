"""The settings model: one YAML file, overridden by environment variables, validated by pydantic.

The model is the single source of truth for every option: its default, its bounds, its
description (which ``driftwatch config schema`` exports as a JSON Schema for editors), and
the check that produces a clear message naming the bad key. One model per area (``kafka``,
``events``, ``monitoring``, ``alerts``, ``limits``, ``metrics``, ``checkpoint``,
``readiness``, ``logging``) is composed into the root :class:`Settings`.

Where values come from, highest rank first:

1. keyword arguments to ``Settings(...)`` (tests and embedding code);
2. environment variables: ``DRIFTWATCH_`` + the key path joined by ``__``, upper case, e.g.
   ``DRIFTWATCH_KAFKA__BOOTSTRAP_SERVERS=broker-1:9092,broker-2:9092`` (lists also accept
   JSON: ``'["broker-1:9092"]'``; mappings and lists of objects take JSON);
3. the YAML file named by ``--config`` or by ``DRIFTWATCH_CONFIG``;
4. the defaults below.

Sources merge key by key, so an environment variable replaces one value of the file and
keeps the rest. Unknown keys are errors (``extra="forbid"``), so a typo is reported, never
silently ignored. :func:`load_settings` reads the file, :func:`settings_errors` turns any
failure into lines ``path.to.key (ENV_NAME): message``.

Example file (every key is optional)::

    kafka:
      bootstrap_servers: [broker-1:9092, broker-2:9092]
      topics: [scores]
      group_id: driftwatch-fraud
      security_protocol: SASL_SSL
      sasl_mechanism: SCRAM-SHA-512
      sasl_plain_username: driftwatch
      # sasl_plain_password: better from DRIFTWATCH_KAFKA__SASL_PLAIN_PASSWORD
      ssl_cafile: /etc/driftwatch/ca.pem
      dead_letter_topic: scores-rejected
      alarms_topic: driftwatch-alarms
    events:
      label_field: label
      score_field: score
      model_source: key          # the Kafka record key names the model
      positive_label: fraud
      negative_label: legit
    monitoring:
      defaults:
        window_size: 1000
        sample_every: 100
        watches:
          - measure: auc
            feed: blocks             # standardized blocks, the defaults' kind of watch
            detectors:
              - name: cusum
                params: {arl: 500000}
          - measure: accuracy        # the window's value every sample_every events
            detectors: [{name: adwin}]
          - measure: gmean
            normalized: true
            floor: 0.8
            detectors: [{name: page_hinkley}]
          - measure: error_stream
            detectors: [{name: ddm}]
      models:
        fraud-v2:
          window_size: 5000   # everything else as in defaults
    alerts:                   # thresholds the shipped alert rules read from /metrics
      defaults: {auc_floor: 0.7, auc_max_drop: 0.05, no_events_seconds: 1200}
      models:
        fraud-v2: {auc_floor: 0.8}
        churn-daily: {batch_labels: true, no_events_seconds: 93600}
    limits:
      max_models: 20
    metrics:
      port: 9108
    checkpoint:
      directory: /var/lib/driftwatch
    logging:
      level: INFO
      format: json
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import json
import os
import re
import types
import typing
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal, Union, cast

import yaml  # type: ignore[import-untyped, unused-ignore]
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from driftwatch.core.comparison.window import ComparisonConfig
from driftwatch.core.delayed import DelayedLabels
from driftwatch.core.detectors import registry
from driftwatch.core.detectors.base import Detector
from driftwatch.core.join import Join
from driftwatch.core.monitor import (
    DEFAULT_WATCHES,
    WATCHABLE,
    DetectorSpec,
    Direction,
    Feed,
    Monitor,
    MonitorConfig,
    Watch,
)
from driftwatch.core.prediction_watch import PredictionWatch, default_detectors
from driftwatch.core.score_drift import ScoreDrift
from driftwatch.io.decode import EventFormat, JoinFormat, ModelSource, model_id_problem

__all__ = [
    "CONFIG_ENV",
    "ENV_NESTED_DELIMITER",
    "ENV_PREFIX",
    "AlertDefaults",
    "AlertOverrides",
    "AlertThresholds",
    "AlertsSettings",
    "CheckpointSettings",
    "DetectorSettings",
    "EventsSettings",
    "KafkaSettings",
    "LimitsSettings",
    "LoggingSettings",
    "MetricsSettings",
    "MonitorDefaults",
    "MonitorOverrides",
    "MonitoringSettings",
    "Settings",
    "SettingsFileError",
    "WatchSettings",
    "env_name",
    "load_settings",
    "read_settings_file",
    "settings_errors",
]

ENV_PREFIX = "DRIFTWATCH_"
ENV_NESTED_DELIMITER = "__"
CONFIG_ENV = "DRIFTWATCH_CONFIG"
"""The environment variable naming the settings file when ``--config`` is not given."""

DEFAULT_TOPIC = "driftwatch-events"
"""The topic consumed when neither ``kafka.topics`` nor ``kafka.topic_pattern`` is set."""

MAX_WINDOW_SIZE = 1_000_000
"""Upper bound of ``window_size``: a window holds its events in memory (tens of bytes each,
per model), and 10⁶ stays far below the 2**26 events where the crisp measures stop being
exact in float64 (``driftwatch.core.measures.crisp``)."""

_MONITOR_DEFAULTS = MonitorConfig()
"""The core's defaults, read rather than copied so that the two cannot disagree."""

_EVENT_DEFAULTS = EventFormat()


# ------------------------------------------------------------------------------------------
# Validation plumbing


def _problem(loc: tuple[str | int, ...], message: str, value: Any = None) -> InitErrorDetails:
    """One validation error at ``loc`` (relative to the model being validated)."""
    return {
        "type": PydanticCustomError("settings", "{message}", {"message": message}),
        "loc": loc,
        "input": value,
    }


def _raise(title: str, problems: list[InitErrorDetails]) -> None:
    """Raise the collected problems, if any, as one ``ValidationError``.

    Raised inside a validator, pydantic re-locates each error under the field being
    validated, so a problem found in ``KafkaSettings`` is reported at ``kafka.<key>``.
    """
    if problems:
        raise ValidationError.from_exception_data(title, problems)


def _named_in(message: str, names: Sequence[str]) -> str | None:
    """The name that ``message`` mentions first (as a whole word), if any.

    Detectors and ``Watch`` raise ``ValueError`` naming the parameter ("delta must be ...");
    this finds which one, so the error can point at that key.
    """
    best: tuple[int, str] | None = None
    for name in names:
        match = re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message)
        if match and (best is None or match.start() < best[0]):
            best = (match.start(), name)
    return None if best is None else best[1]


def _split_list(value: Any) -> Any:
    """Accept a list as given, or a string that is either JSON or comma-separated.

    Environment variables are strings: ``a:9092,b:9092`` and ``["a:9092", "b:9092"]`` both
    work. (The fields using this are marked ``NoDecode`` so pydantic-settings hands the raw
    string over instead of insisting on JSON.)
    """
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a valid JSON list: {exc}") from exc
        return [item.strip() for item in text.split(",") if item.strip()]
    return value


_CHECK_FILES: ContextVar[bool] = ContextVar("driftwatch_check_files", default=True)
"""Whether validation opens the files settings name (see :func:`load_settings`)."""


def _file_problem(path: Path | str) -> str | None:
    """Why the agent could not read the file at ``path`` (None: it can, or checks are off).

    Opened, not just stat-ed, so a permission problem shows here and not as a TLS error at
    the first connection (kafka-python would retry "Unable to bootstrap" for ever).
    """
    if not _CHECK_FILES.get():
        return None
    try:
        with open(path, "rb"):
            return None
    except FileNotFoundError:
        return f"no such file: {path}"
    except IsADirectoryError:
        return f"is a directory, not a file: {path}"
    except PermissionError:
        return f"not readable by this process (user id {os.getuid()}): {path}"
    except OSError as exc:
        return f"cannot be opened: {path}: {exc.strerror or exc}"


class _Section(BaseModel):
    """Base of every settings area: unknown keys are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


Name = Annotated[str, StringConstraints(min_length=1, max_length=255)]
TopicName = Annotated[
    str, StringConstraints(min_length=1, max_length=249, pattern=r"^[A-Za-z0-9._-]+$")
]
HostPort = Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^[^\s,]+$")]
FieldName = Annotated[str, StringConstraints(min_length=1, max_length=255)]


# ------------------------------------------------------------------------------------------
# kafka

SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "AWS_MSK_IAM"]
_USER_PASSWORD_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

_OWNED_CLIENT_OPTIONS: Mapping[str, str] = {
    "bootstrap_servers": "kafka.bootstrap_servers",
    "group_id": "kafka.group_id",
    "client_id": "kafka.client_id",
    "max_poll_records": "kafka.poll_batch",
    "auto_offset_reset": "kafka.auto_offset_reset",
    "max_poll_interval_ms": "kafka.max_poll_interval_ms",
    "session_timeout_ms": "kafka.session_timeout_ms",
    "heartbeat_interval_ms": "kafka.heartbeat_interval_ms",
    "reconnect_backoff_ms": "kafka.reconnect_backoff_initial_seconds",
    "reconnect_backoff_max_ms": "kafka.reconnect_backoff_max_seconds",
    "security_protocol": "kafka.security_protocol",
    "sasl_mechanism": "kafka.sasl_mechanism",
    "sasl_plain_username": "kafka.sasl_plain_username",
    "sasl_plain_password": "kafka.sasl_plain_password",
    "ssl_cafile": "kafka.ssl_cafile",
    "ssl_certfile": "kafka.ssl_certfile",
    "ssl_keyfile": "kafka.ssl_keyfile",
    "ssl_password": "kafka.ssl_password",
    # Offsets are committed by the agent after the events are in the monitors (at-least-once);
    # kafka-python's background auto-commit would commit records not yet processed.
    "enable_auto_commit": "the agent (it commits after processing: at-least-once delivery)",
}
"""kafka-python options that settings set themselves, and where they are set instead."""


_REMOVED_KAFKA_KEYS = ("commit_every_records", "commit_every_seconds")
"""Keys of earlier versions, refused with the reason rather than as unknown."""


class KafkaSettings(_Section):
    """Where events come from: the brokers, the topics, the consumer group, and security.

    Consumer-group timing. kafka-python takes the JoinGroup *rebalance timeout* from
    ``max_poll_interval_ms``, and a broker may hold a joining member for that long: with
    kafka-python's 300 000 ms default a second replica (or a restarted one) waits up to five
    minutes for partitions, and Tansu, the broker the embedded demo uses, does wait that
    long. driftwatch's loop does little per poll (``poll_batch`` records at O(log d) each plus
    a sample every ``sample_every`` events: milliseconds), so a 5 s bound on one loop
    iteration still leaves a wide margin while letting rebalances finish in seconds. The
    session timeout (6 s, the smallest a default Apache Kafka broker accepts:
    ``group.min.session.timeout.ms``) is how fast a crashed replica's partitions move;
    heartbeats every second give five chances before eviction. These values were measured
    with Tansu: the first record reached a second group member after about 3 s.
    """

    bootstrap_servers: Annotated[list[HostPort], NoDecode] = Field(
        default_factory=lambda: ["localhost:9092"],
        min_length=1,
        max_length=100,
        description=(
            "Brokers to bootstrap from, as host:port. From the environment: comma-separated "
            "(a:9092,b:9092) or a JSON list."
        ),
    )
    topics: Annotated[list[TopicName] | None, NoDecode] = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description=(
            "Topics to consume. Exactly one of topics and topic_pattern is used; when neither "
            f"is set, topics is [{DEFAULT_TOPIC}]. From the environment: comma-separated or "
            "a JSON list."
        ),
    )
    topic_pattern: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description=(
            "Consume every topic whose name matches this Python regular expression (instead "
            "of topics); new matching topics are picked up at the next metadata refresh."
        ),
    )
    group_id: Name = Field(
        default="driftwatch",
        description="Consumer group. Replicas with the same group_id split the partitions.",
    )
    client_id: Name = Field(
        default="driftwatch",
        description="Client id reported to the brokers (their logs and quotas).",
    )
    poll_batch: int = Field(
        default=500,
        ge=1,
        le=100_000,
        description=(
            "Most records returned by one poll (kafka-python max_poll_records). One batch is "
            "processed between two polls, so it bounds the time spent away from the broker."
        ),
    )
    poll_timeout_ms: int = Field(
        default=1000,
        ge=0,
        le=60_000,
        description=(
            "How long one poll waits for records when there are none. Also the longest delay "
            "before a stop request (SIGTERM) is noticed. Must be below max_poll_interval_ms."
        ),
    )
    auto_offset_reset: Literal["earliest", "latest"] = Field(
        default="earliest",
        description=(
            "Where a group with no committed offset starts. earliest: from the oldest "
            "retained record, so events produced before the agent first started are not "
            "lost and the window fills from history; after that the committed offsets rule."
        ),
    )
    max_poll_interval_ms: int = Field(
        default=5000,
        ge=1000,
        le=3_600_000,
        description=(
            "Longest time between two polls before the broker evicts this member; kafka-python "
            "also uses it as the rebalance timeout, i.e. how long a joining replica may wait "
            "for its partitions. 5000 (not kafka-python's 300000) keeps rebalances to seconds "
            "while a loop iteration takes milliseconds; see the section's description."
        ),
    )
    session_timeout_ms: int = Field(
        default=6000,
        ge=1000,
        le=1_800_000,
        description=(
            "A member whose heartbeats stop for this long is evicted and its partitions move "
            "to the other replicas. Brokers accept group.min.session.timeout.ms (6000 by "
            "default) to group.max.session.timeout.ms (1800000). Must be at least three "
            "heartbeat intervals."
        ),
    )
    heartbeat_interval_ms: int = Field(
        default=1000,
        ge=100,
        le=600_000,
        description=(
            "Interval between heartbeats to the group coordinator. At most a third of "
            "session_timeout_ms (Kafka's guidance), so one late or lost heartbeat never evicts "
            "a healthy member."
        ),
    )
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        default="PLAINTEXT",
        description="How to talk to the brokers: TLS and/or SASL authentication.",
    )
    sasl_mechanism: SaslMechanism | None = Field(
        default=None,
        description=(
            "SASL mechanism; required with SASL_PLAINTEXT and SASL_SSL, refused otherwise. "
            "PLAIN and SCRAM use sasl_plain_username/sasl_plain_password; GSSAPI and "
            "AWS_MSK_IAM take their credentials from the environment (and client_options)."
        ),
    )
    sasl_plain_username: Annotated[str, StringConstraints(min_length=1, max_length=1024)] | None = (
        Field(default=None, description="User name for SASL PLAIN and SCRAM.")
    )
    sasl_plain_password: SecretStr | None = Field(
        default=None,
        description=(
            "Password for SASL PLAIN and SCRAM. Masked in logs and `config show`; prefer "
            "the environment (DRIFTWATCH_KAFKA__SASL_PLAIN_PASSWORD) to the file."
        ),
    )
    ssl_cafile: Path | None = Field(
        default=None,
        description=(
            "CA bundle (PEM) to verify the brokers with; default: the system's. Like every "
            "file setting, it must exist and be readable when the settings are loaded "
            "(`driftwatch config validate --no-file-checks` skips that, to validate a file "
            "on another machine)."
        ),
    )
    ssl_certfile: Path | None = Field(
        default=None, description="Client certificate (PEM) for mutual TLS; may include the key."
    )
    ssl_keyfile: Path | None = Field(
        default=None, description="Client private key (PEM) when it is not in ssl_certfile."
    )
    ssl_password: SecretStr | None = Field(
        default=None,
        description="Password of the client private key. Masked in logs and `config show`.",
    )
    client_options: dict[Annotated[str, StringConstraints(min_length=1)], Any] = Field(
        default_factory=dict,
        max_length=100,
        description=(
            "Further kafka-python KafkaConsumer options (e.g. ssl_check_hostname, "
            "fetch_max_wait_ms, api_version, ssl_crlfile). Names and value types are checked: "
            "integers and booleans may be written as strings (as environment variables are), "
            "api_version as [2, 5, 0] or '2.5.0', ssl_crlfile must be a readable file. "
            "Options that have their own setting here are refused, and so are enable_auto_commit "
            "and options that take Python objects (deserializers, callbacks, ssl_context)."
        ),
    )
    dead_letter_topic: TopicName | None = Field(
        default=None,
        description=(
            "Forward every rejected record (with its reason) to this topic. Must not be "
            "consumed by this agent. None: rejected records are only counted and logged."
        ),
    )
    alarms_topic: TopicName | None = Field(
        default=None,
        description=(
            "Publish every drift alarm to this topic as JSON. Must not be consumed by this "
            "agent. None: alarms are only logged and exported."
        ),
    )
    request_timeout_seconds: float = Field(
        default=5.0,
        ge=0.1,
        le=300,
        description=(
            "Longest wait for each blocking broker request of the agent's loop (a readiness "
            "probe, a commit, leaving the group). A healthy broker answers in milliseconds; "
            "with a dead one a stop still ends within about 2 x this, inside Kubernetes' 30 s "
            "grace period."
        ),
    )
    reconnect_backoff_initial_seconds: float = Field(
        default=0.5,
        ge=0.001,
        le=60,
        description=(
            "Wait before reconnecting to a broker after a failed connection; doubles after "
            "each further failure. 0.5 s (kafka-python: 0.05 s) avoids a storm of connection "
            "errors in the log while a broker restarts, at no visible cost."
        ),
    )
    reconnect_backoff_max_seconds: float = Field(
        default=30.0,
        ge=0.001,
        le=600,
        description="Longest wait between reconnection attempts.",
    )

    @model_validator(mode="before")
    @classmethod
    def _removed_keys(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            _raise(cls.__name__, [
                _problem((key,), "removed: offsets are committed right after each checkpoint "
                         "save, so checkpoint.interval_seconds sets how often", data[key])
                for key in _REMOVED_KAFKA_KEYS if key in data
            ])
        return data

    @model_validator(mode="before")
    @classmethod
    def _default_topics(cls, data: Any) -> Any:
        if (
            isinstance(data, Mapping)
            and data.get("topics") is None
            and data.get("topic_pattern") is None
        ):
            return {**data, "topics": [DEFAULT_TOPIC]}
        return data

    @field_validator("bootstrap_servers", "topics", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("topic_pattern")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from exc
        return pattern

    @field_validator("client_options")
    @classmethod
    def _known_client_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        problems = [
            _problem((key,), f"set by {_OWNED_CLIENT_OPTIONS[key]}, not here")
            for key in options
            if key in _OWNED_CLIENT_OPTIONS
        ]
        known = _kafka_consumer_options()
        checked: dict[str, Any] = {}
        for key, value in options.items():
            if key in _OWNED_CLIENT_OPTIONS:
                continue
            if known is not None and key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                problems.append(_problem((key,), f"not a kafka-python consumer option{hint}"))
                continue
            try:
                checked[key] = _client_option(key, value, None if known is None else known[key])
            except ValueError as exc:
                shown = _shown(("kafka", "client_options", key), value)
                message = f"{exc}, got {_short(value)}" if shown else str(exc)
                problems.append(_problem((key,), message, value))
        _raise(cls.__name__, problems)
        return checked

    @model_validator(mode="after")
    def _consistent(self) -> KafkaSettings:
        problems: list[InitErrorDetails] = []
        if self.topics is not None and self.topic_pattern is not None:
            problems.append(_problem(
                ("topic_pattern",), "set either topics or topic_pattern, not both",
                self.topic_pattern,
            ))
        if 3 * self.heartbeat_interval_ms > self.session_timeout_ms:
            problems.append(_problem(
                ("heartbeat_interval_ms",),
                f"must be at most a third of session_timeout_ms ({self.session_timeout_ms}), "
                f"got {self.heartbeat_interval_ms}",
                self.heartbeat_interval_ms,
            ))
        if self.poll_timeout_ms >= self.max_poll_interval_ms:
            problems.append(_problem(
                ("poll_timeout_ms",),
                f"must be below max_poll_interval_ms ({self.max_poll_interval_ms}), "
                f"got {self.poll_timeout_ms}",
                self.poll_timeout_ms,
            ))
        if self.reconnect_backoff_initial_seconds > self.reconnect_backoff_max_seconds:
            problems.append(_problem(
                ("reconnect_backoff_initial_seconds",),
                f"must not exceed reconnect_backoff_max_seconds "
                f"({self.reconnect_backoff_max_seconds}), got "
                f"{self.reconnect_backoff_initial_seconds}",
                self.reconnect_backoff_initial_seconds,
            ))
        problems += self._security_problems()
        for key in ("dead_letter_topic", "alarms_topic"):
            topic = getattr(self, key)
            if topic is None:
                continue
            if topic in (self.topics or ()) or (
                self.topic_pattern is not None and re.fullmatch(self.topic_pattern, topic)
            ):
                problems.append(_problem(
                    (key,), f"{topic!r} is one of the consumed topics: the agent would read "
                    "its own output", topic,
                ))
        if self.dead_letter_topic is not None and self.dead_letter_topic == self.alarms_topic:
            problems.append(_problem(
                ("alarms_topic",), "must differ from dead_letter_topic", self.alarms_topic
            ))
        _raise(type(self).__name__, problems)
        return self

    def _security_problems(self) -> list[InitErrorDetails]:
        problems: list[InitErrorDetails] = []
        sasl = self.security_protocol.startswith("SASL_")
        tls = self.security_protocol.endswith("SSL")
        if sasl and self.sasl_mechanism is None:
            problems.append(_problem(
                ("sasl_mechanism",), f"required with security_protocol {self.security_protocol}"
            ))
        for key in ("sasl_mechanism", "sasl_plain_username", "sasl_plain_password"):
            if not sasl and getattr(self, key) is not None:
                problems.append(_problem(
                    (key,), "only used with security_protocol SASL_PLAINTEXT or SASL_SSL, "
                    f"not {self.security_protocol}",
                ))
        if sasl and self.sasl_mechanism in _USER_PASSWORD_MECHANISMS:
            for key in ("sasl_plain_username", "sasl_plain_password"):
                if getattr(self, key) is None:
                    problems.append(_problem((key,), f"required by {self.sasl_mechanism}"))
        elif sasl and self.sasl_mechanism is not None:
            for key in ("sasl_plain_username", "sasl_plain_password"):
                if getattr(self, key) is not None:
                    problems.append(_problem(
                        (key,), f"only used by PLAIN and SCRAM, not {self.sasl_mechanism}"
                    ))
        for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password"):
            if not tls and getattr(self, key) is not None:
                problems.append(_problem(
                    (key,), "only used with security_protocol SSL or SASL_SSL, "
                    f"not {self.security_protocol}",
                ))
        for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            path = getattr(self, key)
            problem = None if path is None or not tls else _file_problem(path)
            if problem is not None:
                problems.append(_problem((key,), problem, str(path)))
        if self.ssl_keyfile is not None and self.ssl_certfile is None:
            problems.append(_problem(("ssl_keyfile",), "needs ssl_certfile (the certificate)"))
        if self.ssl_password is not None and self.ssl_certfile is None:
            problems.append(_problem(("ssl_password",), "needs ssl_certfile (the key it opens)"))
        return problems

    def consumer_config(self) -> dict[str, Any]:
        """Keyword arguments for kafka-python's ``KafkaConsumer`` (topics excluded: the source
        subscribes to ``topics`` or ``topic_pattern``).

        The only place secrets are revealed. ``enable_auto_commit`` is False: offsets are
        committed by the agent after the events are in the monitors (at-least-once).
        """
        config: dict[str, Any] = {
            "bootstrap_servers": list(self.bootstrap_servers),
            "group_id": self.group_id,
            "client_id": self.client_id,
            "max_poll_records": self.poll_batch,
            "auto_offset_reset": self.auto_offset_reset,
            "enable_auto_commit": False,
            "max_poll_interval_ms": self.max_poll_interval_ms,
            "session_timeout_ms": self.session_timeout_ms,
            "heartbeat_interval_ms": self.heartbeat_interval_ms,
            "reconnect_backoff_ms": round(self.reconnect_backoff_initial_seconds * 1000),
            "reconnect_backoff_max_ms": round(self.reconnect_backoff_max_seconds * 1000),
            "security_protocol": self.security_protocol,
        }
        if self.sasl_mechanism is not None:
            config["sasl_mechanism"] = self.sasl_mechanism
        if self.sasl_plain_username is not None:
            config["sasl_plain_username"] = self.sasl_plain_username
        if self.sasl_plain_password is not None:
            config["sasl_plain_password"] = self.sasl_plain_password.get_secret_value()
        for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            path = getattr(self, key)
            if path is not None:
                config[key] = str(path)
        if self.ssl_password is not None:
            config["ssl_password"] = self.ssl_password.get_secret_value()
        config.update(self.client_options)
        return config


@functools.cache
def _kafka_consumer_options() -> Mapping[str, Any] | None:
    """kafka-python's consumer options and their defaults, or None when it is not installed
    (then ``client_options`` names are checked by kafka-python itself when the agent
    starts, and value types only where :func:`_client_option` knows them without it)."""
    try:
        with warnings.catch_warnings():  # kafka-python's import warns about its own internals
            warnings.simplefilter("ignore", DeprecationWarning)
            from kafka import KafkaConsumer  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return None
    return types.MappingProxyType(dict(cast(Mapping[str, Any], KafkaConsumer.DEFAULT_CONFIG)))


_OBJECT_CLIENT_OPTIONS = frozenset({
    "key_deserializer", "value_deserializer", "default_offset_commit_callback",
    "partition_assignment_strategy", "ssl_context", "selector", "kafka_client",
    "sasl_oauth_token_provider", "metric_reporters",
})
"""kafka-python options whose values are Python objects (callables, classes, an SSLContext):
nothing YAML or an environment variable can hold, and the agent decodes records itself."""

_OPTIONAL_STRING_CLIENT_OPTIONS = frozenset({
    "group_instance_id", "ssl_ciphers", "sasl_kerberos_name", "sasl_kerberos_domain_name",
    "proxy_url", "socks5_proxy",
})
"""Options that default to None and otherwise take a string."""

_OPTIONAL_SIZE_CLIENT_OPTIONS = frozenset({"receive_buffer_bytes", "send_buffer_bytes"})
"""Options that default to None (the OS's choice) and otherwise take a positive integer."""

_FILE_CLIENT_OPTIONS = frozenset({"ssl_crlfile"})
"""Options naming a file the consumer opens: checked like the file settings."""

_API_VERSION = re.compile(r"[0-9]{1,4}(?:\.[0-9]{1,4}){1,2}")


def _client_option(key: str, value: Any, default: Any) -> Any:
    """``value`` checked (and converted) for kafka-python consumer option ``key``, whose
    default is ``default``; ``ValueError`` saying what the option takes.

    Types come from the option's default (an integer option takes an integer, a flag a
    boolean...) plus the options listed above that default to None. kafka-python checks
    none of them itself: a wrong type surfaces as a ``TypeError`` deep in the consumer
    once the agent runs. Strings of digits and ``true``/``false`` are accepted for integers
    and booleans because environment variables
    (``DRIFTWATCH_KAFKA__CLIENT_OPTIONS__FETCH_MAX_WAIT_MS=100``) can only be strings.
    """
    if key in _OBJECT_CLIENT_OPTIONS:
        raise ValueError(
            "takes a Python object, which a settings file or environment variable cannot "
            "give; not configurable here"
        )
    if key == "api_version":
        if isinstance(value, str) and _API_VERSION.fullmatch(value):
            return tuple(int(part) for part in value.split("."))
        if (isinstance(value, list | tuple) and 2 <= len(value) <= 3
                and all(type(part) is int and part >= 0 for part in value)):
            return tuple(value)
        raise ValueError("must be a broker version such as [2, 5, 0] or '2.5.0'")
    if key == "socket_options":
        if isinstance(value, list | tuple) and all(
            isinstance(option, list | tuple) and len(option) == 3
            and all(type(part) is int for part in option) for option in value
        ):
            return [tuple(option) for option in value]
        raise ValueError("must be a list of [level, option, value] integer triples")
    if key in _FILE_CLIENT_OPTIONS:
        if not isinstance(value, str) or not value:
            raise ValueError("must be the path of a file")
        problem = _file_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value
    if key in _OPTIONAL_STRING_CLIENT_OPTIONS:
        if value is None or (isinstance(value, str) and value):
            return value
        raise ValueError("must be a non-empty string")
    if key in _OPTIONAL_SIZE_CLIENT_OPTIONS:
        return None if value is None else _non_negative_int(value, minimum=1)
    if isinstance(default, bool):
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if type(value) is bool:
            return value
        raise ValueError("must be true or false")
    if isinstance(default, int):
        return _non_negative_int(value)
    if isinstance(default, float):
        number = value
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                number = None
        if type(number) in (int, float) and number >= 0:  # NaN fails >= 0
            return number
        raise ValueError("must be a non-negative number")
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        raise ValueError("must be a string")
    return value  # an option this version does not know the type of: kafka-python decides


def _non_negative_int(value: Any, minimum: int = 0) -> int:
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if type(value) is int and value >= minimum:
        return value
    raise ValueError(f"must be an integer >= {minimum}")


# ------------------------------------------------------------------------------------------
# events


def _check_label_value(value: Any) -> Any:
    if isinstance(value, str | int):  # bool is an int
        return value
    raise ValueError(f"must be a string, an integer or true/false, got {value!r}")


Label = str | int | bool


class EventsSettings(_Section):
    """How a Kafka record value (a JSON object) becomes an event; the rules are those of
    :func:`driftwatch.io.decode.decode`."""

    label_field: FieldName = Field(
        default=_EVENT_DEFAULTS.label_field, description="Field holding the true label."
    )
    score_field: FieldName = Field(
        default=_EVENT_DEFAULTS.score_field,
        description="Field holding the model's score: any finite real, higher = more positive.",
    )
    prediction_field: FieldName = Field(
        default=_EVENT_DEFAULTS.prediction_field,
        description=(
            "Optional field holding the crisp prediction (0/1); when absent, the prediction "
            "is score >= the model's threshold."
        ),
    )
    time_field: FieldName = Field(
        default=_EVENT_DEFAULTS.time_field,
        description="Optional field holding the event time, in seconds since the epoch.",
    )
    model_source: ModelSource = Field(
        default=_EVENT_DEFAULTS.model_source,
        description=(
            "Where the model id comes from: field (model_field of the value), key (the "
            "Kafka record key) or constant (model_constant: one model, e.g. a sidecar)."
        ),
    )
    model_field: FieldName = Field(
        default=_EVENT_DEFAULTS.model_field,
        description="Field holding the model id when model_source is field.",
    )
    model_constant: Name = Field(
        default=_EVENT_DEFAULTS.model_constant,
        description=(
            "The model id when model_source is constant, and for records that lack the "
            "model field or key."
        ),
    )
    positive_label: Label = Field(
        default=_EVENT_DEFAULTS.positive_label,
        description=(
            "The label value of the positive class (a string, an integer or true/false). "
            "From the environment the value is a string."
        ),
    )
    negative_label: Label = Field(
        default=_EVENT_DEFAULTS.negative_label,
        description="The label value of the negative class; must differ from positive_label.",
    )
    max_model_id_length: int = Field(
        default=_EVENT_DEFAULTS.max_model_id_length,
        ge=1,
        le=10_000,
        description=(
            "Longest model id, in characters; longer ids are rejected (reason bad_model). "
            "A model id is the model label of every series of the model. Ids must also be "
            "printable text: no control, format or separator characters and no lone "
            "surrogates (which Prometheus, the checkpoint and log lines could not carry)."
        ),
    )
    numeric_string_scores: bool = Field(
        default=_EVENT_DEFAULTS.numeric_string_scores,
        description=(
            'Also accept scores sent as strings holding a decimal number ("0.83", "8.3E-7": '
            "Java BigDecimal, Kafka Connect decimals). Only an optional sign, ASCII digits, "
            "one decimal point and an exponent; \"nan\", \"inf\", hex, whitespace, digit "
            "separators and values beyond float range stay bad_score. Off: strings are "
            "bad_score."
        ),
    )
    max_record_bytes: int = Field(
        default=_EVENT_DEFAULTS.max_record_bytes,
        ge=64,
        le=100 * 1024 * 1024,
        description=(
            "Records larger than this are rejected unread (reason too_large), so one huge "
            "record cannot stall or exhaust the agent. Default: 1 MiB, Kafka's default "
            "message size limit."
        ),
    )

    @field_validator("positive_label", "negative_label", mode="before")
    @classmethod
    def _label_type(cls, value: Any) -> Any:
        return _check_label_value(value)

    @model_validator(mode="after")
    def _consistent(self) -> EventsSettings:
        problems: list[InitErrorDetails] = []
        if self.positive_label == self.negative_label:
            problems.append(_problem(
                ("negative_label",),
                f"must differ from positive_label ({self.positive_label!r})",
                self.negative_label,
            ))
        used = ["label_field", "score_field", "prediction_field", "time_field"]
        if self.model_source == "field":
            used.append("model_field")
        seen: dict[str, str] = {}
        for key in used:
            name = getattr(self, key)
            if name in seen:
                problems.append(_problem(
                    (key,), f"{name!r} is already the {seen[name]}", name
                ))
            seen.setdefault(name, key)
        problem = model_id_problem(self.model_constant, self.max_model_id_length)
        if problem is not None:
            problems.append(_problem(
                ("model_constant",), f"not a valid model id: {problem}", self.model_constant
            ))
        _raise(type(self).__name__, problems)
        return self

    def event_format(self) -> EventFormat:
        """The decoder's view of these settings."""
        return EventFormat(
            label_field=self.label_field,
            score_field=self.score_field,
            prediction_field=self.prediction_field,
            time_field=self.time_field,
            model_field=self.model_field,
            model_source=self.model_source,
            model_constant=self.model_constant,
            positive_label=self.positive_label,
            negative_label=self.negative_label,
            max_record_bytes=self.max_record_bytes,
            max_model_id_length=self.max_model_id_length,
            numeric_string_scores=self.numeric_string_scores,
        )


# ------------------------------------------------------------------------------------------
# monitoring


@functools.cache
def _parameters_model(detector: type[Detector]) -> type[BaseModel]:
    """A pydantic model of ``detector``'s constructor parameters, derived from its signature.

    Every keyword argument of ``__init__`` becomes a field with its type hint (``Any`` when
    it has none or it cannot be resolved) and its default, and with the description and
    bounds of the detector's ``parameter_docs`` when it gives them. Strict: ``delta: true`` is not
    0.999…, it is a mistake. The detector's own checks (bounds, cross-parameter rules) run
    afterwards, when the settings build it once.
    """
    try:
        hints = typing.get_type_hints(detector.__init__)
    except Exception:  # a plug-in's unresolvable hint must not break settings
        hints = {}
    fields: dict[str, Any] = {}
    parameters = list(inspect.signature(detector.__init__).parameters.values())[1:]
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        required = parameter.default is parameter.empty
        described = detector.parameter_docs.get(parameter.name)
        description, low, high = described or (
            f"Parameter {parameter.name} of {detector.__qualname__} "
            f"({detector.__module__}); see its documentation.", None, None)
        fields[parameter.name] = (
            hints.get(parameter.name, Any),
            Field(
                default=... if required else parameter.default,
                description=description,
                ge=low,
                le=high,
            ),
        )
    return create_model(
        f"{detector.__qualname__}Parameters",
        __config__=ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True),
        **fields,
    )


def _detector_schema(schema: dict[str, Any]) -> None:
    """Add the registry's detectors to the JSON Schema: ``name`` as an enum, and for each
    name the schema of its ``params``, so editors complete and check them."""
    detectors = registry.available()
    schema["properties"]["name"]["enum"] = list(detectors)
    branches: list[dict[str, Any]] = []
    for name, detector in detectors.items():
        params = _parameters_model(detector).model_json_schema()
        if "$defs" in params:  # nested types: leave params as a plain object for this one
            continue
        params.pop("title", None)
        params["description"] = f"Parameters of the {name} detector ({detector.__qualname__})."
        branches.append({
            "if": {"properties": {"name": {"const": name}}, "required": ["name"]},
            "then": {"properties": {"params": params}},
        })
    if branches:
        schema["allOf"] = branches


def _detector_problem(
    exc: Exception,
    name: str,
    params: Mapping[str, Any],
    detector_loc: tuple[str | int, ...],
    params_loc: tuple[str | int, ...],
) -> InitErrorDetails:
    """A detector's own ``ValueError`` as an error at the parameter it names (or at the
    detector when it names none)."""
    param = _named_in(str(exc), registry.get(name).parameter_names())
    if param is None:
        return _problem(detector_loc, str(exc))
    return _problem((*params_loc, param), str(exc), params.get(param))


class DetectorSettings(_Section):
    """A detector fed with a measure's samples: a registry name and its parameters."""

    model_config = ConfigDict(json_schema_extra=_detector_schema)

    name: Annotated[str, StringConstraints(min_length=1, max_length=100)] = Field(
        description=(
            "A detector registered under this name: page_hinkley, adwin, ddm, or a plug-in "
            "of the driftwatch.detectors entry-point group."
        )
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        max_length=100,
        description=(
            "Constructor parameters of the detector, checked against its signature and by "
            "the detector itself; omitted ones take the detector's defaults. direction, when "
            "the detector has it and it is not given, comes from the watch."
        ),
    )

    @field_validator("name")
    @classmethod
    def _registered(cls, name: str) -> str:
        registry.get(name)  # ValueError listing the known detectors, or why a plug-in is broken
        return name

    @field_validator("params")
    @classmethod
    def _typed(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("name")
        if name is None:  # the name was refused: nothing to check the parameters against
            return params
        model = _parameters_model(registry.get(name))
        try:
            validated = model.model_validate(params)
        except ValidationError as exc:
            accepted = ", ".join(model.model_fields) or "(none)"
            problems: list[InitErrorDetails] = []
            for error in exc.errors(include_url=False):
                if error["type"] == "extra_forbidden":
                    message = f"{name} has no such parameter; its parameters: {accepted}"
                    problems.append(_problem(error["loc"], message))
                else:
                    problems.append({
                        "type": PydanticCustomError(
                            "detector_parameter", "{message}", {"message": error["msg"]}
                        ),
                        "loc": error["loc"],
                        "input": error["input"],
                    })
            _raise(cls.__name__, problems)
        params = {key: getattr(validated, key) for key in params}
        # Build it once, so the detector's own checks (bounds, rules between parameters)
        # report here, at the parameter they name. The watch builds it again with the
        # direction it inherits (WatchSettings._buildable).
        try:
            registry.create(name, **params)
        except (ValueError, TypeError) as exc:
            _raise(cls.__name__, [_detector_problem(exc, name, params, (), ())])
        return params

    def spec(self) -> DetectorSpec:
        return DetectorSpec(self.name, dict(self.params))


class WatchSettings(_Section):
    """How one measure is watched: which value, which detectors, and an optional floor."""

    measure: str = Field(
        description=(
            "A measure of the window (auc, a crisp measure such as gmean or kappa), "
            "error_stream (the per-event error, 1 when the prediction is wrong: DDM's input), "
            "or, with feed: blocks, false_negative_rate (FN/P) or false_positive_rate (FP/N)."
        ),
        json_schema_extra={"enum": list(WATCHABLE)},
    )
    feed: Feed = Field(
        default="window",
        description=(
            "What the detectors get. blocks: one z-score per block of at least "
            "block_min_class positives and negatives (the block's AUC or per-class error "
            "rate, standardized by its sampling error against the level since the last "
            "alarm): independent inputs whose false-alarm rate the cusum detector's arl "
            "fixes at any class ratio; for auc, false_negative_rate and false_positive_rate. "
            "window: the window's value every sample_every events (autocorrelated; for "
            "page_hinkley, adwin and ddm as configured before blocks existed)."
        ),
    )
    normalized: bool = Field(
        default=False,
        description=(
            "Feed the detectors the class-ratio-normalized value (paper 003, eq. 10) instead "
            "of the raw one; only for measures that have a normalization."
        ),
    )
    direction: Direction | None = Field(
        default=None,
        description=(
            "The change that matters: down, up or both. None: the measure's bad direction "
            "(a drop; a rise for error and error_stream). Given to every detector that takes "
            "a direction and does not set its own."
        ),
    )
    floor: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(
        default=None,
        description=(
            "A floor on the normalized scale (0.8: better than 80 % of all confusion "
            "matrices at the window's class ratio). Exported as a raw threshold that follows "
            "the class ratio, and a threshold alarm when the measure falls below it."
        ),
    )
    detectors: list[DetectorSettings] = Field(
        default_factory=list,
        max_length=20,
        description="Detectors fed with this measure's samples (none: only exported).",
    )

    @field_validator("measure")
    @classmethod
    def _watchable(cls, measure: str) -> str:
        if measure not in WATCHABLE:
            raise ValueError(f"unknown measure {measure!r}; watchable: {', '.join(WATCHABLE)}")
        return measure

    @model_validator(mode="after")
    def _buildable(self) -> WatchSettings:
        try:
            watch = self.watch()
        except ValueError as exc:  # the core's own rules, e.g. DDM on raw kappa
            problem = _problem(self._locate(str(exc)), str(exc))
            raise ValidationError.from_exception_data(type(self).__name__, [problem]) from None
        # Build each detector once, exactly as a Monitor will (including the direction it
        # inherits from the watch), so its own ValueError is reported here, at its key.
        problems: list[InitErrorDetails] = []
        for index, spec in enumerate(watch.detectors):
            single = dataclasses.replace(watch, detectors=(spec,))
            try:
                Monitor("settings-check", MonitorConfig(window_size=1, watches=(single,)))
            except (ValueError, TypeError) as exc:
                problems.append(
                    _detector_problem(
                        exc, spec.name, spec.params,
                        ("detectors", index), ("detectors", index, "params"),
                    )
                )
        _raise(type(self).__name__, problems)
        return self

    def _locate(self, message: str) -> tuple[str | int, ...]:
        """The key a ``Watch`` error message is about."""
        key = _named_in(
            message, ("measure", "normalized", "direction", "floor", "feed", "detectors")
        )
        if key is None:
            return ()
        if key == "detectors":
            index = next(
                (i for i, d in enumerate(self.detectors) if _named_in(message, (d.name,))),
                None,
            )
            return (key,) if index is None else (key, index)
        return (key,)

    def watch(self) -> Watch:
        """The core's :class:`~driftwatch.core.monitor.Watch` for these settings."""
        return Watch(
            measure=self.measure,
            detectors=tuple(d.spec() for d in self.detectors),
            normalized=self.normalized,
            direction=self.direction,
            floor=self.floor,
            feed=self.feed,
        )

    @classmethod
    def from_watch(cls, watch: Watch) -> WatchSettings:
        return cls(
            measure=watch.measure,
            feed=watch.feed,
            normalized=watch.normalized,
            direction=watch.direction,
            floor=watch.floor,
            detectors=[
                DetectorSettings(name=spec.name, params=dict(spec.params))
                for spec in watch.detectors
            ],
        )


WindowSize = Annotated[int, Field(ge=1, le=MAX_WINDOW_SIZE)]
SampleEvery = Annotated[int, Field(ge=1, le=MAX_WINDOW_SIZE)]
Threshold = Annotated[float, Field(allow_inf_nan=False, ge=-1e300, le=1e300)]
BlockMinClass = Annotated[int, Field(ge=2, le=100_000)]
BlockWarmup = Annotated[int, Field(ge=1, le=100_000)]
def _distinct_watches(watches: list[WatchSettings]) -> list[WatchSettings]:
    """Refuse watches that a monitor's metrics could not tell apart.

    Detector states and alarms are exported per (model, measure, detector), and raw
    thresholds per (model, measure): the same detector on one measure twice (say on raw and
    on normalized G-mean), or two floors for one measure, would write to the same series.
    """
    problems: list[InitErrorDetails] = []
    seen: dict[tuple[str, str], int] = {}
    floors: dict[str, int] = {}
    for i, watch in enumerate(watches):
        for j, detector in enumerate(watch.detectors):
            first = seen.setdefault((watch.measure, detector.name), i)
            if first != i or any(d.name == detector.name for d in watch.detectors[:j]):
                problems.append(_problem(
                    (i, "detectors", j, "name"),
                    f"{detector.name} already watches {watch.measure} (watches.{first}); "
                    "metrics and alarms are labelled by measure and detector, so each pair "
                    "may appear once",
                    detector.name,
                ))
        if watch.floor is not None:
            first = floors.setdefault(watch.measure, i)
            if first != i:
                problems.append(_problem(
                    (i, "floor"),
                    f"{watch.measure} already has a floor (watches.{first}); its raw threshold "
                    "is exported once per measure",
                    watch.floor,
                ))
    _raise("watches", problems)
    return watches


Watches = Annotated[
    list[WatchSettings], Field(max_length=100), AfterValidator(_distinct_watches)
]

_WINDOW_SIZE = (
    "Events in the sliding window over which AUC and the crisp measures are computed "
    "(paper 000 studies the choice; 1000 balances reaction time against variance)."
)
_SAMPLE_EVERY = (
    "The window's measures are sampled for floors and feed: window detectors every this "
    "many events (error_stream detectors see every event; feed: blocks detectors one input "
    "per block)."
)
_THRESHOLD = (
    "Score at or above which an event without a prediction field counts as predicted "
    "positive. Any finite number: scores need not be probabilities."
)
_WATCHES = "The measures to watch and their detectors."
_BLOCK_MIN_CLASS = (
    "A block (the input unit of feed: blocks watches) closes once it holds at least this "
    "many positives and this many negatives, so every block carries the same information "
    "whatever the class ratio (at 1:15 it is longer in events). Larger: smaller shifts "
    "seen, later."
)
_BLOCK_WARMUP = (
    "Blocks that only build a blocks watch's reference level, after the start and after "
    "each of its alarms, before its detectors get inputs."
)
_ADAPTIVE_WINDOW = (
    "Let ADWIN choose the window's length from the per-event error (paper 002, §6): "
    "window_size becomes the longest it may grow, and after a change the window drops the "
    "events from before it. Its current length is the sum of driftwatch_window_events over "
    "the classes."
)


class MonitorDefaults(_Section):
    """What every model's monitor computes and watches, unless its entry in ``models``
    overrides it."""

    window_size: WindowSize = Field(
        default=_MONITOR_DEFAULTS.window_size, description=_WINDOW_SIZE
    )
    sample_every: SampleEvery = Field(
        default=_MONITOR_DEFAULTS.sample_every, description=_SAMPLE_EVERY
    )
    threshold: Threshold = Field(default=_MONITOR_DEFAULTS.threshold, description=_THRESHOLD)
    block_min_class: BlockMinClass = Field(
        default=_MONITOR_DEFAULTS.block_min_class, description=_BLOCK_MIN_CLASS
    )
    block_warmup: BlockWarmup = Field(
        default=_MONITOR_DEFAULTS.block_warmup, description=_BLOCK_WARMUP
    )
    adaptive_window: bool = Field(
        default=_MONITOR_DEFAULTS.adaptive_window, description=_ADAPTIVE_WINDOW
    )
    watches: Watches = Field(
        default_factory=lambda: [WatchSettings.from_watch(w) for w in DEFAULT_WATCHES],
        description=(
            f"{_WATCHES} Omitted: the built-in defaults (driftwatch.core.monitor."
            "DEFAULT_WATCHES; `driftwatch config show` prints them)."
        ),
    )


class MonitorOverrides(_Section):
    """One model's differences from ``monitoring.defaults``; omitted keys are inherited.
    ``watches``, when given, replaces the default list as a whole."""

    window_size: WindowSize | None = Field(default=None, description=_WINDOW_SIZE)
    sample_every: SampleEvery | None = Field(default=None, description=_SAMPLE_EVERY)
    threshold: Threshold | None = Field(default=None, description=_THRESHOLD)
    block_min_class: BlockMinClass | None = Field(default=None, description=_BLOCK_MIN_CLASS)
    block_warmup: BlockWarmup | None = Field(default=None, description=_BLOCK_WARMUP)
    adaptive_window: bool | None = Field(default=None, description=_ADAPTIVE_WINDOW)
    watches: Watches | None = Field(
        default=None, description=f"{_WATCHES} Replaces the default list; [] watches nothing."
    )


class MonitoringSettings(_Section):
    """Per-model monitors: shared defaults and per-model overrides."""

    defaults: MonitorDefaults = Field(
        default_factory=MonitorDefaults, description="Settings of every model's monitor."
    )
    models: dict[Name, MonitorOverrides] = Field(
        default_factory=dict,
        max_length=100_000,
        description=(
            "Overrides by model id. Models not listed use the defaults; listing a model "
            "does not reserve a slot (limits.max_models still applies). Environment "
            "variable names are case-insensitive, so ids set from the environment "
            "(DRIFTWATCH_MONITORING__MODELS__<ID>__WINDOW_SIZE) are lower case."
        ),
    )

    def monitor_config(self, model: str) -> MonitorConfig:
        """The core's :class:`~driftwatch.core.monitor.MonitorConfig` for ``model``: the
        defaults, with that model's overrides applied key by key."""
        overrides = self.models.get(model, MonitorOverrides())
        defaults = self.defaults
        watches = defaults.watches if overrides.watches is None else overrides.watches
        return MonitorConfig(
            window_size=_pick(overrides.window_size, defaults.window_size),
            sample_every=_pick(overrides.sample_every, defaults.sample_every),
            threshold=_pick(overrides.threshold, defaults.threshold),
            watches=tuple(w.watch() for w in watches),
            block_min_class=_pick(overrides.block_min_class, defaults.block_min_class),
            block_warmup=_pick(overrides.block_warmup, defaults.block_warmup),
            adaptive_window=_pick(overrides.adaptive_window, defaults.adaptive_window),
        )


_T = typing.TypeVar("_T")


def _pick(override: _T | None, default: _T) -> _T:
    return default if override is None else override


# ------------------------------------------------------------------------------------------
# alerts


@dataclasses.dataclass(frozen=True, slots=True)
class AlertThresholds:
    """One model's alert thresholds, resolved from ``alerts.defaults`` and its overrides.

    The exporter publishes them as gauges (``driftwatch_auc_floor{model}`` ...), so that one
    set of alert rules compares every model with its own thresholds
    (``driftwatch_measure{measure="auc"} < ignoring(measure) driftwatch_auc_floor``) and
    operators tune alerts in the settings file, without editing rules.
    """

    auc_floor: float
    auc_max_drop: float
    no_events_seconds: float
    batch_labels: bool


_AUC_FLOOR = (
    "AUC below which the model's AUC alerts fire (DriftwatchAucBelowFloor on the value, "
    "DriftwatchAucSignificantlyBelowFloor when even its upper confidence bound is below). "
    "0 turns them off for the model."
)
_AUC_MAX_DROP = (
    "Largest drop of AUC below the model's own 6-hour average that is not an alert "
    "(DriftwatchAucDropped). 1 turns it off."
)
_NO_EVENTS_SECONDS = (
    "Seconds without any processed event of the model after which DriftwatchNoEvents fires "
    "(labels arriving late count: set it above the model's longest normal gap)."
)
_BATCH_LABELS = (
    "The model's labels arrive in batches (e.g. once a day): it never fires "
    "DriftwatchNoEvents (which may page); a gap beyond no_events_seconds raises the "
    "informational DriftwatchBatchEventsOverdue instead."
)
AucFloor = Annotated[float, Field(ge=0, le=1)]
AucMaxDrop = Annotated[float, Field(gt=0, le=1)]
NoEventsSeconds = Annotated[float, Field(ge=60, le=30 * 86_400)]


class AlertDefaults(_Section):
    """Every model's alert thresholds, unless its entry in ``alerts.models`` overrides them."""

    auc_floor: AucFloor = Field(default=0.7, description=_AUC_FLOOR)
    auc_max_drop: AucMaxDrop = Field(default=0.05, description=_AUC_MAX_DROP)
    no_events_seconds: NoEventsSeconds = Field(default=1200.0, description=_NO_EVENTS_SECONDS)
    batch_labels: bool = Field(default=False, description=_BATCH_LABELS)


class AlertOverrides(_Section):
    """One model's differences from ``alerts.defaults``; omitted keys are inherited."""

    auc_floor: AucFloor | None = Field(default=None, description=_AUC_FLOOR)
    auc_max_drop: AucMaxDrop | None = Field(default=None, description=_AUC_MAX_DROP)
    no_events_seconds: NoEventsSeconds | None = Field(
        default=None, description=_NO_EVENTS_SECONDS)
    batch_labels: bool | None = Field(default=None, description=_BATCH_LABELS)


class AlertsSettings(_Section):
    """Per-model alert thresholds, exported as metrics for the shipped alert rules."""

    defaults: AlertDefaults = Field(
        default_factory=AlertDefaults, description="Thresholds of every model."
    )
    models: dict[Name, AlertOverrides] = Field(
        default_factory=dict,
        max_length=100_000,
        description=(
            "Overrides by model id, like monitoring.models. Environment variable names are "
            "case-insensitive, so ids set from the environment are lower case."
        ),
    )

    def thresholds(self, model: str) -> AlertThresholds:
        """``model``'s thresholds: the defaults with its overrides applied key by key."""
        overrides = self.models.get(model)
        defaults = self.defaults
        if overrides is None:
            return AlertThresholds(defaults.auc_floor, defaults.auc_max_drop,
                                   defaults.no_events_seconds, defaults.batch_labels)
        return AlertThresholds(
            auc_floor=_pick(overrides.auc_floor, defaults.auc_floor),
            auc_max_drop=_pick(overrides.auc_max_drop, defaults.auc_max_drop),
            no_events_seconds=_pick(overrides.no_events_seconds, defaults.no_events_seconds),
            batch_labels=_pick(overrides.batch_labels, defaults.batch_labels),
        )


# ------------------------------------------------------------------------------------------
# comparisons


class ComparisonSettings(_Section):
    """One champion/challenger comparison over the same events (paper 002, §4).

    The records of ``model`` carry the champion's score in the events' score field (they
    feed the model's monitor as usual) and the challenger's in ``challenger_score_field``;
    both go to one paired window of the last ``window_size`` events. Exported as
    ``driftwatch_comparison_*`` metrics (AUC difference, DeLong, McNemar, sign and Wilcoxon
    tests, κ).
    """

    name: Name = Field(description="The comparison's id: the comparison label of its metrics.")
    model: Name = Field(
        description="The champion's model id: its records carry the challenger's score too."
    )
    challenger_score_field: FieldName = Field(
        description="The record field holding the challenger's score (same rules as the score)."
    )
    challenger_prediction_field: FieldName | None = Field(
        default=None,
        description=(
            "The record field holding the challenger's crisp prediction; absent or null: "
            "derived from its score and challenger_threshold."
        ),
    )
    challenger_threshold: Threshold | None = Field(
        default=None,
        description="The challenger's crisp threshold; null: the model's threshold.",
    )
    window_size: WindowSize | None = Field(
        default=None,
        description="Events in the paired window of both models; null: the model's window_size.",
    )
    block_size: WindowSize | None = Field(
        default=None,
        description=(
            "Events per block of the sign and Wilcoxon tests over recent blocks; null: the "
            "window size."
        ),
    )
    blocks: int = Field(
        default=10,
        ge=1,
        le=1000,
        description=(
            "Recent complete blocks the sign and Wilcoxon tests use. Wilcoxon needs 6 or more "
            "for p < 0.05 to be possible at all."
        ),
    )


# ------------------------------------------------------------------------------------------
# limits, metrics, checkpoint, logging


class LimitsSettings(_Section):
    """Bounds that keep memory and metric cardinality finite whatever the stream holds."""

    max_models: int = Field(
        default=100,
        ge=1,
        le=100_000,
        description=(
            "Most models monitored at once; events of further models are rejected (reason "
            "too_many_models) and counted. Each model costs a window (window_size events) "
            "and a few dozen Prometheus series, so 100 models stay within tens of MB and a "
            "few thousand series."
        ),
    )


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


class CheckpointSettings(_Section):
    """Monitor state saved to disk, so a restart does not blind the monitors for a window.

    The checkpoint is the only resume point. It holds the monitors, the rejection counts and
    the offsets they cover, written atomically; offsets are committed to the consumer group
    right after each successful save, and exactly those, so a committed offset never passes
    what the disk holds. A partition the checkpoint does not cover (a first start, a new
    partition, one moved from another replica, or every partition when ``enabled`` is
    false) is read from where ``kafka.auto_offset_reset`` says, never from the group's
    commit: with the default (earliest) the monitors are rebuilt from the retained log.
    A save that fails is retried with backoff (1 s doubling to 60 s), counted, makes
    ``/readyz`` answer 503, and is never followed by a commit.

    ``interval_seconds`` (5 s) was chosen by measurement (benchmarks/checkpoint.py, 2-core
    machine): a save of 1 model (window 1000) takes about 16 ms (0.3 % of 5 s), of 100
    models 0.3-0.4 s (under 8 %), of 1000 models 2-4 s (28 MB). After a crash everything
    since the last save is read again: at most one interval of records, a few seconds of
    catch-up, and no event is lost or counted twice. So that saving never takes more than a
    tenth of the loop's time, the interval stretches to ten times the last save's duration
    when that is longer (1000 models: every 20-40 s).
    """

    enabled: bool = Field(
        default=True,
        description=(
            "Save and restore the monitors' state. When false nothing is saved, the agent "
            "rebuilds its monitors from the log at every start (kafka.auto_offset_reset), "
            "and commits processed offsets every interval_seconds only so that the group's "
            "lag is visible to Kafka tools."
        ),
    )
    directory: Path = Field(
        default=Path("driftwatch-state"),
        description=(
            "Directory for the state files. Relative to the working directory by default, "
            "so a local run works without privileges; in Kubernetes point it at a "
            "persistent volume (the Helm chart does)."
        ),
    )
    interval_seconds: float = Field(
        default=5.0,
        ge=1,
        le=86_400,
        description=(
            "Save the state this often (and on shutdown), then commit the offsets it covers. "
            "After a crash the records since the last save are read again (nothing is lost "
            "or counted twice). Stretched to 10 x the last save's duration when that is "
            "longer, so saves take at most a tenth of the time."
        ),
    )


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


class LoggingSettings(_Section):
    """Log output."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        default="INFO", description="Least severe level logged (case-insensitive)."
    )
    format: Literal["text", "json"] = Field(
        default="text",
        description="text for people, json (one object per line) for log collectors.",
    )

    @field_validator("level", mode="before")
    @classmethod
    def _upper(cls, level: Any) -> Any:
        return level.upper() if isinstance(level, str) else level


# ------------------------------------------------------------------------------------------
# the root


_FILE_DATA: ContextVar[dict[str, Any] | None] = ContextVar("driftwatch_settings_file", default=None)


class _FileSource(PydanticBaseSettingsSource):
    """The parsed settings file, ranked below the environment (see :func:`load_settings`)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return _FILE_DATA.get() or {}



# ------------------------------------------------------------------------------------------
# join: predictions and labels that arrive separately


class ScoreDriftSettings(_Section):
    """Label-free signals of each model's predictions (driftwatch.core.score_drift)."""

    enabled: bool = Field(default=True, description="Compute and watch the label-free signals.")
    window: int = Field(
        default=1000, ge=10, le=1_000_000,
        description="Recent predictions whose KS distance, PSI and positive rate are exported.")
    block_size: int = Field(
        default=500, ge=10, le=1_000_000,
        description=(
            "Predictions per block: each block is compared with the reference and its "
            "standardized signals feed the detectors (one input per block)."))
    reference: Literal["frozen", "previous"] = Field(
        default="frozen",
        description=(
            "frozen: the first reference_size predictions after the start (the model as "
            "deployed; a restart with its checkpoint keeps it); previous: the reference_size "
            "predictions just before those compared (follows slow changes)."))
    reference_size: int = Field(
        default=10_000, ge=100, le=1_000_000,
        description=(
            "Predictions in the reference. Blocks share it, so their values correlate by "
            "about block_size / (block_size + reference_size): keep it 20 blocks or more. "
            "Memory per model, measured at the defaults: 0.23 MB with a frozen reference "
            "(8 bytes per reference score, about 90 per windowed prediction), 1 MB with "
            "previous (the reference is held as predictions too)."))
    bins: int = Field(default=10, ge=2, le=100,
                      description="Bins of the PSI, at the reference's quantiles.")
    arl: float = Field(
        default=10_000.0, ge=10.0, le=1e9,
        description=(
            "In-control average run length of each signal's CUSUM, in blocks: the mean "
            "number of blocks between false alarms while the scores hold."))


class JoinSettings(_Section):
    """Predictions and labels as separate records, joined by event id in the agent."""

    enabled: bool = Field(
        default=False,
        description=(
            "Read predictions and labels as separate records and join them by event id "
            "(off: each record holds a label and a score)."))
    predictions_topic: TopicName | None = Field(
        default=None,
        description="Topic of the prediction records (with labels_topic; must be in "
                    "kafka.topics).")
    labels_topic: TopicName | None = Field(
        default=None,
        description="Topic of the label records (with predictions_topic).")
    kind_field: FieldName | None = Field(
        default=None,
        description=(
            "Instead of two topics: the field whose value says whether a record is a "
            "prediction (prediction_kind) or a label (label_kind)."))
    prediction_kind: Name = Field(default="prediction",
                                  description="kind_field's value for a prediction.")
    label_kind: Name = Field(default="label", description="kind_field's value for a label.")
    event_id_field: FieldName = Field(
        default="event_id",
        description="Field holding the event id (a string or an integer) on both kinds.")
    max_pending: int = Field(
        default=100_000, ge=1, le=100_000_000,
        description=(
            "Predictions waiting for their label, per model; beyond it the oldest leaves "
            "(counted as overflow). About 350 bytes each (measured, 12-character ids)."))
    max_age_seconds: float = Field(
        default=30 * 86_400.0, gt=0,
        description=(
            "How long a prediction waits for its label, on the labels' clock (a label "
            "stamped this much later than it has been seen); then it expires."))
    max_pending_labels: int = Field(
        default=100_000, ge=1, le=100_000_000,
        description="Labels waiting for their prediction (all models); beyond it the oldest "
                    "leaves.")
    max_label_age_seconds: float = Field(
        default=3_600.0, gt=0,
        description=(
            "How long a label waits for its prediction, on the predictions' clock; then it "
            "expires."))
    remember: int = Field(
        default=100_000, ge=1, le=100_000_000,
        description="Recently joined event ids kept to recognize replayed (duplicate) records.")
    score_drift: ScoreDriftSettings = Field(
        default_factory=ScoreDriftSettings,
        description="Label-free signals of the predictions.")

    @model_validator(mode="after")
    def _form(self) -> JoinSettings:
        problems: list[InitErrorDetails] = []
        if self.enabled:
            topics = (self.predictions_topic, self.labels_topic)
            if self.kind_field is None and None in topics:
                missing = "predictions_topic" if topics[0] is None else "labels_topic"
                problems.append(_problem((missing,), "required when join is enabled without "
                                                     "kind_field (two topics)"))
            if self.kind_field is not None and topics != (None, None):
                problems.append(_problem(("kind_field",), "give either kind_field (one topic) "
                                                          "or predictions_topic and labels_topic"))
            if topics[0] is not None and topics[0] == topics[1]:
                problems.append(_problem(("labels_topic",), "must differ from "
                                                            "predictions_topic"))
            if self.prediction_kind == self.label_kind:
                problems.append(_problem(("label_kind",), "must differ from prediction_kind"))
        _raise(type(self).__name__, problems)
        return self

    def limits(self) -> dict[str, Any]:
        """The core join's bounds (driftwatch.core.join.Join's keyword arguments)."""
        return {"max_pending": self.max_pending, "max_age": self.max_age_seconds,
                "max_pending_labels": self.max_pending_labels,
                "max_label_age": self.max_label_age_seconds, "remember": self.remember}

    def join_format(self) -> JoinFormat:
        """How records are told apart and keyed, for the decoder."""
        return JoinFormat(self.event_id_field, self.kind_field, self.prediction_kind,
                          self.label_kind)

    def delayed_labels(self, threshold_for: Callable[[str], float]) -> DelayedLabels:
        """A fresh join with the models' label-free watches (when ``score_drift`` is on);
        ``threshold_for(model)`` is the model's crisp threshold (its monitor's)."""
        drift = self.score_drift

        def watch_for(model: str) -> PredictionWatch:
            return PredictionWatch(model, ScoreDrift(
                window=drift.window, block_size=drift.block_size, reference=drift.reference,
                reference_size=drift.reference_size, bins=drift.bins,
                threshold=threshold_for(model)), default_detectors(drift.arl))

        return DelayedLabels(Join(**self.limits()), watch_for if drift.enabled else None)


class Settings(BaseSettings):
    """driftwatch's settings. Build with :func:`load_settings`; ``Settings()`` reads the
    environment only."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED_DELIMITER,
        case_sensitive=False,
        extra="forbid",
        frozen=True,
    )

    kafka: KafkaSettings = Field(
        default_factory=KafkaSettings, description="Kafka: brokers, topics, group, security."
    )
    events: EventsSettings = Field(
        default_factory=EventsSettings, description="How record values become events."
    )
    monitoring: MonitoringSettings = Field(
        default_factory=MonitoringSettings,
        description="Windows, measures and detectors, by default and per model.",
    )
    alerts: AlertsSettings = Field(
        default_factory=AlertsSettings,
        description="Alert thresholds, by default and per model, exported as metrics.",
    )
    limits: LimitsSettings = Field(
        default_factory=LimitsSettings, description="Bounds on models (and so on metrics)."
    )
    metrics: MetricsSettings = Field(
        default_factory=MetricsSettings, description="The Prometheus endpoint."
    )
    checkpoint: CheckpointSettings = Field(
        default_factory=CheckpointSettings, description="Saving monitor state across restarts."
    )
    readiness: ReadinessSettings = Field(
        default_factory=ReadinessSettings,
        description="When /readyz reports a broker outage, and its recovery.",
    )
    logging: LoggingSettings = Field(
        default_factory=LoggingSettings, description="Log level and format."
    )
    comparisons: list[ComparisonSettings] = Field(
        default_factory=list,
        max_length=100,
        description=(
            "Champion/challenger comparisons: models whose records carry a second model's "
            "score, compared over the same events."
        ),
    )

    join: JoinSettings = Field(
        default_factory=JoinSettings,
        description="Predictions and labels as separate records, joined by event id.",
    )

    def comparison_configs(self) -> list[ComparisonConfig]:
        """Each comparison with the model's window size and thresholds filled in."""
        configs = []
        for comparison in self.comparisons:
            monitor = self.monitoring.monitor_config(comparison.model)
            window = _pick(comparison.window_size, monitor.window_size)
            configs.append(ComparisonConfig(
                name=comparison.name,
                model=comparison.model,
                challenger_score_field=comparison.challenger_score_field,
                challenger_prediction_field=comparison.challenger_prediction_field,
                window_size=window,
                threshold=monitor.threshold,
                challenger_threshold=_pick(comparison.challenger_threshold, monitor.threshold),
                block_size=_pick(comparison.block_size, window),
                blocks=comparison.blocks,
            ))
        return configs

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment above the file, so a deployment overrides one value of a shared file.
        return init_settings, env_settings, _FileSource(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _known_environment_sections(cls, data: Any) -> Any:
        """Refuse ``DRIFTWATCH_<SECTION>__...`` variables whose section does not exist.

        pydantic-settings ignores them, so ``DRIFTWATCH_METRIC__PORT=9200`` (a typo) would
        leave the port at its default without a word. Only names with the ``__`` separator
        are settings: ``DRIFTWATCH_CONFIG`` (the file) and other single-word names
        (``DRIFTWATCH_REQUIRE_TOOLS``, used by the test suite) are not this model's.
        """
        problems: list[InitErrorDetails] = []
        sections = list(cls.model_fields)
        for name in sorted(os.environ):
            if not name.upper().startswith(ENV_PREFIX):
                continue
            section, separator, _ = name[len(ENV_PREFIX):].partition(ENV_NESTED_DELIMITER)
            if not separator or section.lower() in sections:
                continue
            close = difflib.get_close_matches(section.lower(), sections, n=1)
            hint = f"; did you mean {close[0]}?" if close else f"; sections: {', '.join(sections)}"
            problems.append(_problem(
                (), f"environment variable {name}: unknown settings section "
                f"{section.lower()!r}{hint}",
            ))
        _raise(cls.__name__, problems)
        return data

    @model_validator(mode="after")
    def _across_sections(self) -> Settings:
        problems: list[InitErrorDetails] = []
        # Per-model overrides (monitoring.models, alerts.models) must name a model that can
        # occur: a valid model id and, with a constant model source, that constant.
        for section, models in (("monitoring", self.monitoring.models),
                                ("alerts", self.alerts.models)):
            for model in models:
                problem = model_id_problem(model, self.events.max_model_id_length)
                if problem is not None:
                    problems.append(_problem(
                        (section, "models", model),
                        f"never applies: not a valid model id: {problem} ("
                        f"events.max_model_id_length={self.events.max_model_id_length})",
                    ))
                elif self.events.model_source == "constant" \
                        and model != self.events.model_constant:
                    problems.append(_problem(
                        (section, "models", model),
                        f"never applies: events.model_source is constant, so every event "
                        f"belongs to model {self.events.model_constant!r}",
                    ))
        names: set[str] = set()
        for i, comparison in enumerate(self.comparisons):
            if comparison.name in names:
                problems.append(_problem(("comparisons", i, "name"),
                                         f"{comparison.name!r} names two comparisons"))
            names.add(comparison.name)
            problem = model_id_problem(comparison.model, self.events.max_model_id_length)
            if problem is not None:
                problems.append(_problem(("comparisons", i, "model"),
                                         f"never applies: not a valid model id: {problem}"))
            if comparison.challenger_score_field == self.events.score_field:
                problems.append(_problem(
                    ("comparisons", i, "challenger_score_field"),
                    f"is events.score_field ({self.events.score_field!r}), the champion's "
                    f"score: name the field holding the challenger's",
                ))
        if len(self.monitoring.models) > self.limits.max_models:
            problems.append(_problem(
                ("monitoring", "models"),
                f"{len(self.monitoring.models)} models have overrides but limits.max_models is "
                f"{self.limits.max_models}",
            ))
        _raise(type(self).__name__, problems)
        return self

    @model_validator(mode="after")
    def _join_topics_consumed(self) -> Settings:
        problems: list[InitErrorDetails] = []
        topics = self.kafka.topics
        if self.join.enabled and topics is not None:
            for key in ("predictions_topic", "labels_topic"):
                topic = getattr(self.join, key)
                if topic is not None and topic not in topics:
                    problems.append(_problem(("join", key), f"{topic!r} is not in kafka.topics, "
                                                            "so it would never be read", topic))
        _raise(type(self).__name__, problems)
        return self


# ------------------------------------------------------------------------------------------
# loading and reporting


class SettingsFileError(ValueError):
    """The settings file cannot be read or is not valid YAML; ``str()`` is one line."""


class _Loader(yaml.SafeLoader):  # type: ignore[misc, unused-ignore]
    """Safe YAML with two fixes for settings files: a duplicated key is an error (the
    second would silently win), and ``1e-3`` is a number, as in YAML 1.2 and JSON (YAML
    1.1 reads it as a string)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:
                continue  # unhashable: the base class reports it
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r}", key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def read_settings_file(path: str | Path) -> dict[str, Any]:
    """The settings file's content as a mapping; :class:`SettingsFileError` when it is
    missing, unreadable, not YAML, or not a mapping of sections."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SettingsFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SettingsFileError(f"{path}: is a directory, not a settings file") from None
    except UnicodeDecodeError as exc:
        raise SettingsFileError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise SettingsFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        raise SettingsFileError(f"{where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise SettingsFileError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsFileError(
            f"{path}: the top level must be a mapping of sections (kafka:, events:, ...), "
            f"not a {type(data).__name__}"
        )
    return data


def load_settings(path: str | Path | None = None, *, check_files: bool = True) -> Settings:
    """Settings from the YAML file at ``path`` (None: the file named by ``DRIFTWATCH_CONFIG``,
    or no file), overridden by ``DRIFTWATCH_*`` environment variables.

    With ``check_files`` (the default), every file the settings name (TLS certificates,
    keys, CA bundles, ``kafka.client_options.ssl_crlfile``) must be readable now, so a
    missing one is reported at its key instead of as endless connection retries; False
    validates a file meant for another machine (``config validate --no-file-checks``).

    Raises :class:`SettingsFileError`, pydantic's ``ValidationError``, or pydantic-settings'
    ``SettingsError`` (an environment variable that is not valid JSON where JSON is needed);
    :func:`settings_errors` turns any of them into readable lines.
    """
    if path is None or path == "":
        path = os.environ.get(CONFIG_ENV) or None
    data = read_settings_file(path) if path is not None else {}
    token = _FILE_DATA.set(data)
    files_token = _CHECK_FILES.set(check_files)
    try:
        return Settings()
    finally:
        _CHECK_FILES.reset(files_token)
        _FILE_DATA.reset(token)


def env_name(loc: Sequence[str | int]) -> str:
    """The environment variable that sets the key at ``loc``: ``DRIFTWATCH_`` + the path up
    to its first list index, joined by ``__``, upper case. Empty for the root."""
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            break
        parts.append(part)
    return (ENV_PREFIX + ENV_NESTED_DELIMITER.join(parts)).upper() if parts else ""


def settings_errors(exc: BaseException) -> list[str]:
    """Each problem of a failed :func:`load_settings` as one line:
    ``path.to.key (ENV_NAME): message``, list indices kept in the path."""
    if isinstance(exc, ValidationError):
        lines: list[str] = []
        for error in exc.errors(include_url=False):
            line = _format_error(error["loc"], error["type"], error["msg"], error.get("input"))
            if line not in lines:
                lines.append(line)
        return lines
    if isinstance(exc, SettingsFileError):
        return [str(exc)]
    if isinstance(exc, SettingsError):
        cause = f": {exc.__cause__}" if exc.__cause__ is not None else ""
        return [" ".join(f"environment: {exc}{cause}".split())]
    return [" ".join(f"{type(exc).__name__}: {exc}".split())]


_SECRET_WORDS = ("password", "secret", "token")


def _format_error(loc: tuple[str | int, ...], kind: str, message: str, value: Any) -> str:
    path = ".".join(str(part) for part in loc) or "(settings)"
    variable = env_name(loc)
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    elif kind == "extra_forbidden":
        message = _unknown_key(loc)
    elif kind not in ("settings", "missing") and _shown(loc, value):
        message = f"{message}, got {_short(value)}"
    where = f"{path} ({variable})" if variable else path
    return " ".join(f"{where}: {message}".split())


def _shown(loc: tuple[str | int, ...], value: Any) -> bool:
    """Whether an error may quote the value: scalars only, and never a secret's."""
    if any(isinstance(p, str) and any(w in p.lower() for w in _SECRET_WORDS) for p in loc):
        return False
    return isinstance(value, str | int | float | bool | types.NoneType)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _unknown_key(loc: tuple[str | int, ...]) -> str:
    key = str(loc[-1]) if loc else ""
    model = _model_at(loc[:-1])
    if model is None:
        return "unknown key"
    names = list(model.model_fields)
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    if close:
        return f"unknown key; did you mean {close[0]!r}?"
    return f"unknown key; expected one of: {', '.join(names)}"


def _model_at(loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The settings model at ``loc`` (following fields, list items and mapping values)."""
    current: Any = Settings
    for part in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(part) if isinstance(part, str) else None
            if field is None:
                return None
            current = field.annotation
            continue
        origin, args = typing.get_origin(current), typing.get_args(current)
        if origin is list and isinstance(part, int) and args:
            current = args[0]
        elif origin is dict and len(args) == 2:
            current = args[1]
        else:
            return None
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return current
    return None


def _unwrap(annotation: Any) -> Any:
    """Strip ``Annotated`` and ``X | None`` down to ``X``."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not types.NoneType]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation
