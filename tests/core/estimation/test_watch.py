"""The estimate a monitor owns: fed by its events, checked by their labels, trusted or not."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from driftwatch.core.config_error import ConfigError
from driftwatch.core.estimation.calibration import IsotonicCalibration
from driftwatch.core.estimation.config import EstimationConfig
from driftwatch.core.estimation.estimator import PerformanceEstimator
from driftwatch.core.estimation.reliability import CalibrationReport
from driftwatch.core.estimation.watch import CALIBRATION_DRIFT, EstimateWatch
from driftwatch.core.monitor import Monitor, MonitorConfig


def stream(seed: int, n: int, change_at: int | None = None) -> tuple[list[int], list[float]]:
    """Calibrated scores p = σ(−1.4 + 1.5·x), x ~ N(0, 1) (about 1:3); from ``change_at`` on
    the labels of scores in [0.6, 0.9) are flipped: a concept change the scores cannot show
    (the realized AUC falls from about 0.81 to 0.73, the estimate stays)."""
    rng = np.random.default_rng(seed)
    p = 1.0 / (1.0 + np.exp(-(-1.4 + 1.5 * rng.standard_normal(n))))
    y = (rng.random(n) < p).astype(int)
    if change_at is not None:
        band = (np.arange(n) >= change_at) & (p >= 0.6) & (p < 0.9)
        y[band] = 1 - y[band]
    return y.tolist(), p.tolist()


def config(**estimation: object) -> MonitorConfig:
    return MonitorConfig(estimation=EstimationConfig(**estimation))  # type: ignore[arg-type]


def test_bad_settings_name_their_key() -> None:
    with pytest.raises(ConfigError) as error:
        EstimationConfig(calibration="guess")  # type: ignore[arg-type]
    assert error.value.path == ("calibration",)
    with pytest.raises(ConfigError) as error:
        EstimationConfig(calibration="first_n", first_n=1)
    assert error.value.path == ("first_n",)
    with pytest.raises(ConfigError) as error:
        EstimationConfig(calibration="reference")
    assert error.value.path == ("reference",) and "required" in error.value.message
    with pytest.raises(ConfigError) as error:
        EstimationConfig(calibration="assume", check_arl=5.0)
    assert error.value.path == ("check_arl",)


def test_the_estimate_is_the_estimators_over_the_same_window() -> None:
    """Exact: the monitor's estimate equals a PerformanceEstimator fed the same predictions
    directly, and its window is the monitor's window size."""
    y, s = stream(1, 3_000)
    monitor = Monitor("m", MonitorConfig(window_size=500, estimation=EstimationConfig()))
    reference = PerformanceEstimator(window=500, min_expected=20)
    for label, score in zip(y, s, strict=True):
        monitor.update_values(label, score, None, None)
        reference.predict(score)
    view = monitor.snapshot().estimate
    assert view is not None and view.trusted and view.calibration == "assume"
    assert view.estimates == reference.estimates()
    assert view.predictions == 3_000 and view.check_blocks > 0
    assert Monitor("m", MonitorConfig()).snapshot().estimate is None


def test_a_concept_change_raises_calibration_drift_then_a_refit_restores_trust() -> None:
    y, s = stream(2, 40_000, change_at=20_000)
    monitor = Monitor("m", config(first_n=3_000, check_arl=1_000.0))
    found = []
    for index, (label, score) in enumerate(zip(y, s, strict=True)):
        for alarm in monitor.update_values(label, score, None, float(index)):
            if alarm.measure == CALIBRATION_DRIFT:
                found.append((index, alarm))
                view = monitor.snapshot().estimate
                assert view is not None and not view.trusted
                assert monitor.snapshot().detector_states[(CALIBRATION_DRIFT, "cusum")] == \
                    "drift"
    assert len(found) == 1, found  # none before the change, one episode after it
    index, alarm = found[0]
    assert 20_000 < index < 23_000
    assert alarm.value < alarm.reference  # realized AUC below what the scores promised
    view = monitor.snapshot().estimate
    assert view is not None and view.trusted and view.calibration == "refit"
    assert view.report is not None and view.report.events == 3_000
    # Refitted on the new concept, the estimate follows the realized AUC again.
    realized = monitor.snapshot().values["auc"]
    assert abs(view.estimates["auc"].value - realized) < 3 * view.estimates["auc"].standard_error


