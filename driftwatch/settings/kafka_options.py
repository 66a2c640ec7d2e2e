"""``kafka.client_options``: which further kafka-python consumer options may be passed through,
and the check of each value against the type kafka-python expects (it checks none itself)."""

from __future__ import annotations

import functools
import re
import types
import warnings
from collections.abc import Mapping
from typing import Any, cast

from driftwatch.settings.common import _file_problem

_OWNED_CLIENT_OPTIONS: Mapping[str, str] = {
    "bootstrap_servers": "kafka.bootstrap_servers",
    "group_id": "kafka.group_id",
    "client_id": "kafka.client_id",
    "group_instance_id": "kafka.group_instance_id",
    "max_poll_records": "kafka.poll_batch",
    "auto_offset_reset": "kafka.auto_offset_reset",
    "max_poll_interval_ms": "kafka.max_poll_interval_ms",
    "session_timeout_ms": "kafka.session_timeout_ms",
    "heartbeat_interval_ms": "kafka.heartbeat_interval_ms",
    "partition_assignment_strategy": "kafka.assignment_strategy",
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
    "ssl_context", "selector", "kafka_client",
    "sasl_oauth_token_provider", "metric_reporters",
})
"""kafka-python options whose values are Python objects (callables, classes, an SSLContext):
nothing YAML or an environment variable can hold, and the agent decodes records itself."""

_OPTIONAL_STRING_CLIENT_OPTIONS = frozenset({
    "ssl_ciphers", "sasl_kerberos_name", "sasl_kerberos_domain_name",
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
