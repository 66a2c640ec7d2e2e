"""Decode and validate Kafka records into events (DESIGN.md, "Events").

A record value is a JSON object; its field names, the label values and where the model id
comes from are configurable. A record that cannot become an event is not an error of the
agent: it becomes a :class:`Rejected` with a reason the agent counts, logs at a bounded rate
and may dead-letter.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from driftwatch.core.events import Event, check_score

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
    "bad_model",  # empty, non-string, too long, or (key source) a missing/non-UTF-8 key
)

# Model ids become the ``model`` label of every series: a long one bloats each of them, and
# none of the model registries we know of allow names anywhere near this long.
MAX_MODEL_ID_LENGTH = 200
# Event times are seconds since the epoch. 1e11 s is the year 5138, while 1e11 ms is 1973:
# a number above this is almost certainly milliseconds, and taking it for seconds would put
# the event 50 000 years in the future. Refuse it loudly instead of guessing the unit.
MAX_EVENT_TIME_S = 1e11
# Keeps a hostile or huge value from flooding the log line or dead-letter header it lands in.
_MAX_DETAIL_VALUE_CHARS = 60
# Marks a field as absent (distinct from an explicit JSON null).
_ABSENT = object()


def decode(value: bytes | None, key: bytes | None, fmt: EventFormat) -> Decoded | Rejected:
    """Turn one record's value (and key) into a :class:`Decoded` event or a :class:`Rejected`.

    Never raises, whatever the bytes: every failure is a :class:`Rejected` whose ``reason`` is
    one of :data:`REJECTION_REASONS` and whose ``detail`` says what was wrong (bounded length;
    for logs and dead-letter headers, never a metric label). Checks run in the order of
    :data:`REJECTION_REASONS` and the first failure wins.

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
      parser accepts), numbers too large for a float, booleans and strings are ``bad_score``.
    - **prediction** (optional): absent or ``null`` means "derive it from the score"; otherwise
      it must match a class exactly as the label does.
    - **time** (optional): absent or ``null`` means none; otherwise a finite number of seconds
      since the epoch below :data:`MAX_EVENT_TIME_S` (larger values are almost surely
      milliseconds and are refused, not guessed), or an ISO-8601 string (naive means UTC).
    - **model**, by ``fmt.model_source``: ``"field"`` reads the model field and falls back to
      ``fmt.model_constant`` when it is absent or ``null``; ``"key"`` decodes the record key
      as UTF-8 (no key is ``bad_model``); ``"constant"`` always uses ``fmt.model_constant``.
      An id must be a non-empty string of at most :data:`MAX_MODEL_ID_LENGTH` characters.

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
    """
    if value is not None and len(value) > fmt.max_record_bytes:
        limit = fmt.max_record_bytes
        return Rejected("too_large", f"{len(value)} bytes > max_record_bytes={limit}")
    if not value:
        return Rejected("empty", "tombstone (no value)" if value is None else "zero-length value")
    try:
        obj = json.loads(value)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError too
        return Rejected("not_json", _bounded(str(exc)))
    if not isinstance(obj, dict):
        return Rejected("not_object", f"top-level JSON {type(obj).__name__}, expected an object")

    raw_label = obj.get(fmt.label_field, _ABSENT)
    if raw_label is _ABSENT:
        return Rejected("missing_field", f"no {fmt.label_field!r} field")
    raw_score = obj.get(fmt.score_field, _ABSENT)
    if raw_score is _ABSENT:
        return Rejected("missing_field", f"no {fmt.score_field!r} field")

    y_true = _as_class(raw_label, fmt)
    if y_true is None:
        return Rejected("bad_label", f"{fmt.label_field}={_show(raw_label)} is not {_classes(fmt)}")

    try:
        y_score = check_score(raw_score, fmt.score_field)
    except ValueError:
        return Rejected("bad_score", f"{fmt.score_field}={_show(raw_score)} is not a finite number")

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
    return Decoded(model, Event(y_true, y_score, y_pred, ts))


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
    if not isinstance(model, str) or not model:
        return Rejected("bad_model", f"{where}={_show(model)} is not a non-empty string")
    if len(model) > MAX_MODEL_ID_LENGTH:
        return Rejected(
            "bad_model", f"{where} is {len(model)} characters, over {MAX_MODEL_ID_LENGTH}"
        )
    return model


def _show(value: object) -> str:
    return _bounded(repr(value))


def _bounded(text: str) -> str:
    if len(text) <= _MAX_DETAIL_VALUE_CHARS:
        return text
    return text[: _MAX_DETAIL_VALUE_CHARS - 3] + "..."
