"""The ``join`` settings section: each bad combination names its key and the reason."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from driftwatch.core.join import Join
from driftwatch.settings import Settings

TWO_TOPICS = {"kafka": {"topics": ["p", "l"]},
              "join": {"enabled": True, "predictions_topic": "p", "labels_topic": "l"}}


def problems(values: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as info:
        Settings.model_validate(values)
    return [(".".join(map(str, e["loc"])), e["msg"]) for e in info.value.errors()]


@pytest.mark.parametrize(("join", "key", "words"), [
    ({"predictions_topic": "p"}, "join.labels_topic", "required"),
    ({"labels_topic": "l"}, "join.predictions_topic", "required"),
    ({"kind_field": "kind", "predictions_topic": "p"}, "join.kind_field", "either"),
    ({"predictions_topic": "p", "labels_topic": "p"}, "join.labels_topic", "differ"),
    ({"kind_field": "k", "label_kind": "prediction"}, "join.label_kind", "differ"),
    ({"kind_field": "k", "max_pending": 0}, "join.max_pending", "greater than or equal"),
    ({"kind_field": "k", "max_age_seconds": 0}, "join.max_age_seconds", "greater than"),
    ({"kind_field": "k", "score_drift": {"reference": "earlier"}},
     "join.score_drift.reference", "frozen"),
    ({"kind_field": "k", "score_drift": {"arl": 1}}, "join.score_drift.arl", "10"),
])
def test_bad_join_settings_name_the_key(join: dict[str, Any], key: str, words: str) -> None:
    found = problems({"kafka": {"topics": ["p", "l"]}, "join": {"enabled": True, **join}})
    assert any(loc == key and words in msg for loc, msg in found), found


def test_join_topics_must_be_consumed() -> None:
    found = problems({**TWO_TOPICS, "kafka": {"topics": ["p"]}})
    assert found == [("join.labels_topic", "'l' is not in kafka.topics, so it would never be "
                                           "read")]


@pytest.mark.parametrize("strategy", ["cooperative-sticky", "roundrobin"])
def test_a_two_topic_join_refuses_assignors_that_split_its_shards(strategy: str) -> None:
    # The join's shard is predictions[p] with labels[p]: only range keeps them together.
    found = problems({**TWO_TOPICS, "kafka": {"topics": ["p", "l"],
                                              "assignment_strategy": strategy}})
    assert found == [("kafka.assignment_strategy",
                      f"{strategy} may give predictions[p] and labels[p] to different "
                      "replicas, which then never join them: with join.predictions_topic and "
                      "join.labels_topic use range")]


def test_range_is_the_default_and_a_one_topic_join_may_assign_cooperatively() -> None:
    assert Settings().kafka.assignment_strategy == "range"  # a rolling upgrade from 0.2
    one_topic = Settings.model_validate({
        "kafka": {"topics": ["t"], "assignment_strategy": "cooperative-sticky"},
        "join": {"enabled": True, "kind_field": "kind"}})  # every partition its own shard
    assert one_topic.kafka.assignment_strategy == "cooperative-sticky"


def test_a_disabled_join_checks_nothing_and_the_environment_enables_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert not Settings.model_validate({"join": {"predictions_topic": "p"}}).join.enabled
    monkeypatch.setenv("DRIFTWATCH_JOIN__ENABLED", "true")
    monkeypatch.setenv("DRIFTWATCH_JOIN__KIND_FIELD", "kind")
    monkeypatch.setenv("DRIFTWATCH_JOIN__MAX_AGE_SECONDS", "inf")
    settings = Settings()
    assert settings.join.enabled and settings.join.kind_field == "kind"
    join = Join(**settings.join.limits())
    assert join.max_age == math.inf and join.max_pending == settings.join.max_pending


def test_the_core_join_bounds_map_to_the_settings_names() -> None:
    # The core names its bound max_age; the setting is max_age_seconds. The mapping is by
    # key, from the core's located error, never from its message.
    from driftwatch.core.config_error import ConfigError
    from driftwatch.settings.common import _core_problems
    from driftwatch.settings.join import _JOIN_KEYS

    with pytest.raises(ConfigError) as info:
        Join(max_age=-1.0)
    (problem,) = _core_problems(info.value, keys=_JOIN_KEYS)
    assert problem["loc"] == ("max_age_seconds",)
    assert "must be a number of seconds > 0" in str(problem["type"])
    assert set(_JOIN_KEYS) <= set(Join.__init__.__code__.co_varnames)
    from driftwatch.settings import JoinSettings

    assert set(_JOIN_KEYS.values()) <= set(JoinSettings.model_fields)
