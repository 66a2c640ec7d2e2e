"""DDM: the Drift Detection Method of Gama et al. (2004) for error rates."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from driftwatch.core.config_error import ConfigError
from driftwatch.core.detectors.base import Detector, DetectorState, check_float, check_int

_STABLE, _WARNING, _DRIFT = DetectorState.STABLE, DetectorState.WARNING, DetectorState.DRIFT


class DDM(Detector):
    """Drift Detection Method: alarms when the error rate climbs above its best level.

    While the data are stationary, a learner's error rate p (the mean of the inputs since
    the last reset) does not grow, and its standard deviation s = √(p(1 − p)/n) shrinks as n
    grows. DDM remembers the point where p + s was lowest (p_min, s_min) and compares the
    current p + s against it:

    - **warning** when p + s > p_min + ``warning_level``·s_min,
    - **drift** when p + s > p_min + ``drift_level``·s_min (this takes precedence).

    Minimum tracking and both tests start only after ``min_samples`` inputs, i.e. at input
    ``min_samples + 1`` (River's timing). On the input after a drift the detector resets and
    starts learning the new error level from scratch. It is O(1) in time and memory.

    DDM only detects *increases* (of the error rate); it has no ``direction``.

    **Input.** A value in [0, 1] where higher is worse: a 0/1 error indicator (1 = the
    prediction was wrong), as in the paper, or an error rate such as 1 − accuracy. Anything
    outside [0, 1] is refused (``ValueError`` naming ``x``), and :attr:`input_range` lets the
    settings layer refuse, up front, to attach DDM to a measure like κ or MCC.

    **A never-failing stream is fragile.** Once more than ``min_samples`` zeros have been seen
    (31 with the default), p_min = s_min = 0, so the very first 1 is an immediate drift: any
    error at all is "infinitely many standard deviations" above a perfect record. With
    exactly ``min_samples`` zeros the first 1 is the first tracked input and sets the minimum
    instead. MOA and River behave the same way; this is a property of the method.

    **Differences from other implementations.** River's ``binary.DDM`` names the parameters
    ``warm_start``, ``warning_threshold`` and ``drift_threshold`` and reports exactly the same
    warnings and drifts. MOA's ``DDM`` counts from 1 with its own off-by-one, so its indices can
    differ by one input.

    Parameters
    ----------
    min_samples
        Inputs (since the last reset) before the minimum is tracked and alarms are possible.
    warning_level
        Number of s_min above p_min that enters the warning zone (2 ≈ 95 % confidence).
    drift_level
        Number of s_min above p_min that is a drift (3 ≈ 99 %); at least ``warning_level``.

    Examples
    --------
    River's documented example: a fair coin of errors, then errors 70 % of the time (the
    first warning after each start is printed):

    >>> import random
    >>> from driftwatch.core.detectors import DDM, DetectorState
    >>> rng = random.Random(42)
    >>> stream = rng.choices([0, 1], k=1000) + rng.choices([0, 1], k=1000, weights=[0.3, 0.7])
    >>> ddm = DDM()
    >>> first_warning = True
    >>> for i, x in enumerate(stream):
    ...     state = ddm.update(x)
    ...     if state is DetectorState.WARNING and first_warning:
    ...         print(i, "warning")
    ...         first_warning = False
    ...     elif state is DetectorState.DRIFT:
    ...         print(i, "drift")
    ...         first_warning = True
    1084 warning
    1334 drift
    1492 warning

    References
    ----------
    J. Gama, P. Medas, G. Castillo, P. Rodrigues (2004). Learning with drift detection.
    *Advances in Artificial Intelligence – SBIA 2004*, LNCS 3171, 286–295, §3.
    """

    name: ClassVar[str] = "ddm"
    input_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    _n: int
    _p: float
    _p_min: float | None
    _s_min: float | None

    def __init__(
        self,
        *,
        min_samples: int = 30,
        warning_level: float = 2.0,
        drift_level: float = 3.0,
    ) -> None:
        self.min_samples = check_int("min_samples", min_samples, 1)
        self.warning_level = check_float("warning_level", warning_level, low=0.0, low_open=True)
        self.drift_level = check_float("drift_level", drift_level, low=0.0, low_open=True)
        if self.drift_level < self.warning_level:
            raise ConfigError(
                ("drift_level",), f"must be ≥ warning_level ({self.warning_level!r}), got "
                f"{drift_level!r}"
            )
        self.reset()

    @property
    def error_rate(self) -> float:
        """p: the mean of the inputs since the last reset (NaN before any input)."""
        return self._p if self._n else math.nan

    def _reset(self) -> None:
        self._n = 0
        self._p = 0.0
        self._p_min = None
        self._s_min = None

    def _update(self, x: float) -> DetectorState:
        # Called for every event when DDM watches the error stream: state in locals.
        self._n = n = self._n + 1
        self._p = p = self._p + (x - self._p) / n
        if n <= self.min_samples:
            return _STABLE
        s = math.sqrt(max(p * (1.0 - p), 0.0) / n)
        level = p + s
        p_min, s_min = self._p_min, self._s_min
        if p_min is None or s_min is None or level <= p_min + s_min:
            self._p_min, self._s_min = p_min, s_min = p, s
        if level > p_min + self.drift_level * s_min:
            return _DRIFT
        if level > p_min + self.warning_level * s_min:
            return _WARNING
        return _STABLE

    def _export(self) -> dict[str, Any]:
        return {"n": self._n, "p": self._p, "p_min": self._p_min, "s_min": self._s_min}

    def _restore(self, data: Mapping[str, Any]) -> None:
        self._n = int(data["n"])
        self._p = float(data["p"])
        p_min, s_min = data["p_min"], data["s_min"]
        self._p_min = None if p_min is None else float(p_min)
        self._s_min = None if s_min is None else float(s_min)
