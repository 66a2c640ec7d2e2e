"""Record decoding: every rejection reason, the label/score/time/model rules, and "never raises"."""

from __future__ import annotations

import doctest
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftwatch.core.events import Event
from driftwatch.io import decode as decode_module
from driftwatch.io.decode import (
    MAX_MODEL_ID_LENGTH,
    REJECTION_REASONS,
    Decoded,
    EventFormat,
    Rejected,
    decode,
)

FMT = EventFormat()


def dumps(obj: object) -> bytes:
    return json.dumps(obj).encode()


def reason(value: bytes | None, key: bytes | None = None, fmt: EventFormat = FMT) -> str:
    result = decode(value, key, fmt)
    assert isinstance(result, Rejected), result
    assert result.reason in REJECTION_REASONS
    return result.reason


def decoded(value: bytes, key: bytes | None = None, fmt: EventFormat = FMT) -> Decoded:
    result = decode(value, key, fmt)
    assert isinstance(result, Decoded), result
    return result


def test_docstring_examples() -> None:
    assert doctest.testmod(decode_module).failed == 0


def test_a_full_record() -> None:
    record = {"model": "churn", "label": 1, "score": 0.75, "prediction": 0, "ts": 1700000000.5}
    assert decoded(dumps(record)) == Decoded("churn", Event(1, 0.75, 0, 1700000000.5))


def test_extra_fields_are_ignored_and_optional_ones_default() -> None:
    result = decoded(dumps({"label": 0, "score": -3, "other": [1, 2], "prediction": None}))
    assert result == Decoded("default", Event(0, -3.0, None, None))


def test_too_large_is_checked_before_parsing() -> None:
    fmt = EventFormat(max_record_bytes=10)
    assert reason(b"x" * 11, fmt=fmt) == "too_large"  # not "not_json": never parsed
    assert reason(b"{" * 11, fmt=fmt) == "too_large"
    assert reason(b"x" * 10, fmt=fmt) == "not_json"


@pytest.mark.parametrize("value", [None, b""])
def test_empty(value: bytes | None) -> None:
    assert reason(value) == "empty"


@pytest.mark.parametrize(
    "value", [b"{", b"label=1", b"\xff\xfe\x00", b"{'label': 1}", b"[" * 100_000, b"   "]
)
def test_not_json(value: bytes) -> None:
    assert reason(value) == "not_json"


@pytest.mark.parametrize("value", [b"[1, 0.5]", b"1", b'"label"', b"null", b"true"])
def test_not_object(value: bytes) -> None:
    assert reason(value) == "not_object"


def test_missing_field_names_the_field() -> None:
    for record, field in [({"score": 0.5}, "label"), ({"label": 1}, "score")]:
        result = decode(dumps(record), None, FMT)
        assert isinstance(result, Rejected)
        assert result.reason == "missing_field"
        assert repr(field) in result.detail


@pytest.mark.parametrize(("label", "y_true"), [(1, 1), (0, 0), (True, 1), (False, 0)])
def test_default_labels(label: object, y_true: int) -> None:
    assert decoded(dumps({"label": label, "score": 0.5})).event.y_true == y_true


@pytest.mark.parametrize("label", [1.0, 0.0, 7, -1, "1", "true", None, [1], {"v": 1}])
def test_bad_label(label: object) -> None:
    assert reason(dumps({"label": label, "score": 0.5})) == "bad_label"


def test_string_classes_match_exactly() -> None:
    fmt = EventFormat(positive_label="fraud", negative_label="legit")
    assert decoded(dumps({"label": "fraud", "score": 2}), fmt=fmt).event.y_true == 1
    assert decoded(dumps({"label": "legit", "score": 2}), fmt=fmt).event.y_true == 0
    for label in ["Fraud", 1, True, "", None]:
        assert reason(dumps({"label": label, "score": 2}), fmt=fmt) == "bad_label"


def test_integer_classes_other_than_one_and_zero() -> None:
    fmt = EventFormat(positive_label=2, negative_label=5)
    assert decoded(dumps({"label": 5, "score": 1}), fmt=fmt).event.y_true == 0
    assert reason(dumps({"label": True, "score": 1}), fmt=fmt) == "bad_label"


@pytest.mark.parametrize(
    "raw",
    [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"true", b"false", b'"0.5"', b"null", b"[]"],
)
def test_bad_score(raw: bytes) -> None:
    assert reason(b'{"label": 1, "score": ' + raw + b"}") == "bad_score"


def test_scores_need_not_be_probabilities() -> None:
    assert decoded(dumps({"label": 1, "score": -12345})).event.y_score == -12345.0


@pytest.mark.parametrize("prediction", [0.0, 2, "1", [0]])
def test_bad_prediction(prediction: object) -> None:
    assert reason(dumps({"label": 1, "score": 0.5, "prediction": prediction})) == "bad_prediction"