def test_a_stationary_calibrated_stream_raises_nothing() -> None:
    y, s = stream(3, 40_000)
    monitor = Monitor("m", config(check_arl=1_000.0))
    alarms = [a for i, (label, score) in enumerate(zip(y, s, strict=True))
              for a in monitor.update_values(label, score, None, float(i))
              if a.measure == CALIBRATION_DRIFT]
    assert alarms == []
    view = monitor.snapshot().estimate
    assert view is not None and view.check_blocks > 100 and not math.isnan(view.last_z)


def test_first_n_estimates_nothing_until_fitted() -> None:
    y, s = stream(4, 2_000)
    monitor = Monitor("m", config(calibration="first_n", first_n=1_500))
    for label, score in zip(y[:1_499], s[:1_499], strict=True):
        monitor.update_values(label, score, None, None)
    view = monitor.snapshot().estimate
    assert view is not None and not view.trusted and view.calibration == "fitting"
    assert all(math.isnan(e.value) for e in view.estimates.values())
    monitor.update_values(y[1_499], s[1_499], None, None)
    view = monitor.snapshot().estimate
    assert view is not None and view.trusted and view.calibration == "first_n"
    assert not math.isnan(view.estimates["auc"].value)


def test_a_reference_calibration_is_used_and_reported() -> None:
    y, s = stream(5, 6_000)
    fit = IsotonicCalibration.fit(y[:5_000], s[:5_000])
    report = CalibrationReport(events=5_000, positives=1, brier=0.1, miscalibration=0.01,
                               discrimination=0.02, uncertainty=0.11, ece=0.03)
    monitor = Monitor("m", config(calibration="reference", reference=fit.export_state(),
                                  reference_report=report))
    direct = PerformanceEstimator(window=1_000, calibration=fit)
    for label, score in zip(y[5_000:], s[5_000:], strict=True):
        monitor.update_values(label, score, None, None)
        direct.predict(score)
    view = monitor.snapshot().estimate
    assert view is not None and view.calibration == "reference"
    assert view.estimates == direct.estimates()
    assert view.report is not None and view.report.ece == 0.03


def test_predictions_apart_enter_once() -> None:
    """With predictions and labels apart, a prediction enters the window when made and its
    joined event only checks it: the same estimate as whole events, each counted once."""
    y, s = stream(6, 3_000)
    whole = Monitor("m", config())
    apart = Monitor("m", config())
    for label, score in zip(y, s, strict=True):
        whole.update_values(label, score, None, None)
    assert apart.estimate is not None
    for score in s:
        apart.estimate.predict(score)
    for label, score in zip(y, s, strict=True):
        apart.update_values(label, score, None, None)
    a, b = whole.snapshot().estimate, apart.snapshot().estimate
    assert a is not None and b is not None
    assert b.predictions == 3_000 and a.estimates == b.estimates
    assert a.check_blocks == b.check_blocks


def test_columns_and_values_agree() -> None:
    y, s = stream(7, 5_000, change_at=2_000)
    one, bulk = Monitor("m", config(check_arl=100.0)), Monitor("m", config(check_arl=100.0))
    times = [float(i) for i in range(5_000)]
    by_event = [(i, a) for i, (label, score) in enumerate(zip(y, s, strict=True))
                for a in [one.update_values(label, score, None, times[i])] if a]
    assert bulk.update_columns(y, s, times) == by_event
    assert one.export_state() == bulk.export_state()


