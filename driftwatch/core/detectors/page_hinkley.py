"""Page-Hinkley test: a CUSUM of deviations from the running mean."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from driftwatch.core.detectors.base import (
    DIRECTIONS,
    Detector,
    DetectorState,
    Direction,
    check_choice,
    check_float,
    check_int,
)


class PageHinkley(Detector):
    """Page-Hinkley test for a change in the mean of a stream.

    The test accumulates how far each input lies from the running mean of all inputs since
    the last reset, minus a tolerance ``delta``, and raises an alarm when that cumulative sum
    has moved more than ``threshold`` away from its most extreme past value. It is cheap (O(1)
    time and memory per input), has no warning zone, and reacts to sustained shifts rather
    than single outliers, which makes it the usual first choice for watching a measure.

    With S⁺ and S⁻ both starting at 0 and x̄ the mean of the inputs so far *including* x:

    - S⁺ ← α·S⁺ + (x − x̄ − δ) and S⁻ ← α·S⁻ + (x − x̄ + δ);
    - ``"up"`` (an increase of the mean) alarms when S⁺ − min S⁺ > λ;
    - ``"down"`` (a decrease) alarms when max S⁻ − S⁻ > λ; ``"both"`` when either does;
    - minima and maxima run over every input since the last reset, but there is no alarm
      before ``min_samples`` inputs;
    - the input after an alarm first resets the detector, so drift is reported for one step.

    **Input.** Any finite real: typically the monitored measure itself (AUC, balanced
    accuracy, ...). For a measure where higher is better a drop is what matters, hence the
    default ``direction="down"``; feed an error rate with ``direction="up"``.
    ``threshold`` and ``delta`` are in input units: a mean shift Δ on inputs in [0, 1] needs
    about λ/(Δ − δ) inputs to alarm, so λ = 50 suits unbounded or error-count inputs, not a
    measure sampled every few events.

    **Differences from other implementations.** River's ``PageHinkley`` flags both directions
    by default (``mode="both"``) and calls ``min_samples`` ``min_instances``; with the same
    parameters and direction it reports the same drifts. MOA's (and Brzezinski et al.'s (2019))
    variant watches increases of a loss only and alarms on ``≥ λ``.

    Parameters
    ----------
    min_samples
        Number of inputs (since the last reset) before an alarm may be raised.
    delta
        Tolerated deviation from the mean, in input units: shifts smaller than ``delta`` are
        never detected.
    threshold
        The alarm threshold λ, in input units.
    alpha
        Fading factor applied to the cumulative sums at every input; 1 means no fading. The
        mean itself is never faded.
    direction
        ``"down"`` (decreases of the mean), ``"up"`` (increases) or ``"both"``.

    Examples
    --------
    A measure around 0.90 that drops to 0.80 at index 500; with inputs in [0, 1] a small
    threshold is needed:

    >>> import random
    >>> from driftwatch.core.detectors import DetectorState, PageHinkley
    >>> rng = random.Random(7)
    >>> stream = [rng.gauss(0.90, 0.02) for _ in range(500)]
    >>> stream += [rng.gauss(0.80, 0.02) for _ in range(500)]
    >>> ph = PageHinkley(threshold=2.0)
    >>> ph
    PageHinkley(min_samples=30, delta=0.005, threshold=2.0, alpha=0.9999, direction='down')
    >>> [i for i, x in enumerate(stream) if ph.update(x) is DetectorState.DRIFT]
    [519]

    River's documented example (an increase, so it needs ``"up"`` or ``"both"``):

    >>> rng = random.Random(12345)
    >>> stream = rng.choices([0, 1], k=1000) + rng.choices(range(4, 8), k=1000)
    >>> ph = PageHinkley(direction="both")
    >>> [i for i, x in enumerate(stream) if ph.update(x) is DetectorState.DRIFT]
    [1006]

    References
    ----------
    E. S. Page (1954). Continuous inspection schemes. *Biometrika* 41(1/2), 100–115.
    D. V. Hinkley (1971). Inference about the change-point from cumulative sum tests.
    *Biometrika* 58(3), 509–523.
    D. Brzezinski, J. Stefanowski, R. Susmaga, I. Szczęch (2019). On the dynamics of
    classification measures for imbalanced and streaming data. *IEEE TNNLS*, §V:
    Page-Hinkley on windowed measures and its false alarms.
    """

    name: ClassVar[str] = "page_hinkley"

    _n: int
    _mean: float
    _sum_up: float
    _sum_down: float
    _min_up: float
    _max_down: float

    def __init__(
        self,
        *,
        min_samples: int = 30,
        delta: float = 0.005,
        threshold: float = 50.0,
        alpha: float = 0.9999,
        direction: Direction = "down",
    ) -> None:
        self.min_samples = check_int("min_samples", min_samples, 1)
        self.delta = check_float("delta", delta, low=0.0)
        self.threshold = check_float("threshold", threshold, low=0.0, low_open=True)
        self.alpha = check_float("alpha", alpha, low=0.0, high=1.0, low_open=True)
        self.direction: Direction = check_choice("direction", direction, DIRECTIONS)
        self.reset()

    def _reset(self) -> None:
        self._n = 0
        self._mean = 0.0
        self._sum_up = 0.0
        self._sum_down = 0.0
        # The first input equals the mean, so S⁺ starts at −δ ≤ 0 and S⁻ at δ ≥ 0: 0 is a
        # neutral start for min S⁺ and max S⁻, and keeps the state finite (plain JSON).
        self._min_up = 0.0
        self._max_down = 0.0

    def _update(self, x: float) -> DetectorState:
        self._n += 1
        self._mean += (x - self._mean) / self._n
        deviation = x - self._mean
        self._sum_up = self.alpha * self._sum_up + deviation - self.delta
        self._sum_down = self.alpha * self._sum_down + deviation + self.delta
        self._min_up = min(self._min_up, self._sum_up)
        self._max_down = max(self._max_down, self._sum_down)

        if self._n < self.min_samples:
            return DetectorState.STABLE
        rise = self.direction != "down" and self._sum_up - self._min_up > self.threshold
        fall = self.direction != "up" and self._max_down - self._sum_down > self.threshold
        return DetectorState.DRIFT if rise or fall else DetectorState.STABLE

    def _export(self) -> dict[str, Any]:
        return {
            "n": self._n,
            "mean": self._mean,
            "sum_up": self._sum_up,
            "sum_down": self._sum_down,
            "min_up": self._min_up,
            "max_down": self._max_down,
        }

    def _restore(self, data: Mapping[str, Any]) -> None:
        self._n = int(data["n"])
        self._mean = float(data["mean"])
        self._sum_up = float(data["sum_up"])
        self._sum_down = float(data["sum_down"])
        self._min_up = float(data["min_up"])
        self._max_down = float(data["max_down"])