def test_prediction_uses_the_configured_classes() -> None:
    fmt = EventFormat(positive_label="yes", negative_label="no")
    result = decoded(dumps({"label": "yes", "score": 0.1, "prediction": "no"}), fmt=fmt)
    assert result.event.y_pred == 0


@pytest.mark.parametrize(
    ("ts", "seconds"),
    [
        (1700000000, 1700000000.0),
        (0.5, 0.5),
        ("2024-01-01T00:00:00Z", 1704067200.0),
        ("2024-01-01T01:00:00+01:00", 1704067200.0),
        ("2024-01-01T00:00:00", 1704067200.0),  # naive is UTC
    ],
)
def test_times(ts: object, seconds: float) -> None:
    assert decoded(dumps({"label": 1, "score": 0.5, "ts": ts})).event.ts == seconds


@pytest.mark.parametrize(
    "raw", [b"NaN", b"Infinity", b"1700000000000", b"1e400", b"true", b'"yesterday"', b"[]"]
)
def test_bad_time(raw: bytes) -> None:
    # 1700000000000 is milliseconds: refused rather than read as the year 55 800.
    assert reason(b'{"label": 1, "score": 0.5, "ts": ' + raw + b"}") == "bad_time"


def test_model_from_field_falls_back_to_the_constant() -> None:
    fmt = EventFormat(model_constant="solo")
    assert decoded(dumps({"label": 1, "score": 0}), fmt=fmt).model == "solo"
    assert decoded(dumps({"label": 1, "score": 0, "model": None}), fmt=fmt).model == "solo"
    assert decoded(dumps({"label": 1, "score": 0, "model": "a"}), fmt=fmt).model == "a"


@pytest.mark.parametrize("model", ["", 3, True, ["a"], "m" * (MAX_MODEL_ID_LENGTH + 1)])
def test_bad_model_field(model: object) -> None:
    assert reason(dumps({"label": 1, "score": 0, "model": model})) == "bad_model"


def test_model_from_key() -> None:
    fmt = EventFormat(model_source="key")
    value = dumps({"label": 1, "score": 0, "model": "ignored"})
    assert decoded(value, key="modèle".encode(), fmt=fmt).model == "modèle"
    for key in [None, b"", b"\xff"]:
        assert reason(value, key=key, fmt=fmt) == "bad_model"


def test_model_constant_ignores_field_and_key() -> None:
    fmt = EventFormat(model_source="constant", model_constant="sidecar")
    value = dumps({"label": 1, "score": 0, "model": ""})
    assert decoded(value, key=b"\xff", fmt=fmt).model == "sidecar"


def test_first_failing_check_wins() -> None:
    assert reason(dumps({"label": 7, "score": "x", "model": ""})) == "bad_label"
    assert reason(dumps({"label": 1, "score": "x", "model": ""})) == "bad_score"


def test_detail_is_bounded() -> None:
    result = decode(dumps({"label": "x" * 10_000, "score": 0}), None, FMT)
    assert isinstance(result, Rejected)
    assert len(result.detail) < 200


def test_utf16_json_is_accepted() -> None:
    # json.loads detects UTF-16/32 from the first bytes; a producer may well send it.
    value = json.dumps({"label": 1, "score": 0.5}).encode("utf-16")
    assert decoded(value).event == Event(1, 0.5)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
formats = st.builds(
    EventFormat,
    model_source=st.sampled_from(["field", "key", "constant"]),
    positive_label=st.sampled_from([1, True, "pos"]),
    negative_label=st.sampled_from([0, False, "neg"]),
    max_record_bytes=st.integers(0, 200),
)


@settings(max_examples=500)
@given(value=st.none() | st.binary(max_size=300), key=st.none() | st.binary(max_size=8))
def test_arbitrary_bytes_never_raise(value: bytes | None, key: bytes | None) -> None:
    result = decode(value, key, FMT)
    assert isinstance(result, Decoded | Rejected)
    if isinstance(result, Rejected):
        assert result.reason in REJECTION_REASONS


# too_slow: the first draw of the recursive strategy occasionally takes over a second on a
# busy 2-core runner; the run as a whole takes about two seconds.
@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(
    fields=st.dictionaries(
        st.sampled_from(["label", "score", "prediction", "ts", "model", "x"]), json_values
    ),
    key=st.none() | st.binary(max_size=8),
    fmt=formats,
)
def test_arbitrary_objects_never_raise(
    fields: dict[str, object], key: bytes | None, fmt: EventFormat
) -> None:
    result = decode(json.dumps(fields).encode(), key, fmt)
    if isinstance(result, Decoded):
        assert result.event.y_true in (0, 1)
        assert result.model
    else:
        assert result.reason in REJECTION_REASONS
