"""Export levels (settings ``metrics.per_model``: all, standard, minimal): which families a
model exports at each, scraped from the real endpoint of an agent run in-process."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError

from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.sinks.prometheus.families import Families
from tests.sinks.prometheus.in_process import scrape_after

T0 = 1_750_000_000.0

MINIMAL = {
    "driftwatch_events_processed_total", "driftwatch_measure", "driftwatch_auc_standard_error",
    "driftwatch_window_events", "driftwatch_alarms_total",
    "driftwatch_last_processed_timestamp_seconds", "driftwatch_auc_floor_threshold",
    "driftwatch_auc_max_drop_threshold", "driftwatch_no_events_threshold_seconds",
    "driftwatch_batch_labels_enabled",
}
DEPRECATED = {"driftwatch_auc_floor", "driftwatch_auc_max_drop",
              "driftwatch_no_events_seconds", "driftwatch_batch_labels"}
ALL = MINIMAL | {
    "driftwatch_measure_normalized", "driftwatch_detector_state",
    "driftwatch_false_alarm_budget_seconds", "driftwatch_expected_false_alarms_per_month",
    "driftwatch_block_duration_seconds", "driftwatch_record_time", "driftwatch_min_effect",
    "driftwatch_last_event_timestamp_seconds",
}
"""The families a model of the default settings exports after 3 000 events with a time
(no alarm yet: no ``driftwatch_last_alarm_timestamp_seconds``)."""

WATCHED = {"auc", "false_negative_rate", "false_positive_rate"}
"""The measures the default watches watch (the error rates per block: of the window's
measures, AUC alone)."""


def _records() -> list[Record]:
    rng = random.Random(25)
    batch = []
    for i in range(3_000):
        label = int(rng.random() < 0.2)
        value = {"model": "m", "label": label, "score": rng.gauss(1.2 * label, 1.0),
                 "ts": T0 + i}
        batch.append(Record("events", 0, i, None, json.dumps(value).encode(),
                            int((T0 + i) * 1000)))
    return batch


def _model_series(level: str, tmp_path: Path, deprecated: bool = True
                  ) -> tuple[set[str], dict[str, set[str]], set[str]]:
    """The families with a series of model ``m`` at ``level``, the measures of each
    family with a ``measure`` label, and every family the scrape declares (``# TYPE``)."""
    settings = Settings.model_validate({
        "checkpoint": {"backend": "file", "directory": str(tmp_path)},
        "metrics": {"host": "127.0.0.1", "port": 0, "per_model": level,
                    "export_deprecated_metrics": deprecated}})
    text = scrape_after(settings, _records())
    families: set[str] = set()
    measures: dict[str, set[str]] = {}
    declared = set()
    for family in text_string_to_metric_families(text):
        declared.add(family.name)
        for sample in family.samples:
            if sample.labels.get("model") == "m":
                name = sample.name if family.type != "counter" else f"{family.name}_total"
                families.add(name)
                if "measure" in sample.labels:
                    measures.setdefault(name, set()).add(sample.labels["measure"])
    return families, measures, declared


def test_all_exports_every_family_and_measure(tmp_path: Path) -> None:
    families, measures, _ = _model_series("all", tmp_path)
    assert families == ALL | DEPRECATED
    assert measures["driftwatch_measure"] >= {"auc", "gmean", "kappa", "precision", "recall"}
    assert len(measures["driftwatch_measure_normalized"]) > 1


def test_standard_keeps_only_watched_measures(tmp_path: Path) -> None:
    families, measures, _ = _model_series("standard", tmp_path)
    assert families == ALL - {"driftwatch_measure_normalized"} | DEPRECATED
    assert measures["driftwatch_measure"] == {"auc"}  # AUC is not normalized
    all_measures = _model_series("all", tmp_path / "all")[1]
    for family in ("driftwatch_alarms_total", "driftwatch_min_effect",
                   "driftwatch_detector_state"):
        assert measures[family] == all_measures[family]


@pytest.mark.parametrize("deprecated", [True, False])
def test_minimal_exports_auc_alarms_counts_and_thresholds(tmp_path: Path,
                                                          deprecated: bool) -> None:
    families, measures, declared = _model_series("minimal", tmp_path, deprecated)
    assert families == MINIMAL | (DEPRECATED if deprecated else set())
    assert measures["driftwatch_measure"] == {"auc"}
    assert measures["driftwatch_alarms_total"] == WATCHED
    # The families a minimal model does not export are not declared empty either.
    for name in ALL - MINIMAL:
        assert name.removesuffix("_total") not in declared


def test_an_unknown_level_names_the_key() -> None:
    with pytest.raises(ValidationError, match="per_model"):
        Settings.model_validate({"metrics": {"per_model": "some"}})
    with pytest.raises(ValueError, match="level must be one of all, standard, minimal"):
        Families(level="some")


def test_standard_keeps_a_watched_window_measure_raw_and_normalized(tmp_path: Path) -> None:
    settings = Settings.model_validate({
        "checkpoint": {"backend": "file", "directory": str(tmp_path)},
        "metrics": {"host": "127.0.0.1", "port": 0, "per_model": "standard"},
        "monitoring": {"defaults": {"watches": [
            {"measure": "auc"}, {"measure": "gmean", "floor": 0.5}]}}})
    measured: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(scrape_after(settings, _records())):
        for sample in family.samples:
            if sample.labels.get("model") == "m" and "measure" in sample.labels:
                measured.setdefault(sample.name, set()).add(sample.labels["measure"])
    assert measured["driftwatch_measure"] == {"auc", "gmean"}
    assert measured["driftwatch_measure_normalized"] == {"gmean"}
    assert measured["driftwatch_measure_threshold"] == {"gmean"}


def test_a_model_overrides_the_fleets_level(tmp_path: Path) -> None:
    settings = Settings.model_validate({
        "checkpoint": {"backend": "file", "directory": str(tmp_path)},
        "metrics": {"host": "127.0.0.1", "port": 0, "per_model": "minimal",
                    "per_model_overrides": {"m": "all"}}})
    batch = _records()
    batch += [dataclasses.replace(record, offset=len(batch) + i, value=record.value.replace(
        b'"model": "m"', b'"model": "n"')) for i, record in enumerate(_records())]
    families: dict[str, set[str]] = {"m": set(), "n": set()}
    for family in text_string_to_metric_families(scrape_after(settings, batch)):
        for sample in family.samples:
            model = sample.labels.get("model")
            if model in families:
                families[model].add(
                    sample.name if family.type != "counter" else f"{family.name}_total")
    assert families["m"] == ALL | DEPRECATED
    assert families["n"] == MINIMAL | DEPRECATED
    with pytest.raises(ValidationError, match=r"per_model_overrides\.m"):
        Settings.model_validate({"metrics": {"per_model_overrides": {"m": "most"}}})
