"""The record every source yields, and the partition it is in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["Record", "TopicPartition"]


class TopicPartition(NamedTuple):
    """A topic and partition; a typed twin of ``kafka.TopicPartition``.

    It compares and hashes equal to kafka-python's namedtuple with the same fields, so either
    can key the same dict.
    """

    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class Record:
    """One record read from a partition: where it came from and its raw bytes.

    ``offset`` orders the partition's records (a Kafka offset, a file's line number);
    ``timestamp_ms`` is when it was written (Unix ms; 0 when unknown).
    """

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)
