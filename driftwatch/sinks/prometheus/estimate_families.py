"""The metric families of a model's estimated performance
(:mod:`driftwatch.core.estimation.watch`), beside its realized measures.

Part of every scrape (:class:`~driftwatch.sinks.prometheus.families.Families` composes them)
for models whose monitor estimates (``monitoring.defaults.estimation.enabled``): each
estimated measure with its standard error, whether the estimate is trusted, the
calibration's error, the self-check's latest input and the predictions the estimate had to
leave out. The estimate is read once per scrape per model that saw a prediction since the
last one (O(d log d)), never per event.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict
from typing import TYPE_CHECKING

from driftwatch.sinks.prometheus.rendered import RenderedFamily

if TYPE_CHECKING:
    from driftwatch.core.estimation.watch import EstimateView

__all__ = ["EstimateFamilies"]

_REPORTED = ("ece", "brier", "miscalibration")
"""The calibration report's statistics exported (docs/estimation.md, Calibration)."""


class EstimateFamilies:
    """The estimate's families of one scrape, created empty; :meth:`samples` gives a model's."""

    def __init__(self) -> None:
        self.estimated = RenderedFamily(
            "driftwatch_measure_estimated",
            "A measure estimated from the scores of the window's predictions before their "
            "labels arrive (auc, false_negative_rate, false_positive_rate): what their labels "
            "are expected to realize if the calibration holds (docs/estimation.md). Absent "
            "while no calibration is in place.",
            "gauge",
            labels=("model", "measure"),
        )
        self.standard_error = RenderedFamily(
            "driftwatch_measure_estimated_standard_error",
            "Standard error of the realized value around driftwatch_measure_estimated, "
            "given the scores (±1.96 of it covered 94-96 % of realized windows in the "
            "benchmark).",
            "gauge",
            labels=("model", "measure"),
        )
        self.trusted = RenderedFamily(
            "driftwatch_estimate_trusted",
            "1 while the estimate has a calibration its self-check has not rejected; 0 while "
            "fitting (first_n), and from a calibration_drift alarm until the refit on the "
            "next first_n labels.",
            "gauge",
            labels=("model",),
        )
        self.calibration_error = RenderedFamily(
            "driftwatch_estimate_calibration_error",
            "Calibration error of the scores the calibration was fitted on (the reference "
            "file, the first first_n labels, or a refit's): ece (ten equal-count bins), "
            "brier, and miscalibration (the Brier score's CORP part that recalibration "
            "removes). Absent for an assumed calibration or scores outside [0, 1].",
            "gauge",
            labels=("model", "statistic"),
        )
        self.check_z = RenderedFamily(
            "driftwatch_estimate_check_z",
            "The calibration-drift CUSUM's latest input: the AUC z-score of the latest "
            "self-check block (realized minus estimated, standardized; self-starting "
            "residual for fitted calibrations). Absent before the first.",
            "gauge",
            labels=("model",),
        )
        self.skipped = RenderedFamily(
            "driftwatch_estimate_skipped",
            "Predictions left out of the estimate: their score has no probability under "
            "the calibration (outside [0, 1] with calibration assume).",
            "counter",
            labels=("model",),
        )

    def all(self) -> list[RenderedFamily]:
        return [self.estimated, self.standard_error, self.trusted, self.calibration_error,
                self.check_z, self.skipped]

    def samples(self, model: str, view: EstimateView
                ) -> Iterator[tuple[RenderedFamily, tuple[str, ...], float]]:
        """A model's samples; undefined values (NaN) are left out, as every undefined value
        of the exporter is."""
        for measure, estimate in sorted(view.estimates.items()):
            if estimate.value == estimate.value:
                yield self.estimated, (model, measure), estimate.value
            if estimate.standard_error == estimate.standard_error:
                yield self.standard_error, (model, measure), estimate.standard_error
        yield self.trusted, (model,), 1.0 if view.trusted else 0.0
        if view.report is not None:
            report = asdict(view.report)
            for statistic in _REPORTED:
                yield self.calibration_error, (model, statistic), float(report[statistic])
        if view.last_z == view.last_z:
            yield self.check_z, (model,), view.last_z
        yield self.skipped, (model,), view.skipped
