"""Kafka at the edge: the record source, which commits only the offsets it is given.

The agent's main loop is a handful of lines::

    with KafkaSource(consumer_config, topics=[topic], on_assigned=restore) as source:
        while not stopping:
            for record in source.poll():
                handle(record)           # decode, update the monitor, maybe dead-letter
            if checkpoint_due():
                offsets = save_checkpoint()  # the offsets the durable state covers
                source.commit(offsets)       # exactly those, never more

Delivery is at-least-once; what is committed and where a partition resumes: offsets.py.

Built on kafka-python 3.0 (``KafkaConsumer``/``KafkaProducer``). Behaviour of that client this
module relies on, verified against a real broker (tests/kafka/test_source_and_producers.py):

- When the broker goes away, ``KafkaConsumer.poll`` does not raise: it returns nothing after
  its timeout while its IO thread reconnects with exponential backoff
  (``reconnect_backoff_ms`` → ``reconnect_backoff_max_ms``), logging every failed attempt at
  ERROR level. The assignment and the group state it reports stay as they were, so neither
  tells that the broker is gone: :attr:`KafkaSource.ready` therefore rests on requests of our
  own (see :meth:`KafkaSource.lag`).
- Constructing a consumer or producer while the broker is unreachable raises
  ``KafkaTimeoutError`` after ``bootstrap_timeout_ms``; ``commit``, ``end_offsets`` and
  ``KafkaProducer.flush`` raise ``KafkaTimeoutError`` after their timeout.
- Rebalance listeners run on the client's IO thread and cannot call blocking consumer
  methods (see :mod:`driftwatch.kafka.offsets`).
- When the broker comes back and no longer knows the member (a restarted broker that keeps
  its group state in memory), the consumer's heartbeat is refused, the partitions are
  reported lost and the consumer rejoins by itself on the next polls.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

from kafka import KafkaConsumer  # type: ignore[import-untyped]
from kafka.errors import KafkaError, RebalanceInProgressError  # type: ignore[import-untyped]

from driftwatch.kafka.broker_health import BrokerHealth
from driftwatch.kafka.client_quirks import finish_interrupted_joins, never_create_topics
from driftwatch.kafka.first_contact import FirstContact
from driftwatch.kafka.offsets import (
    Listener,
    Offsets,
    OnAssigned,
    OnRevoked,
    TopicPartition,
    to_kafka_offsets,
)
from driftwatch.sources.record import Record as Record

log = logging.getLogger(__name__)

Clock = Callable[[], float]

SLOW_PROBE_S = 0.5
"""A lag probe (one ``ListOffsets`` request, which the loop waits for) that takes longer than
this is logged: the loop pauses for it (issue 25's pause target)."""

HELD_POLL_TIMEOUT_S = 0.002
"""A poll's longest wait while partitions are held (``hold_assigned``): the caller prepares
them between polls, a slice at a time (a restore's are 0.1 s), and should not idle between
slices. With 20 ms the replacement of a lone agent spent about a sixth of its restore of
10 000 models in polls (benchmarks/results.md, state_topic). A short wait does not break a
rebalance: kafka-python runs the rebalance callbacks inside a poll, and a join that a short
poll leaves unfinished is awaited again by the next, not sent anew."""


class KafkaSource:
    """Consume records from Kafka in a consumer group, committing only processed offsets: the
    :class:`~driftwatch.sources.protocol.Source` the agent reads by default.

    Lifecycle:

    - Construction does no I/O. The first :meth:`poll` creates the ``KafkaConsumer`` and
      subscribes (``topics`` or ``pattern``); joining the group happens inside later polls.
    - :meth:`poll` returns a batch of :class:`Record`, or an empty list after at most about
      ``poll_timeout_s`` (plus, when a probe is due, ``request_timeout_s``).
    - :meth:`commit` commits the offsets it is given (those of assigned partitions; the
      others belong to another member now), and nothing else: the caller decides what is
      safe to commit.
    - On a rebalance, ``on_assigned`` is called with the new partitions; the offsets it
      returns are seeked to, so the agent resumes from its checkpoint rather than from the
      group's commit. With ``ignore_committed``, a partition it returns no offset for starts
      where ``auto_offset_reset`` says (the beginning or the end of the log), as for a group
      that never committed: the group's commit is then never a resume point. Revoked and
      lost partitions are dropped without a commit.
    - :meth:`close` (or leaving the ``with`` block) leaves the group and closes the consumer,
      bounded by ``request_timeout_s``, without committing.
    - With ``whole_stream``, there is no group: the source assigns itself every partition of
      ``topics`` (``KafkaConsumer.assign``), so every replica that runs one reads the whole
      stream. ``on_assigned`` is called with the partitions as for a group, and those it
      gives no offset for start at ``auto_offset_reset`` (there are no group commits to
      resume from); :meth:`commit` commits nothing. Topics created later, and partitions
      added to a topic, are picked up at a later probe (their metadata is refreshed in the
      background, never waited for). This is the sidecar of a replicated model: each
      replica's agent sees every event, so all of them export the same window, where a
      shared group would give each a share of the partitions and a partial window.

    With ``first_contact`` no consumer is created before it reached the brokers (each poll
    gives it ``poll_timeout_s``); settings the brokers refuse, then or later, are raised
    from :meth:`poll` (``BrokerRefused``). :attr:`problem`: why no records come.

    Failure behaviour: broker trouble never raises out of :meth:`poll`, :meth:`commit`,
    :meth:`lag` or :meth:`close`. If the consumer cannot be created, or ``KafkaConsumer.poll``
    raises, the source backs off exponentially (``backoff_initial_s`` doubling up to
    ``backoff_max_s``) and poll returns ``[]`` meanwhile. The same two values bound
    kafka-python's own reconnect backoff (``reconnect_backoff_ms``/``..._max_ms``) unless
    ``consumer_config`` sets them. A commit that fails returns False and is counted
    (:attr:`commit_failures`); the caller's next commit carries newer offsets, and if the
    process dies first the records are delivered again.
    Exceptions raised by ``on_assigned`` are re-raised from :meth:`poll` (a bug there must be
    seen); the partitions then resume from the group's committed offsets.

    :attr:`ready` is True when the broker is reachable and partitions are assigned. Since
    kafka-python shows no outage through its public state, reachability is what the last
    broker interaction said: records arriving, a successful join, commit or probe make it
    True; a failed one makes it False. While no records arrive, the source probes the broker
    (``end_offsets`` of its partitions, which also refreshes :meth:`lag`) every
    ``probe_interval_s``, and, once unreachable, at exponentially backed-off intervals.
    :attr:`reconnects` counts the returns from unreachable to reachable.

    Threading: use one source from one thread (the agent's loop). Rebalance callbacks, and
    therefore ``on_assigned``, run on kafka-python's IO thread while that loop is blocked in
    :meth:`poll` or :meth:`close`; ``on_assigned`` must return quickly (well within
    ``session_timeout_ms``).

    Parameters:
        consumer_config: ``KafkaConsumer`` keyword arguments (built by the settings); must
            include ``group_id``, which ``whole_stream`` ignores. ``enable_auto_commit`` is
            forced off (True is refused) and deserializers are refused: records carry raw
            bytes.
        topics: topics to subscribe to; exactly one of ``topics`` and ``pattern``.
        pattern: regular expression of topics to subscribe to.
        on_assigned: see :data:`OnAssigned`.
        on_revoked: see :data:`OnRevoked`; like ``on_assigned`` it runs on kafka-python's IO
            thread, and an exception it raises is re-raised from :meth:`poll`.
        ignore_committed: start partitions ``on_assigned`` gives no offset for at
            ``auto_offset_reset``, not at the group's committed offset (see Lifecycle).
        whole_stream: assign every partition of ``topics`` to this consumer, without a
            group and without commits (see Lifecycle); not with ``pattern``.
        hold_assigned: pause each newly assigned partition until :meth:`release` (the
            offsets ``on_assigned`` returns are not used): the caller prepares the partition
            between polls (the agent restores its state) and then says where it resumes.
            While a partition is held, a poll waits at most :data:`HELD_POLL_TIMEOUT_S`.
        poll_timeout_s: longest wait for records in one :meth:`poll`. It bounds how late the
            loop notices a stop flag, and must stay well below ``max_poll_interval_ms``
            together with the time to process one batch.
        max_records: most records per :meth:`poll`; None uses ``max_poll_records``.
        backoff_initial_s: first retry delay after a failure.
        backoff_max_s: longest retry delay.
        probe_interval_s: how often the broker is probed while idle, and how long
            :meth:`lag` results are cached.
        request_timeout_s: bound on each blocking broker call made from the loop (consumer
            creation, commit, end offsets, close).
        first_contact: checks the brokers and the settings before the consumer is created;
            None: it is created at once.
        clock: monotonic seconds; injectable for tests.

    Defaults, and why:

    - ``poll_timeout_s=1.0``: SIGTERM is noticed within about a second (Kubernetes grants
      30 s), a due checkpoint is at most a second late, and an idle loop wakes once a
      second, which costs nothing. One poll plus one batch (500 records at ~20 µs each,
      ~10 ms) stays far below ``max_poll_interval_ms``, even the 5 s that keeps Tansu's
      rebalances short (it holds a joining member for up to that long).
    - ``backoff_initial_s=0.5``, ``backoff_max_s=30.0``: a broker restart or leader move takes
      seconds, so the first retry comes quickly; during a long outage each replica tries at
      most twice a minute and notices recovery at most 30 s late. 30 s is also
      kafka-python's own ``reconnect_backoff_max_ms`` default.
    - ``probe_interval_s=5.0``: :attr:`ready` turns False within about 5 s (+ one request
      timeout) of an outage, inside one period of Kubernetes' default 10 s readiness probe;
      lag is refreshed more often than a 15 s Prometheus scrape; one ``ListOffsets`` request
      per 5 s is no load.
    - ``request_timeout_s=5.0``: a healthy broker answers in milliseconds; with a dead one,
      a stop (one commit, one leave-group) still ends within about 10 s, inside
      Kubernetes' default 30 s termination grace period.
    """

    def __init__(
        self,
        consumer_config: Mapping[str, Any],
        *,
        topics: Sequence[str] = (),
        pattern: str | None = None,
        on_assigned: OnAssigned | None = None,
        on_revoked: OnRevoked | None = None,
        ignore_committed: bool = False,
        whole_stream: bool = False,
        hold_assigned: bool = False,
        poll_timeout_s: float = 1.0,
        max_records: int | None = None,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        probe_interval_s: float = 5.0,
        request_timeout_s: float = 5.0,
        first_contact: FirstContact | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        if bool(topics) == (pattern is not None):
            raise ValueError("give exactly one of topics and pattern")
        if isinstance(topics, str):
            raise ValueError(f"topics must be a sequence of names, got the string {topics!r}")
        if whole_stream and pattern is not None:
            raise ValueError("whole_stream needs topics, not a pattern: it assigns the "
                             "partitions of named topics")
        if not whole_stream and not consumer_config.get("group_id"):
            raise ValueError("consumer_config must set group_id: offsets are group commits")
        if consumer_config.get("enable_auto_commit", False):
            raise ValueError(
                "consumer_config enable_auto_commit must be False: KafkaSource commits only "
                "the offsets of processed records"
            )
        for name in ("key_deserializer", "value_deserializer"):
            if consumer_config.get(name) is not None:
                raise ValueError(f"consumer_config {name} is not supported: records are bytes")
        for name, value in [
            ("poll_timeout_s", poll_timeout_s),
            ("backoff_initial_s", backoff_initial_s),
            ("probe_interval_s", probe_interval_s),
            ("request_timeout_s", request_timeout_s),
        ]:
            if not value > 0:
                raise ValueError(f"{name} must be > 0, got {value!r}")
        if not backoff_max_s >= backoff_initial_s:
            raise ValueError(f"backoff_max_s must be >= backoff_initial_s, got {backoff_max_s!r}")
        if max_records is not None and max_records < 1:
            raise ValueError(f"max_records must be >= 1, got {max_records!r}")
        self.consumer_config = dict(consumer_config)
        self.topics = tuple(topics)
        self.pattern = pattern
        self.whole_stream = whole_stream
        self.poll_timeout_s = poll_timeout_s
        self.max_records = max_records
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.probe_interval_s = probe_interval_s
        self.request_timeout_s = request_timeout_s
        self.first_contact = first_contact
        self.clock = clock

        self._consumer: Any = None  # KafkaConsumer, created by the first poll
        self._closed = False
        self._offsets = Offsets(
            on_assigned=on_assigned, on_revoked=on_revoked,
            ignore_committed=ignore_committed or whole_stream,
            auto_offset_reset=self.consumer_config.get("auto_offset_reset", "latest"),
            request_timeout_s=request_timeout_s, hold_assigned=hold_assigned,
        )
        self._health = BrokerHealth(clock, backoff_initial_s, backoff_max_s,
                                    first_contact.uses if first_contact is not None else (),
                                    self.consumer_config.get("group_id"))
        self._subscribed_ms = math.inf  # client metadata time of the subscription
        self._retry_at = -math.inf  # no new consumer / poll before this clock time
        self._probe_at = -math.inf  # next probe of the broker (end offsets)
        self._lag_at = -math.inf
        self.commits = 0
        """Successful commit requests."""
        self.commit_failures = 0
        """Commit requests that failed (broker unreachable, group rebalancing, ...)."""

    # -- state --------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """True when the broker is reachable and this member has partitions assigned."""
        return self.reachable and self._offsets.holds_any

    @property
    def reachable(self) -> bool:
        """What the last interaction with the broker said (see the class docstring)."""
        return self._consumer is not None and self._health.reachable

    @property
    def reconnects(self) -> int:
        """Times the broker became reachable again after a failed interaction."""
        return self._health.reconnects

    @property
    def reachability_changed_at(self) -> float:
        """Clock time of the last change of :attr:`reachable`."""
        return self._health.changed_at

    @property
    def problem(self) -> str | None:
        """Why no records come now, in one line naming the setting to look at (``/readyz``
        shows it); None when ready."""
        return None if self.ready else self._health.problem(
            self.first_contact, self.reachable, self._offsets.missing_topics)

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions currently assigned to this member."""
        return self._offsets.assigned

    @property
    def committed_offsets(self) -> dict[TopicPartition, int]:
        """The offsets this source last committed for its assigned partitions."""
        return self._offsets.committed

    # -- the loop -----------------------------------------------------------------------------

    def poll(self) -> list[Record]:
        """Return the next batch of records (possibly empty); never raises for broker trouble.

        Blocks at most about ``poll_timeout_s``, or ``request_timeout_s`` more when creating
        the consumer or probing the broker. Raises only if the source is closed or
        ``on_assigned`` raised.
        """
        if self._closed:
            raise RuntimeError("KafkaSource is closed")
        if self._health.refused is not None:
            raise self._health.refused
        now = self.clock()
        if now < self._retry_at:
            time.sleep(min(self._retry_at - now, self.poll_timeout_s))
            return []
        if self.first_contact is not None and not self.first_contact.step(self.poll_timeout_s):
            return []
        consumer = self._consumer if self._consumer is not None else self._connect()
        if consumer is None:
            return []
        timeout_s = min(self.poll_timeout_s, HELD_POLL_TIMEOUT_S) if self._offsets.held \
            else self.poll_timeout_s
        try:
            batches = consumer.poll(
                timeout_ms=int(timeout_s * 1000),
                max_records=self.max_records,
            )
        except KafkaError as exc:
            self._failed("poll", exc)
            self._offsets.reraise_hook_error()
            if self._health.refused is not None:
                raise self._health.refused from exc
            return []
        self._offsets.reraise_hook_error()
        records = [
            Record(m.topic, m.partition, m.offset, m.key, m.value, m.timestamp)
            for messages in batches.values()
            for m in messages
        ]
        if records:
            self._health.succeeded()
            self._offsets.follow_lag(consumer, batches)
        elif self.clock() >= self._probe_at:
            self._probe()
        return records

    @property
    def holds_assigned(self) -> bool:
        """Whether new partitions are held until :meth:`release` (``hold_assigned``)."""
        return self._offsets.hold_assigned

    def release(self, offsets: Mapping[TopicPartition, int | None]) -> None:
        """Resume held partitions, each at its offset (None: at ``auto_offset_reset`` with
        ``ignore_committed``, else the group's commit); those revoked meanwhile are ignored.
        No I/O (the client resolves the positions at its next fetch)."""
        if self._consumer is not None:
            self._offsets.release(self._consumer, offsets)

    def hold_all(self) -> None:
        """Hold every assigned partition, and (``hold_assigned``) every one assigned later,
        until the source closes: polls go on, for the group's heartbeats and rebalances, but
        return no record, and wait at most :data:`HELD_POLL_TIMEOUT_S`. The agent's last save
        runs between such polls. No I/O."""
        if self._consumer is not None:
            self._offsets.hold_all(self._consumer)

    def commit(self, offsets: Mapping[TopicPartition, int]) -> bool:
        """Commit ``offsets`` (partition → next offset to read), blocking at most
        ``request_timeout_s``.

        Only partitions assigned to this member are committed (another member owns the
        others now), and only those whose offset changed since this source last committed
        them. Returns True when that is done (or there was nothing to do), False when the
        commit failed (counted in :attr:`commit_failures`; never raised).
        """
        consumer = self._consumer
        changed = self._offsets.to_commit(offsets)
        if consumer is None or not changed or self.whole_stream:
            return True
        try:
            consumer.commit(
                to_kafka_offsets(changed), timeout_ms=int(self.request_timeout_s * 1000)
            )
        except RebalanceInProgressError:
            # The coordinator answered: the group is rebalancing. With cooperative rebalancing
            # the loop goes on reading its kept partitions meanwhile, so this is no outage
            # (it would make /readyz 503 for the whole second round); the next commit
            # carries these offsets or newer ones.
            self.commit_failures += 1
            log.info("commit postponed: the group is rebalancing")
            return False
        except KafkaError as exc:
            self.commit_failures += 1
            self._health.failed("commit", exc, retry=False)
            return False
        self._offsets.record_commit(changed)
        self.commits += 1
        self._health.succeeded()
        return True

    def lag(self, *, refresh: bool = True) -> dict[tuple[str, int], int]:
        """Records behind the end of each assigned partition: ``{(topic, partition): lag}``.

        Lag is the partition's end offset minus this consumer's position, the offset of the
        next record :meth:`poll` will return (records already returned are not counted).
        The end offset is the larger of the broker's ``ListOffsets`` answer and the high
        watermark of the last fetch response (Tansu 0.6 undercounts the former; Kafka gives
        the same for both). A probe (one ``ListOffsets`` request, at most ``request_timeout_s``)
        refreshes it every ``probe_interval_s``, and each poll that returns records as well.
        When the broker is unreachable the last known values are returned, and the refresh
        follows the probes' backoff. ``refresh=False`` never blocks: the cached values.
        Partitions without a known position are left out.
        """
        if refresh and self._consumer is not None and self.clock() >= self._probe_at:
            self._probe()
        return dict(self._offsets.lag)

    def close(self) -> None:
        """Leave the group and close the consumer, without committing; idempotent.

        Bounded by ``request_timeout_s``; never raises for broker trouble.
        """
        if self._closed:
            return
        self._closed = True
        consumer = self._consumer
        if consumer is None:
            return
        try:
            consumer.close(autocommit=False, timeout_ms=int(self.request_timeout_s * 1000))
        except KafkaError as exc:
            log.warning("closing the Kafka consumer failed: %s", exc)
        self._consumer = None
        self._health.reachable = False
        self._offsets.clear()

    def __enter__(self) -> KafkaSource:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        what = f"topics={list(self.topics)}" if self.topics else f"pattern={self.pattern!r}"
        if self.whole_stream:
            return f"KafkaSource({what}, whole_stream=True)"
        return f"KafkaSource({what}, group_id={self.consumer_config['group_id']!r})"

    # -- internals ----------------------------------------------------------------------------

    def _connect(self) -> Any:
        config = dict(self.consumer_config)
        config["enable_auto_commit"] = False
        if self.whole_stream:
            config["group_id"] = None  # no coordinator, no committed offsets to start from
        config.setdefault("reconnect_backoff_ms", int(self.backoff_initial_s * 1000))
        config.setdefault("reconnect_backoff_max_ms", int(self.backoff_max_s * 1000))
        # The constructor blocks until it has bootstrapped, by default for 30 s.
        config.setdefault("bootstrap_timeout_ms", int(self.request_timeout_s * 1000))
        try:
            consumer = finish_interrupted_joins(never_create_topics(KafkaConsumer(**config)))
            self._subscribed_ms = time.monotonic() * 1000  # kafka-python's metadata clock
            listener = Listener(self._offsets, consumer, joined=self._joined)
            if self.whole_stream:
                self._assign_all(consumer)
            elif self.topics:
                consumer.subscribe(topics=list(self.topics), listener=listener)
            else:
                consumer.subscribe(pattern=self.pattern, listener=listener)
        except KafkaError as exc:
            self._failed("connect", exc)
            return None
        log.info("Kafka consumer connected to %s", config.get("bootstrap_servers"))
        self._consumer = consumer
        self._health.succeeded()
        return consumer

    def _probe(self) -> None:
        """Ask the broker for end offsets: refreshes lag and proves (or disproves) reachability."""
        consumer = self._consumer
        if consumer is not None and self.whole_stream:
            self._assign_all(consumer)
        partitions = sorted(self._offsets.assigned)
        now = self.clock()
        if consumer is not None and self.topics and not self.whole_stream:
            self._offsets.check_topics(consumer, self.topics, self._subscribed_ms)
        if consumer is None or not partitions:
            self._offsets.lag, self._lag_at, self._probe_at = {}, now, now + self.probe_interval_s
            return
        try:
            lag = self._offsets.measure_lag(consumer, partitions)
        except KafkaError as exc:
            # Also IllegalStateError when a rebalance took a partition away meanwhile; the
            # next probe will see the new assignment.
            delay = self._health.failed("probe", exc, retry=False)
            self._probe_at = self.clock() + (delay or 0.0)
            return
        self._offsets.lag, self._lag_at = lag, self.clock()
        self._probe_at = self._lag_at + self.probe_interval_s
        self._health.succeeded()
        if self._lag_at - now > SLOW_PROBE_S:
            log.info("the broker took %.2f s to give the end offsets of %d partition(s); the "
                     "loop waited for it (a lag probe, every %g s)", self._lag_at - now,
                     len(partitions), self.probe_interval_s)

    def _assign_all(self, consumer: Any) -> None:
        """Whole-stream mode: assign every known partition of ``topics``, adding new ones."""
        new = self._offsets.assign_all(consumer, self.topics)
        if new:
            self._joined()
            self._offsets.assign(consumer, new)

    def _failed(self, what: str, exc: BaseException) -> None:
        """A failure to retry after the backoff (not a refusal: raised by the next poll)."""
        delay = self._health.failed(what, exc, retry=True)
        if delay is not None:
            self._retry_at = self.clock() + delay

    def _joined(self) -> None:
        """Partitions were assigned (on kafka-python's IO thread, see :class:`Listener`)."""
        self._health.succeeded()  # a completed join is a conversation with the coordinator
        self._probe_at = -math.inf  # measure lag for the new assignment soon
