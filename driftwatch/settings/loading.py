"""Loading the settings file and reporting failures as ``path.key (ENV): message`` lines."""

from __future__ import annotations

import difflib
import functools
import os
import re
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import BaseModel, ValidationError
from pydantic_settings import SettingsError

from driftwatch.settings.common import (
    _CHECK_FILES,
    CONFIG_ENV,
    ENV_NESTED_DELIMITER,
    ENV_PREFIX,
    _short,
    _shown,
)
from driftwatch.settings.root import _FILE_DATA, Settings


class SettingsFileError(ValueError):
    """The settings file cannot be read or is not valid YAML; ``str()`` is one line."""


@functools.cache
def _loader() -> Any:
    """The YAML loader of settings files, built at the first file read (PyYAML is imported
    then: a replay or a run without a settings file never needs it)."""
    import yaml  # type: ignore[import-untyped, unused-ignore]

    class Loader(yaml.SafeLoader):  # type: ignore[misc, unused-ignore]
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

    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
        list("-+0123456789"),
    )
    return Loader


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
    import yaml  # type: ignore[import-untyped, unused-ignore]

    try:
        data = yaml.load(text, Loader=_loader())  # a SafeLoader
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
