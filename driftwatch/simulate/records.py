"""Simulated events as the records a producer sends: JSON-ready dicts with the agent's field
names.

The simulator's events are :class:`~driftwatch.core.events.Event` values (``y_true``,
``y_score``: scikit-learn's spelling, what the monitor takes), while the agent reads record
values whose field names and label classes come from the settings' ``events`` section
(``label``, ``score``, ``ts``, ``model`` by default). :func:`event_record` turns one into the
other, :func:`joinable_record` does the same for the two-stream form (predictions and labels
apart, the settings' ``join`` section), and :meth:`SimulatedStream.records
<driftwatch.simulate.SimulatedStream.records>` gives a whole stream as records. The Kafka
feed of ``driftwatch simulate`` and its ``--output`` files send exactly these dicts.

The field names come from any object with the attributes of the settings' event format
(:class:`RecordFormat`: ``settings.events.event_format()`` is one); None means the default
settings' names. This module imports nothing but the standard library and the core's records.

Example:
    >>> from driftwatch.core.events import Event
    >>> event_record(Event(1, 0.75, ts=1700000000.0), "churn")
    {'label': 1, 'score': 0.75, 'ts': 1700000000.0, 'model': 'churn'}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from driftwatch.core.events import Event
from driftwatch.core.join import Label, Prediction

__all__ = ["DEFAULT_FORMAT", "DEFAULT_JOIN", "JoinFields", "RecordFormat", "event_record",
           "joinable_record"]


class RecordFormat(Protocol):
    """Where a record's values go: the attributes of the settings' event format
    (:class:`driftwatch.decoding.decoder.EventFormat`, from ``settings.events.event_format()``)."""

    @property
    def label_field(self) -> str: ...
    @property
    def score_field(self) -> str: ...
    @property
    def prediction_field(self) -> str: ...
    @property
    def time_field(self) -> str: ...
    @property
    def model_field(self) -> str: ...
    @property
    def model_source(self) -> Literal["field", "key", "constant"]: ...
    @property
    def positive_label(self) -> str | int | bool: ...
    @property
    def negative_label(self) -> str | int | bool: ...


class JoinFields(Protocol):
    """The two-stream form's fields: the attributes of the settings' join format
    (:class:`driftwatch.decoding.joinable.JoinFormat`, from ``settings.join.join_format()``)."""

    @property
    def event_id_field(self) -> str: ...
    @property
    def kind_field(self) -> str | None: ...
    @property
    def prediction_kind(self) -> str: ...
    @property
    def label_kind(self) -> str: ...


@dataclass(frozen=True, slots=True)
class _Format:
    label_field: str = "label"
    score_field: str = "score"
    prediction_field: str = "prediction"
    time_field: str = "ts"
    model_field: str = "model"
    model_source: Literal["field", "key", "constant"] = "field"
    positive_label: str | int | bool = 1
    negative_label: str | int | bool = 0


@dataclass(frozen=True, slots=True)
class _Join:
    event_id_field: str = "event_id"
    kind_field: str | None = None
    prediction_kind: str = "prediction"
    label_kind: str = "label"


DEFAULT_FORMAT: RecordFormat = _Format()
"""The default ``events`` settings' names and classes (the test suite checks they are)."""

DEFAULT_JOIN: JoinFields = _Join()
"""The default ``join`` settings' names (no kind field: one topic per kind)."""


def event_record(event: Event, model: str, fmt: RecordFormat | None = None) -> dict[str, Any]:
    """The record value of ``event`` of ``model``: the label as ``fmt``'s positive or negative
    class, the score, the prediction and the event time when the event has them, and the
    model id when ``fmt`` reads the model from a field (with ``model_source`` key the id is
    the record's key, and constant needs none)."""
    fmt = DEFAULT_FORMAT if fmt is None else fmt
    classes = {1: fmt.positive_label, 0: fmt.negative_label}
    value: dict[str, Any] = {fmt.label_field: classes[event.y_true],
                             fmt.score_field: event.y_score}
    if event.y_pred is not None:
        value[fmt.prediction_field] = classes[event.y_pred]
    if event.ts is not None:
        value[fmt.time_field] = event.ts
    if fmt.model_source == "field":
        value[fmt.model_field] = model
    return value


def joinable_record(record: Prediction | Label, fmt: RecordFormat | None = None,
                    join: JoinFields | None = None) -> dict[str, Any]:
    """The record value of a prediction or a label of the two-stream form: the event id, the
    kind when ``join.kind_field`` is set, the time, and the score (and prediction, and model
    when it comes from a field) or the label.

    Example:
        >>> joinable_record(Label("e7", 1, 5.0), join=_Join(kind_field="kind"))
        {'event_id': 'e7', 'ts': 5.0, 'kind': 'label', 'label': 1}
    """
    fmt = DEFAULT_FORMAT if fmt is None else fmt
    join = DEFAULT_JOIN if join is None else join
    classes = {1: fmt.positive_label, 0: fmt.negative_label}
    value: dict[str, Any] = {join.event_id_field: record.event_id, fmt.time_field: record.ts}
    if isinstance(record, Prediction):
        if join.kind_field is not None:
            value[join.kind_field] = join.prediction_kind
        value[fmt.score_field] = record.y_score
        if record.y_pred is not None:
            value[fmt.prediction_field] = classes[record.y_pred]
        if fmt.model_source == "field":
            value[fmt.model_field] = record.model
    else:
        if join.kind_field is not None:
            value[join.kind_field] = join.label_kind
        value[fmt.label_field] = classes[record.y_true]
    return value
