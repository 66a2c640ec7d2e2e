"""The state topic's record keys and values: JSON, read back strictly.

Keys are JSON arrays whose first element says what the record is (``p`` a partition's meta,
``m`` a model, ``j`` a join shard, ``c`` a chunk; :mod:`driftwatch.state.topic` describes
each), so that a topic shared with something else is refused with a clear error instead of
being half-read. Values are JSON objects; NaN and infinities pass (monitor states hold them).
"""

from __future__ import annotations

import json
from typing import Any

from driftwatch.state.checkpoint import CheckpointError

__all__ = ["dumps", "key", "loads", "parse_key"]


def key(kind: str, *parts: Any) -> bytes:
    """A record key: ``[kind, *parts]`` as compact JSON."""
    return json.dumps([kind, *parts], separators=(",", ":")).encode("utf-8")


def parse_key(raw: bytes, topic: str) -> list[Any]:
    """The key as a list, checked against its kind's shape; CheckpointError otherwise."""
    try:
        key = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        key = None
    shapes = {"p": 3, "m": 4, "j": 4, "c": 6}
    if (not isinstance(key, list) or not key or shapes.get(key[0]) != len(key)
            or not isinstance(key[1], str) or isinstance(key[2], bool)
            or not isinstance(key[2], int)):
        raise CheckpointError(f"state topic {topic}: record key {raw[:100]!r} is not a "
                              "driftwatch state key; is the topic shared with something "
                              "else?")
    return key


def dumps(value: Any) -> bytes:
    """A record value: compact JSON."""
    return json.dumps(value, allow_nan=True, separators=(",", ":")).encode("utf-8")


def loads(value: bytes, topic: str, key: bytes) -> dict[str, Any]:
    """A record value as an object; CheckpointError naming the record otherwise."""
    try:
        document = json.loads(value.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"state topic {topic}: record {key[:100]!r} is corrupt: "
                              f"{error}") from None
    if not isinstance(document, dict):
        raise CheckpointError(f"state topic {topic}: record {key[:100]!r} is not an object")
    return document
