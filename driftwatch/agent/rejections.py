"""What the agent does with a record that is not an event: counted by reason, logged at a
bounded rate, dead-lettered; and the records of models it does not watch, counted as skipped.

Both counts are checkpointed (so restarted replicas agree) and, with the state topic, kept
per input partition by :class:`~driftwatch.agent.partition_states.PartitionStates`, which
says which rejection a replay after a restore has counted already.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping

from driftwatch.agent.partition_states import PartitionStates
from driftwatch.decoding.decoder import Rejected
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.source import Record
from driftwatch.pipeline import UNWATCHED_MODEL, DeadLetterSink

log = logging.getLogger(__name__)

__all__ = ["REJECTION_LOG_INTERVAL_S", "Rejections"]

REJECTION_LOG_INTERVAL_S = 10.0
"""At most one log line per rejection reason in this many seconds: a producer sending only
garbage must not turn the agent's log into a copy of the topic."""


class Rejections:
    """The rejection and skip counts, the rate-limited log and the dead-letter sink.

    Parameters:
        reasons: the rejection reasons counted from zero (exported even when nothing was
            rejected).
        skips: whether other models' records are skipped (``events.only_models``): then
            :attr:`skipped` counts them under ``unwatched_model``.
        partitioned: with the state topic, the per-partition bookkeeping that tells a
            rejection or skip a replay after a restore counted already; None without.
        clock: a monotonic clock, for the log's rate.

    :attr:`dead_letter` is where rejected records go (set when the agent starts; None: none).
    """

    def __init__(self, reasons: Iterable[str], *, skips: bool,
                 partitioned: PartitionStates | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rejected: dict[str, int] = dict.fromkeys(reasons, 0)
        self.skipped: dict[str, int] = {UNWATCHED_MODEL: 0} if skips else {}
        self.dead_letter: DeadLetterSink | None = None
        self._partitioned = partitioned
        self._clock = clock
        self._logged: dict[str, float] = {}

    def reject(self, record: Record, rejected: Rejected) -> None:
        """Count, log (at most once per reason in :data:`REJECTION_LOG_INTERVAL_S`) and
        dead-letter ``record``, unless a replay after a restore counted it already."""
        if self._partitioned is not None and not self._partitioned.reject(
                record.topic_partition, record.offset, rejected.reason):
            return  # a replay after a restore: counted (and dead-lettered) before the save
        self.rejected[rejected.reason] = self.rejected.get(rejected.reason, 0) + 1
        now = self._clock()
        if now - self._logged.get(rejected.reason, -float("inf")) >= REJECTION_LOG_INTERVAL_S:
            self._logged[rejected.reason] = now
            log.warning("rejected record %s[%d]@%d: %s (%s); %d so far for this reason",
                        record.topic, record.partition, record.offset, rejected.reason,
                        rejected.detail, self.rejected[rejected.reason])
        if self.dead_letter is not None:
            self.dead_letter.send(record, rejected)

    def skip(self, record: Record) -> None:
        """Count ``record`` of a model not watched, unless a replay after a restore did."""
        if self._partitioned is None or self._partitioned.skip(
                TopicPartition(record.topic, record.partition), record.offset):
            self.skipped[UNWATCHED_MODEL] += 1

    def add(self, rejected: Mapping[str, int], skipped: Mapping[str, int]) -> None:
        """Add the counts a checkpoint restored."""
        for reason, count in rejected.items():
            self.rejected[reason] = self.rejected.get(reason, 0) + count
        for reason, count in skipped.items():
            self.skipped[reason] = self.skipped.get(reason, 0) + count

    def add_partitions(self, rejected: Mapping[str, int], skipped: int, sign: int = 1
                       ) -> None:
        """Add the counts of partitions restored from the state topic (``sign`` -1: take
        away those of partitions that left)."""
        for reason, count in rejected.items():
            self.rejected[reason] = self.rejected.get(reason, 0) + sign * count
        if self.skipped:
            self.skipped[UNWATCHED_MODEL] += sign * skipped

    def flush(self, timeout_s: float) -> bool:
        """Wait for the dead letters sent so far; False when they are not delivered within
        ``timeout_s`` (then no checkpoint may pass their records)."""
        return self.dead_letter is None or self.dead_letter.flush(timeout_s)

    @property
    def dead_letter_failures(self) -> int:
        return self.dead_letter.failed if self.dead_letter is not None else 0
