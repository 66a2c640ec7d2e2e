"""The check every exported state passes before it is restored.

Windows, joins and watches export their state as plain data (for the agent's checkpoint) and
refuse, with a ``ValueError`` naming the problem, a state this version cannot read: not a
mapping, keys missing (or unknown, where the state must be exactly its own), or another
format version. Each restore calls :func:`check_state` first, so the refusals read alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any


def check_state(state: object, keys: Set[str], version: int, *, exact: bool = False,
                version_key: str = "version") -> Mapping[str, Any]:
    """``state`` as a mapping, once it holds ``keys`` (and, with ``exact``, nothing else) and
    ``state[version_key] == version``; else a ``ValueError`` saying which part is wrong.

    >>> check_state({"version": 1, "n": 3}, {"version", "n"}, 1)["n"]
    3
    >>> check_state({"version": 2}, {"version", "n"}, 1)
    Traceback (most recent call last):
    ...
    ValueError: state is missing keys n
    """
    if not isinstance(state, Mapping):
        raise ValueError(f"state must be a mapping, got {type(state).__name__}")
    missing = sorted(keys - state.keys())
    if missing:
        raise ValueError(f"state is missing keys {', '.join(missing)}")
    if exact:
        unknown = sorted(map(repr, state.keys() - keys))
        if unknown:
            raise ValueError(f"state has unknown keys {', '.join(unknown)}")
    if state[version_key] != version:
        raise ValueError(f"state {version_key} must be {version}, got {state[version_key]!r}")
    return state
