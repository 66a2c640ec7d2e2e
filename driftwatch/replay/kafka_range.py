"""A Kafka topic range as a replay source: :class:`KafkaRangeSource`.

Apart from the file sources (:mod:`driftwatch.replay.sources`) because it is the one that
talks to a broker: kafka-python is imported when the range is read, and what a partition's
end is takes some care (brokers do not all report it alike).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from driftwatch.replay.sources import ReplayRecord, SourceError

__all__ = ["KafkaRangeSource"]


class KafkaRangeSource:
    """A range of offsets of one Kafka topic, every partition, read without a consumer group
    (nothing is committed, no group is joined, so replaying never disturbs a running agent).

    The range is ``[from_offset, to_offset)`` in every partition. ``from_offset`` None means
    the earliest offset; ``to_offset`` None means the partition's end when reading starts, so
    the replay ends even while producers keep writing. No record at or past the range's end
    is yielded, even when a fetch brings it along.

    A partition's end is the larger of the end offset the broker reports (ListOffsets) and
    the high watermark of the first fetch response for the partition. Some brokers report the
    end as the last batch's base offset + 1 rather than the offset past its last record
    (Tansu, the demo's broker, does), and trusting that answer lost the rest of the last
    batch; their fetch responses carry the true end. So a partition is done only once a fetch
    response has said where it ends, unless ``to_offset`` is within the reported end: one
    fetch wait (``fetch_max_wait_ms``, 0.5 s by default) for a partition with nothing left to
    read. With ``isolation_level`` read_committed the reported end (the last stable offset)
    is the end: records past it are not delivered.

    Parameters:
        topic: the topic.
        consumer_config: kafka-python ``KafkaConsumer`` options (bootstrap servers and
            security), e.g. from :meth:`driftwatch.settings.KafkaSettings.consumer_config`;
            group and commit options are replaced.
        from_offset, to_offset: the range in each partition.
        idle_timeout_s: give up (:class:`SourceError`) when no record arrives for this long
            while records of the range are still missing.
    """

    def __init__(self, topic: str, consumer_config: Mapping[str, Any], *,
                 from_offset: int | None = None, to_offset: int | None = None,
                 idle_timeout_s: float = 30.0) -> None:
        self.name = f"kafka topic {topic}"
        self.topic = topic
        self._config = {**consumer_config, "group_id": None, "group_instance_id": None,
                        "enable_auto_commit": False}
        self._from = from_offset
        self._to = to_offset
        self._idle_timeout_s = idle_timeout_s
        self._highwater = self._config.get("isolation_level") != "read_committed"
        self._done = 0
        self._total: int | None = None

    def progress(self) -> tuple[int, int | None]:
        return self._done, self._total

    def __iter__(self) -> Iterator[ReplayRecord]:
        import warnings

        with warnings.catch_warnings():  # kafka-python's import warns about its internals
            warnings.simplefilter("ignore", DeprecationWarning)
            from kafka import KafkaConsumer, TopicPartition  # type: ignore[import-untyped]
            from kafka.errors import KafkaError  # type: ignore[import-untyped]

            from driftwatch.kafka.client_quirks import never_create_topics

        try:
            # A reader never creates what it reads (a missing topic is "no such topic").
            consumer = never_create_topics(KafkaConsumer(**self._config))
        except KafkaError as exc:
            raise SourceError(f"{self.name}: cannot connect: {exc}") from None
        try:
            partitions = consumer.partitions_for_topic(self.topic)
            if not partitions:
                raise SourceError(f"{self.name}: no such topic (or it has no partitions)")
            tps = [TopicPartition(self.topic, p) for p in sorted(partitions)]
            consumer.assign(tps)
            first, end = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
            starts = {}
            for tp in tps:
                starts[tp] = first[tp] if self._from is None else max(self._from, first[tp])
                consumer.seek(tp, starts[tp])
            yield from self._read(consumer, starts, end)
        except KafkaError as exc:
            raise SourceError(f"{self.name}: {exc}") from None
        finally:
            consumer.close(autocommit=False)

    def _stop(self, consumer: Any, tp: Any, reported: int) -> int | None:
        """Where the partition's range ends; None until a fetch response has told the
        partition's end (see the class docstring)."""
        limit = self._to
        if limit is not None and limit <= reported:
            return limit
        end = consumer.highwater(tp) if self._highwater else reported
        if end is None:
            return None
        end = max(end, reported)
        return end if limit is None else min(limit, end)

    def _read(self, consumer: Any, starts: Mapping[Any, int],
              reported: Mapping[Any, int]) -> Iterator[ReplayRecord]:
        limit = self._to
        remaining = {tp for tp, start in starts.items() if limit is None or start < limit}
        if len(remaining) < len(starts):
            consumer.pause(*(starts.keys() - remaining))
        stops: dict[Any, int] = {}
        estimates = {tp: max(0, (reported[tp] if limit is None else min(limit, reported[tp]))
                             - start) for tp, start in starts.items()}
        self._total = sum(estimates.values())
        last_record = time.monotonic()
        while remaining:
            batches = consumer.poll(timeout_ms=500, max_records=5000)
            for tp in remaining - stops.keys():
                stop = self._stop(consumer, tp, reported[tp])
                if stop is not None:
                    stops[tp] = stop
                    estimates[tp] = max(0, stop - starts[tp])
                    self._total = sum(estimates.values())
            for tp, records in batches.items():
                if tp not in remaining:
                    continue
                start, stop = starts[tp], stops.get(tp, limit)
                for record in records:
                    if stop is not None and record.offset >= stop:
                        break
                    if record.offset < start:
                        # After a start past the end (kept to learn the end): the broker
                        # answered out of range, the consumer reset to auto_offset_reset.
                        continue
                    self._done += 1
                    yield ReplayRecord(record.value, record.key, record.offset, tp.partition)
            for tp in [tp for tp in remaining if tp in stops]:
                if max(consumer.position(tp), starts[tp]) >= stops[tp]:
                    remaining.discard(tp)
                    consumer.pause(tp)
            if batches:
                last_record = time.monotonic()
            elif remaining and time.monotonic() - last_record > self._idle_timeout_s:
                raise SourceError(f"{self.name}: no records for "
                                  f"{self._idle_timeout_s:.0f} s before the range's end")
