"""Equality of result records that hold NaN, the same on every Python.

An :class:`~driftwatch.core.report.Alarm` or a comparison's result holds NaN where a value is
undefined (the normalized value of a measure Brzezinski et al. 2019 do not normalize, κ when
chance agreement is 1). Up to Python 3.12 a dataclass compared its fields as one tuple, and a
tuple's identity shortcut made a NaN field equal to itself; from 3.13 dataclasses compare
field by field with ``==``, so the same alarm is unequal to itself (CPython issues 120645
and 128294). A restored monitor must raise *the same* alarms as one that never stopped, and
the test suite and users (``docs/api.md``) check exactly that, so these records define their
equality themselves, the same on 3.11 and 3.13: every field equal, NaN matching NaN.

Example:
    >>> from dataclasses import dataclass
    >>> @nan_equal
    ... @dataclass(frozen=True, eq=False)
    ... class Result:
    ...     value: float
    >>> Result(math.nan) == Result(float("nan")), Result(1.0) == Result(math.nan)
    (True, False)
    >>> len({Result(math.nan), Result(float("nan"))})
    1
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, TypeVar

__all__ = ["nan_equal"]

T = TypeVar("T")

_NAN = object()
"""What a NaN field hashes as: NaN's own hash is its identity (Python 3.10+), and two equal
records must hash alike."""


def nan_equal(cls: type[T]) -> type[T]:
    """Give a dataclass made with ``eq=False`` (and ``frozen=True``, to be hashable) an
    ``__eq__`` that compares every field, NaN equal to NaN, and the ``__hash__`` that goes
    with it. Records of different classes are never equal."""
    names = tuple(field.name for field in dataclasses.fields(cls))  # type: ignore[arg-type]

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(_same(getattr(self, name), getattr(other, name)) for name in names)

    def __hash__(self: Any) -> int:
        return hash(tuple(_NAN if _is_nan(v) else v for v in map(self.__getattribute__, names)))

    cls.__eq__ = __eq__  # type: ignore[method-assign]
    cls.__hash__ = __hash__  # type: ignore[method-assign]
    return cls


def _same(a: Any, b: Any) -> bool:
    return bool(a == b) or (_is_nan(a) and _is_nan(b))


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
