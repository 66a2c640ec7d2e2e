"""Settings of the state topic: the backend ``auto`` resolves to kafka (the join's and the
comparisons' state are in the topic too) unless the agent reads the whole stream, and the
topic name defaults from the group."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from driftwatch.settings import Settings

JOIN = {"enabled": True, "predictions_topic": "p", "labels_topic": "l"}
COMPARISON = {"name": "v2", "model": "churn", "challenger_score_field": "challenger"}


def test_auto_is_kafka_also_with_join_and_comparisons() -> None:
    assert Settings().checkpoint_backend() == "kafka"
    kafka = {"topics": ["p", "l"]}
    assert Settings(kafka=kafka, join=JOIN).checkpoint_backend() == "kafka"
    assert Settings(comparisons=[COMPARISON]).checkpoint_backend() == "kafka"
    assert Settings(checkpoint={"backend": "file"}).checkpoint_backend() == "file"


def test_the_state_topic_defaults_to_the_group_name() -> None:
    assert Settings(kafka={"group_id": "fraud"}).state_topic() == "fraud-state"
    assert Settings(checkpoint={"topic": "mine"}).state_topic() == "mine"


@pytest.mark.parametrize("extra", [{"kafka": {"topics": ["p", "l"]}, "join": JOIN},
                                   {"comparisons": [COMPARISON]}])
def test_backend_kafka_takes_join_and_comparisons(extra: dict) -> None:
    assert Settings(checkpoint={"backend": "kafka"}, **extra).checkpoint_backend() == "kafka"


@pytest.mark.parametrize(("key", "value"), [("max_record_bytes", 100), ("topic_partitions", 0),
                                            ("topic_replication_factor", -2),
                                            ("backend", "disk")])
def test_bad_state_topic_settings_name_the_key(key: str, value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(checkpoint={key: value})
    assert key in str(caught.value)


def test_whole_stream_assignment_keeps_its_state_in_a_file() -> None:
    whole = {"assignment": "all_partitions"}
    assert Settings(kafka=whole).checkpoint_backend() == "file"
    with pytest.raises(ValidationError) as caught:
        Settings(kafka=whole, checkpoint={"backend": "kafka"})
    message = str(caught.value)
    assert "checkpoint.backend" in message and "all_partitions has no group" in message
