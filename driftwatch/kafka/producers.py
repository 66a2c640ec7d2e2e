"""Kafka producers of the agent: rejected records to a dead-letter topic, alarms to a topic.

Both are best effort and never block the loop for long: the ``KafkaProducer`` is created on
first use (retried at most every ``retry_interval_s`` while the broker is unreachable),
``send`` is asynchronous, and delivery failures are counted, never raised, and logged at most
once a minute per topic (a broker outage fails every record: one line per record would flood
the log the outage is read from). The
agent flushes the dead-letter producer before it commits the source's offsets, so a crash in
between re-delivers (and re-dead-letters) a record rather than losing it.

Built on kafka-python 3.0: constructing a producer while the broker is unreachable raises
``KafkaTimeoutError`` after ``bootstrap_timeout_ms``, ``KafkaProducer.flush`` after its
timeout; ``KafkaProducer.close`` raises when its flush times out and then leaves its sender
thread running (see :meth:`_Publisher.close`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from kafka import KafkaProducer  # type: ignore[import-untyped]
from kafka.errors import KafkaError  # type: ignore[import-untyped]

from driftwatch.decoding.decoder import Rejected
from driftwatch.kafka.source import Record

log = logging.getLogger(__name__)

FAILURE_LOG_INTERVAL_S = 60.0
"""The least time between two warnings about one topic's failed sends; the failures between
are counted and the next warning says how many."""


class _FailureLog:
    """Warns about a topic's failed sends: the first at once, the rest at most once every
    ``interval_s`` with the number folded since, so an outage costs a line a minute, not a
    line a record. Thread-safe: delivery errors arrive on the producer's sender thread."""

    def __init__(self, topic: str, interval_s: float = FAILURE_LOG_INTERVAL_S) -> None:
        self.topic = topic
        self.interval_s = interval_s
        self._next_at = -math.inf
        self._folded = 0
        self._lock = threading.Lock()

    def warn(self, what: str, exc: BaseException) -> None:
        """Log ``what`` failed for this topic with ``exc``, unless a warning went out less
        than ``interval_s`` ago (then only count it)."""
        now = time.monotonic()
        with self._lock:
            if now < self._next_at:
                self._folded += 1
                return
            folded, self._folded = self._folded, 0
            self._next_at = now + self.interval_s
        more = f" ({folded} more failed since the last warning)" if folded else ""
        log.warning("%s %s failed: %s%s", what, self.topic, exc, more)


