"""The error the core raises for an invalid configuration: where each problem is, and why.

A monitor's configuration, a watch, a detector's parameters, a join's bounds and the
label-free signals' settings are checked by the core object itself (the invariant lives with
the code that relies on it). A problem is reported as a *path* (the keys and list indexes
leading to the value, relative to what was being built: ``("watches", 1, "detectors", 0,
"params", "delta")``) and a *message* that does not repeat the path. Whoever assembled the
configuration from a file prefixes the path with where that object sits in the file and
names the key without reading the message: the settings layer prints
``monitoring.defaults.watches.1.detectors.0.params.delta (DRIFTWATCH_...): must be ...``.

:class:`ConfigError` is a ``ValueError``, so a caller that only needs "invalid" keeps
catching that; ``str()`` is ``path: message`` for each problem, for a reader of a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

Path = tuple[str | int, ...]
"""Keys (str) and list indexes (int) from the object being configured down to one value."""


class Problem(NamedTuple):
    """One invalid value: where it is and what is wrong with it."""

    path: Path
    message: str

    def __str__(self) -> str:
        where = ".".join(map(str, self.path))
        return f"{where}: {self.message}" if where else self.message


class ConfigError(ValueError):
    """One or more configuration problems, each with its path (see the module docstring).

    >>> error = ConfigError(("delta",), "must be a finite number in (0, 1), got 2")
    >>> str(error.within("params"))
    'params.delta: must be a finite number in (0, 1), got 2'
    """

    def __init__(self, path: Path, message: str) -> None:
        self.problems: tuple[Problem, ...] = (Problem(tuple(path), message),)
        super().__init__(str(self.problems[0]))

    @classmethod
    def of(cls, problems: Iterable[Problem]) -> ConfigError:
        """One error for several problems (at least one): all are reported at once."""
        found = tuple(problems)
        if not found:
            raise ValueError("ConfigError.of needs at least one problem")
        error = cls(found[0].path, found[0].message)
        error.problems = found
        error.args = ("; ".join(map(str, found)),)
        return error

    @property
    def path(self) -> Path:
        """The first problem's path."""
        return self.problems[0].path

    @property
    def message(self) -> str:
        """The first problem's message."""
        return self.problems[0].message

    def within(self, *prefix: str | int) -> ConfigError:
        """The same problems, located inside ``prefix`` (where the configured object sits
        in a larger one): ``ConfigError(("delta",), m).within("detectors", 0, "params")``."""
        error = ConfigError.of(Problem((*prefix, *p.path), p.message) for p in self.problems)
        error.__cause__ = self.__cause__
        return error

    def __str__(self) -> str:
        return "; ".join(map(str, self.problems))

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its problems (the default would call __init__ with the text alone),
        # so it crosses a process boundary (a parallel replay's workers) intact.
        return (ConfigError.of, (self.problems,))
