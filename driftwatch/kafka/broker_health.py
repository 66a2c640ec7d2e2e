"""What the Kafka source's interactions with its brokers said: reachable or not, since when, the
backoff after failures, and the refusals no retry can mend.

kafka-python shows no outage through its public state, so :class:`BrokerHealth` is told the
outcome of every interaction of the source (a poll, a join, a commit, a probe): a success
makes the brokers reachable, a failure unreachable, with a backoff that doubles with each
failure in a row. A failure that is a refusal of the agent's settings (an ACL, a session
timeout the brokers do not accept: :func:`~driftwatch.kafka.first_contact.refusal`) is kept to
be raised instead, once: retrying it would only fill the log and the brokers' logs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from driftwatch.kafka.first_contact import BrokerRefused, FirstContact, TopicUse, refusal
from driftwatch.kafka.offsets import missing_topics_text

log = logging.getLogger(__name__)

__all__ = ["BrokerHealth"]


class BrokerHealth:
    """The source's view of its brokers (see the module docstring). One thread (the loop),
    and kafka-python's IO thread through a join's success; O(1) per call.

    Parameters:
        clock: monotonic seconds.
        backoff_initial_s, backoff_max_s: the delay after the first failure in a row, and
            the most it doubles to.
        uses, group: the topics and group the agent uses, for naming them in refusals.
    """

    def __init__(self, clock: Callable[[], float], backoff_initial_s: float,
                 backoff_max_s: float, uses: Sequence[TopicUse] = (),
                 group: str | None = None) -> None:
        self.clock = clock
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.uses = tuple(uses)
        self.group = group
        self.reachable = False
        """What the last interaction said."""
        self.failures = 0
        """Failures in a row."""
        self.reconnects = 0
        """Times the brokers became reachable again after a failed interaction."""
        self.changed_at = clock()
        """Clock time of the last change of :attr:`reachable` (the first failure of an
        outage, the first success after it)."""
        self.last_error = ""
        """The last failure, as ``Type: message``."""
        self.refused: BrokerRefused | None = None
        """A refusal to raise instead of retrying (the first one seen)."""

    def succeeded(self) -> None:
        if not self.reachable and self.failures:
            log.info("Kafka broker reachable again")
            self.reconnects += 1
        if not self.reachable:
            self.changed_at = self.clock()
        self.reachable = True
        self.failures = 0

    def failed(self, what: str, error: BaseException, *, retry: bool) -> float | None:
        """Note a failed ``what`` (``poll``, ``commit``, ...); the delay before the next
        attempt (logged with it), or None when it is a refusal (:attr:`refused`)."""
        refused = refusal(error, self.uses, self.group, f"Kafka {what}")
        if self.reachable:  # the outage began now
            self.changed_at = self.clock()
        self.reachable = False
        if refused is not None:
            self.refused = self.refused or refused
            return None
        self.last_error = f"{type(error).__name__}: {error}"
        delay = self.delay()
        self.failures += 1
        log.warning("Kafka %s failed (%s); %s", what, self.last_error,
                    f"retrying in {delay:.1f} s" if retry else "will retry")
        return delay

    def problem(self, contact: FirstContact | None, reachable: bool,
                missing_topics: Sequence[str]) -> str:
        """Why a source that is not ready is not, in one line naming the setting."""
        if contact is not None and not contact.reached:
            return contact.problem or "first contact with kafka.bootstrap_servers under way"
        if not reachable:
            return f"no answer from kafka.bootstrap_servers ({self.last_error or 'connecting'})"
        if missing_topics:
            return missing_topics_text(missing_topics)
        return ("no partition assigned yet (kafka.group_id: the group is rebalancing, or has "
                "more members than the topics have partitions)")

    def delay(self) -> float:
        """The backoff after the failures in a row so far, and one more."""
        return min(self.backoff_initial_s * 2.0 ** min(self.failures, 62), self.backoff_max_s)
