"""Simulated models producing their events to Kafka: what ``driftwatch simulate`` and the
demo run.

A :class:`Feed` plays one or more deployed models. Each model's events come from a seeded
:mod:`driftwatch.simulate` stream and are produced to one topic, keyed by model id (so each
model stays on one partition, so one agent replica of a group sees all of it), at a steady
rate, in the record format the agent's ``events`` settings describe (:func:`encode_record`),
so that ``driftwatch simulate --config agent.yaml`` feeds exactly what that agent reads.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from kafka import KafkaProducer  # type: ignore[import-untyped]
from kafka.admin import KafkaAdminClient, NewTopic  # type: ignore[import-untyped]
from kafka.errors import KafkaError, TopicAlreadyExistsError  # type: ignore[import-untyped]

from driftwatch.core.events import Event
from driftwatch.core.join import Label, Prediction
from driftwatch.decoding.decoder import EventFormat
from driftwatch.decoding.joinable import JoinFormat
from driftwatch.simulate.records import event_record, joinable_record

__all__ = ["BrokersUnreachable", "Feed", "FeedError", "FeedStats", "JoinTopics",
           "encode_joinable", "encode_record", "ensure_topic"]

log = logging.getLogger(__name__)

TICK_S = 0.01
"""The feed wakes up this often and sends what is due: at 500 events/s, batches of about
five, which the producer's ``linger_ms`` groups into one request."""

CONNECT_TIMEOUT_S = 10.0
"""Bound on reaching the brokers, and on ``send`` waiting for the topic's metadata."""


class FeedError(RuntimeError):
    """The feed cannot produce: the brokers are unreachable or refuse the topic."""


class BrokersUnreachable(FeedError):
    """No broker answered within :data:`CONNECT_TIMEOUT_S`."""


DEFAULT_FORMAT = EventFormat()
"""The record format of the default ``events`` settings."""


def encode_record(event: Event, model: str, fmt: EventFormat = DEFAULT_FORMAT
                  ) -> tuple[bytes, bytes]:
    """``(key, value)`` of the Kafka record for ``event`` of ``model``: the value is
    :func:`~driftwatch.simulate.records.event_record` as compact JSON, which the agent decodes
    with ``fmt`` (:mod:`driftwatch.decoding.decoder`); the key is the model id in every case.

    Example:
        >>> encode_record(Event(1, 0.75, ts=1700000000.0), "churn")
        (b'churn', b'{"label":1,"score":0.75,"ts":1700000000.0,"model":"churn"}')
    """
    return model.encode(), _json(event_record(event, model, fmt))


def encode_joinable(record: Prediction | Label, fmt: EventFormat, join: JoinFormat
                    ) -> tuple[bytes, bytes]:
    """``(key, value)`` of a prediction or label record of the two-stream form (the agent's
    ``join`` settings): the value is :func:`~driftwatch.simulate.records.joinable_record` as
    compact JSON; the key is the event id (a prediction's is its model when the settings
    read the model from the key).

    Example:
        >>> encode_joinable(Label("e7", 1, 5.0), EventFormat(), JoinFormat(kind_field="kind"))
        (b'e7', b'{"event_id":"e7","ts":5.0,"kind":"label","label":1}')
    """
    key = record.model if isinstance(record, Prediction) and fmt.model_source == "key" \
        else record.event_id
    return key.encode(), _json(joinable_record(record, fmt, join))


