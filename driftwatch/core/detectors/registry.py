"""Detectors by name: the built-ins plus plug-ins from the ``driftwatch.detectors`` group.

The settings file names detectors (``detector: adwin``); this module turns a name into a
class. A third-party package adds a detector by subclassing
:class:`~driftwatch.core.detectors.base.Detector` and declaring an entry point::

    [project.entry-points."driftwatch.detectors"]
    cusum = "my_package.cusum:Cusum"

The entry point's name must equal the class's ``name``. Built-in names cannot be replaced.

**Broken plug-ins never break the registry.** An entry point that fails to import, does not
point at a concrete ``Detector`` subclass, disagrees with the class's ``name``, tries to
replace a built-in, or is declared by two distributions is left out of :func:`available`
and logged at WARNING level (:func:`plugin_errors` lists them), so one bad package cannot
take down every monitor. Asking for such a detector by name with :func:`get` or
:func:`create` raises :class:`DetectorPluginError` (a ``ValueError``) that explains what is
wrong with it, with the original exception chained.

**No caching.** Every call reads the installed distributions' metadata afresh (a few
milliseconds: call it at configuration time, not per event), so a plug-in installed while
the process runs, or a directory added to ``sys.path``, is found by the next call. The only
cache involved is the standard library's directory-listing cache, keyed on modification
time; ``importlib.invalidate_caches()`` clears it.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from driftwatch.core.config_error import ConfigError
from driftwatch.core.detectors.adwin import ADWIN
from driftwatch.core.detectors.base import Detector
from driftwatch.core.detectors.cusum import Cusum
from driftwatch.core.detectors.ddm import DDM
from driftwatch.core.detectors.page_hinkley import PageHinkley
from driftwatch.core.plugins import Problem, lookup, scan

__all__ = [
    "BUILTINS",
    "ENTRY_POINT_GROUP",
    "DetectorPluginError",
    "available",
    "create",
    "get",
    "plugin_errors",
]

ENTRY_POINT_GROUP = "driftwatch.detectors"

BUILTINS: Mapping[str, type[Detector]] = MappingProxyType(
    {cls.name: cls for cls in (PageHinkley, ADWIN, DDM, Cusum)}
)
"""The detectors shipped with driftwatch, by name."""

_log = logging.getLogger(__name__)


class DetectorPluginError(ValueError):
    """A detector plug-in is installed under the requested name but cannot be used."""


def available() -> dict[str, type[Detector]]:
    """Every usable detector by name: the built-ins, then the plug-ins sorted by name.

    Broken plug-ins are left out and logged (see the module docstring).
    """
    plugins, problems = _scan()
    for problem in problems.values():
        _log.warning("%s", problem.message)
    return {**BUILTINS, **dict(sorted(plugins.items()))}


def plugin_errors() -> dict[str, str]:
    """Plug-ins that cannot be used, by entry-point name, with the reason."""
    return {name: problem.message for name, problem in _scan()[1].items()}


def get(name: str) -> type[Detector]:
    """The detector class registered as ``name``.

    Raises ``ValueError`` listing the known names when ``name`` is unknown, and
    :class:`DetectorPluginError` when it names a broken plug-in.
    """
    if not isinstance(name, str):
        raise ValueError(f"name must be a detector name (a string), got {name!r}")
    return lookup(name, "detector", BUILTINS, _scan, DetectorPluginError)


def create(name: str, **params: Any) -> Detector:
    """A new detector ``name`` built with ``params`` (defaults for the others).

    Raises :class:`~driftwatch.core.config_error.ConfigError` located as in a detector's
    entry of the settings: at ``name`` for an unknown or broken detector, at
    ``params.<key>`` for a parameter it does not take (listing those it does) or an invalid
    value, at ``params`` when the detector refuses its parameters without saying which;
    :class:`DetectorPluginError` when ``name`` is a broken plug-in.
    """
    try:
        cls = get(name)
    except DetectorPluginError:
        raise  # not a settings mistake: what is wrong with the installed plug-in
    except ValueError as exc:
        raise ConfigError(("name",), str(exc)) from exc
    accepted = cls.parameter_names()
    for key in params:
        if key not in accepted:
            raise ConfigError(
                ("params", key), f"detector {name!r} has no parameter {key!r}; "
                f"parameters: {', '.join(accepted) or '(none)'}"
            )
    try:
        return cls(**params)
    except ConfigError as exc:
        raise exc.within("params") from exc
    except (ValueError, TypeError) as exc:  # a plug-in's own check, not located
        raise ConfigError(("params",), str(exc)) from exc


# --------------------------------------------------------------------------------------------


def _scan() -> tuple[dict[str, type[Detector]], dict[str, Problem]]:
    """Load every plug-in: (usable classes by name, problems by name for the others)."""
    return scan(ENTRY_POINT_GROUP, "detector", BUILTINS, _adopt)


def _adopt(name: str, obj: object) -> type[Detector]:
    """The plug-in's class; ``ValueError`` saying why it cannot be used."""
    if not (isinstance(obj, type) and issubclass(obj, Detector)):
        raise ValueError(f"is not a subclass of driftwatch's Detector: {obj!r}")
    if inspect.isabstract(obj):
        raise ValueError(f"is abstract: {obj.__qualname__}")
    declared = getattr(obj, "name", None)
    if declared != name:
        raise ValueError(f"the class declares name {declared!r}, which must equal the entry "
                         f"point's name {name!r}")
    return obj
