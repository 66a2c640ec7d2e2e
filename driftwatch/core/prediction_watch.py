"""Alarms from predictions alone: the label-free signals of one model fed to detectors.

A :class:`PredictionWatch` owns a model's :class:`~driftwatch.core.score_drift.ScoreDrift`
and, for each of its signals, the detectors that watch it. Every closed block of predictions
gives each signal one standardized value (N(0, 1) while the score distribution holds), which
is what a CUSUM whose threshold is derived from a target in-control run length expects:
the false-alarm rate then follows from that target at any traffic, exactly as for the
labelled block watches. The alarms it raises are the monitor's
:class:`~driftwatch.core.monitor.Alarm` s, so they are logged, counted, exported and
published the same way; their ``measure`` is one of :data:`SIGNAL_MEASURES`.

The default detectors (:func:`default_detectors`) are one-sided CUSUMs (k = 0.5) on the KS
and PSI z-scores (only an *increase* of a distance means change) and a two-sided one on the
predicted-positive rate (either direction is a change).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driftwatch.core.config_error import ConfigError
from driftwatch.core.detectors import registry
from driftwatch.core.detectors.base import Detector, DetectorState
from driftwatch.core.monitor import Alarm
from driftwatch.core.score_drift import SIGNALS, BlockSignal, ScoreDrift
from driftwatch.core.state import check_state

SIGNAL_MEASURES: Mapping[str, str] = {
    "ks": "score_ks",
    "psi": "score_psi",
    "positive_rate": "predicted_positive_rate",
}
"""The alarm's ``measure`` for each signal of :data:`~driftwatch.core.score_drift.SIGNALS`."""

STATE_VERSION = 1
_STATE_KEYS = frozenset({"version", "drift", "detectors", "blocks", "last", "alarms"})


def default_detectors(arl: float = 10_000.0) -> dict[str, list[Detector]]:
    """A CUSUM per signal with in-control run length ``arl`` blocks: up for KS and PSI,
    both ways for the predicted-positive rate. A bad ``arl`` is a ConfigError at ``arl``."""
    try:
        return {
            "ks": [registry.create("cusum", k=0.5, arl=arl, direction="up")],
            "psi": [registry.create("cusum", k=0.5, arl=arl, direction="up")],
            "positive_rate": [registry.create("cusum", k=0.5, arl=arl, direction="both")],
        }
    except ConfigError as exc:
        raise ConfigError(("arl",), exc.message) from exc


@dataclass(frozen=True, slots=True)
class PredictionSnapshot:
    """An immutable picture of a model's label-free signals, safe to read from another thread.

    ``values`` are the sliding values (:meth:`ScoreDrift.values`), ``z`` the latest block's
    standardized values (NaN before the first block), ``states`` each detector's state by
    (measure, detector name), ``alarms`` the drift alarms raised so far by the same key.
    """

    model: str
    predictions: int
    blocks: int
    values: Mapping[str, float]
    z: Mapping[str, float]
    states: Mapping[tuple[str, str], str]
    alarms: Mapping[tuple[str, str], int]