class _Publisher:
    """A best-effort ``KafkaProducer`` to one topic that never blocks the loop for long.

    The producer is created on first use; if the broker is unreachable then, creation is
    retried at most every ``retry_interval_s``. ``send`` is asynchronous: delivery failures
    are counted in :attr:`failed` and logged at most once a minute, deliveries counted in
    :attr:`delivered`; nothing is raised into the caller.
    """

    def __init__(
        self,
        producer_config: Mapping[str, Any],
        topic: str,
        *,
        request_timeout_s: float = 5.0,
        retry_interval_s: float = 5.0,
    ) -> None:
        if not topic:
            raise ValueError("topic must be a non-empty topic name")
        self.producer_config = dict(producer_config)
        self.topic = topic
        self.request_timeout_s = request_timeout_s
        self.retry_interval_s = retry_interval_s
        self._producer: Any = None
        self._retry_at = -math.inf
        self._lock = threading.Lock()
        self.delivered = 0
        self.failed = 0
        self._failures = _FailureLog(topic)

    def _send(
        self, key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes]]
    ) -> None:
        producer = self._producer if self._producer is not None else self._connect()
        if producer is None:
            self._count(ok=False)
            return
        try:
            future = producer.send(self.topic, key=key, value=value, headers=headers)
        except (KafkaError, ValueError, TypeError) as exc:  # e.g. record too large
            self._failures.warn("sending to", exc)
            self._count(ok=False)
            return
        future.add_callback(lambda _metadata: self._count(ok=True))
        future.add_errback(lambda exc: self._errback(exc))

    def _errback(self, exc: BaseException) -> None:
        self._failures.warn("delivery to", exc)
        self._count(ok=False)

    def _count(self, *, ok: bool) -> None:
        with self._lock:
            if ok:
                self.delivered += 1
            else:
                self.failed += 1

    def _connect(self) -> Any:
        if time.monotonic() < self._retry_at:
            return None
        config = dict(self.producer_config)
        timeout_ms = int(self.request_timeout_s * 1000)
        # send() blocks up to max_block_ms for metadata (60 s by default); bootstrap, 30 s.
        config.setdefault("max_block_ms", timeout_ms)
        config.setdefault("bootstrap_timeout_ms", timeout_ms)
        try:
            self._producer = KafkaProducer(**config)
        except KafkaError as exc:
            self._retry_at = time.monotonic() + self.retry_interval_s
            log.warning("cannot create a producer for %s: %s", self.topic, exc)
            return None
        return self._producer

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait until everything sent so far is delivered or failed; False on timeout."""
        if self._producer is None:
            return True
        try:
            self._producer.flush(timeout=self.request_timeout_s if timeout_s is None else timeout_s)
        except KafkaError as exc:
            log.warning("flushing %s: %s", self.topic, exc)
            return False
        return True

    def close(self, timeout_s: float | None = None) -> None:
        """Flush (bounded) and close; records still undelivered then are dropped and logged."""
        producer, self._producer = self._producer, None
        if producer is None:
            return
        timeout = self.request_timeout_s if timeout_s is None else timeout_s
        try:
            producer.close(timeout=timeout)
        except KafkaError as exc:
            # KafkaProducer.close() raises when its flush times out and then leaves its sender
            # thread running; stop that thread without sending (kafka-python has no public
            # way to), which fails the pending records, then close for real.
            log.warning(
                "closing the %s producer: %s; dropping undelivered records", self.topic, exc
            )
            sender = getattr(producer, "_sender", None)
            if sender is not None:
                sender.force_close()
                sender.join(timeout)
            with contextlib.suppress(KafkaError):
                producer.close(timeout=0)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


DEAD_LETTER_MAX_REQUEST_BYTES = 128 * 1024 * 1024
"""The dead-letter producer's ``max_request_size``: above any record a consumer is likely to
be handed (``events.max_record_bytes`` is at most 100 MiB), so that the producer never refuses
to forward a record the broker accepted; see :class:`DeadLetter`."""


class DeadLetter(_Publisher):
    """Forward rejected records, raw, to a dead-letter topic (best effort).

    The value and key are the original bytes; headers say why and where from:
    ``reason`` (a :data:`~driftwatch.decoding.decoder.REJECTION_REASONS` value), ``detail``,
    ``source_topic``, ``source_partition``, ``source_offset`` (all UTF-8 text). A tombstone
    without a key goes out with an empty value, since Kafka refuses a record with neither.

    Delivery is asynchronous and best effort: failures are counted in :attr:`failed`, never
    raised. For at-least-once dead-lettering, :meth:`flush` before committing the source's
    offsets (a crash in between re-delivers and so re-dead-letters the record).

    Parameters:
        producer_config: ``KafkaProducer`` keyword arguments (no serializers: bytes go as is).
        topic: the dead-letter topic.
        request_timeout_s: bound on creating the producer, on ``send`` waiting for metadata,
            and on :meth:`flush` / :meth:`close` by default.
        retry_interval_s: least time between attempts to create the producer.

    Record size: the records most worth a look (``too_large`` ones) are the biggest, and
    kafka-python refuses anything above its ``max_request_size`` (1 MiB by default) before it
    reaches the broker. The broker accepted each record on the source topic, so the producer
    does not second-guess it: ``max_request_size`` defaults to
    :data:`DEAD_LETTER_MAX_REQUEST_BYTES` here, and only the broker's limit on the
    dead-letter topic (``max.message.bytes``) applies.
    """

    def __init__(
        self,
        producer_config: Mapping[str, Any],
        topic: str,
        *,
        request_timeout_s: float = 5.0,
        retry_interval_s: float = 5.0,
    ) -> None:
        config = dict(producer_config)
        config.setdefault("max_request_size", DEAD_LETTER_MAX_REQUEST_BYTES)
        super().__init__(config, topic, request_timeout_s=request_timeout_s,
                         retry_interval_s=retry_interval_s)

    def send(self, record: Record, rejected: Rejected) -> None:
        """Queue ``record`` for the dead-letter topic with ``rejected``'s reason and detail."""
        headers = [
            ("reason", rejected.reason.encode()),
            ("detail", rejected.detail.encode("utf-8", "replace")),
            ("source_topic", record.topic.encode("utf-8", "replace")),
            ("source_partition", str(record.partition).encode()),
            ("source_offset", str(record.offset).encode()),
        ]
        value = record.value
        if value is None and record.key is None:
            value = b""  # Kafka refuses a record with neither key nor value
        self._send(record.key, value, headers)


class AlarmPublisher(_Publisher):
    """Publish drift alarms as JSON objects to an alarms topic (best effort).

    The record key is the alarm's ``model`` (so one model's alarms stay in order), the value
    the alarm as JSON with sorted keys; non-finite floats become ``null`` (JSON has no NaN)
    and values JSON cannot encode (datetimes, enums) their ``str()``. Failure behaviour and
    parameters as for :class:`DeadLetter`.
    """

    def publish(self, alarm: Mapping[str, Any]) -> None:
        """Queue one alarm, e.g. ``{"model": "churn", "measure": "auc", "state": "drift"}``."""
        value = json.dumps(_finite(dict(alarm)), sort_keys=True, default=str, allow_nan=False)
        model = alarm.get("model")
        key = str(model).encode() if model is not None else None
        self._send(key, value.encode(), [])


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


_PRODUCER_KEYS = ("bootstrap_servers", "client_id", "security_protocol")


def producer_config(consumer_config: Mapping[str, Any]) -> dict[str, Any]:
    """The connection and security part of the consumer's options, for producers (the
    dead-letter and alarm producers here, the simulated models of ``driftwatch simulate``)."""
    return {key: value for key, value in consumer_config.items()
            if key in _PRODUCER_KEYS or key.startswith(("sasl_", "ssl_"))}
