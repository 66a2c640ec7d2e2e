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