def _json(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class JoinTopics:
    """Where a two-stream feed sends predictions and labels (the same topic for both when
    the agent tells them apart by ``join.kind_field``)."""

    predictions: str
    labels: str
    join: JoinFormat


def ensure_topic(producer_config: Mapping[str, Any], topic: str, *, partitions: int = 1,
                 replication_factor: int = 1) -> bool:
    """Create ``topic`` unless it exists; True when it was created.

    Raises :class:`FeedError` when the brokers cannot be reached or refuse (e.g. the client
    may not create topics); the caller may go on and let the brokers auto-create it.
    """
    try:
        admin = KafkaAdminClient(**_with_timeouts(producer_config, producer=False))
    except KafkaError as exc:
        raise BrokersUnreachable(f"cannot reach {_brokers(producer_config)}: {exc}") from None
    try:
        if topic in admin.list_topics():
            return False
        admin.create_topics([NewTopic(topic, partitions, replication_factor)])
        return True
    except TopicAlreadyExistsError:
        return False
    except KafkaError as exc:
        raise FeedError(f"cannot create topic {topic!r}: {exc}") from None
    finally:
        admin.close()


@dataclass(frozen=True, slots=True)
class FeedStats:
    """What a feed did: records sent (handed to the producer), delivered (acknowledged) and
    failed, and the seconds it spent sending."""

    sent: int
    delivered: int
    failed: int
    seconds: float


class Feed:
    """Produces the events of simulated models to ``topic`` at ``rate`` events per second per
    model, interleaving the models.

    Lifecycle: :meth:`run` connects, sends each event when it is due (event ``i`` of every
    model at ``i / rate`` seconds after the start; a feed that falls behind catches up as fast
    as the producer allows) until every stream is exhausted, the events due in the first
    ``duration_s`` seconds are sent (those too when the feed is behind at the end, so how
    many does not depend on the machine's speed) or ``stop`` is set, then flushes (waiting at
    most ``flush_timeout_s`` for the acknowledgements) and closes the producer. Meanwhile
    :attr:`sent` and :meth:`stats` may be read from any thread.

    Failures: unreachable brokers, or a topic whose metadata does not arrive within
    :data:`CONNECT_TIMEOUT_S`, raise :class:`FeedError` from :meth:`run`; records the brokers
    refuse later are counted as failed (and the first reason logged), not raised.

    Parameters:
        producer_config: kafka-python ``KafkaProducer`` options (brokers and security).
        topic: where the records go.
        streams: the events of each model, by model id; or, with ``join``, the predictions
            and labels of each model (:func:`~driftwatch.simulate.delayed_labels`), each
            sent when its time is due (record time − the first record's time after the
            start), predictions and labels to their topics.
        rate: events per second of each model, > 0.
        duration_s: send the events due in the first this many seconds, then stop; None:
            until the streams end.
        fmt: the record format (:func:`encode_record`).
        join: the topics and format of the two-stream form; None: labelled events.
    """

    def __init__(
        self,
        producer_config: Mapping[str, Any],
        topic: str,
        streams: Mapping[str, Iterable[Event]] | Mapping[str, Iterable[Prediction | Label]],
        *,
        rate: float,
        duration_s: float | None = None,
        fmt: EventFormat = DEFAULT_FORMAT,
        flush_timeout_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        join: JoinTopics | None = None,
    ) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be a positive number of events per second, got {rate!r}")
        if duration_s is not None and not duration_s > 0:
            raise ValueError(f"duration_s must be positive or None, got {duration_s!r}")
        if not streams:
            raise ValueError("streams must hold at least one model")
        self.producer_config = dict(producer_config)
        self.topic = topic
        self.streams = dict(streams)
        self.rate = rate
        self.duration_s = duration_s
        self.fmt = fmt
        self.flush_timeout_s = flush_timeout_s
        self.join = join
        self._clock = clock
        self._lock = threading.Lock()
        self._delivered = 0
        self._failed = 0
        self._failure_logged = False
        self._started: float | None = None
        self._ended: float | None = None
        self.sent = 0
        """Records handed to the producer so far."""
        self.exhausted = False
        """True once every stream has been sent to its end."""

    def run(self, stop: threading.Event) -> None:
        """Send until the streams end, ``duration_s`` passes or ``stop`` is set; see the class
        docstring."""
        try:
            producer = KafkaProducer(**_with_timeouts(self.producer_config), linger_ms=5)
        except KafkaError as exc:
            raise BrokersUnreachable(
                f"cannot reach {_brokers(self.producer_config)}: {exc}") from None
        try:
            if self.join is None:
                self._send_all(producer, stop)
            else:
                self._send_timed(producer, stop)
        finally:
            self._close(producer)
            self._ended = self._clock()

    def stats(self) -> FeedStats:
        with self._lock:
            delivered, failed = self._delivered, self._failed
        start = self._started
        end = self._ended if self._ended is not None else self._clock()
        return FeedStats(self.sent, delivered, failed, 0.0 if start is None else end - start)

    # -- sending ----------------------------------------------------------------------------

    def _send_all(self, producer: Any, stop: threading.Event) -> None:
        # Without a join every stream holds events (see __init__).
        iterators: dict[str, Iterator[Event]] = {
            m: iter(cast(Iterable[Event], s)) for m, s in self.streams.items()}
        count = 0  # events sent per model (the models advance in step)
        start = self._started = self._clock()
        while iterators and not stop.is_set():
            elapsed = self._clock() - start
            end = self.duration_s
            ending = end is not None and elapsed >= end
            if end is not None and ending:  # what was due before the end, even if behind
                due = math.ceil(end * self.rate)
            else:
                due = int(elapsed * self.rate) + 1
            while count < due and iterators and not stop.is_set():
                for model, events in list(iterators.items()):
                    event = next(events, None)
                    if event is None:
                        del iterators[model]
                    else:
                        self._send(producer, model, event)
                count += 1
            if ending:
                return
            stop.wait(max(0.0, min(TICK_S, count / self.rate - (self._clock() - start))))
        self.exhausted = not iterators

    def _send_timed(self, producer: Any, stop: threading.Event) -> None:
        """The two-stream form: every model's records merged by time, each sent when due."""
        assert self.join is not None
        records: Iterator[Prediction | Label] = heapq.merge(
            *self.streams.values(), key=lambda r: r.ts)  # type: ignore[arg-type]
        start = self._started = self._clock()
        first: float | None = None
        for record in records:
            if first is None:
                first = record.ts
            if self.duration_s is not None and record.ts - first >= self.duration_s:
                stop.wait(max(0.0, self.duration_s - (self._clock() - start)))
                return
            while not stop.is_set():
                wait = record.ts - first - (self._clock() - start)
                if wait <= 0:
                    break
                stop.wait(min(TICK_S * 10, wait))
            if stop.is_set():
                return
            topic = self.join.predictions if isinstance(record, Prediction) \
                else self.join.labels
            key, value = encode_joinable(record, self.fmt, self.join.join)
            self._produce(producer, topic, key, value)
        self.exhausted = True

    def _produce(self, producer: Any, topic: str, key: bytes, value: bytes) -> None:
        try:
            future = producer.send(topic, key=key, value=value)
        except KafkaError as exc:
            raise FeedError(f"cannot send to {topic!r}: {exc}") from None
        self.sent += 1
        future.add_callback(self._delivered_one)
        future.add_errback(self._failed_one)

    def _send(self, producer: Any, model: str, event: Event) -> None:
        key, value = encode_record(event, model, self.fmt)
        try:
            future = producer.send(self.topic, key=key, value=value)
        except KafkaError as exc:  # no metadata for the topic within max_block_ms, say
            raise FeedError(f"cannot send to {self.topic!r}: {exc}") from None
        self.sent += 1
        future.add_callback(self._delivered_one)
        future.add_errback(self._failed_one)

    def _delivered_one(self, _metadata: Any) -> None:
        with self._lock:
            self._delivered += 1

    def _failed_one(self, exc: BaseException) -> None:
        with self._lock:
            self._failed += 1
            first, self._failure_logged = not self._failure_logged, True
        if first:
            log.warning("a record to %s was not delivered: %s", self.topic, exc)

    def _close(self, producer: Any) -> None:
        try:
            producer.flush(timeout=self.flush_timeout_s)
        except KafkaError as exc:
            log.warning("records to %s still unacknowledged after %.0f s: %s",
                        self.topic, self.flush_timeout_s, exc)
        with contextlib.suppress(KafkaError):
            producer.close(timeout=1.0)


def _with_timeouts(config: Mapping[str, Any], *, producer: bool = True) -> dict[str, Any]:
    # kafka-python waits 30 s to bootstrap and 60 s for a topic's metadata by default: long
    # enough for a user to think the command hangs. (The admin client has no max_block_ms.)
    timeout_ms = int(CONNECT_TIMEOUT_S * 1000)
    bounded: dict[str, Any] = {"bootstrap_timeout_ms": timeout_ms}
    if producer:
        bounded["max_block_ms"] = timeout_ms
    return {**bounded, **config}


def _brokers(config: Mapping[str, Any]) -> str:
    servers = config.get("bootstrap_servers", "?")
    return ",".join(servers) if isinstance(servers, list | tuple) else str(servers)
