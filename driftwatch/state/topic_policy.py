"""The state topic's cleanup policy: what the agent creates it with, and the check of one
that exists already.

The state topic must be compacted: the broker then keeps the last record per key (the newest
state of each model) and deletes the rest, so a restore reads about one copy of the state
and no state ever ages out. A topic of that name may exist already, made by hand, by a
script or by Apache Kafka's topic auto-creation, with the broker's default policy
(``delete``). On it a save appends instead of replacing: every restore (each start, each
rebalance) reads every save of the retention period (7 days by default, up to 120 000 saves
at the default 5 s interval), and once an agent has been stopped for ``retention.ms`` its
states are deleted and its partitions start without them. Both are silent, so such a topic
is refused at start with the fix (docs/brokers.md).
"""

from __future__ import annotations

import logging
from typing import Any

import kafka.errors as kafka_errors  # type: ignore[import-untyped]
from kafka.admin import ConfigResource, ConfigResourceType  # type: ignore[import-untyped]
from kafka.errors import KafkaError

from driftwatch.kafka.first_contact import state_topic_refused
from driftwatch.state.checkpoint import CheckpointSettingError

__all__ = ["TOPIC_CONFIG", "check_compacted", "create_or_check"]

log = logging.getLogger(__name__)

TOPIC_CONFIG = {"cleanup.policy": "compact"}
"""The state topic's configuration when the agent creates it."""


def create_or_check(admin: Any, topic: str, *, partitions: int, replication_factor: int,
                    timeout_ms: int) -> bool:
    """Create ``topic`` compacted through ``admin``, or :func:`check_compacted` the one that
    exists (which needs no CREATE permission); True when it was created.

    Raises:
        BrokerRefused: the brokers refuse to create it (no CREATE permission).
        CheckpointSettingError: the topic exists uncompacted, or the broker predates
            Kafka 2.4 and the replication factor is -1 (``key`` names the setting).
        KafkaError: the brokers could not be asked, or refused the topic otherwise.
    """
    try:
        admin.create_topics({topic: {
            "num_partitions": partitions, "replication_factor": replication_factor,
            "configs": dict(TOPIC_CONFIG)}}, timeout_ms=timeout_ms)
        return True
    except kafka_errors.TopicAlreadyExistsError:
        pass
    except kafka_errors.AuthorizationError as error:  # no CREATE: there already?
        if topic not in admin.list_topics():
            raise state_topic_refused(topic, "CREATE", error) from error
    except kafka_errors.IncompatibleBrokerVersion as error:  # -1 before Kafka 2.4
        raise CheckpointSettingError(("checkpoint", "topic_replication_factor"),
            f"{replication_factor} cannot create state topic {topic}: {error} (-1, the "
            "broker's default, needs Kafka 2.4+; give the factor, e.g. 3)") from error
    check_compacted(admin, topic)
    return False


def check_compacted(admin: Any, topic: str) -> None:
    """Refuse the existing ``topic`` if its ``cleanup.policy`` lacks ``compact``, asking the
    brokers through ``admin`` (a ``KafkaAdminClient``).

    ``delete`` alone raises :class:`~driftwatch.state.checkpoint.CheckpointSettingError` naming
    ``checkpoint.topic`` and the command that fixes the topic. ``compact,delete`` keeps the
    last state per key but still deletes it after ``retention.ms``: accepted, with a warning
    naming it. A broker that describes no configuration (Tansu 0.6; one that denies
    DescribeConfigs, whose per-topic error kafka-python drops) cannot be checked: logged,
    accepted.
    """
    try:  # every key: Tansu 0.6 drops the connection when asked for named ones
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
    except KafkaError as error:
        log.info("state topic %s: its configuration could not be described (%s); its "
                 "cleanup.policy is not checked", topic, error)
        return
    configs = described.get("topic", {}).get(topic, {})
    policy = (configs.get("cleanup.policy") or {}).get("value")
    if policy is None:
        log.info("state topic %s: the broker describes no configuration for it; its "
                 "cleanup.policy is not checked", topic)
        return
    policies = {part.strip() for part in policy.split(",")}
    if "compact" not in policies:
        raise CheckpointSettingError(("checkpoint", "topic"),
            f"state topic {topic} exists with cleanup.policy={policy}, not compact: the "
            "broker would delete saved states after retention.ms and every restore would "
            "read every save; make it compacted (kafka-configs.sh --alter --entity-type "
            f"topics --entity-name {topic} --add-config cleanup.policy=compact) or name a "
            "topic the agent may create")
    if "delete" in policies:
        retention = (configs.get("retention.ms") or {}).get("value")
        log.warning("state topic %s has cleanup.policy=%s: a state not saved for "
                    "retention.ms (%s ms) is deleted, so an agent stopped that long restarts "
                    "its partitions without their state", topic, policy, retention)
