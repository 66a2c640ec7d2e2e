"""Where the agent is in each input partition: the next offset whose record is not yet in the
monitors, the last record's time, and where a newly assigned partition resumes.

The checkpoint holds these offsets with the monitors' state; they are the only resume
point (never the group's commit, whose monitor state would be lost). A partition whose
offset goes back (the topic recreated or truncated) is counted and logged here.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping

from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.source import Record

log = logging.getLogger(__name__)

__all__ = ["BEYOND_LOG_END", "Positions"]

BEYOND_LOG_END = "beyond_log_end"
"""The ``reason`` of ``driftwatch_offset_resets_total`` when a partition's log no longer
reaches the agent's offset (recreated or truncated topic)."""


class Positions:
    """The agent's offsets, per input partition.

    :attr:`offsets` is the next offset per partition whose events are all in the monitors
    (what a checkpoint covers and a commit sends); :attr:`timestamps_ms` the time of the last
    processed record per partition (the lag in seconds); :attr:`resets` the offset resets by
    ``(topic, partition, reason)``; :attr:`restored` whether a checkpoint or the state topic
    gave any offset or state (then a partition it does not cover is worth a warning).
    """

    def __init__(self) -> None:
        self.offsets: dict[TopicPartition, int] = {}
        self.timestamps_ms: dict[TopicPartition, int] = {}
        self.resets: dict[tuple[str, int, str], int] = {}
        self.restored = False

    def reset_seen(self, record: Record, expected: int) -> None:
        """Count and log ``record`` arriving below the partition's offset ``expected``."""
        key = (record.topic, record.partition, BEYOND_LOG_END)
        self.resets[key] = self.resets.get(key, 0) + 1
        log.error("%s[%d]: the log no longer reaches offset %d (the topic was recreated or "
                  "truncated) and reading restarted at %d; its records are taken as new "
                  "events: if they are old events produced again, they are counted twice",
                  record.topic, record.partition, expected, record.offset)

    def take_over(self, offsets: Mapping[TopicPartition, int], *, restored: bool) -> None:
        """Take restored ``offsets``; ``restored``: the saved state held something."""
        self.offsets.update(offsets)
        self.restored = self.restored or restored

    def forget(self, partitions: Collection[TopicPartition]) -> None:
        """Drop the partitions (revoked: another member reads them now)."""
        for tp in partitions:
            self.offsets.pop(tp, None)
            self.timestamps_ms.pop(tp, None)

    def resume(self, partitions: set[TopicPartition], auto_offset_reset: str
               ) -> dict[TopicPartition, int]:
        """Where each newly assigned partition resumes: its offset here; one not covered is
        left to ``kafka.auto_offset_reset`` (given as ``auto_offset_reset``) and logged."""
        # Runs on kafka-python's IO thread while the loop is blocked in poll: a plain read.
        known = {tp: self.offsets[tp] for tp in partitions if tp in self.offsets}
        unknown = sorted(partitions - known.keys())
        if unknown:
            where = "the beginning of the retained log" if auto_offset_reset == "earliest" \
                else "the end of the log"
            level = logging.WARNING if self.restored else logging.INFO
            log.log(level, "%d partition(s) not covered by the checkpoint: %s; reading them "
                    "from %s (kafka.auto_offset_reset=%s), never from the group's committed "
                    "offset", len(unknown), ", ".join(f"{t}[{p}]" for t, p in unknown),
                    where, auto_offset_reset)
        return known
