"""How the agent starts: what it opens, in which order.

:func:`start` opens, each into the agent's exit stack (which closes them in reverse order),
the state topic's producer, the dead-letter and alarm producers, the sinks the ``exporters``
settings enable with the metrics endpoint (:func:`~driftwatch.sinks.build.start_sinks`), and
builds the source, which the agent enters last. The source asks the
agent where each newly assigned partition resumes
(:meth:`~driftwatch.agent.positions.Positions.resume`): at the checkpoint's offset, never at
the group's commit, whose monitor state would be lost.

Nothing here waits for a broker: the Kafka source's first contact
(:class:`~driftwatch.kafka.first_contact.FirstContact`, built by :func:`kafka_source`) checks
the brokers, the security settings and the ACLs of every topic the agent uses
(:func:`kafka_uses`) on a worker thread, and creates the state topic once they answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass

from driftwatch.agent.publish import SnapshotPublisher
from driftwatch.kafka.assignors import assignors
from driftwatch.kafka.first_contact import FirstContact, TopicUse
from driftwatch.kafka.handshake import Handshake
from driftwatch.kafka.offsets import OnAssigned, OnRevoked
from driftwatch.kafka.producers import AlarmPublisher, DeadLetter, producer_config
from driftwatch.kafka.source import KafkaSource, Record
from driftwatch.pipeline import DeadLetterSink
from driftwatch.settings import Settings
from driftwatch.sinks.alarms import AlarmLog
from driftwatch.sinks.build import start_sinks
from driftwatch.sinks.prometheus.server import MetricsServer
from driftwatch.sinks.sink import Published
from driftwatch.sources import Source, SourceContext
from driftwatch.sources.registry import open_source
from driftwatch.state.checkpoint import CheckpointStore
from driftwatch.state.topic import StateSaveError, StateTopicStore

log = logging.getLogger(__name__)

__all__ = ["Opened", "SourceFactory", "kafka_source", "kafka_uses", "start"]

SourceFactory = Callable[[OnAssigned], Source[Record]]
"""Builds the agent's source, given the hook to call with newly assigned partitions (which
answers where each resumes: the checkpoint's offsets)."""

PROXY_OPTIONS = ("proxy_url", "socks5_proxy")
"""kafka-python options that route its connections through a proxy, which the first
contact's own connections would not take."""


@dataclass(frozen=True)
class Opened:
    """What :func:`start` opened: the source (built, not yet entered), where dead letters and
    alarms go (None: nowhere, and the agent's log only), and the ``/metrics`` server."""

    source: Source[Record]
    dead_letter: DeadLetterSink | None
    alarm_publisher: AlarmPublisher | None
    alarms: AlarmLog | None  # None: the agent's own log, without a topic
    metrics_server: MetricsServer


def start(settings: Settings, resources: ExitStack, *,
          store: CheckpointStore | StateTopicStore | None, publisher: SnapshotPublisher,
          comparisons: bool, on_assigned: OnAssigned, on_revoked: OnRevoked | None,
          source: SourceFactory | None = None, dead_letter: DeadLetterSink | None = None
          ) -> Opened:
    """Start the state store, the producers, the sinks and the metrics endpoint, each entered into
    ``resources`` (which closes them in reverse order), and build the source.

    ``publisher`` holds the snapshot ``/metrics`` and ``/readyz`` show (``comparisons``: its
    comparison snapshots are exported too); ``on_assigned`` and ``on_revoked`` are the
    source's partition hooks; ``source`` and ``dead_letter`` replace the Kafka source and
    dead-letter producer the settings describe (see :class:`~driftwatch.agent.loop.Agent`).
    """
    if isinstance(store, StateTopicStore):  # closed after the source, whose revoke saves
        resources.callback(store.close)
    kafka = settings.kafka
    consumer_config = kafka.consumer_config()
    producer_options = producer_config(consumer_config)
    if dead_letter is None and kafka.dead_letter_topic:
        dead_letter = resources.enter_context(
            DeadLetter(producer_options, kafka.dead_letter_topic))
    alarm_publisher = alarms = None
    if kafka.alarms_topic:
        alarm_publisher = resources.enter_context(
            AlarmPublisher(producer_options, kafka.alarms_topic))
        alarms = AlarmLog(logging.getLogger("driftwatch.alarms"), alarm_publisher.publish)
    built = source(on_assigned) if source is not None else open_source(
        settings.source.kind, settings.source.options,
        SourceContext(on_assigned, lambda: kafka_source(settings, store, on_assigned,
                                                        on_revoked)))
    metrics_server = start_sinks(Published(
        snapshot=lambda: publisher.snapshot,
        comparisons=(lambda: publisher.comparisons) if comparisons else None,
        ready=lambda: publisher.snapshot.ready,
        not_ready_reasons=lambda: publisher.snapshot.operations.not_ready_text(),
    ), settings, resources)
    return Opened(built, dead_letter, alarm_publisher, alarms, metrics_server)


