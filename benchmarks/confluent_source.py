"""A minimal confluent-kafka (librdkafka) source behind the agent's ``Source`` protocol, for
``python -m benchmarks consume`` only: NOT shipped, NOT a plug-in.

It is just enough for the agent to run through it on one plaintext broker, so that the
agent's records per CPU-second can be compared with the Kafka source's (issue 25): poll,
commit of the given offsets, the assignment hook, lag from the last fetch, close. What a
shipped source would still need is listed in ``benchmarks/results.md`` (``consume``): the
``kafka.*`` security settings mapped to librdkafka's, reachability and lag probes for
``/readyz`` as :class:`~driftwatch.kafka.source.KafkaSource` does them, the first contact's
checks, the state topic's handover (``on_revoked``, with ``lost``), and the source's tests on
both brokers.

librdkafka calls the rebalance callbacks from inside ``consume()``, on the caller's thread
(the agent's loop), so the hooks run where the agent expects them. Its fetcher threads read
ahead (up to ``queued.max.messages.kbytes``); their CPU is this process's, so it counts in
a CPU-second measure.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, cast

from confluent_kafka import (  # type: ignore[import-not-found, unused-ignore]
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
)
from confluent_kafka import TopicPartition as RdTopicPartition

from driftwatch.agent.loop import SourceFactory
from driftwatch.kafka.offsets import OnAssigned, OnRevoked
from driftwatch.settings import Settings
from driftwatch.sources.record import Record, TopicPartition

log = logging.getLogger(__name__)

__all__ = ["ConfluentSource", "confluent_factory"]


class ConfluentSource:
    """Consume ``topics`` in ``group_id`` with librdkafka, committing only the offsets given.

    Each partition assigned resumes at the offset ``on_assigned`` returns (the agent's
    checkpoint), else where ``auto_offset_reset`` says: the group's commit is never a resume
    point, as with the Kafka source's ``ignore_committed``. :meth:`poll` takes up to
    ``max_records`` messages, waiting at most ``poll_timeout_s``.
    """

    def __init__(self, bootstrap_servers: Sequence[str], group_id: str, topics: Sequence[str],
                 *, on_assigned: OnAssigned, on_revoked: OnRevoked | None = None,
                 auto_offset_reset: str = "latest", max_records: int = 500,
                 poll_timeout_s: float = 1.0, session_timeout_ms: int = 6000,
                 heartbeat_interval_ms: int = 1000, max_poll_interval_ms: int = 300_000
                 ) -> None:
        self.topics = list(topics)
        self.on_assigned = on_assigned
        self.on_revoked = on_revoked
        self.auto_offset_reset = auto_offset_reset
        self.max_records = max_records
        self.poll_timeout_s = poll_timeout_s
        self.config: dict[str, Any] = {
            "bootstrap.servers": ",".join(bootstrap_servers),
            "group.id": group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest" if auto_offset_reset == "earliest" else "latest",
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": heartbeat_interval_ms,
            # librdkafka refuses a poll interval below the session timeout
            "max.poll.interval.ms": max(max_poll_interval_ms, session_timeout_ms),
            "error_cb": self._error,
        }
        self._consumer: Any = None
        self._assigned: set[TopicPartition] = set()
        self._committed: dict[TopicPartition, int] = {}
        self._reachable = self._was_reachable = False
        self.reachability_changed_at = time.monotonic()
        self.commits = 0
        self.commit_failures = 0
        self.reconnects = 0

    # -- health -------------------------------------------------------------------------------

    @property
    def reachable(self) -> bool:
        return self._reachable

    @property
    def ready(self) -> bool:
        return self._reachable and bool(self._assigned)

    @property
    def problem(self) -> str | None:
        if self.ready:
            return None
        if not self._reachable:
            return f"the brokers ({self.config['bootstrap.servers']}) do not answer"
        return "no partition assigned"

    def _reach(self, reachable: bool) -> None:
        if reachable != self._reachable:
            self.reconnects += reachable and self._was_reachable
            self._reachable = reachable
            self._was_reachable |= reachable
            self.reachability_changed_at = time.monotonic()

    def _error(self, error: Any) -> None:
        """librdkafka's global errors (from inside ``consume``): all brokers down."""
        if error.code() == KafkaError._ALL_BROKERS_DOWN:
            self._reach(False)
        log.warning("librdkafka: %s", error)

    # -- the loop -----------------------------------------------------------------------------

    def poll(self) -> list[Record]:
        consumer = self._consumer if self._consumer is not None else self._connect()
        messages = consumer.consume(num_messages=self.max_records, timeout=self.poll_timeout_s)
        records = []
        for message in messages:
            error = message.error()
            if error is not None:
                log.warning("librdkafka: %s", error)
                continue
            _, stamp = message.timestamp()
            records.append(Record(cast(str, message.topic()), cast(int, message.partition()),
                                  cast(int, message.offset()), message.key(), message.value(),
                                  stamp if stamp > 0 else 0))
        if records:
            self._reach(True)
        return records

    def commit(self, offsets: Mapping[Any, int]) -> bool:
        changed = {tp: offset for tp, offset in offsets.items()
                   if tp in self._assigned and self._committed.get(tp) != offset}
        if self._consumer is None or not changed:
            return True
        try:
            self._consumer.commit(offsets=[RdTopicPartition(tp.topic, tp.partition, offset)
                                           for tp, offset in changed.items()],
                                  asynchronous=False)
        except KafkaException as error:
            self.commit_failures += 1
            log.warning("commit failed: %s", error)
            return False
        self._committed.update(changed)
        self.commits += 1
        self._reach(True)
        return True

    def lag(self, *, refresh: bool = True) -> dict[tuple[str, int], int]:
        """From the high watermark of the last fetch (librdkafka's cache; no request)."""
        consumer = self._consumer
        if consumer is None or not self._assigned:
            return {}
        lag = {}
        partitions = [RdTopicPartition(tp.topic, tp.partition) for tp in self._assigned]
        for position in consumer.position(partitions):
            _, high = consumer.get_watermark_offsets(position, cached=True)
            if position.offset >= 0 and high >= 0:
                lag[(position.topic, position.partition)] = max(high - position.offset, 0)
        return lag

    def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()
        self._assigned.clear()
        self._reach(False)

    def __enter__(self) -> ConfluentSource:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- rebalances (called by librdkafka from inside consume) ---------------------------------

    def _connect(self) -> Any:
        consumer = Consumer(self.config)
        consumer.subscribe(self.topics, on_assign=self._assign, on_revoke=self._revoke,
                           on_lost=self._lost)
        self._consumer = consumer
        return consumer

    def _assign(self, consumer: Any, partitions: list[Any]) -> None:
        new = {TopicPartition(p.topic, p.partition) for p in partitions}
        self._reach(True)  # a completed join is a conversation with the coordinator
        resume = dict(self.on_assigned(new) or {})
        start = OFFSET_BEGINNING if self.auto_offset_reset == "earliest" else OFFSET_END
        for partition in partitions:
            partition.offset = resume.get(TopicPartition(partition.topic, partition.partition),
                                          start)
        consumer.assign(partitions)
        self._assigned |= new

    def _revoke(self, consumer: Any, partitions: list[Any], lost: bool = False) -> None:
        gone = {TopicPartition(p.topic, p.partition) for p in partitions}
        if self.on_revoked is not None:
            self.on_revoked(gone, lost)
        self._assigned -= gone
        for tp in gone:
            self._committed.pop(tp, None)
        consumer.unassign()

    def _lost(self, consumer: Any, partitions: list[Any]) -> None:
        self._revoke(consumer, partitions, lost=True)


def confluent_factory(settings: Settings) -> SourceFactory:
    """The agent's constructor hook (``Agent(settings, source=...)``) building a
    :class:`ConfluentSource` from the ``kafka`` settings (plaintext only: the security
    settings are not mapped)."""
    kafka = settings.kafka
    if kafka.security_protocol != "PLAINTEXT" or kafka.topics is None:
        raise ValueError("the benchmark's confluent source takes plaintext and kafka.topics only")
    topics = list(kafka.topics)

    def build(on_assigned: OnAssigned) -> ConfluentSource:
        return ConfluentSource(
            kafka.bootstrap_servers, kafka.group_id, topics, on_assigned=on_assigned,
            auto_offset_reset=kafka.auto_offset_reset, max_records=kafka.poll_batch,
            poll_timeout_s=kafka.poll_timeout_ms / 1000,
            session_timeout_ms=kafka.session_timeout_ms,
            heartbeat_interval_ms=kafka.heartbeat_interval_ms,
            max_poll_interval_ms=kafka.max_poll_interval_ms)

    return build
