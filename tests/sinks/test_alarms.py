"""Alarm records, logging and publishing (driftwatch.sinks.alarms)."""

from __future__ import annotations

import json
import logging
import math
import random
from typing import Any

import pytest

from driftwatch.core.events import Event
from driftwatch.core.monitor import Alarm, DetectorSpec, Monitor, MonitorConfig, Watch
from driftwatch.sinks.alarms import AlarmLog, alarm_record

DRIFT = Alarm(
    model="fraud",
    measure="auc",
    detector="page_hinkley",
    level="drift",
    value=0.6123,
    normalized=math.nan,
    positives=80,
    negatives=920,
    event_count=12_000,
    event_time=1_700_000_123.5,
)

FLOOR = Alarm(
    model="churn",
    measure="gmean",
    detector="threshold",
    level="threshold",
    value=0.41,
    normalized=0.55,
    positives=30,
    negatives=970,
    event_count=3_000,
    event_time=None,
)


def test_record_has_every_field_and_no_nan() -> None:
    record = alarm_record(DRIFT)
    assert record == {
        "model": "fraud",
        "measure": "auc",
        "detector": "page_hinkley",
        "level": "drift",
        "value": 0.6123,
        "normalized": None,
        "positives": 80,
        "negatives": 920,
        "event_count": 12_000,
        "event_time": 1_700_000_123.5,
        "reference": None,
    }
    json.dumps(record, allow_nan=False)  # strict JSON


def test_record_maps_every_non_finite_value_to_none() -> None:
    odd = Alarm("m", "kappa", "adwin", "warning", math.inf, -math.inf, 1, 1, 2, None)
    record = alarm_record(odd)
    assert record["value"] is None and record["normalized"] is None
    assert alarm_record(FLOOR)["normalized"] == 0.55


def alarm_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if hasattr(r, "alarm")]


def test_emit_logs_once_structured_and_readable(caplog: pytest.LogCaptureFixture) -> None:
    log = AlarmLog(logging.getLogger("test.alarms"))
    with caplog.at_level(logging.INFO, logger="test.alarms"):
        returned = log.emit(DRIFT)
    records = alarm_records(caplog)
    assert len(records) == 1
    record = records[0]
    assert record.levelno == logging.WARNING
    assert record.alarm == alarm_record(DRIFT) == returned  # type: ignore[attr-defined]
    message = record.getMessage()
    for part in ("fraud", "auc", "drift", "page_hinkley", "0.6123", "P=80", "N=920", "12000"):
        assert part in message, part
    assert "normalized" not in message  # undefined, so not shown


def test_threshold_alarm_message(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="test.alarms"):
        AlarmLog(logging.getLogger("test.alarms")).emit(FLOOR)
    message = alarm_records(caplog)[0].getMessage()
    assert "churn" in message and "gmean" in message and "threshold" in message
    assert "normalized 0.55" in message


def test_label_free_alarm_message(caplog: pytest.LogCaptureFixture) -> None:
    rate = Alarm(model="fraud", measure="predicted_positive_rate", detector="cusum",
                 level="drift", value=0.17, normalized=math.nan, positives=0, negatives=0,
                 event_count=20_500, event_time=None, reference=0.102)
    with caplog.at_level(logging.WARNING, logger="test.alarms"):
        AlarmLog(logging.getLogger("test.alarms")).emit(rate)
    message = alarm_records(caplog)[0].getMessage()
    assert message == ("alarm: model fraud: predicted_positive_rate drift from cusum; value "
                       "0.17 against 0.102 before, after 20500 events")


def test_emit_publishes_the_record() -> None:
    published: list[dict[str, Any]] = []
    log = AlarmLog(logging.getLogger("test.alarms"), published.append)
    log.emit(DRIFT)
    log.emit(FLOOR)
    assert published == [alarm_record(DRIFT), alarm_record(FLOOR)]
    assert log.publish_failures == 0


def test_failing_publisher_is_logged_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    def broken(record: dict[str, Any]) -> None:
        raise ConnectionError("broker down")

    log = AlarmLog(logging.getLogger("test.alarms"), broken)
    with caplog.at_level(logging.WARNING, logger="test.alarms"):
        log.emit(DRIFT)
        log.emit(DRIFT)
    assert log.publish_failures == 2
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert "broker down" in errors[0].getMessage() and "fraud" in errors[0].getMessage()
    assert errors[0].exc_info is None  # no traceback per alarm while the broker is down
    assert len(alarm_records(caplog)) == 2  # the alarm itself is still logged


def test_real_monitor_alarms_become_strict_json(caplog: pytest.LogCaptureFixture) -> None:
    monitor = Monitor(
        "fraud",
        MonitorConfig(
            window_size=200,
            sample_every=10,
            watches=(
                Watch("auc", (DetectorSpec("page_hinkley"), DetectorSpec("adwin"))),
                Watch("gmean", (DetectorSpec("page_hinkley"),), normalized=True, floor=0.8),
            ),
        ),
    )
    published: list[dict[str, Any]] = []
    log = AlarmLog(logging.getLogger("test.alarms"), published.append)
    rng = random.Random(5)
    raised = 0
    with caplog.at_level(logging.WARNING, logger="test.alarms"):
        for i in range(2000):
            y_true = int(rng.random() < 0.2)
            signal = 1.0 if y_true and i < 1000 else 0.0
            for alarm in monitor.update(Event(y_true, rng.gauss(signal, 1.0))):
                log.emit(alarm)
                raised += 1
    assert raised > 0
    assert len(published) == len(alarm_records(caplog)) == raised
    for record in published:
        json.dumps(record, allow_nan=False)
        assert record["event_time"] is None  # these events carried no ts


def test_a_blocks_alarm_reports_its_rate_and_the_reference(
    caplog: pytest.LogCaptureFixture,
) -> None:
    alarm = Alarm("m", "false_negative_rate", "cusum", "drift", 0.3, math.nan, 300, 700,
                  5000, None, 0.1)
    record = alarm_record(alarm)
    assert record["value"] == 0.3 and record["reference"] == 0.1
    with caplog.at_level(logging.INFO, logger="test.alarms"):
        AlarmLog(logging.getLogger("test.alarms")).emit(alarm)
    [message] = [r.getMessage() for r in alarm_records(caplog)]
    assert "false_negative_rate drift from cusum; value 0.3 against 0.1 before" in message
