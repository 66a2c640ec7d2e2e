"""How well calibrated a labelled reference's scores are: the error an estimate inherits.

Before trusting scores as probabilities (or to see what an isotonic calibration corrects),
:func:`calibration_report` measures their calibration on labelled events:

- **Brier score** BS = mean((s − y)²), and its CORP decomposition (Dimitriadis, Gneiting and
  Jordan 2021): BS = MCB − DSC + UNC, where the PAV-recalibrated scores p̂ (the isotonic fit
  of the labels on the scores, :func:`~driftwatch.core.estimation.calibration.pav`) give
  MCB = BS(s) − BS(p̂), the **miscalibration** (0 exactly when the scores are their own
  isotonic recalibration), DSC = UNC − BS(p̂), the discrimination, and UNC = ȳ(1 − ȳ), the
  uncertainty of the base rate. No binning choice enters: the PAV fit picks the bins.
- **Expected calibration error** ECE = Σ_b (n_b/n)·|mean(s)_b − mean(y)_b| over ``bins``
  bins of (nearly) equal counts in score order (Naeini, Cooper and Hauskrecht 2015), the
  figure most users know; it depends on the binning and is biased upwards on small samples.

Both need the scores to be probabilities in [0, 1]. An isotonic calibration fitted on the same
events has MCB = 0 on them by construction, so the report describes the *raw* scores: what
an estimate that assumed them calibrated would get wrong.

References:
    T. Dimitriadis, T. Gneiting, A. I. Jordan (2021). Stable reliability diagrams for
    probabilistic classifiers. *PNAS* 118(8), e2016191118 (CORP).
    A. H. Murphy (1973). A new vector partition of the probability score. *J. Appl. Meteor.*
    12, 595–600.
    M. P. Naeini, G. F. Cooper, M. Hauskrecht (2015). Obtaining well calibrated probabilities
    using Bayesian binning. *AAAI 2015* (ECE).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from driftwatch.core.estimation.calibration import pav
from driftwatch.core.events import check_label, check_score


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    """The calibration of labelled scores (module docstring); BS = MCB − DSC + UNC."""

    events: int
    positives: int
    brier: float
    miscalibration: float
    discrimination: float
    uncertainty: float
    ece: float


def calibration_report(y_true: Sequence[object], y_score: Sequence[object],
                       bins: int = 10) -> CalibrationReport:
    """Brier score, its CORP decomposition and the ECE of these labelled scores. O(n log n).

    Raises ``ValueError`` naming the argument for a label that is not 0/1, a score outside
    [0, 1], lengths that differ, no events, or ``bins`` < 1.

    >>> report = calibration_report([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], bins=2)
    >>> round(report.brier, 4), round(report.miscalibration, 4), report.uncertainty
    (0.275, 0.15, 0.25)
    """
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be an integer ≥ 1, got {bins!r}")
    if len(y_true) != len(y_score):
        raise ValueError(f"y_true and y_score differ in length: {len(y_true)} ≠ {len(y_score)}")
    labels = [check_label(y, f"y_true[{i}]") for i, y in enumerate(y_true)]
    scores = [check_score(s, f"y_score[{i}]") for i, s in enumerate(y_score)]
    for i, s in enumerate(scores):
        if not 0.0 <= s <= 1.0:
            raise ValueError(f"y_score[{i}] must be a probability in [0, 1], got {s!r}")
    n = len(labels)
    if n == 0:
        raise ValueError("a calibration report needs at least one labelled event")
    positives = sum(labels)
    brier = math.fsum((s - y) ** 2 for s, y in zip(scores, labels, strict=True)) / n
    # The recalibrated Brier score, block by block: a block of e events with k positives,
    # all forecast k/e, scores k·(1 − k/e)² + (e − k)·(k/e)² = k(e − k)/e.
    recalibrated = math.fsum(b.positives * (b.events - b.positives) / b.events
                             for b in pav(labels, scores)) / n
    base = positives / n
    uncertainty = base * (1.0 - base)
    ordered = sorted(zip(scores, labels, strict=True))
    ece = 0.0
    for b in range(min(bins, n)):
        chunk = ordered[b * n // min(bins, n):(b + 1) * n // min(bins, n)]
        gap = math.fsum(s for s, _ in chunk) - sum(y for _, y in chunk)
        ece += abs(gap) / n
    return CalibrationReport(n, positives, brier, brier - recalibrated,
                             uncertainty - recalibrated, uncertainty, ece)
