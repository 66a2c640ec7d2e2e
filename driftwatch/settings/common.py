"""What every settings area shares: the error plumbing, the base model, the name types and
the environment-variable conventions."""

from __future__ import annotations

import json
import os
import types
import typing
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from driftwatch.core.config_error import ConfigError
from driftwatch.core.config_error import Path as KeyPath

ENV_PREFIX = "DRIFTWATCH_"
ENV_NESTED_DELIMITER = "__"
CONFIG_ENV = "DRIFTWATCH_CONFIG"
"""The environment variable naming the settings file when ``--config`` is not given."""


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


def _core_problems(
    error: ConfigError, *, inside: KeyPath = (), keys: Mapping[str, str] | None = None
) -> list[InitErrorDetails]:
    """The core's problems as validation errors at the keys their paths name.

    The core locates what it refuses (:class:`~driftwatch.core.config_error.ConfigError`:
    a path of keys and indexes, and a message), and the settings use the core's names, so a
    path maps as it is: no message is parsed. ``inside`` is the part of the path pydantic
    already adds (the field being validated); ``keys`` renames a first key where a setting's
    name differs from the core's (``max_age_seconds`` for the join's ``max_age``).
    """
    problems: list[InitErrorDetails] = []
    for problem in error.problems:
        path = problem.path
        if path[:len(inside)] == inside:
            path = path[len(inside):]
        if path and keys is not None and isinstance(path[0], str):
            path = (keys.get(path[0], path[0]), *path[1:])
        problems.append(_problem(path, problem.message))
    return problems


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


_T = typing.TypeVar("_T")


def _pick(override: _T | None, default: _T) -> _T:
    return default if override is None else override


_SECRET_WORDS = ("password", "secret", "token")


def _shown(loc: tuple[str | int, ...], value: Any) -> bool:
    """Whether an error may quote the value: scalars only, and never a secret's."""
    if any(isinstance(p, str) and any(w in p.lower() for w in _SECRET_WORDS) for p in loc):
        return False
    return isinstance(value, str | int | float | bool | types.NoneType)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
