"""The producers' failure warnings: one line per interval however many records fail."""

from __future__ import annotations

import logging

import pytest

from driftwatch.kafka.producers import _FailureLog


def test_an_outage_logs_the_first_failure_then_folds_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures = _FailureLog("dead", interval_s=3600.0)
    with caplog.at_level(logging.WARNING, logger="driftwatch.kafka.producers"):
        for _ in range(10_000):
            failures.warn("delivery to", TimeoutError("broker gone"))
    assert [r.getMessage() for r in caplog.records] == [
        "delivery to dead failed: broker gone"
    ]


def test_the_next_warning_counts_the_failures_folded_since(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures = _FailureLog("alarms", interval_s=0.0)  # every call may warn
    failures._next_at = float("inf")  # an interval that has not elapsed
    for _ in range(41):
        failures.warn("delivery to", TimeoutError("x"))
    failures._next_at = float("-inf")  # the interval has elapsed
    with caplog.at_level(logging.WARNING, logger="driftwatch.kafka.producers"):
        failures.warn("sending to", ValueError("too large"))
    assert [r.getMessage() for r in caplog.records] == [
        "sending to alarms failed: too large (41 more failed since the last warning)"
    ]
