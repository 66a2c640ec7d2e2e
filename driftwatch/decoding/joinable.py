"""Decode the two-stream form: predictions and labels as separate records, joined later.

With the ``join`` settings, a model's scores and its ground truth arrive as separate
records, paired by an event id (:mod:`driftwatch.core.join`). :func:`decode_joinable` turns
one such record into a :class:`~driftwatch.core.join.Prediction` or a
:class:`~driftwatch.core.join.Label`, with the field names, classes and value rules of
:func:`~driftwatch.decoding.decoder.decode` (whose checks it shares), or into a
:class:`~driftwatch.decoding.decoder.Rejected`; like it, it never raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from driftwatch.core.join import Label, Prediction
from driftwatch.decoding.decoder import (
    _ABSENT,
    MAX_EVENT_TIME_S,
    EventFormat,
    Rejected,
    _as_class,
    _as_score,
    _as_seconds,
    _classes,
    _escaped,
    _json_object,
    _model,
    _show,
    logger,
)

RecordKind = Literal["prediction", "label"]

JOIN_REJECTION_REASONS: tuple[str, ...] = (
    "bad_kind",  # one topic for both: the kind field is absent or names neither kind
    "bad_event_id",  # the event id is absent, not a non-empty string or integer, or too long
)
"""The rejection reasons only :func:`decode_joinable` gives, beside those of
:data:`REJECTION_REASONS` (which it gives too, with the same meaning)."""

MAX_EVENT_ID_LENGTH = 200
"""Longest event id, in characters: an id is held while its partner is pending, so a huge
one would cost memory for as long as the join keeps it."""


@dataclass(frozen=True, slots=True)
class JoinFormat:
    """How prediction and label records are told apart and keyed (the ``join`` settings).

    ``kind_field`` is None when each topic carries one kind (the caller says which), else the
    field whose value is ``prediction_kind`` or ``label_kind``.
    """

    event_id_field: str = "event_id"
    kind_field: str | None = None
    prediction_kind: str = "prediction"
    label_kind: str = "label"


def decode_joinable(value: bytes | None, key: bytes | None, fmt: EventFormat,
                    join: JoinFormat, kind: RecordKind | None,
                    timestamp: float | None) -> Prediction | Label | Rejected:
    """Turn one record of the two-stream form into a prediction or a label, or a rejection.

    ``kind`` is the record's kind when its topic says it (None: read ``join.kind_field``).
    A prediction carries the event id, the model (found as :func:`decode` finds it), the
    score and optionally the crisp prediction; a label carries the event id and the label.
    Field names, classes and value rules are :func:`decode`'s (the kind and the event id
    are checked first).
    The time is the record's time field, else ``timestamp`` (the Kafka record's, in
    seconds): the join ages records by it, so a record with neither is ``bad_time``. The
    event id is a non-empty string or an integer (kept as its decimal string) of at most
    :data:`MAX_EVENT_ID_LENGTH` characters, else ``bad_event_id``.

    Never raises, whatever the bytes: as in :func:`decode`, an exception the checks did not
    foresee becomes ``undecodable``, and details are escaped and bounded.

    Example:
        >>> fmt, join = EventFormat(), JoinFormat(kind_field="kind")
        >>> decode_joinable(b'{"kind": "label", "event_id": 7, "label": 0, "ts": 5}', None,
        ...                 fmt, join, None, None)
        Label(event_id='7', y_true=0, ts=5.0)
        >>> decode_joinable(b'{"event_id": "a", "score": 0.3}', None, fmt, JoinFormat(),
        ...                 "prediction", 1.7e9)
        Prediction(event_id='a', model='default', y_score=0.3, y_pred=None, ts=1700000000.0)
        >>> decode_joinable(b'{"kind": "score", "event_id": 7}', None, fmt, join, None,
        ...                 None).reason
        'bad_kind'
    """
    try:
        result = _decode_joinable(value, key, fmt, join, kind, timestamp)
    except Exception as exc:  # the last resort, as in decode
        logger.debug("decoding a record raised", exc_info=True)
        return Rejected("undecodable", _escaped(f"decoder error {type(exc).__name__}: {exc}"))
    if isinstance(result, Rejected):
        return Rejected(result.reason, _escaped(result.detail))
    return result


def _decode_joinable(value: bytes | None, key: bytes | None, fmt: EventFormat,
                     join: JoinFormat, kind: RecordKind | None,
                     timestamp: float | None) -> Prediction | Label | Rejected:
    obj = _json_object(value, fmt)
    if isinstance(obj, Rejected):
        return obj
    if kind is None:
        raw_kind = obj.get(join.kind_field or "", _ABSENT)
        if type(raw_kind) is str and raw_kind == join.prediction_kind:
            kind = "prediction"
        elif type(raw_kind) is str and raw_kind == join.label_kind:
            kind = "label"
        else:
            shown = "absent" if raw_kind is _ABSENT else _show(raw_kind)
            return Rejected("bad_kind", f"{join.kind_field} is {shown}, neither "
                                        f"{join.prediction_kind!r} nor {join.label_kind!r}")
    fields = (fmt.score_field,) if kind == "prediction" else (fmt.label_field,)
    for name in (join.event_id_field, *fields):
        if name not in obj:
            return Rejected("missing_field", f"no {name!r} field")
    raw_id = obj[join.event_id_field]
    event_id = None
    if type(raw_id) is int and raw_id.bit_length() <= 640:  # at most 193 digits
        event_id = str(raw_id)
    elif type(raw_id) is str and 0 < len(raw_id) <= MAX_EVENT_ID_LENGTH:
        event_id = raw_id
    if event_id is None:
        return Rejected("bad_event_id", f"{join.event_id_field}={_show(raw_id)} is not a "
                        f"non-empty string or integer of at most {MAX_EVENT_ID_LENGTH} characters")

    if kind == "label":
        y_true = _as_class(obj[fmt.label_field], fmt)
        if y_true is None:
            return Rejected("bad_label", f"{fmt.label_field}={_show(obj[fmt.label_field])} "
                                         f"is not {_classes(fmt)}")
    else:
        raw_score = obj[fmt.score_field]
        score = _as_score(raw_score, fmt)
        if score is None:
            wanted = "a finite number" + (" or decimal string" if fmt.numeric_string_scores
                                          else "")
            return Rejected("bad_score", f"{fmt.score_field}={_show(raw_score)} is not {wanted}")
        y_score = score
        raw_pred = obj.get(fmt.prediction_field)
        y_pred = None
        if raw_pred is not None:
            y_pred = _as_class(raw_pred, fmt)
            if y_pred is None:
                return Rejected("bad_prediction",
                                f"{fmt.prediction_field}={_show(raw_pred)} is not "
                                f"{_classes(fmt)}")

    raw_ts = obj.get(fmt.time_field)
    ts = timestamp
    if raw_ts is not None:
        ts = _as_seconds(raw_ts)
        if ts is None:
            return Rejected("bad_time", f"{fmt.time_field}={_show(raw_ts)} is not finite epoch "
                                        f"seconds (< {MAX_EVENT_TIME_S:.0e}) or an ISO-8601 "
                                        "string")
    if ts is None:
        return Rejected("bad_time", f"no {fmt.time_field!r} field and no record timestamp")

    if kind == "label":
        assert y_true is not None  # checked with the label above
        return Label(event_id, y_true, ts)
    model = _model(obj, key, fmt)
    if isinstance(model, Rejected):
        return model
    return Prediction(event_id, model, y_score, y_pred, ts)
