"""Record decoding: every rejection reason, the label/score/time/model rules, and "never raises"."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftwatch.core.events import Event
from driftwatch.decoding import decoder as decode_module
from driftwatch.decoding.decoder import (
    MAX_DETAIL_CHARS,
    MAX_MODEL_ID_LENGTH,
    REJECTION_REASONS,
    Decoded,
    EventFormat,
    Rejected,
    decode,
    model_id_problem,
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


def safe_detail(detail: str) -> bool:
    """What a log line or a dead-letter header can carry as is: short printable ASCII."""
    return len(detail) <= MAX_DETAIL_CHARS and detail.isascii() and detail.isprintable()


@pytest.mark.parametrize(
    "value",
    [
        b'{"label": "line1\\nFAKE LOG LINE\\u001b[31m", "score": 0}',  # newline, terminal escape
        '{"label": "\u202eevil\u00e9", "score": 0}'.encode(),  # bidi override, non-ASCII
        b'{"label": 1, "score": 0, "model": "\\ud800"}',  # a lone surrogate
        b'{"label": 1, "score": 0, "model": "' + b"\xed\xa0\x80" + b'"}',  # its raw UTF-8 form
        b'{"label": 1, "score": ' + b"[" * 900 + b"]" * 900 + b"}",  # nested, under the limit
        b'{"label": 1, "score": {"' + b"k" * 5000 + b'": 1}}',
        b'{"label": 1, "score": 1' + b"0" * 4000 + b"}",  # a 4001-digit integer
    ],
)
def test_detail_is_escaped_and_bounded_whatever_the_content(value: bytes) -> None:
    fmt = EventFormat(label_field="label\n\x1b" * 40, score_field="label")  # long, hostile names
    for f in (FMT, fmt):
        result = decode(value, None, f)
        assert isinstance(result, Rejected), result
        assert safe_detail(result.detail), result.detail


@pytest.mark.parametrize("digits", [310, 400, 4300])
def test_huge_integer_score_is_bad_score_not_an_exception(digits: int) -> None:
    # The record of the crash loop: float() of it raises OverflowError.
    value = b'{"model":"m","label":1,"score":1' + b"0" * (digits - 1) + b"}"
    result = decode(value, None, FMT)
    assert isinstance(result, Rejected) and result.reason == "bad_score"
    assert f"about {digits} digits" in result.detail


def test_integer_beyond_the_conversion_limit_is_not_json() -> None:
    # json refuses integer literals of more than 4300 digits (CVE-2020-10735's limit).
    assert reason(b'{"label":1,"score":1' + b"0" * 4400 + b"}") == "not_json"


def test_huge_integers_elsewhere() -> None:
    huge = b"1" + b"0" * 400
    assert reason(b'{"label":' + huge + b',"score":1}') == "bad_label"
    assert reason(b'{"label":1,"score":1,"ts":' + huge + b"}") == "bad_time"
    assert reason(b'{"label":1,"score":1,"prediction":' + huge + b"}") == "bad_prediction"
    assert reason(b'{"label":1,"score":1,"model":' + huge + b"}") == "bad_model"


def test_deep_nesting_is_not_json_and_moderate_nesting_is_a_field_error() -> None:
    assert reason(b'{"label": 1, "score": ' + b"[" * 100_000 + b"]" * 100_000 + b"}") \
        == "not_json"
    assert reason(b'{"label": 1, "score": ' + b"[" * 900 + b"]" * 900 + b"}") == "bad_score"
    assert reason(b'{"label": 1, "score": 1, "model": ' + b'{"a":' * 900 + b"1" + b"}" * 900
                  + b"}") == "bad_model"


@pytest.mark.parametrize(
    "model",
    [
        "\ud800",  # lone high surrogate
        "ok\udfff",  # lone low surrogate
        "a\nb",  # control characters
        "tab\t",
        "nul\x00",
        "esc\x1b[0m",
        "del\x7f",
        "c1\x85",
        "line\u2028sep",  # line and paragraph separators
        "zero\u200bwidth",  # invisible format characters
        "\u202eright-to-left",
        "private\ue000",
        "\ufeff",
    ],
)
def test_model_ids_must_be_printable_text(model: str) -> None:
    assert model_id_problem(model) is not None
    value = json.dumps({"label": 1, "score": 0, "model": model}).encode()  # \\u escapes
    result = decode(value, None, FMT)
    assert isinstance(result, Rejected) and result.reason == "bad_model", result
    assert safe_detail(result.detail)
    if "\ud800" not in model and "\udfff" not in model:  # keys are real UTF-8: no surrogates
        fmt = EventFormat(model_source="key")
        assert reason(dumps({"label": 1, "score": 0}), key=model.encode(), fmt=fmt) \
            == "bad_model"


@pytest.mark.parametrize(
    "model", ["churn", "fraud-v2.1/eu", "modèle", "模型", "a b", "🙂", "x" * 200]
)
def test_valid_model_ids(model: str) -> None:
    assert model_id_problem(model) is None
    assert decoded(dumps({"label": 1, "score": 0, "model": model})).model == model
    # What passes can be a Prometheus label value and a checkpoint key: UTF-8 round trip.
    assert model.encode("utf-8").decode("utf-8") == model


def test_model_id_length_is_configurable() -> None:
    fmt = EventFormat(max_model_id_length=5, model_constant="solo")
    assert decoded(dumps({"label": 1, "score": 0, "model": "abcde"}), fmt=fmt).model == "abcde"
    result = decode(dumps({"label": 1, "score": 0, "model": "abcdef"}), None, fmt)
    assert isinstance(result, Rejected) and result.reason == "bad_model"
    assert "6 characters, over 5" in result.detail
    with pytest.raises(ValueError, match="model_constant"):
        EventFormat(max_model_id_length=3)  # the default constant, "default", is 7 long
    with pytest.raises(ValueError, match="model_constant"):
        EventFormat(model_constant="a\nb")


def test_an_unforeseen_exception_becomes_an_undecodable_rejection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(value: object, fmt: EventFormat) -> int | None:
        raise RuntimeError("a bug\nwith a newline")

    monkeypatch.setattr(decode_module, "_as_class", broken)
    result = decode(dumps({"label": 1, "score": 0.5}), None, FMT)
    assert isinstance(result, Rejected)
    assert result.reason == "undecodable"
    assert "RuntimeError" in result.detail and safe_detail(result.detail)
    monkeypatch.setattr(decode_module, "_as_class", lambda value, fmt: (_ for _ in ()).throw(
        RecursionError()))
    result = decode(dumps({"label": 1, "score": 0.5}), None, FMT)
    assert isinstance(result, Rejected) and result.reason == "undecodable"


def test_the_agent_counts_undecodable_records(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    from driftwatch.agent.loop import Agent
    from driftwatch.kafka.source import Record
    from driftwatch.settings import Settings

    agent = Agent(Settings(checkpoint={"enabled": False}))
    monkeypatch.setattr(decode_module, "_as_class", lambda value, fmt: 1 / 0)
    # An ISO-8601 time: a record the fast decoder leaves to decode() (a plain one it takes).
    value = dumps({"label": 1, "score": 0.5, "ts": "2024-01-01T00:00:00Z"})
    agent.process(Record("events", 0, 7, None, value, 0))
    assert agent.rejections.rejected["undecodable"] == 1
    assert agent.positions.offsets == {("events", 0): 8}  # skipped, not retried for ever


STRING_FMT = EventFormat(numeric_string_scores=True)


@pytest.mark.parametrize(
    ("score", "value"),
    [("0.83", 0.83), ("1", 1.0), ("-3", -3.0), ("+0.5", 0.5), (".5", 0.5), ("5.", 5.0),
     ("8.3E-7", 8.3e-7), ("1e3", 1000.0), ("0.830000000000000000000000", 0.83),
     ("00.25", 0.25), ("1e-400", 0.0)],
)
def test_numeric_string_scores_when_enabled(score: str, value: float) -> None:
    record = dumps({"label": 1, "score": score})
    assert decoded(record, fmt=STRING_FMT).event.y_score == value
    assert reason(record) == "bad_score"  # off by default


@pytest.mark.parametrize(
    "score",
    ["", " 0.5", "0.5 ", "0.5\n", "nan", "NaN", "inf", "-Infinity", "infinity", "0x1p-2",
     "0x10", "1_000", "1,5", "1.2.3", "e5", ".", "+", "--1", "1e", "1e+", "١٢",  # Arabic digits
     "０.５", "1e400", "-1e999", "0.5f", "½", "true", "null"],
)
def test_numeric_strings_that_stay_bad_scores(score: str) -> None:
    assert reason(dumps({"label": 1, "score": score}), fmt=STRING_FMT) == "bad_score"


def test_numeric_string_scores_do_not_loosen_other_fields() -> None:
    assert reason(dumps({"label": "1", "score": "0.5"}), fmt=STRING_FMT) == "bad_label"
    assert reason(dumps({"label": 1, "score": "0.5", "ts": "17"}), fmt=STRING_FMT) == "bad_time"


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


def check_result(result: Decoded | Rejected) -> None:
    """The decoder's promise for any input: a valid event and model id, or a rejection for
    a foreseen reason with a detail safe to log; never ``undecodable`` (that is a bug)."""
    if isinstance(result, Decoded):
        assert result.event.y_true in (0, 1)
        assert model_id_problem(result.model) is None
        result.model.encode("utf-8")
    else:
        assert isinstance(result, Rejected)
        assert result.reason in REJECTION_REASONS and result.reason != "undecodable", result
        assert safe_detail(result.detail), result.detail


@settings(max_examples=500)
@given(value=st.none() | st.binary(max_size=300), key=st.none() | st.binary(max_size=8))
def test_arbitrary_bytes_never_raise(value: bytes | None, key: bytes | None) -> None:
    check_result(decode(value, key, FMT))


# Any code point, lone surrogates included (hypothesis leaves them out by default).
any_text = st.text(st.characters(exclude_categories=()), max_size=12)
hostile_values = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "-0", "1E400", "-1e-400", "0.5", "1",
                     "0", "true", "false", "null", '"0.83"', '" 1"', '"nan"', '"inf"',
                     '"1e999"', '"\\ud800"', '"\\udfff"', '"\\u0000"', "[]", "{}"]),
    st.integers(1, 4500).map(lambda n: "9" * n),  # past float range, then past json's limit
    st.integers(-(10**400), 10**400).map(str),
    st.floats().map(lambda x: json.dumps(x)),  # NaN/Infinity literals among them
    any_text.map(json.dumps),  # \\uXXXX escapes, surrogates included
    any_text.map(lambda t: json.dumps(t, ensure_ascii=False)),  # raw, where encodable
    st.integers(1, 3000).map(lambda n: "[" * n + "]" * n),  # deep nesting
    st.integers(1, 3000).map(lambda n: '{"a":' * n + "1" + "}" * n),
)
FIELDS = ["label", "score", "prediction", "ts", "model"]


@st.composite
def hostile_records(draw: st.DrawFn) -> bytes:
    """A JSON-looking record built from hostile value texts, in some encoding, maybe broken."""
    names = draw(st.lists(st.sampled_from([*FIELDS, "x"]), max_size=6))
    text = "{" + ",".join(f'"{n}":{draw(hostile_values)}' for n in names) + "}"
    if draw(st.booleans()):
        text = draw(hostile_values)  # not an object at all
    encoding = draw(st.sampled_from(["utf-8", "utf-16", "utf-32", "surrogatepass"]))
    if encoding == "surrogatepass":  # raw surrogate bytes: invalid UTF-8
        data = text.encode("utf-8", "surrogatepass")
    else:
        data = text.encode(encoding, "surrogatepass")
    cut = draw(st.integers(0, len(data)))
    if draw(st.integers(0, 9)) == 0:  # truncated or with a foreign byte
        data = data[:cut] + draw(st.binary(max_size=2))
    return data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=hostile_records(), key=st.none() | st.binary(max_size=8),
       fmt=st.builds(EventFormat, model_source=st.sampled_from(["field", "key", "constant"]),
                     numeric_string_scores=st.booleans(),
                     max_model_id_length=st.integers(7, 300)))
def test_hostile_json_never_raises(value: bytes, key: bytes | None, fmt: EventFormat) -> None:
    check_result(decode(value, key, fmt))


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
    check_result(decode(json.dumps(fields).encode(), key, fmt))
