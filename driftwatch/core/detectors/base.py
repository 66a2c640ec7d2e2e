"""The detector interface: a stream of floats in, stable / warning / drift out.

A detector watches one monitored quantity (a measure sampled every ``sample_every`` events, an
error indicator, ...) and says after every input whether that quantity's distribution still
looks stationary. Every algorithm lives in its own module and implements the few hooks of
:class:`Detector`; everything the rest of driftwatch relies on — input checking, the
one-step drift signal, ``reset``, checkpointing, ``repr`` — is written once here, so a new
detector (built in or plugged in through the ``driftwatch.detectors`` entry-point group)
behaves like the others by construction, and ``tests/core/detectors/test_contract.py`` checks
it as soon as it is registered.

Conventions every detector follows:

- **Parameters are the ``__init__`` signature.** Plain keyword arguments with type hints and
  defaults, stored unchanged as public attributes of the same name; derived state is private.
  The settings layer derives its validation model by inspecting the signature
  (``typing.get_type_hints(cls.__init__)``), and ``repr``/``export_state`` read it too.
  Invalid values raise :class:`~driftwatch.core.config_error.ConfigError` (a ``ValueError``)
  whose path is the parameter (helpers :func:`check_int`, :func:`check_float`,
  :func:`check_choice`), so the settings report it at its key.
- **Drift is reported for exactly one step.** The update that finds a change returns
  :attr:`DetectorState.DRIFT`; the next update first restarts the algorithm as it prescribes
  (a full reset for Page-Hinkley and DDM; ADWIN keeps its shrunk window) and then processes its
  input.
- **Inputs are finite reals** within :attr:`Detector.input_range` when the algorithm has one;
  anything else is a ``ValueError`` naming ``x``, and the detector is left untouched.
- **State is plain data.** :meth:`Detector.export_state` gives a JSON-serializable dict
  (parameters included) and :meth:`Detector.from_state` rebuilds a detector that behaves
  identically on any continuation, so a restarted agent is not blind for a whole window.
"""

from __future__ import annotations

import enum
import functools
import inspect
import math
import numbers
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Literal, Self, TypeVar

from driftwatch.core.config_error import ConfigError

Direction = Literal["down", "up", "both"]
"""Which changes of the input's mean count as drift: decreases, increases, or either."""

DIRECTIONS: tuple[Direction, ...] = ("down", "up", "both")

_T = TypeVar("_T")

STATE_FORMAT = 1
"""Version of the :meth:`Detector.export_state` layout; bumped on incompatible changes."""


class DetectorState(enum.Enum):
    """What a detector concluded from its latest input."""

    STABLE = "stable"
    """No evidence of change."""
    WARNING = "warning"
    """Evidence of change below the drift level (only detectors with a warning zone)."""
    DRIFT = "drift"
    """A change was detected at this input; reported for this one step only."""


_DRIFT = DetectorState.DRIFT  # a module global is found faster than the enum member


