"""``kafka``: the brokers, topics, consumer group and security (and ``client_options``,
checked by :mod:`driftwatch.settings.kafka_options`)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, StringConstraints, field_validator, model_validator
from pydantic_core import InitErrorDetails
from pydantic_settings import NoDecode

from driftwatch.settings.common import (
    HostPort,
    Name,
    TopicName,
    _file_problem,
    _problem,
    _raise,
    _Section,
    _short,
    _shown,
    _split_list,
)
from driftwatch.settings.kafka_options import (
    _OWNED_CLIENT_OPTIONS,
    _client_option,
    _kafka_consumer_options,
)

DEFAULT_TOPIC = "driftwatch-events"
"""The topic consumed when neither ``kafka.topics`` nor ``kafka.topic_pattern`` is set."""

SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "AWS_MSK_IAM"]
_USER_PASSWORD_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

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
        description=(
            "Consumer group. Replicas with the same group_id split the partitions. With "
            "assignment all_partitions there is no group: it only labels the lag metrics "
            "and names the default state topic."
        ),
    )
    assignment: Literal["group", "all_partitions"] = Field(
        default="group",
        description=(
            "group: the agents with this group_id split the partitions, and offsets are "
            "committed to the group. all_partitions: this agent reads every partition of "
            "topics by itself (no group membership, no rebalances, no commits) and resumes "
            "from the checkpoint (the state topic that every replica writes, so a new Pod "
            "restores its siblings' state), else from auto_offset_reset; every replica sees "
            "the whole stream and exports the same values. For the sidecars of a replicated "
            "model (with events.only_models when the topics carry other models); needs "
            "topics, not topic_pattern."
        ),
    )
    assignment_strategy: Literal["cooperative-sticky", "range", "roundrobin"] = Field(
        default="range",
        description=(
            "How the group spreads the partitions over the replicas (with assignment group). "
            "range (the default), roundrobin: every rebalance takes all partitions from every "
            "replica and hands them out again (eager), so each replica saves and restores "
            "even the ones it keeps. cooperative-sticky: a rebalance moves only the "
            "partitions that change owner; the others are never paused, saved or restored "
            "(incremental, KIP-429): the better choice for many models, but not with join "
            "reading predictions and labels from two topics (only range gives their "
            "partitions of the same number to the same replica, which the join needs). "
            "Every replica of a group must use the same kind: the group refuses a replica "
            "of the other kind, which then stops with exit 2, so switching kinds needs every "
            "replica stopped first (docs/running.md, changing the assignment strategy); "
            "range stays the default so that a rolling upgrade from 0.2 is never refused."
        ),
    )
    client_id: Name = Field(
        default="driftwatch",
        description="Client id reported to the brokers (their logs and quotas).",
    )
    group_instance_id: TopicName | None = Field(
        default=None,
        description=(
            "Static membership (Kafka's group.instance.id, KIP-345): a name unique to this "
            "replica and stable across its restarts, such as its Pod's name. A replica that "
            "restarts within session_timeout_ms gets its partitions back without a rebalance "
            "(the other replicas never stop reading, and it skips the wait for its old "
            "session to time out); one that stops for good does not leave the group, so its "
            "partitions move only once its session times out. Two replicas with the same id "
            "fence each other. None: dynamic membership."
        ),
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
        elif self.assignment == "all_partitions" and self.topic_pattern is not None:
            problems.append(_problem(
                ("topic_pattern",), "assignment all_partitions reads the partitions of named "
                "topics: list them in topics", self.topic_pattern,
            ))
        if self.group_instance_id is not None and self.assignment == "all_partitions":
            problems.append(_problem(
                ("group_instance_id",), "assignment all_partitions joins no group",
                self.group_instance_id,
            ))
        if self.group_instance_id in (".", ".."):
            problems.append(_problem(
                ("group_instance_id",), f"Kafka refuses {self.group_instance_id!r}",
                self.group_instance_id,
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
        if self.group_instance_id is not None:
            config["group_instance_id"] = self.group_instance_id
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