@pytest.mark.parametrize(("calibration", "seed", "chunk", "rate", "untimed", "outside"),
                         [("assume", 11, 500, 100.0, 0.0, 0.0),
                          ("assume", 12, 97, 3.0, 0.3, 0.0),
                          ("assume", 13, 2_000, 100.0, 1.0, 0.001),
                          ("first_n", 14, 500, 100.0, 0.1, 0.0),
                          ("reference", 15, 333, 20.0, 0.0, 0.0)])
def test_columns_in_bulk_equal_events_one_by_one(calibration: str, seed: int, chunk: int,
                                                 rate: float, untimed: float,
                                                 outside: float) -> None:
    """The agent's whole events go to the estimate in bulk (EstimateWatch.extend): over a
    concept change that raises calibration drift and a refit, the same alarms at the same
    events, the same exported estimate, the same checkpoint, whatever the chunks, times
    (missing ones included), calibration, or scores the assumed calibration refuses."""
    n = 36_000
    y, s = stream(seed, n, change_at=15_000)
    rng = np.random.default_rng(seed)
    s = [x + 2.0 if draw < outside else x for x, draw in zip(s, rng.random(n), strict=True)]
    times = [None if draw < untimed else 1.7e9 + i / rate
             for i, draw in enumerate(rng.random(n).tolist())]
    settings: dict[str, object] = {"calibration": calibration, "first_n": 2_000,
                                   "check_arl": 200.0}
    if calibration == "reference":
        reference_y, reference_s = stream(seed + 100, 5_000)
        settings["reference"] = IsotonicCalibration.fit(reference_y, reference_s).export_state()
    one, bulk = Monitor("m", config(**settings)), Monitor("m", config(**settings))
    expected = [(i, a) for i, (label, score, t) in enumerate(zip(y, s, times, strict=True))
                if (a := one.update_values(label, score, None, t))]
    got = []
    for first in range(0, n, chunk):
        got += [(first + i, a) for i, a in bulk.update_columns(
            y[first:first + chunk], s[first:first + chunk], times[first:first + chunk])]
    assert got == expected
    drifts = [i for i, alarms in expected for a in alarms if a.measure == CALIBRATION_DRIFT]
    assert any(i > 15_000 for i in drifts), "the change must raise calibration drift"
    assert json.dumps(bulk.export_state()) == json.dumps(one.export_state())
    assert repr(bulk.snapshot().estimate) == repr(one.snapshot().estimate)


@pytest.mark.parametrize(("calibration", "seed", "rate", "untimed", "late", "outside"),
                         [("assume", 21, 100.0, 0.0, 0.0, 0.0),
                          ("assume", 22, 3.0, 0.3, 0.1, 0.001),
                          ("assume", 23, 100.0, 1.0, 0.0, 0.0),
                          ("first_n", 24, 50.0, 0.1, 0.05, 0.0),
                          ("reference", 25, 20.0, 0.0, 0.0, 0.0)])
