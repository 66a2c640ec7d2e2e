"""Alarm delivery: one structured log record per alarm, and an optional publisher.

The monitor returns each alarm exactly once (an alarm is a state change, not a level);
:class:`AlarmLog` turns it into a log record a person can read and a log pipeline
can parse, and hands the same JSON-ready dict to a publisher (the agent passes one that
produces to the alarms topic). Counting and exporting alarms is the exporter's job, from the
monitor snapshots; nothing here touches Prometheus.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from driftwatch.core.monitor import Alarm

__all__ = ["AlarmLog", "alarm_record"]

Publisher = Callable[[dict[str, Any]], None]


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def alarm_record(alarm: Alarm) -> dict[str, Any]:
    """The alarm as a JSON-ready dict, safe for strict JSON parsers.

    Keys are the :class:`~driftwatch.core.monitor.Alarm` fields: ``model``, ``measure``,
    ``detector`` (a registry name, or ``"threshold"``), ``level`` (``"warning"``, ``"drift"``
    or ``"threshold"``), ``value`` (raw measure), ``normalized``, ``positives``,
    ``negatives``, ``event_count``, ``event_time`` (Unix seconds or None) and ``reference``
    (a blocks watch's pre-change level: ``value`` is then the rate or AUC of the block that
    raised the alarm). A non-finite ``value``, ``normalized`` or ``reference`` (NaN:
    undefined, not normalizable, not a blocks watch) becomes None, since JSON has no NaN and
    many consumers refuse the ``NaN`` literal.
    """
    return {
        "model": alarm.model,
        "measure": alarm.measure,
        "detector": alarm.detector,
        "level": alarm.level,
        "value": _finite(alarm.value),
        "normalized": _finite(alarm.normalized),
        "positives": alarm.positives,
        "negatives": alarm.negatives,
        "event_count": alarm.event_count,
        "event_time": alarm.event_time,
        "reference": _finite(alarm.reference),
    }


def _message(record: dict[str, Any]) -> str:
    def number(value: float | None) -> str:
        return "undefined" if value is None else f"{value:.4g}"

    what = ("fell below its class-ratio-adjusted threshold" if record["level"] == "threshold"
            else f"{record['level']} from {record['detector']}")
    normalized, reference = record["normalized"], record.get("reference")
    scale = "" if normalized is None else f" (normalized {number(normalized)})"
    if reference is not None:
        scale += f" against {number(reference)} before"
    # A label-free alarm (no label seen) has no window of classes to show.
    window = "" if record["positives"] == record["negatives"] == 0 else (
        f", window P={record['positives']} N={record['negatives']}")
    return (
        f"alarm: model {record['model']}: {record['measure']} {what}; "
        f"value {number(record['value'])}{scale}{window}, after {record['event_count']} "
        "events"
    )


class AlarmLog:
    """Logs every alarm once, structured, and publishes it when a publisher is given.

    :meth:`emit` logs at WARNING with the readable message and ``extra={"alarm": record}``
    (a JSON log formatter finds the fields under ``alarm``), then calls ``publish(record)``. A
    publisher that raises is logged at ERROR (message only: a broker that is down should not
    flood the log with tracebacks, one per alarm) and counted in :attr:`publish_failures`; it
    is never raised into the agent's loop, which must keep consuming.

    Parameters:
        logger: where the records go.
        publish: called with each alarm's record, on the caller's thread; None to only log.
    """

    def __init__(self, logger: logging.Logger, publish: Publisher | None = None) -> None:
        self.logger = logger
        self.publish = publish
        self.publish_failures = 0
        """Alarms whose publication raised, since construction."""

    def emit(self, alarm: Alarm) -> dict[str, Any]:
        """Log and publish one alarm; return its record."""
        record = alarm_record(alarm)
        self.logger.warning(_message(record), extra={"alarm": record})
        if self.publish is not None:
            try:
                self.publish(record)
            except Exception as error:
                self.publish_failures += 1
                self.logger.error(
                    "publishing alarm for model %s (%s %s %s) failed: %s: %s",
                    record["model"], record["measure"], record["detector"], record["level"],
                    type(error).__name__, error,
                )
        return record
