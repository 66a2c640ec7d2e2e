"""Settings of the state topic: the backend ``auto`` resolves to kafka (the join's and the
comparisons' state are in the topic too, and whole-stream sidecars keep theirs there), and
the topic name defaults from the group and the model filter."""

from __future__ import annotations

import hashlib
import re

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


def test_whole_stream_sidecars_keep_their_state_in_the_topic() -> None:
    whole = {"assignment": "all_partitions"}
    assert Settings(kafka=whole).checkpoint_backend() == "kafka"
    assert Settings(kafka=whole, checkpoint={"backend": "kafka"}).checkpoint_backend() \
        == "kafka"
    # Except with the join: every replica would write join records beside another's models.
    joined = {"kafka": {**whole, "topics": ["p", "l"]}, "join": JOIN}
    assert Settings(**joined).checkpoint_backend() == "file"
    with pytest.raises(ValidationError) as caught:
        Settings(checkpoint={"backend": "kafka"}, **joined)
    message = str(caught.value)
    assert "checkpoint.backend" in message and "join" in message


def test_the_model_filter_gets_a_state_topic_of_its_own() -> None:
    def topic(*models: str) -> str:
        return Settings(kafka={"group_id": "g"}, events={"model_source": "key",
                                                         "only_models": list(models)}
                        ).state_topic()

    digest = hashlib.sha256(b"a/b\nfraud").hexdigest()[:12]
    assert topic("fraud", "a/b") == topic("a/b", "fraud") == f"g-state-{digest}"
    names = {topic("fraud"), topic("churn"), topic("fraud", "churn"), "g-state"}
    assert len(names) == 4, "each filter (and none) has its own topic"
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", name) for name in names), "legal topic names"
    assert Settings(checkpoint={"topic": "mine"}, events={"model_source": "key",
                                                           "only_models": ["x"]}
                    ).state_topic() == "mine", "an explicit topic wins"
