"""``driftwatch replay`` with the estimate on: it follows the realized AUC under a covariate
shift, and a concept change it cannot see raises ``calibration_drift`` once labels show it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from driftwatch.commands.main import main
from driftwatch.core.estimation.estimator import PerformanceEstimator

SHIFT_AT = 6_000
LENGTH = 12_000


def calibrated(seed: int, *, covariate_shift: bool = False,
               concept_change: bool = False) -> tuple[list[int], list[float]]:
    """Calibrated scores p = σ(−1.4 + 1.5·x). Covariate shift at SHIFT_AT: x ~ N(0, 1) becomes
    N(0.8, 0.5²), scores bunch up and the AUC falls from about 0.82 to 0.70, while P(y | p)
    = p still holds. Concept change at SHIFT_AT: the labels of scores in [0.6, 0.9) flip, the
    scores stay."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(LENGTH)
    if covariate_shift:
        x[SHIFT_AT:] = 0.8 + 0.5 * x[SHIFT_AT:]
    p = 1.0 / (1.0 + np.exp(-(-1.4 + 1.5 * x)))
    y = (rng.random(LENGTH) < p).astype(int)
    if concept_change:
        band = (np.arange(LENGTH) >= SHIFT_AT) & (p >= 0.6) & (p < 0.9)
        y[band] = 1 - y[band]
    return y.tolist(), p.tolist()


def replay(tmp_path: Path, capsys: pytest.CaptureFixture[str], labels: list[int],
           scores: list[float], estimation: dict[str, object]) -> Any:
    data = tmp_path / "events.jsonl"
    data.write_text("".join(json.dumps({"model": "m", "label": y, "score": s, "ts": float(i)})
                            + "\n" for i, (y, s) in enumerate(zip(labels, scores,
                                                                   strict=True))))
    config = tmp_path / "settings.yaml"
    config.write_text(yaml.safe_dump(
        {"monitoring": {"defaults": {"estimation": {"enabled": True, **estimation}}}}))
    assert main(["replay", str(data), "--config", str(config), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_estimate_follows_the_realized_auc_under_a_covariate_shift(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels, scores = calibrated(1, covariate_shift=True)
    before = replay(tmp_path, capsys, labels[:SHIFT_AT], scores[:SHIFT_AT], {})
    after = replay(tmp_path, capsys, labels, scores, {})
    views = []
    for report in (before, after):
        model = report["models"]["m"]
        estimated = model["estimated"]["auc"]
        realized = model["measures"]["auc"]
        # Within the realized AUC's own sampling error around the estimate (its SE).
        assert abs(realized - estimated["value"]) < 2.5 * estimated["standard_error"]
        assert model["estimate"]["trusted"] and model["estimate"]["skipped"] == 0
        views.append((estimated["value"], realized))
    (estimated_before, realized_before), (estimated_after, realized_after) = views
    assert estimated_before - estimated_after > 0.08  # the shift's drop, seen from scores
    assert realized_before - realized_after > 0.08
    # The exact estimate of the file's last 1 000 predictions, nothing else.
    direct = PerformanceEstimator(window=1_000)
    for score in scores:
        direct.predict(score)
    assert after["models"]["m"]["estimated"]["auc"]["value"] == \
        direct.estimates()["auc"].value
    assert not [a for a in after["alarms"]
                if a["measure"] == "calibration_drift"]


def test_a_concept_change_raises_calibration_drift(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels, scores = calibrated(2, concept_change=True)
    report = replay(tmp_path, capsys, labels, scores, {"first_n": 2_000})
    alarms = [a for a in report["alarms"]
              if a["measure"] == "calibration_drift"]
    assert len(alarms) == 1, alarms
    assert SHIFT_AT < alarms[0]["event"] < SHIFT_AT + 3_000
    assert alarms[0]["detector"] == "cusum" and alarms[0]["level"] == "drift"
    estimate = report["models"]["m"]["estimate"]
    # Refitted on the 2 000 labels after the alarm: trusted again, on the new concept.
    assert estimate["calibration"] == "refit" and estimate["trusted"]
    assert estimate["calibration_error"]["events"] == 2_000


def test_with_late_labels_the_estimate_falls_before_the_labels_show_it(tmp_path: Path) -> None:
    """Predictions now, labels 600 s later (one prediction a second), a covariate shift at
    SHIFT_AT: the figure's series has the estimated AUC beside the realized one, and the
    estimate crosses below the old level while the realized AUC, whose labels lag, has not."""
    from driftwatch.replay.run import Replay, run
    from driftwatch.replay.sources import JsonLinesSource
    from driftwatch.settings import Settings

    labels, scores = calibrated(3, covariate_shift=True)
    lines = []
    for i, (y, s) in enumerate(zip(labels, scores, strict=True)):
        lines.append((float(i), {"kind": "prediction", "event_id": i, "model": "m",
                                 "score": s, "ts": float(i)}))
        lines.append((i + 600.5, {"kind": "label", "event_id": i, "label": y,
                                  "ts": i + 600.5}))
    lines.sort(key=lambda pair: pair[0])
    data = tmp_path / "records.jsonl"
    data.write_text("".join(json.dumps(value) + "\n" for _, value in lines))
    settings = Settings.model_validate({
        "join": {"enabled": True, "kind_field": "kind", "score_drift": {"enabled": False}},
        "monitoring": {"defaults": {"estimation": {"enabled": True}}}})
    replay = Replay(settings.events.event_format(), settings.monitoring.monitor_config,
                    settings.limits.max_models, series_models=None,
                    join=(settings.join.delayed_labels(lambda model: 0.5),
                          settings.join.join_format()))
    result = run(JsonLinesSource(str(data)), replay, str(data))
    series = result.series["m"]
    assert len(series.estimated_auc) == len(series.events) > 100
    realized = series.raw["auc"]
    level = realized[len(realized) // 4] - 0.05  # well before the shift, less a margin
    first = next(i for i, v in enumerate(series.estimated_auc) if v < level)
    assert realized[first] > level  # the labels have not shown it yet
    lead = next(i for i, v in enumerate(realized) if v < level) - first
    assert lead * series.sample_every > 300, lead  # hundreds of predictions (seconds) ahead
