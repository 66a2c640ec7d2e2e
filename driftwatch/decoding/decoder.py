"""Decode and validate Kafka records into events.

A record value is a JSON object; its field names, the label values and where the model id
comes from are configurable. A record that cannot become an event is not an error of the
agent: it becomes a :class:`Rejected` with a reason the agent counts, logs at a bounded rate
and may dead-letter. :func:`decode` is total: whatever the bytes (huge integers, deep
nesting, ``NaN`` literals, invalid UTF-8, lone surrogates), it returns, and an exception it
did not foresee becomes the rejection ``undecodable`` instead of stopping the agent on a
record it would meet again at every restart.
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from driftwatch.core.events import Event, check_score, valid_event

logger = logging.getLogger(__name__)

ModelSource = Literal["field", "key", "constant"]


@dataclass(frozen=True, slots=True)
class EventFormat:
    """How records map to events; built from the ``events`` settings section."""

    label_field: str = "label"
    score_field: str = "score"
    prediction_field: str = "prediction"
    time_field: str = "ts"
    model_field: str = "model"
    model_source: ModelSource = "field"
    model_constant: str = "default"
    """The model id when ``model_source`` is "constant", or when the model field is absent."""
    positive_label: str | int | bool = 1
    negative_label: str | int | bool = 0
    max_record_bytes: int = 1_048_576
    max_model_id_length: int = 200
    """Longest model id, in characters (see :func:`model_id_problem`)."""
    numeric_string_scores: bool = False
    """Also accept scores sent as JSON strings holding a decimal number (see :func:`decode`)."""

    def __post_init__(self) -> None:
        if self.max_model_id_length < 1:
            raise ValueError(f"max_model_id_length must be at least 1, got "
                             f"{self.max_model_id_length}")
        problem = model_id_problem(self.model_constant, self.max_model_id_length)
        if problem is not None:
            raise ValueError(f"model_constant {problem}")


@dataclass(frozen=True, slots=True)
class Decoded:
    """A record that became an event for a model."""

    model: str
    event: Event


@dataclass(frozen=True, slots=True)
class Rejected:
    """A record that did not; ``reason`` is a short label value for the rejection counter."""

    reason: str
    detail: str


# The rejection reasons, in the order the checks run; the first failing check wins. Stable:
# they are the values of the ``reason`` label of the rejected-events counter, so the exporter
# can create every series at zero and alert rules can name them.
REJECTION_REASONS: tuple[str, ...] = (
    "too_large",  # len(value) > max_record_bytes, checked before parsing
    "empty",  # no value: a tombstone (None) or zero bytes
    "not_json",  # not UTF-8/16/32 JSON, or nested too deeply to parse
    "not_object",  # valid JSON, but not an object
    "missing_field",  # the label or score field is absent (detail names it)
    "bad_label",  # not the configured positive or negative class
    "bad_score",  # not a finite real number (NaN, Infinity, bool, string, null...)
    "bad_prediction",  # present, not null, and not a configured class
    "bad_time",  # present, not null, and not finite seconds / ISO-8601
    "bad_model",  # not a model id (model_id_problem), or (key source) a missing/non-UTF-8 key
    "undecodable",  # the decoder itself failed (a bug): counted and skipped, never a crash
)

# Model ids become the ``model`` label of every series: a long one bloats each of them, and
# none of the model registries we know of allow names anywhere near this long. The default
# of ``EventFormat.max_model_id_length`` (setting ``events.max_model_id_length``).
MAX_MODEL_ID_LENGTH = 200
# Event times are seconds since the epoch. 1e11 s is the year 5138, while 1e11 ms is 1973:
# a number above this is almost certainly milliseconds, and taking it for seconds would put
# the event 50 000 years in the future. Refuse it loudly instead of guessing the unit.
MAX_EVENT_TIME_S = 1e11
# A rejection's detail lands in a log line and a dead-letter header: a record's content is
# quoted in it at most this long (``_show``), and the whole detail is at most MAX_DETAIL_CHARS
# printable ASCII characters (``_escaped``), so a hostile value can neither flood the log nor
# forge lines in it (newlines, terminal escapes and non-ASCII are backslash-escaped).
_MAX_DETAIL_VALUE_CHARS = 60
MAX_DETAIL_CHARS = 240
# Marks a field as absent (distinct from an explicit JSON null).
_ABSENT = object()
# A numeric-string score (``numeric_string_scores``): optional sign, ASCII digits with at most
# one decimal point, optional exponent; the whole string, nothing around it.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def model_id_problem(model: object, max_length: int = MAX_MODEL_ID_LENGTH) -> str | None:
    """Why ``model`` cannot be a model id, or None when it can.

    A model id is a non-empty string of at most ``max_length`` characters, all printable
    (Python's :meth:`str.isprintable`): no control characters (newline, tab, NUL, ESC...), no
    lone surrogates (``"\\ud800"`` in JSON: not valid Unicode, so not encodable as UTF-8,
    which Prometheus label values, the checkpoint file and log lines all need), no line or
    paragraph separators, no invisible format characters (zero-width or bidirectional
    controls, which make two ids look alike), no private-use or unassigned code points.
    Letters of every script, digits, punctuation, symbols and the ASCII space are fine. What
    passes is a valid Prometheus label value, round-trips through the JSON checkpoint and
    prints as itself in a log line.

    Example:
        >>> model_id_problem("churn-v2/ü") is None
        True
        >>> model_id_problem("a\\nb")
        'is not printable text (control, format or separator characters, lone surrogates)'
    """
    if not isinstance(model, str) or not model:
        return "is not a non-empty string"
    if len(model) > max_length:
        return f"is {len(model)} characters, over {max_length}"
    if not model.isprintable():
        return "is not printable text (control, format or separator characters, lone surrogates)"
    return None


def decode(value: bytes | None, key: bytes | None, fmt: EventFormat) -> Decoded | Rejected:
    """Turn one record's value (and key) into a :class:`Decoded` event or a :class:`Rejected`.

    Never raises, whatever the bytes: every failure is a :class:`Rejected` whose ``reason`` is
    one of :data:`REJECTION_REASONS` and whose ``detail`` says what was wrong (at most
    :data:`MAX_DETAIL_CHARS` printable ASCII characters, quoting the record's content at most
    60 characters at a time; for logs and dead-letter headers, never a metric label). Checks
    run in the order of :data:`REJECTION_REASONS` and the first failure wins. An exception the
    checks did not foresee is caught here and becomes ``undecodable`` (its type and message in
    the detail, its traceback logged at DEBUG): a decoder bug costs a record, not the agent.

    Field rules (names from ``fmt``):

    - **label** (required): matches ``fmt.positive_label`` → 1 or ``fmt.negative_label`` → 0.
      Strings match strings exactly (case-sensitive); integers and JSON booleans match integers
      and booleans by value, so with the default classes 1/0 the values ``1``, ``0``,
      ``true`` and ``false`` are accepted. Floats are refused, ``1.0`` included, as the core's
      ``check_label`` does: a class is not a measurement, and a float in the label field most
      often means a score or probability was written there by mistake. Refusing is loud
      (every record of that producer shows up under ``bad_label``), accepting would not be.
      ``null`` and anything else (``7``, ``"1"`` with numeric classes) is ``bad_label``.
    - **score** (required): a finite JSON number; ``NaN``/``Infinity`` (which Python's JSON
      parser accepts), numbers too large for a float (``1e400``, a 400-digit integer),
      booleans, null and strings are ``bad_score``. With ``fmt.numeric_string_scores``, a
      string holding a decimal number is accepted too (``"0.83"``, ``"-1.5E-7"``, ``"+3"``,
      ``".5"``: what Java's ``BigDecimal.toString`` and Kafka Connect's decimal converters
      write): ASCII digits, one optional decimal point, an optional exponent, an optional
      sign, and nothing else. Refused even then: ``"nan"``, ``"inf"``, ``"Infinity"``, hex
      (``"0x1p-2"``), surrounding or inner whitespace, digit separators (``"1_000"``,
      ``"1,5"``), non-ASCII digits, the empty string, and any value beyond float range.
    - **prediction** (optional): absent or ``null`` means "derive it from the score"; otherwise
      it must match a class exactly as the label does.
    - **time** (optional): absent or ``null`` means none; otherwise a finite number of seconds
      since the epoch below :data:`MAX_EVENT_TIME_S` (larger values are almost surely
      milliseconds and are refused, not guessed), or an ISO-8601 string (naive means UTC).
    - **model**, by ``fmt.model_source``: ``"field"`` reads the model field and falls back to
      ``fmt.model_constant`` when it is absent or ``null``; ``"key"`` decodes the record key
      as UTF-8 (no key is ``bad_model``); ``"constant"`` always uses ``fmt.model_constant``.
      An id must pass :func:`model_id_problem` with ``fmt.max_model_id_length``, else
      ``bad_model``.

    Other fields are ignored.

    Cost: one ``json.loads`` of the value plus O(1) checks.

    Example:
        >>> fmt = EventFormat()
        >>> decode(b'{"label": true, "score": 0.9, "model": "churn"}', None, fmt)
        Decoded(model='churn', event=Event(y_true=1, y_score=0.9, y_pred=None, ts=None))
        >>> decode(b'{"label": 1, "score": NaN}', None, fmt).reason
        'bad_score'
        >>> decode(b'{"label": 1.0, "score": 0.2}', None, fmt).reason
        'bad_label'
        >>> decode(b'{"label": 1, "score": 1' + b'0' * 400 + b'}', None, fmt).reason
        'bad_score'
    """
    try:
        result = _decode(value, key, fmt)
    except Exception as exc:  # the last resort: see the docstring
        logger.debug("decoding a record raised", exc_info=True)
        return Rejected("undecodable", _escaped(f"decoder error {type(exc).__name__}: {exc}"))
    if isinstance(result, Rejected):
        return Rejected(result.reason, _escaped(result.detail))
    return result


def _json_object(value: bytes | None, fmt: EventFormat) -> dict[str, Any] | Rejected:
    """The record value as a JSON object, or why it is not one (the checks every record
    passes first, an event or a half of a join)."""
    if value is not None and len(value) > fmt.max_record_bytes:
        limit = fmt.max_record_bytes
        return Rejected("too_large", f"{len(value)} bytes > max_record_bytes={limit}")
    if not value:
        return Rejected("empty", "tombstone (no value)" if value is None else "zero-length value")
    try:
        obj = json.loads(value)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError too
        # (and an integer literal over Python's 4300-digit conversion limit). The messages
        # name a position, never the content.
        return Rejected("not_json", _bounded(str(exc)))
    if not isinstance(obj, dict):
        return Rejected("not_object", f"top-level JSON {type(obj).__name__}, expected an object")
    return obj


def _decode(value: bytes | None, key: bytes | None, fmt: EventFormat) -> Decoded | Rejected:
    obj = _json_object(value, fmt)
    if isinstance(obj, Rejected):
        return obj

    raw_label = obj.get(fmt.label_field, _ABSENT)
    if raw_label is _ABSENT:
        return Rejected("missing_field", f"no {fmt.label_field!r} field")
    raw_score = obj.get(fmt.score_field, _ABSENT)
    if raw_score is _ABSENT:
        return Rejected("missing_field", f"no {fmt.score_field!r} field")

    y_true = _as_class(raw_label, fmt)
    if y_true is None:
        return Rejected("bad_label", f"{fmt.label_field}={_show(raw_label)} is not {_classes(fmt)}")

    y_score = _as_score(raw_score, fmt)
    if y_score is None:
        wanted = "a finite number" + (" or decimal string" if fmt.numeric_string_scores else "")
        return Rejected("bad_score", f"{fmt.score_field}={_show(raw_score)} is not {wanted}")

    raw_pred = obj.get(fmt.prediction_field)
    y_pred = None
    if raw_pred is not None:
        y_pred = _as_class(raw_pred, fmt)
        if y_pred is None:
            return Rejected(
                "bad_prediction",
                f"{fmt.prediction_field}={_show(raw_pred)} is not {_classes(fmt)}",
            )

    raw_ts = obj.get(fmt.time_field)
    ts = None
    if raw_ts is not None:
        ts = _as_seconds(raw_ts)
        if ts is None:
            return Rejected(
                "bad_time",
                f"{fmt.time_field}={_show(raw_ts)} is not finite epoch seconds "
                f"(< {MAX_EVENT_TIME_S:.0e}) or an ISO-8601 string",
            )

    model = _model(obj, key, fmt)
    if isinstance(model, Rejected):
        return model
    # Every value was checked above (the decoder is the boundary): not checked again.
    return Decoded(model, valid_event(y_true, y_score, y_pred, ts))


def _as_score(value: object, fmt: EventFormat) -> float | None:
    """The score as a finite float, or None (an int beyond float range included)."""
    if fmt.numeric_string_scores and type(value) is str and _DECIMAL.fullmatch(value):
        value = float(value)  # cannot raise after the match; may be inf, refused below
    try:
        return check_score(value)
    except (ValueError, OverflowError):  # OverflowError: float() of a 400-digit integer
        return None


def _as_class(value: object, fmt: EventFormat) -> int | None:
    """1 for the positive class, 0 for the negative, None for anything else."""
    if _same_class(value, fmt.positive_label):
        return 1
    if _same_class(value, fmt.negative_label):
        return 0
    return None


def _same_class(value: object, configured: str | int | bool) -> bool:
    # ``type(...) in`` rather than isinstance: floats, and int/str subclasses, never match.
    if type(value) is str or type(configured) is str:
        return type(value) is type(configured) and value == configured
    return type(value) in (int, bool) and value == configured


def _classes(fmt: EventFormat) -> str:
    return f"{fmt.positive_label!r} or {fmt.negative_label!r}"


def _as_seconds(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:  # an int beyond float range
            return None
        return seconds if math.isfinite(seconds) and seconds < MAX_EVENT_TIME_S else None
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        try:
            return moment.timestamp()
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _model(obj: dict[str, object], key: bytes | None, fmt: EventFormat) -> str | Rejected:
    if fmt.model_source == "constant":
        return fmt.model_constant
    if fmt.model_source == "key":
        if key is None:
            return Rejected("bad_model", "record has no key (model_source is 'key')")
        try:
            model: object = key.decode("utf-8")
        except UnicodeDecodeError:
            return Rejected("bad_model", f"record key {_show(key)} is not UTF-8")
        where = "record key"
    else:
        model = obj.get(fmt.model_field)
        if model is None:
            return fmt.model_constant
        where = fmt.model_field
    problem = model_id_problem(model, fmt.max_model_id_length)
    if problem is not None:
        return Rejected("bad_model", f"{where}={_show(model)} {problem}")
    assert isinstance(model, str)
    return model


def _show(value: object) -> str:
    """A short, escaped rendering of a record's value, at O(limit) cost whatever its size:
    the start of a string or bytes, a small number, or the kind and size of anything else
    (never the ``repr`` of a container, which could be deep enough to overflow the stack)."""
    limit = _MAX_DETAIL_VALUE_CHARS
    if isinstance(value, str | bytes):
        shown = ascii(value[:limit])
        return _bounded(shown + ("..." if len(value) > limit else ""))
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 150:
        return f"<an integer of about {math.ceil(value.bit_length() * math.log10(2))} digits>"
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    size = len(value) if isinstance(value, list | dict) else None
    return f"<{type(value).__name__}{'' if size is None else f' of {size} items'}>"


def _bounded(text: str) -> str:
    if len(text) <= _MAX_DETAIL_VALUE_CHARS:
        return text
    return text[: _MAX_DETAIL_VALUE_CHARS - 3] + "..."


# Backslash escapes for the ASCII control characters (the non-ASCII ones are escaped by the
# "backslashreplace" encoding in _escaped).
_CONTROL_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(32), 127)}


def _escaped(detail: str) -> str:
    """``detail`` as printable ASCII of at most :data:`MAX_DETAIL_CHARS` characters."""
    text = detail.encode("ascii", "backslashreplace").decode("ascii").translate(_CONTROL_ESCAPES)
    if len(text) <= MAX_DETAIL_CHARS:
        return text
    return text[: MAX_DETAIL_CHARS - 3] + "..."
