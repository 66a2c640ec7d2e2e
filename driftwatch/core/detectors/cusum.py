"""CUSUM on standardized inputs, with its threshold derived from a target run length."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from driftwatch.core.detectors.base import (
    DIRECTIONS,
    Detector,
    DetectorState,
    Direction,
    check_choice,
    check_float,
)
from driftwatch.core.sequential import cusum_threshold
from driftwatch.core.zone import allowance, step

Evidence = Callable[[int], tuple[float, float]]
"""A block's evidence for one side (−1: a fall, +1: a rise): its u, the z-score against the
reference moved by the tolerance towards that side, and its room, the distance from the
tolerance to the minimum effect in block standard deviations (:mod:`driftwatch.core.zone`)."""

_DRIFT = DetectorState.DRIFT


class Cusum(Detector):
    """Page's CUSUM for a shift of the mean of standardized inputs (z-scores).

    For ``"down"``: S ← max(0, S − z − k), alarm when S > h; for ``"up"``: S ← max(0, S + z − k);
    ``"both"`` runs the two and alarms when either crosses. The input after an alarm first
    resets the sums, so drift is reported for one step.

    **Input.** Independent z-scores, N(0, 1) while nothing changes: a monitor's block watches
    feed exactly that (:mod:`driftwatch.core.blocks`). Then the threshold h is not a tuning
    knob: it is the value whose in-control average run length (the mean number of inputs
    between false alarms) equals ``arl``, computed exactly for normal inputs by
    :func:`~driftwatch.core.sequential.cusum_threshold` (for ``"both"`` each side gets
    2·``arl``, so the pair keeps ``arl``). A shift of the mean by δ standard deviations is
    detected after about (h + 1.17)/(δ − k) inputs (Siegmund's approximation): ``k`` = 0.5
    is the classic choice, best for shifts near 1.

    **Blocks watches** feed it through :meth:`update_block` instead: per block the evidence
    against an indifference zone and a run length from the model's false-alarm budget
    (:mod:`driftwatch.core.zone`, :mod:`driftwatch.core.budget`); its sums are then in
    nats, log-likelihood ratios, so that blocks of different information weigh what they
    know.

    Parameters
    ----------
    k
        Reference value (allowance) in standard deviations, ≥ 0.
    arl
        Target in-control average run length in inputs (> 1); sets :attr:`h`.
    direction
        ``"down"`` (decreases of the mean), ``"up"`` (increases) or ``"both"``.

    Examples
    --------
    >>> import random
    >>> from driftwatch.core.detectors import Cusum, DetectorState
    >>> rng = random.Random(3)
    >>> stream = [rng.gauss(0, 1) for _ in range(300)] + [rng.gauss(-2, 1) for _ in range(50)]
    >>> cusum = Cusum(arl=1e4)
    >>> round(cusum.h, 3)
    7.361
    >>> [i for i, z in enumerate(stream) if cusum.update(z) is DetectorState.DRIFT][:1]
    [305]

    References
    ----------
    E. S. Page (1954). Continuous inspection schemes. *Biometrika* 41, 100–115.
    D. M. Hawkins, D. H. Olwell (1998). *Cumulative Sum Charts and Charting for Quality
    Improvement*, Springer (the ARL and the choice of k).
    """

    name: ClassVar[str] = "cusum"
    parameter_docs: ClassVar[Mapping[str, tuple[str, float | None, float | None]]] = {
        "k": ("Reference value (allowance) in standard deviations of the z-scores: shifts "
              "near 2k are detected fastest; 0.5 suits shifts of about one block standard "
              "deviation.", 0.0, 10.0),
        "arl": ("Target in-control average run length, in inputs: the mean number of "
                "inputs between false alarms. Sets the threshold h exactly for N(0, 1) "
                "inputs. On a blocks watch leave it out: the run length then follows from "
                "the model's false-alarm budget (monitoring days_per_false_alarm) and each "
                "block's record time; given, it is fixed per block, outside the budget.",
                10.0, 1e12),
        "direction": ("down, up or both; default: the watch's bad direction.", None, None),
    }

    _up: float
    _down: float

    def __init__(self, *, k: float = 0.5, arl: float = 200_000.0,
                 direction: Direction = "down") -> None:
        self.k = check_float("k", k, low=0.0, high=10.0)
        self.arl = check_float("arl", arl, low=10.0, high=1e12)
        self.direction: Direction = check_choice("direction", direction, DIRECTIONS)
        self.h = cusum_threshold(2.0 * self.arl if self.direction == "both" else self.arl,
                                 self.k)
        self.reset()

    def update_block(self, evidence: Evidence, arl: float) -> DetectorState:
        """Feed one block of a blocks watch: ``evidence(side)`` gives the block's (u, room)
        for a side, ``arl`` the in-control run length, in blocks, at the zone's tolerance
        (each side of ``"both"`` gets 2·``arl``). The allowance and threshold follow per
        block (:func:`~driftwatch.core.zone.step`); with an empty zone (room 0) and a fixed
        ``arl`` this is :meth:`update` of the plain z-score, scaled by 2k."""
        if self._state is _DRIFT:
            self._after_drift()
        if self.direction == "both":
            arl *= 2.0
        drift = False
        if self.direction != "down":
            u, room = evidence(1)
            self._up, drift = step(self._up, u, allowance(self.k, room), arl)
        if self.direction != "up":
            u, room = evidence(-1)
            self._down, crossed = step(self._down, u, allowance(self.k, room), arl)
            drift = drift or crossed
        state = self._state = DetectorState.DRIFT if drift else DetectorState.STABLE
        return state

    def _reset(self) -> None:
        self._up = 0.0
        self._down = 0.0

    def _update(self, x: float) -> DetectorState:
        drift = False
        if self.direction != "down":
            self._up = max(0.0, self._up + x - self.k)
            drift = self._up > self.h
        if self.direction != "up":
            self._down = max(0.0, self._down - x - self.k)
            drift = drift or self._down > self.h
        return DetectorState.DRIFT if drift else DetectorState.STABLE

    @property
    def statistic(self) -> float:
        """The larger of the CUSUM sums (0 right after a reset); an alarm is statistic > h
        (fed by :meth:`update_block`: in nats, against that block's threshold)."""
        return max(self._up, self._down)

    def _export(self) -> dict[str, Any]:
        return {"up": self._up, "down": self._down}

    def _restore(self, data: Mapping[str, Any]) -> None:
        self._up = float(data["up"])
        self._down = float(data["down"])