class Detector(ABC):
    """Base class of every drift detector.

    Subclasses set :attr:`name` (the registry key), optionally :attr:`input_range`, validate
    and store their parameters in ``__init__`` and then call :meth:`reset`, and implement the
    hooks ``_reset``, ``_update``, ``_export`` and ``_restore`` (plus ``_after_drift`` when the
    algorithm does not simply start over after a drift).

    Cost: :meth:`update` adds a constant-time input check to the algorithm's own cost (one
    chained comparison for a ``float`` inside the range, the usual case).
    """

    name: ClassVar[str]
    """Registry key, e.g. ``"page_hinkley"``; also recorded in :meth:`export_state`."""

    input_range: ClassVar[tuple[float, float] | None] = None
    """Closed interval the inputs must lie in, or None when any finite real is meaningful.

    The settings layer uses it to refuse watching a measure whose range does not fit (DDM's
    inputs are rates in [0, 1], so it cannot watch κ or MCC, which reach −1). Set it in the
    class body: :meth:`update`'s fast input check reads it once, when the class is defined.
    """

    parameter_docs: ClassVar[Mapping[str, tuple[str, float | None, float | None]]] = {}
    """Optional, per constructor parameter: (description, lowest, highest value), for the
    settings reference and the JSON Schema (the constructor still checks every value)."""

    _state: DetectorState

    # update's fast path: a float x is a valid input iff _low <= x <= _high, input_range
    # clamped to the finite floats (±the largest float without one), so that NaN and ±inf
    # fail the comparison too. Set for each class from its input_range as it is defined.
    _low: ClassVar[float] = -sys.float_info.max
    _high: ClassVar[float] = sys.float_info.max

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        low, high = cls.input_range or (-math.inf, math.inf)
        cls._low = max(low, -sys.float_info.max)
        cls._high = min(high, sys.float_info.max)

    # ----------------------------------------------------------------------------------------
    # Public interface

    def update(self, x: float) -> DetectorState:
        """Feed one input; return (and store in :attr:`state`) the resulting state.

        Raises ``ValueError`` naming ``x`` when ``x`` is not a finite real number or lies
        outside :attr:`input_range`; the detector is then left exactly as it was.
        """
        # A plain float inside the bounds is accepted as it is; anything else (ints, numpy
        # scalars, bad values) takes the full check, which converts or raises.
        if type(x) is float and self._low <= x <= self._high:
            value = x
        else:
            value = _check_input(x, self.input_range)
        return self.update_valid(value)

    def update_valid(self, x: float) -> DetectorState:
        """:meth:`update` of an input that is already a finite ``float`` inside
        :attr:`input_range`, without checking it again.

        The monitor's path: what it feeds is valid by construction (a 0/1 error, a measure
        it skips while undefined, a normalized value in [0, 1], a block's finite z-score;
        its configuration refuses a bounded detector on a measure that can leave the
        bounds), so the detector is not a second boundary.
        """
        if self._state is _DRIFT:
            self._after_drift()
        state = self._state = self._update(x)
        return state

    def reset(self) -> None:
        """Forget every input: the detector is as if just constructed with its parameters."""
        self._reset()
        self._state = DetectorState.STABLE

    @property
    def state(self) -> DetectorState:
        """The state returned by the latest :meth:`update` (STABLE before any input)."""
        return self._state

    @property
    def drift_detected(self) -> bool:
        """Whether the latest input was detected as a drift."""
        return self._state is DetectorState.DRIFT

    @property
    def warning_detected(self) -> bool:
        """Whether the latest input left the detector in its warning zone (not drift)."""
        return self._state is DetectorState.WARNING

    @classmethod
    def parameter_names(cls) -> tuple[str, ...]:
        """Names of the constructor parameters, in signature order (read once per
        constructor: ``inspect.signature`` was a quarter of a monitor's restore)."""
        return _parameter_names(cls.__init__)

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters and their values (``type(self)(**get_params())``
        builds an equivalent fresh detector)."""
        return {p: getattr(self, p) for p in self.parameter_names()}

    def export_state(self) -> dict[str, Any]:
        """The whole detector as JSON-serializable plain data (parameters included).

        The layout is ``{"name", "format", "params", "state", "data"}``; ``data`` is private
        to each algorithm. Floats are exported as they are (``json`` round-trips them
        exactly), so :meth:`from_state` restores a detector whose continuation is identical.
        """
        return {
            "name": self.name,
            "format": STATE_FORMAT,
            "params": self.get_params(),
            "state": self._state.value,
            "data": self._export(),
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Self:
        """Rebuild a detector from :meth:`export_state`'s output.

        Raises ``ValueError`` when the state belongs to another detector, has an unknown
        format, or is malformed; parameters are validated by ``__init__`` as usual.
        """
        if not isinstance(state, Mapping):
            raise ValueError(f"state must be a mapping, got {type(state).__name__}")
        if state.get("name") != cls.name:
            raise ValueError(f"state is for detector {state.get('name')!r}, not {cls.name!r}")
        if state.get("format") != STATE_FORMAT:
            raise ValueError(
                f"unsupported state format {state.get('format')!r} (expected {STATE_FORMAT})"
            )
        try:
            detector = cls(**state["params"])
            detector._restore(state["data"])
            detector._state = DetectorState(state["state"])
        except (KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"malformed {cls.name} state: {exc!r}") from exc
        return detector

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    # ----------------------------------------------------------------------------------------
    # Hooks for subclasses

    @abstractmethod
    def _reset(self) -> None:
        """Set the algorithm's statistics to their initial values."""

    @abstractmethod
    def _update(self, x: float) -> DetectorState:
        """Process one validated input and return the new state."""

    @abstractmethod
    def _export(self) -> dict[str, Any]:
        """The algorithm's statistics as JSON-serializable plain data."""

    @abstractmethod
    def _restore(self, data: Mapping[str, Any]) -> None:
        """Load statistics produced by :meth:`_export` into a freshly constructed detector."""

    def _after_drift(self) -> None:
        """Restart after a drift, before processing the next input. Default: full reset."""
        self._reset()


# --------------------------------------------------------------------------------------------
# Validation helpers, shared by the built-in detectors and available to plug-ins.


def _check_input(x: object, input_range: tuple[float, float] | None) -> float:
    # `type(x) is float` first: the common case skips the slower ABC check.
    if type(x) is float or isinstance(x, numbers.Real):
        value = float(x)
        if math.isfinite(value):
            if input_range is None or input_range[0] <= value <= input_range[1]:
                return value
            low, high = input_range
            raise ValueError(f"x must lie in [{low:g}, {high:g}], got {x!r}")
    raise ValueError(f"x must be a finite real number, got {x!r}")


def check_int(name: str, value: object, minimum: int) -> int:
    """Return ``value`` as an int ≥ ``minimum``, or raise :class:`ConfigError` at ``name``.

    Booleans and floats are refused, even integral ones: a parameter that counts inputs is an
    integer, and ``True`` is almost always a mistake.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError((name,), f"must be an integer ≥ {minimum}, got {value!r}")
    if value < minimum:
        raise ConfigError((name,), f"must be an integer ≥ {minimum}, got {value!r}")
    return int(value)


def check_float(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite float within the given bounds, or raise
    :class:`ConfigError` at ``name``. Bounds are closed unless ``low_open``/``high_open``."""
    bad = isinstance(value, bool) or not isinstance(value, numbers.Real)
    number = math.nan if bad else float(value)  # type: ignore[arg-type]
    if not bad:
        bad = (
            not math.isfinite(number)
            or (low is not None and (number <= low if low_open else number < low))
            or (high is not None and (number >= high if high_open else number > high))
        )
    if bad:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        interval = f"{left}{'-∞' if low is None else f'{low:g}'}, "
        interval += f"{'∞' if high is None else f'{high:g}'}{right}"
        raise ConfigError((name,), f"must be a finite number in {interval}, got {value!r}")
    return number


def check_choice(name: str, value: object, choices: Iterable[_T]) -> _T:
    """Return ``value`` if it is one of ``choices``, or raise :class:`ConfigError` at ``name``."""
    options = tuple(choices)
    for option in options:
        if type(value) is type(option) and value == option:
            return option
    raise ConfigError((name,), f"must be one of {', '.join(map(repr, options))}, got {value!r}")


@functools.cache
def _parameter_names(init: Callable[..., None]) -> tuple[str, ...]:
    return tuple(p for p in inspect.signature(init).parameters if p != "self")
