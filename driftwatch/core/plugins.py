"""Plug-ins from entry points: load one group, keep what is usable, say what is not.

Detectors, measures and sources come from plug-ins the same way: an installed distribution
declares an entry point in the group (``driftwatch.detectors``, ``driftwatch.measures``,
``driftwatch.sources``) whose name is what the settings call it and whose value is the
object. :func:`scan` loads a group and sorts its entry points into usable objects and
problems, so one broken package (it fails to import, points at the wrong kind of object,
takes a built-in's name, or shares its name with another package's) is reported, never
fatal. Nothing is cached: each call reads the installed distributions' metadata afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import NamedTuple, TypeVar

__all__ = ["Problem", "describe", "lookup", "scan"]

T = TypeVar("T")


class Problem(NamedTuple):
    """Why a plug-in cannot be used, and the exception that said so."""

    message: str
    cause: BaseException | None = None


def describe(ep: EntryPoint) -> str:
    """``entry point 'name = module:attr' (from dist version)``, for messages."""
    dist = ep.dist
    origin = f" (from {dist.name} {dist.version})" if dist is not None else ""
    return f"entry point '{ep.name} = {ep.value}'{origin}"


def scan(group: str, what: str, builtins: Mapping[str, object],
         adopt: Callable[[str, object], T]) -> tuple[dict[str, T], dict[str, Problem]]:
    """Every plug-in of ``group``: (usable ones by name, problems by name for the others).

    ``what`` names the kind in messages (``"source"``); ``adopt(name, loaded)`` turns a
    loaded object into the registry's entry or raises ``ValueError`` saying why it cannot.
    An entry point naming a built-in itself (should a packaging of driftwatch declare it) is
    skipped.
    """
    by_name: dict[str, list[EntryPoint]] = {}
    for ep in entry_points(group=group):
        builtin = builtins.get(ep.name)
        if builtin is not None and ep.value == _path(builtin):
            continue
        by_name.setdefault(ep.name, []).append(ep)
    plugins: dict[str, T] = {}
    problems: dict[str, Problem] = {}
    for name, eps in by_name.items():
        where = f"{what} plug-in {describe(eps[0])}"
        if name in builtins:
            problems[name] = Problem(f"{where} would replace the built-in {what} {name!r}; "
                                     "ignored")
        elif len(eps) > 1:
            declared = "; ".join(describe(ep) for ep in eps)
            problems[name] = Problem(f"{what} plug-in {name!r} is declared more than once: "
                                     f"{declared}")
        else:
            try:
                loaded = eps[0].load()
            except Exception as exc:  # a plug-in's import may fail in any way: report it
                problems[name] = Problem(
                    f"{where} failed to load: {type(exc).__name__}: {exc}", exc)
                continue
            try:
                plugins[name] = adopt(name, loaded)
            except ValueError as exc:
                problems[name] = Problem(f"{where} {exc}", exc)
    return plugins, problems


def lookup(name: str, what: str, builtins: Mapping[str, T],
           scanned: Callable[[], tuple[dict[str, T], dict[str, Problem]]],
           broken: Callable[[str], Exception]) -> T:
    """The entry ``name`` of a registry: a built-in, else a usable plug-in.

    The plug-ins are scanned (``scanned()``) only when ``name`` is no built-in. A broken
    plug-in raises ``broken(its problem)``; an unknown name a ``ValueError`` listing every
    known name, so a registry's messages read alike whatever it holds.
    """
    builtin = builtins.get(name)
    if builtin is not None:
        return builtin
    plugins, problems = scanned()
    if name in plugins:
        return plugins[name]
    if name in problems:
        raise broken(problems[name].message) from problems[name].cause
    known = ", ".join(sorted({*builtins, *plugins}))
    raise ValueError(f"unknown {what} {name!r}; known {what}s: {known}")


def _path(obj: object) -> str | None:
    """``module:qualname`` of a class or function (what an entry point naming it says)."""
    qualname = getattr(obj, "__qualname__", None)
    return None if qualname is None else f"{getattr(obj, '__module__', '')}:{qualname}"
