"""Sources by name: the built-ins plus plug-ins from the ``driftwatch.sources`` group.

The settings name the agent's source (``source: {kind: jsonl, options: {path: in.jsonl}}``;
``kafka`` by default) and this module turns the name into a *factory*: a callable
``factory(context, **options) -> Source`` given a :class:`SourceContext` and the keyword
arguments of ``source.options``. The factory's keyword parameters are the source's settings:
the settings check ``source.options`` against its signature (names, type hints, defaults),
as they check a detector's ``params``. A third-party package adds a source by writing a
factory and declaring an entry point::

    [project.entry-points."driftwatch.sources"]
    http = "my_package.http_source:http_source"

Built-in names cannot be replaced. A broken plug-in (it fails to import, is not callable,
takes no context, or two packages declare its name) is left out of :func:`available` and
listed by :func:`plugin_errors`; naming it in the settings is an error that says what is
wrong with it. Nothing is cached (see :mod:`driftwatch.core.plugins`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from driftwatch.core.plugins import Problem, lookup, scan
from driftwatch.sources.jsonl import jsonl_source
from driftwatch.sources.protocol import Source, SourceContext
from driftwatch.sources.record import Record

__all__ = ["BUILTINS", "ENTRY_POINT_GROUP", "SourceFactory", "SourcePluginError",
           "SourceSettingError", "available", "get", "open_source", "option_names",
           "plugin_errors"]

ENTRY_POINT_GROUP = "driftwatch.sources"


SourceFactory = Callable[..., Source[Record]]
"""``factory(context: SourceContext, **options) -> Source[Record]``."""


def _kafka(context: SourceContext) -> Source[Record]:
    """The Kafka source; its settings are the ``kafka`` section, so it takes no options."""
    return context.kafka()


BUILTINS: Mapping[str, SourceFactory] = MappingProxyType({
    "kafka": _kafka,
    "jsonl": jsonl_source,
})
"""The sources shipped with driftwatch, by name."""


class SourcePluginError(ValueError):
    """A source plug-in is installed under the requested name but cannot be used."""


class SourceSettingError(Exception):
    """The source refused its options when it was built (a check its signature's types do
    not express): the agent refuses to start (exit 2) naming the key and the reason.
    ``key`` is the setting's path, ``("source", "options")``."""

    def __init__(self, key: tuple[str, ...], reason: str) -> None:
        super().__init__(reason)
        self.key = key


def _adopt(name: str, loaded: object) -> SourceFactory:
    if not callable(loaded):
        raise ValueError(f"is not callable: {loaded!r}")
    try:
        parameters = list(inspect.signature(loaded).parameters.values())
    except (TypeError, ValueError) as exc:
        raise ValueError(f"has a signature that cannot be read: {exc}") from exc
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not parameters or parameters[0].kind not in positional:
        raise ValueError("takes no argument for the SourceContext, which a source factory "
                         "takes first")
    return loaded  # its result is checked when it is called (open_source)


def _scan() -> tuple[dict[str, SourceFactory], dict[str, Problem]]:
    return scan(ENTRY_POINT_GROUP, "source", BUILTINS, _adopt)


def available() -> dict[str, SourceFactory]:
    """Every usable source by name: the built-ins, then the plug-ins sorted by name."""
    return {**BUILTINS, **dict(sorted(_scan()[0].items()))}


def plugin_errors() -> dict[str, str]:
    """Plug-ins that cannot be used, by entry-point name, with the reason."""
    return {name: problem.message for name, problem in _scan()[1].items()}


def get(name: str) -> SourceFactory:
    """The factory of source ``name``: ``ValueError`` listing the known names for an unknown
    one, :class:`SourcePluginError` saying what is wrong with a broken plug-in."""
    return lookup(name, "source", BUILTINS, _scan, SourcePluginError)


def option_names(factory: SourceFactory) -> tuple[str, ...]:
    """The factory's options: its keyword parameters after the context."""
    parameters = list(inspect.signature(factory).parameters.values())[1:]
    return tuple(p.name for p in parameters
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))


def open_source(kind: str, options: Mapping[str, Any], context: SourceContext) -> Source[Record]:
    """A new source ``kind`` built with ``options`` (already checked by the settings against
    its signature); :class:`SourceSettingError` when its factory refuses them
    (``ValueError``), :class:`SourcePluginError` when what it builds is no source."""
    try:
        source = get(kind)(context, **options)
    except SourcePluginError:
        raise
    except ValueError as error:
        raise SourceSettingError(("source", "options"), f"source {kind!r}: {error}") from error
    missing = [member for member in ("poll", "commit", "lag", "close", "__enter__")
               if not callable(getattr(source, member, None))]
    if missing:
        raise SourcePluginError(f"source {kind!r} built {type(source).__qualname__}, which "
                                f"lacks {', '.join(missing)} of the Source protocol")
    return source
