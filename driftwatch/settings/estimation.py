"""``monitoring.defaults.estimation``: estimated performance before the labels arrive."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator
from pydantic_core import InitErrorDetails

from driftwatch.core.estimation.calibration import IsotonicCalibration
from driftwatch.core.estimation.config import (
    DEFAULT_CHECK_ARL,
    DEFAULT_FIRST_N,
    EstimationConfig,
)
from driftwatch.core.estimation.reliability import calibration_report
from driftwatch.decoding.decoder import Decoded, EventFormat, decode
from driftwatch.settings.common import _problem, _raise, _Section

MAX_REFERENCE_BYTES = 1 << 30
"""A reference file larger than 1 GiB is refused: it is read whole at start-up."""


class EstimationSettings(_Section):
    """Estimated AUC and per-class error rates from the scores alone, checked against the
    labels when they join (docs/estimation.md)."""

    enabled: bool = Field(
        default=False,
        description=(
            "Estimate each model's AUC and per-class error rates from its scores before the "
            "labels arrive (exported as driftwatch_measure_estimated), and check the "
            "estimate against the labels when they join (calibration_drift alarms). Off by "
            "default: the estimate is only as good as the calibration, so turn it on once "
            "you can say where it comes from (calibration)."))
    calibration: Literal["assume", "first_n", "reference"] = Field(
        default="assume",
        description=(
            "assume: the scores are calibrated probabilities in [0, 1] (a score outside is "
            "rejected by the estimate); first_n: isotonic regression fitted on each model's "
            "first first_n labelled predictions, then frozen (no estimate before); "
            "reference: isotonic regression fitted on reference_file at start-up, whose "
            "calibration error is exported."))
    first_n: int = Field(
        default=DEFAULT_FIRST_N, ge=2, le=10_000_000,
        description=(
            "Labelled predictions a fit uses (calibration first_n, and every refit after a "
            "calibration_drift alarm). Count them in the rarer class: several hundred of "
            "it at least (5000 holds about 310 positives at 1:15)."))
    reference_file: Path | None = Field(
        default=None,
        description=(
            "With calibration reference: a JSON Lines file of labelled events, in the "
            "format of the events section (the replay's input), all of one model's "
            "kind; read once at start-up."))
    check_arl: float = Field(
        default=DEFAULT_CHECK_ARL, ge=10.0, le=1e12,
        description=(
            "In-control average run length, in self-check blocks, of the calibration-drift "
            "CUSUM: the mean number of blocks between false calibration_drift alarms while "
            "the calibration holds. A block closes once it expects block_min_class positives "
            "and as many negatives and spans block_seconds of record time, so the default "
            "is at least 35 days per false alarm at the default block_seconds."))

    _loaded: EstimationConfig | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _form(self) -> EstimationSettings:
        problems: list[InitErrorDetails] = []
        if self.calibration == "reference" and self.reference_file is None:
            problems.append(_problem(("reference_file",), "required with calibration: "
                                                          "reference"))
        if self.calibration != "reference" and self.reference_file is not None:
            problems.append(_problem(("reference_file",), "is read only with calibration: "
                                                          f"reference, not {self.calibration}"))
        _raise(type(self).__name__, problems)
        return self

    def load(self, fmt: EventFormat) -> list[InitErrorDetails]:
        """Read and fit the reference file (calibration reference) with the events' format;
        the problems, at ``reference_file``, or none. Done once: :meth:`config` uses it."""
        self._loaded = None
        if not self.enabled or self.calibration != "reference":
            return []
        assert self.reference_file is not None  # _form's rule
        try:
            labels, scores = read_reference(self.reference_file, fmt)
            calibration = IsotonicCalibration.fit(labels, scores)
        except (OSError, ValueError) as error:
            return [_problem(("reference_file",), str(error), str(self.reference_file))]
        report = (calibration_report(labels, scores)
                  if all(0.0 <= s <= 1.0 for s in scores) else None)
        self._loaded = self._config(calibration.export_state(), report)
        return []

    def _config(self, reference: dict[str, Any] | None = None,
                report: Any = None) -> EstimationConfig:
        return EstimationConfig(calibration=self.calibration, first_n=self.first_n,
                                reference=reference, reference_report=report,
                                check_arl=self.check_arl)

    def config(self) -> EstimationConfig | None:
        """The core's configuration (None when off). A reference file not loaded yet is
        read with the default event format; a problem with it is a ``ValueError`` naming
        ``reference_file``."""
        if not self.enabled:
            return None
        if self.calibration != "reference":
            return self._config()
        if self._loaded is None:
            problems = self.load(EventFormat())
            if problems:
                raise ValueError(f"reference_file: {problems[0]['type']}")
        assert self._loaded is not None
        return self._loaded


def read_reference(path: Path, fmt: EventFormat) -> tuple[list[int], list[float]]:
    """The labels and scores of a reference file; ``ValueError`` naming the first bad line
    (its number and why), or a file with fewer than two events or without both classes."""
    if path.stat().st_size > MAX_REFERENCE_BYTES:
        raise ValueError(f"{path} is larger than {MAX_REFERENCE_BYTES} bytes")
    labels: list[int] = []
    scores: list[float] = []
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            result = decode(line.rstrip(b"\r\n"), None, fmt)
            if not isinstance(result, Decoded):
                raise ValueError(f"{path} line {number}: {result.detail}")
            labels.append(result.event.y_true)
            scores.append(result.event.y_score)
    if len(set(labels)) < 2:
        raise ValueError(f"{path} must hold labelled events of both classes, got "
                         f"{len(labels)} events of {len(set(labels))} class(es)")
    return labels, scores
