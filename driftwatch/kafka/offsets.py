"""The Kafka source's offset policy: which partitions it holds, what it commits, where each resumes.

Delivery is at-least-once: the source commits exactly the offsets it is given, and the
agent gives it those of a checkpoint already on disk, so a committed offset never passes
what durable state covers. After a crash the records since the last checkpoint are
delivered again; nothing is skipped. The source never commits on its own (not on close, not
on a rebalance).

A partition newly assigned resumes where ``on_assigned`` says (the agent's checkpoint), else
at the group's committed offset, or, with ``ignore_committed``, where ``auto_offset_reset``
says, as for a group that never committed. A partition whose position lies past the end of
its log (truncated or recreated) is reset as Kafka's OFFSET_OUT_OF_RANGE answer would reset it.

Rebalance listeners run on kafka-python's IO thread (while the loop is blocked in ``poll``)
and cannot call blocking consumer methods (``commit()`` raises ``RuntimeError`` there); the
assignment is therefore kept behind a lock, and resuming only seeks, which does not block
(the client resolves a ``seek_to_beginning`` at its next fetch).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kafka import AsyncConsumerRebalanceListener  # type: ignore[import-untyped]
from kafka import TopicPartition as _KafkaTopicPartition
from kafka.structs import OffsetAndMetadata  # type: ignore[import-untyped]

from driftwatch.sources.record import TopicPartition as TopicPartition

log = logging.getLogger(__name__)


OnAssigned = Callable[[set[TopicPartition]], Mapping[TopicPartition, int] | None]
"""``on_assigned(partitions) -> {partition: offset} | None``: called with newly assigned
partitions; the offsets it returns (the next offset to read, e.g. from a checkpoint) are seeked
to, and the other partitions resume from the group's committed offsets."""

OnRevoked = Callable[[set[TopicPartition], bool], None]
"""``on_revoked(partitions, lost)``: called with partitions leaving this member, before they
are dropped; ``lost`` is True when the member was evicted (another member may own them
already, so nothing should be written for them)."""