def test_queued_events_give_what_entering_each_at_once_gives(
        calibration: str, seed: int, rate: float, untimed: float, late: float, outside: float,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """EstimateWatch.event queues the events that cannot close a check block and enters
    them in bulk later. Against the same watch entering every event at once (its queue
    never armed: the path before the queue), over a concept change that raises calibration
    drift and a refit, with times missing or late, scores the assumed calibration refuses,
    and reads (snapshots, checkpoints) at random events: the same alarms at the same
    events, the same values read, the same checkpoint."""
    n = 30_000
    y, s = stream(seed, n, change_at=15_000)
    rng = np.random.default_rng(seed)
    s = [x + 2.0 if draw < outside else x for x, draw in zip(s, rng.random(n), strict=True)]
    draws = rng.random(n).tolist()
    times = [None if d < untimed else 1.7e9 + i / rate - (60.0 if d < untimed + late else 0.0)
             for i, d in enumerate(draws)]
    reads = set(rng.choice(n, 40, replace=False).tolist())
    settings: dict[str, object] = {"calibration": calibration, "first_n": 2_000,
                                   "check_arl": 200.0}
    if calibration == "reference":
        reference_y, reference_s = stream(seed + 100, 5_000)
        settings["reference"] = IsotonicCalibration.fit(reference_y, reference_s).export_state()
    queued = Monitor("m", config(**settings))
    got, views = [], []
    for i, (label, score, t) in enumerate(zip(y, s, times, strict=True)):
        if alarms := queued.update_values(label, score, None, t):
            got.append((i, alarms))
        if i in reads:
            views.append((repr(queued.snapshot().estimate), json.dumps(queued.export_state())))
    monkeypatch.setattr(EstimateWatch, "_arm", lambda self: None)
    at_once = Monitor("m", config(**settings))
    expected, reference = [], []
    for i, (label, score, t) in enumerate(zip(y, s, times, strict=True)):
        if alarms := at_once.update_values(label, score, None, t):
            expected.append((i, alarms))
        if i in reads:
            reference.append((repr(at_once.snapshot().estimate),
                              json.dumps(at_once.export_state())))
    assert got == expected
    assert any(a.measure == CALIBRATION_DRIFT for i, alarms in got if i > 15_000
               for a in alarms), "the change must raise calibration drift"
    assert views == reference
    assert json.dumps(queued.export_state()) == json.dumps(at_once.export_state())


@pytest.mark.parametrize("stop", [21_000, 30_000])
def test_a_restored_monitor_continues_exactly(stop: int) -> None:
    """Through JSON, mid-refit (21 000: the alarm came, the refit is collecting) and after."""
    y, s = stream(8, 34_000, change_at=20_000)
    straight = Monitor("m", config(first_n=3_000, check_arl=1_000.0))
    first = Monitor("m", config(first_n=3_000, check_arl=1_000.0))
    for label, score in zip(y[:stop], s[:stop], strict=True):
        straight.update_values(label, score, None, None)
        first.update_values(label, score, None, None)
    resumed = Monitor.restore(json.loads(json.dumps(first.export_state())))
    for label, score in zip(y[stop:], s[stop:], strict=True):
        assert straight.update_values(label, score, None, None) == \
            resumed.update_values(label, score, None, None)
    assert straight.snapshot().estimate == resumed.snapshot().estimate
    assert json.dumps(straight.export_state()) == json.dumps(resumed.export_state())


def test_a_bad_estimate_state_is_refused_whole() -> None:
    monitor = Monitor("m", config())
    y, s = stream(9, 500)
    for label, score in zip(y, s, strict=True):
        monitor.update_values(label, score, None, None)
    state = monitor.export_state()
    estimate = monitor.estimate
    assert estimate is not None
    before = estimate.export_state()
    broken = dict(state["estimate"], refitting=[[0, 1, 7], [0.1, 0.2, 0.3]])
    with pytest.raises(ValueError, match="estimate state"):
        estimate.restore(broken)
    assert estimate.export_state() == before


def test_a_score_outside_the_assumed_calibration_is_skipped_and_counted() -> None:
    """The event is valid (any finite score is): the window and blocks take it, the estimate
    leaves it out, says so, and its label is not checked."""
    monitor = Monitor("m", config())
    estimate = monitor.estimate
    assert estimate is not None
    estimate.predict(1.5)
    estimate.predict(0.7)
    monitor.update_values(0, 1.5, None, None)  # the labels of both: nothing entered again
    monitor.update_values(1, 0.7, None, None)
    assert (estimate.predictions, estimate.skipped) == (1, 1)
    whole = Monitor("m", config())
    whole.update_values(1, 2.5, None, None)
    view = whole.snapshot().estimate
    assert view is not None and (view.predictions, view.skipped) == (0, 1)
    assert whole.events == 1