class PredictionWatch:
    """A model's label-free signals and their detectors (see the module docstring).

    Parameters:
        model: the model id the alarms carry.
        drift: the signals (its parameters decide window, block and reference).
        detectors: the detectors of each signal, by name in :data:`SIGNALS`; a signal
            without detectors is still computed and exported.

    Cost: :meth:`update` is :meth:`ScoreDrift.update` plus, when a block closes, one
    detector update per detector.
    """

    __slots__ = ("_alarms", "_blocks", "_last", "detectors", "drift", "model")

    def __init__(self, model: str, drift: ScoreDrift,
                 detectors: Mapping[str, Sequence[Detector]]) -> None:
        unknown = sorted(set(detectors) - set(SIGNALS))
        if unknown:
            raise ValueError(f"detectors name unknown signals {unknown}; "
                             f"signals: {', '.join(SIGNALS)}")
        self.model = model
        self.drift = drift
        self.detectors = {name: list(detectors.get(name, ())) for name in SIGNALS}
        self._blocks = 0
        self._last: dict[str, float] = dict.fromkeys(SIGNALS, math.nan)
        self._alarms: dict[tuple[str, str], int] = {
            (SIGNAL_MEASURES[name], d.name): 0 for name in SIGNALS for d in self.detectors[name]
        }

    def update(self, y_score: float, y_pred: int | None = None,
               ts: float | None = None) -> list[Alarm]:
        """Add one prediction (``ts``: its time, carried into alarms); return the alarms
        it raised: drift alarms, and warnings as a detector enters its warning zone."""
        signals = self.drift.update(y_score, y_pred)
        if signals is None:
            return []
        self._blocks += 1
        alarms = []
        for signal in signals:
            self._last[signal.name] = signal.z
            for detector in self.detectors[signal.name]:
                before = detector.state
                state = detector.update(signal.z)
                if state is DetectorState.DRIFT or (
                        state is DetectorState.WARNING and before is not DetectorState.WARNING):
                    alarms.append(self._alarm(signal, detector, state, ts))
        return alarms

    def _alarm(self, signal: BlockSignal, detector: Detector, state: DetectorState,
               ts: float | None) -> Alarm:
        measure = SIGNAL_MEASURES[signal.name]
        if state is DetectorState.DRIFT:
            self._alarms[(measure, detector.name)] += 1
        # No window of labels: P = N = 0; the reference is what the block was compared with
        # (0 for a distance, the reference's rate for the predicted-positive rate).
        return Alarm(self.model, measure, detector.name,
                     "drift" if state is DetectorState.DRIFT else "warning",
                     signal.value, math.nan, 0, 0, self.drift.seen, ts, signal.reference)

    def snapshot(self) -> PredictionSnapshot:
        """The current picture; costs one :meth:`ScoreDrift.values`."""
        return PredictionSnapshot(
            self.model, self.drift.seen, self._blocks, self.drift.values(), dict(self._last),
            {(SIGNAL_MEASURES[name], d.name): d.state.value
             for name in SIGNALS for d in self.detectors[name]},
            dict(self._alarms))

    def export_state(self) -> dict[str, Any]:
        """Signals, detectors and counts as JSON-ready values."""
        return {
            "version": STATE_VERSION,
            "drift": self.drift.export_state(),
            "detectors": {name: [d.export_state() for d in self.detectors[name]]
                          for name in SIGNALS},
            "blocks": self._blocks,
            "last": [None if math.isnan(z) else z for z in self._last.values()],
            "alarms": [[m, d, n] for (m, d), n in self._alarms.items()],
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`export_state` (this watch's parameters kept). Detectors are
        restored when the state holds the same detectors (by name, per signal) and kept
        fresh otherwise, so a changed detector setting takes effect; a state this version
        cannot read is a ``ValueError`` naming the problem, and leaves the watch as it was."""
        state = check_state(state, _STATE_KEYS, STATE_VERSION)
        params = {p: getattr(self.drift, p) for p in
                  ("window", "block_size", "reference", "reference_size", "bins", "threshold")}
        drift = ScoreDrift.from_state(state["drift"], **params)
        detectors = dict(self.detectors)
        try:
            for name in SIGNALS:
                saved = state["detectors"].get(name, [])
                if [s.get("name") for s in saved] == [d.name for d in self.detectors[name]]:
                    detectors[name] = [type(d).from_state(s)
                                       for d, s in zip(self.detectors[name], saved, strict=True)]
            last = [math.nan if z is None else float(z) for z in state["last"]]
            alarms = {(str(m), str(d)): int(n) for m, d, n in state["alarms"]}
            blocks = int(state["blocks"])
        except (AttributeError, TypeError, ValueError) as error:
            raise ValueError(f"state {error}") from error
        self.drift, self.detectors, self._blocks = drift, detectors, blocks
        self._last = dict(zip(SIGNALS, last, strict=True))
        self._alarms.update({key: n for key, n in alarms.items() if key in self._alarms})
