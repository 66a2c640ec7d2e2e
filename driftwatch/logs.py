"""Logging set-up for the agent: human-readable text, or one JSON object per line.

JSON lines are what log pipelines (Loki, Elasticsearch) parse without rules; an alarm's
fields (``extra={"alarm": ...}``, see :mod:`driftwatch.sinks.alarms`) become an ``alarm`` object.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Literal


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, and any ``alarm``."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        alarm = getattr(record, "alarm", None)
        if alarm is not None:
            entry["alarm"] = alarm
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure(level: str = "INFO", format: Literal["text", "json"] = "text") -> None:
    """Route every logger to stderr at ``level`` in the chosen format."""
    handler = logging.StreamHandler(sys.stderr)
    if format == "json":
        formatter: logging.Formatter = JsonFormatter()
        formatter.converter = time.gmtime
    else:
        formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # kafka-python logs every failed reconnect at ERROR; the source reports outages itself.
    logging.getLogger("kafka").setLevel(logging.DEBUG if level == "DEBUG" else logging.CRITICAL)