def kafka_source(settings: Settings, store: CheckpointStore | StateTopicStore | None,
                 on_assigned: OnAssigned, on_revoked: OnRevoked | None) -> KafkaSource:
    """The source the ``kafka`` settings describe, resuming each partition where
    ``on_assigned`` says (the agent's checkpoint, never the group's commit), after a first
    contact that checks every topic the agent uses and creates the state topic (when
    ``store`` is one). With the state topic, new partitions are held (``hold_assigned``)
    while the agent restores them between polls (:mod:`driftwatch.agent.handover`). The
    group's assignor is ``kafka.assignment_strategy``'s (:mod:`driftwatch.kafka.assignors`)."""
    kafka = settings.kafka
    config = kafka.consumer_config()
    config["partition_assignment_strategy"] = assignors(kafka.assignment_strategy)
    whole_stream = kafka.assignment == "all_partitions"
    then = None
    if isinstance(store, StateTopicStore):
        def then(_: Handshake) -> None:
            ensure_state_topic(store)
    first_contact: FirstContact | None = FirstContact(
        kafka.bootstrap_servers, config, uses=kafka_uses(settings, store),
        group=None if whole_stream else kafka.group_id,
        timeout_s=kafka.request_timeout_seconds, then=then,
        backoff_initial_s=kafka.reconnect_backoff_initial_seconds,
        backoff_max_s=kafka.reconnect_backoff_max_seconds)
    if any(config.get(key) for key in PROXY_OPTIONS):
        # The handshakes connect directly; through a proxy they would find nothing.
        log.info("the brokers are reached through a proxy (kafka.client_options): the first "
                 "contact's checks are skipped")
        first_contact = None
    return KafkaSource(
        config,
        topics=kafka.topics or (),
        pattern=kafka.topic_pattern,
        on_assigned=on_assigned,
        on_revoked=on_revoked,
        ignore_committed=True,
        whole_stream=whole_stream,
        hold_assigned=isinstance(store, StateTopicStore),
        poll_timeout_s=kafka.poll_timeout_ms / 1000,
        backoff_initial_s=kafka.reconnect_backoff_initial_seconds,
        backoff_max_s=kafka.reconnect_backoff_max_seconds,
        probe_interval_s=settings.readiness.probe_interval_seconds,
        request_timeout_s=kafka.request_timeout_seconds,
        first_contact=first_contact,
    )


def kafka_uses(settings: Settings, store: CheckpointStore | StateTopicStore | None
               ) -> tuple[TopicUse, ...]:
    """Every topic the agent uses, with the ACL operations it performs on it and the
    setting that names it (docs/kafka-security.md lists the same)."""
    kafka = settings.kafka
    uses = [TopicUse(topic, "kafka.topics", frozenset({"READ"}), "input")
            for topic in kafka.topics or ()]
    if isinstance(store, StateTopicStore):
        uses.append(TopicUse(settings.state_topic(), "checkpoint.topic",
                             frozenset({"READ", "WRITE"}), "state"))
    for topic, key in ((kafka.dead_letter_topic, "kafka.dead_letter_topic"),
                       (kafka.alarms_topic, "kafka.alarms_topic")):
        if topic is not None:
            uses.append(TopicUse(topic, key, frozenset({"WRITE"}), "output"))
    return tuple(uses)


def ensure_state_topic(store: StateTopicStore) -> None:
    """Create the state topic at first contact (or check the one there); one the brokers
    refuse to create is a :class:`~driftwatch.kafka.first_contact.BrokerRefused`, one not
    compacted a ``CheckpointSettingError``. Other failures are retried at the first save."""
    try:
        store.ensure_topic()
    except StateSaveError as error:
        log.warning("%s; trying again at the first save", error)
