"""``/readyz`` without flapping: the broker side's readiness, with hysteresis."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

__all__ = ["Readiness"]


class Readiness:
    """Whether the broker side is ready, with hysteresis so ``/readyz`` does not flap.

    :meth:`update` is called on every loop pass with what the source says now. Once ready,
    the agent stays ready until the source has said "not ready" for ``not_ready_after_s``
    without a break; once not ready, it becomes ready again only after ``ready_after_s`` of
    uninterrupted "ready". Before it was ever ready (start-up), the first "ready" counts at
    once. O(1).
    """

    def __init__(self, not_ready_after_s: float, ready_after_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.not_ready_after_s = not_ready_after_s
        self.ready_after_s = ready_after_s
        self._clock = clock
        self.ready = False
        self.ever_ready = False
        """Whether it was ever ready since it was made (this run)."""
        self._raw: bool | None = None
        self._since = clock()

    def update(self, raw: bool, since: float | None = None) -> bool:
        """Take the source's current answer ``raw``; ``since`` is when it began, if known
        (a request that failed after a long timeout began the outage when it was sent, not
        when the loop saw it). Returns whether the agent is ready."""
        now = self._clock()
        if raw != self._raw:
            self._raw, self._since = raw, now if since is None else min(since, now)
        lasted = now - self._since
        if raw and not self.ready and (not self.ever_ready or lasted >= self.ready_after_s):
            self.ready = self.ever_ready = True
            log.info("the broker side is ready: the broker answers and partitions are "
                     "assigned (/readyz also waits for restores and failed saves)")
        elif not raw and self.ready and lasted >= self.not_ready_after_s:
            self.ready = False
            log.warning("not ready: the broker has not answered (or no partition was "
                        "assigned) for %.0f s", lasted)
        return self.ready
