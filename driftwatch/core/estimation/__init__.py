"""Estimated performance from the scores alone, checked against the labels when they come.

When labels arrive late (hours for clicks, weeks for chargebacks), a model's realized AUC
and error rates are unknown for that long. If its scores are calibrated probabilities (or
can be calibrated on a labelled reference), each prediction's label is a Bernoulli draw with
a known probability, and the measures the labels will realize have a known distribution:
their expectation is an estimate available at once (confidence-based performance
estimation), and their spread says how far the realized value may fall from it.

- :mod:`~driftwatch.core.estimation.calibration`: score → probability (identity, or an
  isotonic fit by pool-adjacent-violators);
- :mod:`~driftwatch.core.estimation.reliability`: the calibration error of labelled scores
  (Brier score and its CORP decomposition, ECE);
- :mod:`~driftwatch.core.estimation.expected`: the expected confusion matrix, rates and AUC
  of a set of predictions, with standard errors and bias (batch, O(n log n));
- :mod:`~driftwatch.core.estimation.weighted_scores` and
  :mod:`~driftwatch.core.estimation.window`: the same over a sliding window of the last d
  predictions, exact (integer fixed point) and incremental;
- :mod:`~driftwatch.core.estimation.self_check`: realized minus estimated per block of
  labelled predictions, as z-scores a CUSUM can watch (a concept change the estimate cannot
  see);
- :mod:`~driftwatch.core.estimation.estimator`: the three together, the object a monitor
  owns.

``docs/estimation.md`` has the formulas, the assumptions and when the estimate is wrong.
"""
