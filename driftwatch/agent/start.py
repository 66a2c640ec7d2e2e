"""How the agent starts: what it opens, in which order, and where each partition resumes.

:func:`start` restores the checkpoint and then opens, each into the agent's exit stack (which
closes them in reverse order), the state topic's producer, the dead-letter and alarm
producers, the sinks the ``exporters`` settings enable with the metrics endpoint
(:func:`~driftwatch.sinks.build.start_sinks`), and the source. The source asks
:func:`resume_offsets` where each newly assigned partition resumes: at the checkpoint's
offset, never at the group's commit, whose monitor state would be lost.

Nothing here waits for a broker: the Kafka source's first contact
(:class:`~driftwatch.kafka.first_contact.FirstContact`, built by :func:`kafka_source`) checks
the brokers, the security settings and the ACLs of every topic the agent uses
(:func:`kafka_uses`) on a worker thread, and creates the state topic once they answer.
"""

from __future__ import annotations

import logging
from contextlib import ExitStack
from typing import TYPE_CHECKING

from driftwatch.agent.saved_state import restore_partitions
from driftwatch.kafka.first_contact import FirstContact, TopicUse
from driftwatch.kafka.handshake import Handshake
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.producers import AlarmPublisher, DeadLetter, producer_config
from driftwatch.kafka.source import KafkaSource, Record
from driftwatch.pipeline import Source
from driftwatch.sinks.alarms import AlarmLog
from driftwatch.sinks.build import start_sinks
from driftwatch.sinks.sink import Published
from driftwatch.state.topic import StateSaveError, StateTopicStore

if TYPE_CHECKING:
    from driftwatch.agent.loop import Agent

log = logging.getLogger(__name__)

__all__ = ["kafka_source", "kafka_uses", "resume_offsets", "start"]

PROXY_OPTIONS = ("proxy_url", "socks5_proxy")
"""kafka-python options that route its connections through a proxy, which the first
contact's own connections would not take."""


def start(agent: Agent, resources: ExitStack) -> Source[Record]:
    """Restore the checkpoint, then start the state store, the producers, the sinks with
    the metrics endpoint, and the source, each entered into ``resources`` (which closes them
    in reverse order: the source first, without committing); returns the started source."""
    agent.restore()
    store = agent.checkpointer.store
    if isinstance(store, StateTopicStore):  # closed after the source, whose revoke saves
        resources.callback(store.close)
    kafka = agent.settings.kafka
    consumer_config = kafka.consumer_config()
    producer_options = producer_config(consumer_config)
    if agent._dead_letter_sink is not None:
        agent.dead_letter = agent._dead_letter_sink
    elif kafka.dead_letter_topic:
        agent.dead_letter = resources.enter_context(
            DeadLetter(producer_options, kafka.dead_letter_topic))
    if kafka.alarms_topic:
        publisher = agent.alarm_publisher = resources.enter_context(
            AlarmPublisher(producer_options, kafka.alarms_topic))
        agent.alarms = AlarmLog(logging.getLogger("driftwatch.alarms"), publisher.publish)
    source = agent.source = agent._source_factory(agent._on_assigned) \
        if agent._source_factory is not None else kafka_source(agent)
    agent.metrics_server = start_sinks(Published(
        snapshot=lambda: agent.snapshot,
        comparisons=(lambda: agent._comparison_snapshots) if agent.comparisons else None,
        ready=lambda: agent.ready,
        not_ready_reasons=lambda: agent.snapshot.operations.not_ready_text(),
    ), agent.settings, resources)
    return resources.enter_context(source)


def kafka_source(agent: Agent) -> KafkaSource:
    """The source the ``kafka`` settings describe, resuming each partition where the agent's
    checkpoint says (never at the group's commit), after a first contact that checks every
    topic the agent uses and creates the state topic."""
    kafka = agent.settings.kafka
    config = kafka.consumer_config()
    whole_stream = kafka.assignment == "all_partitions"
    store = agent.checkpointer.store
    then = None
    if isinstance(store, StateTopicStore):
        def then(_: Handshake) -> None:
            ensure_state_topic(store)
    first_contact: FirstContact | None = FirstContact(
        kafka.bootstrap_servers, config, uses=kafka_uses(agent),
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
        on_assigned=agent._on_assigned,
        on_revoked=agent._on_revoked if agent.partitioned is not None else None,
        ignore_committed=True,
        whole_stream=whole_stream,
        poll_timeout_s=kafka.poll_timeout_ms / 1000,
        backoff_initial_s=kafka.reconnect_backoff_initial_seconds,
        backoff_max_s=kafka.reconnect_backoff_max_seconds,
        probe_interval_s=agent.settings.readiness.probe_interval_seconds,
        request_timeout_s=kafka.request_timeout_seconds,
        first_contact=first_contact,
    )


def kafka_uses(agent: Agent) -> tuple[TopicUse, ...]:
    """Every topic the agent uses, with the ACL operations it performs on it and the
    setting that names it (docs/kafka-security.md lists the same)."""
    settings = agent.settings
    kafka = settings.kafka
    uses = [TopicUse(topic, "kafka.topics", frozenset({"READ"}), "input")
            for topic in kafka.topics or ()]
    if isinstance(agent.checkpointer.store, StateTopicStore):
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


def resume_offsets(agent: Agent, partitions: set[TopicPartition]
                   ) -> dict[TopicPartition, int]:
    """Where each newly assigned partition resumes: the checkpoint's offset (restored first
    from the state topic when that is the store); one it does not cover is left to
    ``kafka.auto_offset_reset`` and logged."""
    # Runs on kafka-python's IO thread while the loop is blocked in poll: a plain read.
    if agent.partitioned is not None:
        restore_partitions(agent, partitions)
    known = {tp: agent._positions[tp] for tp in partitions if tp in agent._positions}
    unknown = sorted(partitions - known.keys())
    if unknown:
        reset = agent.settings.kafka.auto_offset_reset
        where = "the beginning of the retained log" if reset == "earliest" else \
            "the end of the log"
        level = logging.WARNING if agent._restored else logging.INFO
        log.log(level, "%d partition(s) not covered by the checkpoint: %s; reading them "
                "from %s (kafka.auto_offset_reset=%s), never from the group's committed "
                "offset", len(unknown), ", ".join(f"{t}[{p}]" for t, p in unknown),
                where, reset)
    return known
