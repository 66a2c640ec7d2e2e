"""How a monitor estimates its model's performance: the calibration and the self-check's run
length, checked when built.

An :class:`EstimationConfig` in a :class:`~driftwatch.core.monitor_config.MonitorConfig` turns the
estimate on (:mod:`driftwatch.core.estimation.watch`). Where the calibration comes from:

- ``assume``: the scores are calibrated probabilities (the identity);
- ``first_n``: isotonic regression fitted on the model's first ``first_n`` labelled
  predictions, then frozen (no estimate before);
- ``reference``: isotonic regression fitted on a labelled reference; the settings read the
  file, fit it and hand the fit over as plain data (``reference``) with the reference's
  calibration error (``reference_report``), so the core reads no file.

After a calibration-drift alarm the estimate is refitted on the next ``first_n`` labelled
predictions, whatever the calibration was (:mod:`driftwatch.core.estimation.watch`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from driftwatch.core.config_error import ConfigError, Problem
from driftwatch.core.estimation.calibration import calibration_from_state
from driftwatch.core.estimation.reliability import CalibrationReport

Calibrate = Literal["assume", "first_n", "reference"]
CALIBRATIONS: tuple[Calibrate, ...] = ("assume", "first_n", "reference")

DEFAULT_FIRST_N = 5000
"""Labelled predictions a fit uses: 1 250 positives at 1:4, 310 at 1:15 (``docs/estimation.md``:
a fit needs several hundred of the rarer class; 2 000 at 1:15 left ±1.96 SE covering only
87–90 % of the realized values)."""

DEFAULT_CHECK_ARL = 100_000.0
"""In-control run length, in check blocks, of the calibration-drift CUSUM. A check block
spans at least the monitor's ``block_seconds`` (30 s by default) of record time, so this is
at least 35 days per false alarm at any traffic, about the false-alarm budget's 30 days."""


@dataclass(frozen=True, slots=True)
class EstimationConfig:
    """What the estimate is calibrated on and how its self-check alarms (module docstring).

    Problems raise :class:`~driftwatch.core.config_error.ConfigError` at their key.
    """

    calibration: Calibrate = "assume"
    first_n: int = DEFAULT_FIRST_N
    reference: Mapping[str, Any] | None = None
    """The reference's isotonic calibration, as :meth:`IsotonicCalibration.export_state`
    gives it (``calibration="reference"`` only)."""
    reference_report: CalibrationReport | None = None
    """The reference's calibration error (None when its scores are not probabilities)."""
    check_arl: float = DEFAULT_CHECK_ARL

    def __post_init__(self) -> None:
        problems: list[Problem] = []
        if self.calibration not in CALIBRATIONS:
            problems.append(Problem(("calibration",), "must be assume, first_n or reference, "
                                                      f"got {self.calibration!r}"))
        if isinstance(self.first_n, bool) or not isinstance(self.first_n, int) \
                or not 2 <= self.first_n <= 10_000_000:
            problems.append(Problem(("first_n",), "must be an integer in [2, 10000000], "
                                                  f"got {self.first_n!r}"))
        if isinstance(self.check_arl, bool) or not isinstance(self.check_arl, int | float) \
                or not 10.0 <= self.check_arl <= 1e12:
            problems.append(Problem(("check_arl",),
                                    f"must be a number in [10, 1e12], got {self.check_arl!r}"))
        if self.calibration == "reference":
            if self.reference is None:
                problems.append(Problem(("reference",), "required with calibration: "
                                                        "reference"))
            else:
                try:
                    calibration_from_state(self.reference)
                except ValueError as exc:
                    problems.append(Problem(("reference",), str(exc)))
        elif self.reference is not None:
            problems.append(Problem(("reference",),
                                    "is for calibration: reference, got calibration: "
                                    f"{self.calibration}"))
        if problems:
            raise ConfigError.of(problems)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EstimationConfig:
        """The inverse of :meth:`to_dict`."""
        return cls(calibration=data["calibration"], first_n=data["first_n"],
                   reference=data["reference"],
                   reference_report=(None if data["reference_report"] is None
                                     else CalibrationReport(**data["reference_report"])),
                   check_arl=data["check_arl"])
