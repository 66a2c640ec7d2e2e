"""The estimate's metrics, scraped from a real agent's /metrics endpoint, with predictions and
labels as separate records: the estimate covers predictions whose labels have not come.

The agent runs in-process on a memory source (no broker: nothing here is about Kafka) with
its real metrics server on a free loopback port; the scrape is compared with a
PerformanceEstimator fed the same predictions here.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from driftwatch.core.estimation.estimator import PerformanceEstimator
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from tests.sinks.prometheus.in_process import samples as scraped
from tests.sinks.prometheus.in_process import scrape_after

T0 = 1_750_000_000.0
PREDICTIONS = 3_000
LABELLED = 1_200  # the labels of the first 1 200 predictions only have arrived


def records() -> tuple[list[Record], list[float]]:
    rng = random.Random(7)
    out: list[Record] = []
    scores = []

    def add(value: dict[str, object]) -> None:
        out.append(Record("events", 0, len(out), None, json.dumps(value).encode(),
                          int(T0 * 1000)))

    for i in range(PREDICTIONS):
        score = rng.betavariate(2, 5)
        scores.append(score)
        add({"kind": "prediction", "event_id": i, "model": "m", "score": score,
             "ts": T0 + i})
        if i >= 10 and i - 10 < LABELLED:  # each label 10 predictions later
            j = i - 10
            add({"kind": "label", "event_id": j, "label": int(rng.random() < scores[j]),
                 "ts": T0 + i})
    add({"kind": "prediction", "event_id": "x", "model": "m", "score": 3.5, "ts": T0})
    return out, scores


def test_estimate_metrics_on_the_real_endpoint(tmp_path: Path) -> None:
    settings = Settings.model_validate({
        "checkpoint": {"backend": "file", "directory": str(tmp_path)},
        "metrics": {"host": "127.0.0.1", "port": 0},
        "join": {"enabled": True, "kind_field": "kind"},
        "monitoring": {"defaults": {"estimation": {"enabled": True}}}})
    batch, scores = records()
    samples = scraped(scrape_after(settings, batch))

    def value(name: str, **labels: str) -> float | None:
        return samples.get((name, tuple(sorted(labels.items()))))

    direct = PerformanceEstimator(window=1_000)
    for score in scores:
        direct.predict(score)
    for measure, estimate in direct.estimates().items():
        assert value("driftwatch_measure_estimated", model="m", measure=measure) == \
            estimate.value
        assert value("driftwatch_measure_estimated_standard_error", model="m",
                     measure=measure) == estimate.standard_error
    # The realized window holds the 1 000 latest joined events; the estimate the 1 000 latest
    # predictions, most of them unlabelled.
    assert value("driftwatch_events_processed_total", model="m") == LABELLED
    assert value("driftwatch_measure", model="m", measure="auc") is not None
    assert value("driftwatch_estimate_trusted", model="m") == 1.0
    assert value("driftwatch_estimate_skipped_total", model="m") == 1.0  # the score 3.5
    assert value("driftwatch_detector_state", model="m", measure="calibration_drift",
                 detector="cusum") == 0.0
    assert value("driftwatch_alarms_total", model="m", measure="calibration_drift",
                 detector="cusum", level="drift") == 0.0
    assert value("driftwatch_estimate_check_z", model="m") is not None
    assert value("driftwatch_estimate_calibration_error", model="m", statistic="ece") is None
