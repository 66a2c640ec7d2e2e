"""How a push sink's exports went: attempts, failures, the last success.

A push sink (:mod:`driftwatch.sinks.otlp.sink`) that cannot deliver logs the first failure
of a run and drops the values; these counts make the failures visible where operators
alert, on ``/metrics`` (``driftwatch_exporter_*``, :class:`~driftwatch.sinks.prometheus.
export_collector.ExportCollector`) and in the sink's own later exports.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["ExportStats"]


class ExportStats:
    """The counts of one push exporter; any thread may read them, the sink writes them."""

    def __init__(self, wall_clock: Callable[[], float] = time.time) -> None:
        self._lock = threading.Lock()
        self._wall_clock = wall_clock
        self.exports = 0
        """Exports attempted (each interval's and the last one at close)."""
        self.failures = 0
        """Exports whose values were dropped (refused, unreachable, timed out)."""
        self.last_success_time: float | None = None
        """Wall-clock time of the last export the receiver accepted; None before one."""

    def attempted(self) -> None:
        with self._lock:
            self.exports += 1

    def finished(self, succeeded: bool) -> None:
        with self._lock:
            if succeeded:
                self.last_success_time = self._wall_clock()
            else:
                self.failures += 1
