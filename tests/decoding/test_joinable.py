"""decode_joinable: prediction and label records, every rejection reason, never an exception."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch.core.join import Label, Prediction
from driftwatch.decoding.decoder import REJECTION_REASONS, EventFormat, Rejected
from driftwatch.decoding.joinable import JOIN_REJECTION_REASONS, JoinFormat, decode_joinable

FMT = EventFormat()
ONE_TOPIC = JoinFormat(kind_field="kind")
TWO_TOPICS = JoinFormat()


def decode(obj: Any, kind: str | None = "prediction", join: JoinFormat = TWO_TOPICS,
           timestamp: float | None = 1_700_000_000.0, fmt: EventFormat = FMT) -> Any:
    value = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return decode_joinable(value, b"k", fmt, join, kind, timestamp)  # type: ignore[arg-type]


def test_a_prediction_and_a_label() -> None:
    assert decode({"event_id": "e1", "model": "fraud", "score": 0.7, "prediction": 1,
                   "ts": 5}) == Prediction("e1", "fraud", 0.7, 1, 5.0)
    assert decode({"event_id": 12, "label": True}, kind="label") == Label("12", 1, 1.7e9)
    assert decode({"kind": "label", "event_id": "e1", "label": 0, "ts": "1970-01-01T00:01:00"},
                  kind=None, join=ONE_TOPIC) == Label("e1", 0, 60.0)
    # A label record needs no score, a prediction record no label.
    assert isinstance(decode({"kind": "prediction", "event_id": "e", "score": 1},
                             kind=None, join=ONE_TOPIC), Prediction)
    key_models = EventFormat(model_source="key")
    assert decode({"event_id": "e", "score": 0.1}, fmt=key_models).model == "k"


@pytest.mark.parametrize(("obj", "kind", "reason"), [
    ({"kind": "score", "event_id": "e", "score": 1}, None, "bad_kind"),
    ({"event_id": "e", "score": 1}, None, "bad_kind"),
    ({"kind": 1, "event_id": "e", "score": 1}, None, "bad_kind"),
    ({"score": 1}, "prediction", "missing_field"),
    ({"event_id": "e"}, "prediction", "missing_field"),
    ({"event_id": "e", "score": 1}, "label", "missing_field"),
    ({"event_id": "", "score": 1}, "prediction", "bad_event_id"),
    ({"event_id": 1.5, "score": 1}, "prediction", "bad_event_id"),
    ({"event_id": True, "score": 1}, "prediction", "bad_event_id"),
    ({"event_id": "x" * 201, "score": 1}, "prediction", "bad_event_id"),
    ({"event_id": 10 ** 300, "score": 1}, "prediction", "bad_event_id"),
    ({"event_id": "e", "label": 2}, "label", "bad_label"),
    ({"event_id": "e", "score": "high"}, "prediction", "bad_score"),
    (b'{"event_id": "e", "score": 1e400}', "prediction", "bad_score"),
    (b'{"event_id": "e", "score": NaN}', "prediction", "bad_score"),
    ({"event_id": "e", "score": 0.5, "prediction": 0.5}, "prediction", "bad_prediction"),
    ({"event_id": "e", "label": 1, "ts": 1e12}, "label", "bad_time"),
    ({"event_id": "e", "score": 0.5, "model": ""}, "prediction", "bad_model"),
    ([1, 2], "label", "not_object"),
])
def test_rejections(obj: Any, kind: str | None, reason: str) -> None:
    result = decode(obj, kind=kind, join=ONE_TOPIC if kind is None else JoinFormat())
    assert isinstance(result, Rejected) and result.reason == reason, result
    assert reason in REJECTION_REASONS + JOIN_REJECTION_REASONS


def test_without_any_time_the_record_is_refused() -> None:
    result = decode({"event_id": "e", "label": 1}, kind="label", timestamp=None)
    assert isinstance(result, Rejected) and result.reason == "bad_time"


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.none(), st.binary(max_size=200),
                       st.recursive(st.none() | st.booleans() | st.integers() | st.floats()
                                    | st.text(max_size=10),
                                    lambda c: st.lists(c, max_size=3)
                                    | st.dictionaries(st.sampled_from(
                                        ["kind", "event_id", "score", "label", "ts", "model",
                                         "prediction"]), c, max_size=6),
                                    max_leaves=12).map(lambda o: json.dumps(o).encode())),
       kind=st.sampled_from([None, "prediction", "label"]))
def test_never_raises(value: bytes | None, kind: str | None) -> None:
    result = decode_joinable(value, None, FMT, ONE_TOPIC, kind, None)  # type: ignore[arg-type]
    assert isinstance(result, Prediction | Label | Rejected)
    if isinstance(result, Rejected):
        assert result.reason in REJECTION_REASONS + JOIN_REJECTION_REASONS