class Offsets:
    """The partitions assigned to one source, the offsets it committed, and where each resumes.

    It also measures how far each partition's position is behind the end of its log (the
    source's lag), since that is where a position past the end is found and reset.

    Written by the rebalance callbacks on kafka-python's IO thread and read by the loop, so
    the assignment and the commits are behind one lock. An exception raised by
    ``on_assigned`` or ``on_revoked`` is kept in :attr:`hook_error` for the loop to raise
    (a bug there must be seen): raising on the IO thread would only break the client.

    Parameters:
        on_assigned: see :data:`OnAssigned`.
        on_revoked: see :data:`OnRevoked`.
        ignore_committed: start partitions ``on_assigned`` gives no offset for at
            ``auto_offset_reset``, not at the group's committed offset.
        auto_offset_reset: the consumer's ``auto_offset_reset`` (``"latest"`` by default).
        request_timeout_s: bound on the position lookup after a reset.
        hold_assigned: pause every newly assigned partition (after ``on_assigned``, whose
            offsets are then not used) until :meth:`release` seeks and resumes it: the
            agent restores a partition's state between polls, outside the rebalance, and
            reads its records only then.
    """

    def __init__(
        self,
        *,
        on_assigned: OnAssigned | None,
        on_revoked: OnRevoked | None,
        ignore_committed: bool,
        auto_offset_reset: str,
        request_timeout_s: float,
        hold_assigned: bool = False,
    ) -> None:
        self.hold_assigned = hold_assigned
        self.held: set[TopicPartition] = set()
        """Partitions assigned and paused until :meth:`release` (``hold_assigned``)."""
        self.on_assigned = on_assigned
        self.on_revoked = on_revoked
        self.ignore_committed = ignore_committed
        self.auto_offset_reset = auto_offset_reset
        self.request_timeout_s = request_timeout_s
        self._lock = threading.Lock()
        self._assigned: set[TopicPartition] = set()
        self._committed: dict[TopicPartition, int] = {}
        self.hook_error: BaseException | None = None
        self.missing_topics: tuple[str, ...] = ()
        """Topics of the subscription the brokers do not have (see :meth:`check_topics`)."""
        self.lag: dict[tuple[str, int], int] = {}
        """The last lag the source measured (:meth:`measure_lag`), of the partitions still
        assigned."""

    @property
    def assigned(self) -> frozenset[TopicPartition]:
        """The partitions currently assigned."""
        with self._lock:
            return frozenset(self._assigned)

    @property
    def holds_any(self) -> bool:
        """Whether any partition is assigned; cheap, for every loop pass (one truth test of a
        set is atomic, so it needs no lock)."""
        return bool(self._assigned)

    @property
    def committed(self) -> dict[TopicPartition, int]:
        """The offsets last committed for the assigned partitions."""
        with self._lock:
            return dict(self._committed)

    def to_commit(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The part of ``offsets`` worth a commit: assigned partitions (another member owns
        the others now) whose offset changed since it was last committed."""
        with self._lock:
            return {tp: offset for tp, offset in offsets.items()
                    if tp in self._assigned and self._committed.get(tp) != offset}

    def record_commit(self, committed: Mapping[TopicPartition, int]) -> None:
        """Record a successful commit of ``committed``."""
        with self._lock:
            self._committed.update(committed)

    def assign_all(self, consumer: Any, topics: Iterable[str]) -> set[TopicPartition]:
        """Whole-stream mode: assign every known partition of ``topics``, adding new ones.

        Partitions come from the client's metadata cache, filled when it bootstrapped and
        refreshed in the background. kafka-python's public ``partitions_for_topic`` waits
        without bound for a topic it does not know (a dead broker would hang the loop), so
        the cache is read directly, and a topic missing from it is added to the topics whose
        metadata the client refreshes: it is assigned at a later probe, once it exists.
        Partitions are only ever added: a topic's partition count never shrinks in Kafka.
        Returns the new partitions, for the caller to :meth:`assign`.
        """
        cluster = consumer._cluster
        found: set[TopicPartition] = set()
        missing = []
        for topic in topics:
            partitions = cluster.partitions_for_topic(topic)
            if partitions is None:
                missing.append(topic)
                cluster.add_topic(topic)
                cluster.request_update()  # a refresh per probe until the topic exists
                continue
            found |= {TopicPartition(topic, p) for p in partitions}
        self._note_missing(tuple(missing))
        with self._lock:
            new = found - self._assigned
            every = self._assigned | found
        if new:
            consumer.assign([_KafkaTopicPartition(*tp) for tp in sorted(every)])
        return new

    def check_topics(self, consumer: Any, topics: Iterable[str], since_ms: float) -> None:
        """Group mode: note the subscribed ``topics`` that the client's metadata, when newer
        than ``since_ms`` (the subscription, on kafka-python's clock), does not know: they do
        not exist. No request (kafka-python asks again while a subscribed topic is unknown,
        so its creation is noticed within seconds)."""
        cluster = consumer._cluster
        if getattr(cluster, "_last_successful_refresh_ms", 0) > since_ms:
            self._note_missing(tuple(t for t in topics if cluster.partitions_for_topic(t)
                                     is None))

    def _note_missing(self, missing: tuple[str, ...]) -> None:
        if missing and missing != self.missing_topics:
            log.error("%s", missing_topics_text(missing))
        elif self.missing_topics and not missing:
            log.info("topic %s exists now", ", ".join(self.missing_topics))
        self.missing_topics = missing

    def clear(self) -> None:
        """Forget the assignment (the consumer is closed)."""
        with self._lock:
            self._assigned.clear()
            self.held.clear()

    def reraise_hook_error(self) -> None:
        """Raise what ``on_assigned`` or ``on_revoked`` raised since the last call, if anything."""
        error, self.hook_error = self.hook_error, None
        if error is not None:
            raise error

    # Assignment changes: rebalance callbacks on kafka-python's IO thread (see Listener), or,
    # in whole-stream mode, the loop's own assignment (assign_all).

    def assign(self, consumer: Any, assigned: Iterable[Any]) -> None:
        """Add the partitions and seek each to where it resumes (see the module docstring);
        with ``hold_assigned``, pause them instead, for :meth:`release`."""
        partitions = ours(assigned)
        with self._lock:
            self._assigned |= partitions
            if self.hold_assigned:
                self.held |= partitions
        log.info("partitions assigned: %s", sorted(partitions))
        if self.hold_assigned and partitions:  # pause() only flags them: no I/O
            consumer.pause(*[_KafkaTopicPartition(*tp) for tp in sorted(partitions)])
        if self.on_assigned is None or not partitions:
            return
        try:
            offsets = dict(self.on_assigned(set(partitions)) or {})
            if not self.hold_assigned:
                self._seek(consumer, partitions, offsets)
        except Exception as exc:
            self.hook_error = exc

    def release(self, consumer: Any, offsets: Mapping[TopicPartition, int | None]) -> None:
        """Seek held partitions to their offsets (None: where ``on_assigned``'s rule puts a
        partition it gives no offset for) and resume them; partitions no longer held (revoked
        meanwhile) are left alone. On the loop's thread, between polls."""
        with self._lock:
            released = {tp for tp in map(ours_one, offsets) if tp in self.held}
            self.held -= released
        if not released:
            return
        self._seek(consumer, released, {tp: o for tp, o in offsets.items()
                                        if o is not None and ours_one(tp) in released})
        consumer.resume(*[_KafkaTopicPartition(*tp) for tp in sorted(released)])
        log.info("partitions resumed: %s", sorted(released))

    def hold_all(self, consumer: Any) -> None:
        """Pause and hold every assigned partition, as :meth:`assign` holds new ones (and goes
        on holding them with ``hold_assigned``). On the loop's thread; no I/O."""
        with self._lock:
            self.held |= self._assigned
            held = sorted(self.held)
        consumer.pause(*[_KafkaTopicPartition(*tp) for tp in held])

    def _seek(self, consumer: Any, partitions: set[TopicPartition],
              offsets: Mapping[TopicPartition, int]) -> None:
        for tp, offset in offsets.items():
            if tp not in partitions:
                log.warning("on_assigned returned an offset for unassigned %s; ignored", tp)
                continue
            consumer.seek(_KafkaTopicPartition(tp[0], tp[1]), offset)
        unknown = [_KafkaTopicPartition(tp[0], tp[1]) for tp in sorted(partitions)
                   if tp not in offsets]
        if self.ignore_committed and unknown:
            # Non-blocking: the client looks the offsets up at its next fetch.
            if self.auto_offset_reset == "earliest":
                consumer.seek_to_beginning(*unknown)
            else:
                consumer.seek_to_end(*unknown)

    def revoke(self, revoked: Iterable[Any], *, lost: bool) -> None:
        """Tell ``on_revoked`` and drop the partitions, without a commit (what is safe to
        commit is the caller's decision, and it already committed everything its durable
        state covers)."""
        partitions = ours(revoked)
        if lost:
            log.warning("partitions lost without commit (member evicted): %s", sorted(partitions))
        else:
            log.info("partitions revoked: %s", sorted(partitions))
        if self.on_revoked is not None and partitions:
            try:
                self.on_revoked(set(partitions), lost)
            except Exception as exc:
                self.hook_error = exc
        with self._lock:
            self._assigned -= partitions
            self.held -= partitions
            for tp in partitions:
                self._committed.pop(tp, None)
            # Kept partitions keep their lag (a cooperative revoke names only the leaving
            # ones); a partition gone is the new owner's to report.
            self.lag = {key: lag for key, lag in self.lag.items()
                        if TopicPartition(*key) not in partitions}

    # Lag, on the loop's thread.

    def follow_lag(self, consumer: Any, batches: Mapping[Any, Sequence[Any]]) -> None:
        """The lag of partitions that returned records, with no request: the fetch carried
        the high watermark (the end), and the next record follows the last one returned. A
        catch-up no longer shows the last probe's lag for up to the probe interval."""
        lag = dict(self.lag)
        for tp, messages in batches.items():
            if messages and (end := consumer.highwater(tp)) is not None:
                lag[(tp.topic, tp.partition)] = max(0, end - messages[-1].offset - 1)
        self.lag = lag

    def measure_lag(self, consumer: Any, partitions: Iterable[TopicPartition]
                    ) -> dict[tuple[str, int], int]:
        """Records behind the end of each of ``partitions`` (see ``KafkaSource.lag``); a
        position past the end of the log is reset first. Raises ``KafkaError``."""
        timeout_ms = int(self.request_timeout_s * 1000)
        ends = consumer.end_offsets(
            [_KafkaTopicPartition(*tp) for tp in partitions], timeout_ms=timeout_ms
        )
        lag: dict[tuple[str, int], int] = {}
        for ktp, listed in ends.items():
            # Tansu 0.6 answers ListOffsets(latest) with the last batch's base offset + 1,
            # short of the end whenever that batch holds several records; the high
            # watermark of the last fetch response is right there, and on Kafka the two
            # agree, so the larger one is the end offset.
            highwater = consumer.highwater(ktp)
            end = max(listed or 0, highwater or 0)
            position = consumer.position(ktp, timeout_ms=timeout_ms)
            if position is not None and highwater is not None and position > end:
                position = self.reset_beyond_end(consumer, ktp, position, end)
            if position is not None:
                lag[(ktp.topic, ktp.partition)] = max(0, end - position)
        return lag

    def reset_beyond_end(self, consumer: Any, ktp: Any, position: int, end: int) -> int | None:
        """Apply ``auto_offset_reset`` to a partition whose position is past the end of its log.

        Both the broker's end offset and the high watermark of a fetch at this very position
        say the log ends before it: the partition was truncated or the topic recreated (a
        broker with memory storage that restarted, for one). Kafka answers such a fetch with
        OFFSET_OUT_OF_RANGE and kafka-python applies ``auto_offset_reset``; Tansu 0.6 answers
        it with no records, so the consumer would wait at the old position until the new log
        grew past it, and skip everything before. Do what Kafka's answer would have done.
        """
        reset = self.auto_offset_reset
        log.error(
            "%s[%d]: position %d is past the end of the log (%d): the partition was truncated "
            "or recreated; resetting to the %s offset (auto_offset_reset)",
            ktp.topic, ktp.partition, position, end, reset,
        )
        if reset == "earliest":
            consumer.seek_to_beginning(ktp)
        else:
            consumer.seek_to_end(ktp)
        reset_to: int | None = consumer.position(ktp,
                                                 timeout_ms=int(self.request_timeout_s * 1000))
        return reset_to


class Listener(AsyncConsumerRebalanceListener):  # type: ignore[misc]
    """Forwards kafka-python's rebalance callbacks (on its IO thread) to :class:`Offsets`;
    ``joined()`` is called first when partitions are assigned."""

    def __init__(self, offsets: Offsets, consumer: Any, *, joined: Callable[[], None]) -> None:
        self._offsets = offsets
        self._consumer = consumer
        self._joined = joined

    async def on_partitions_revoked(self, revoked: Any) -> None:
        self._offsets.revoke(revoked, lost=False)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self._joined()
        self._offsets.assign(self._consumer, assigned)

    async def on_partitions_lost(self, lost: Any) -> None:
        self._offsets.revoke(lost, lost=True)


def missing_topics_text(topics: Iterable[str]) -> str:
    """Why the source waits, in one line naming the setting."""
    return (f"topic {', '.join(topics)} (kafka.topics) does not exist on the brokers; waiting "
            "for it to be created (the agent does not create the topics it reads)")


def ours_one(tp: Any) -> TopicPartition:
    """One kafka-python topic-partition (or ours) as a :class:`TopicPartition`."""
    return TopicPartition(tp[0], tp[1])


def ours(partitions: Iterable[Any]) -> set[TopicPartition]:
    """kafka-python's topic-partitions (or ours) as :class:`TopicPartition` values."""
    return {TopicPartition(tp.topic, tp.partition) for tp in partitions}


def to_kafka_offsets(stored: Mapping[TopicPartition, int]) -> dict[Any, Any]:
    """``{partition: next offset}`` as ``KafkaConsumer.commit`` takes it."""
    return {
        _KafkaTopicPartition(tp.topic, tp.partition): OffsetAndMetadata(offset, "", -1)
        for tp, offset in stored.items()
    }
