"""``events``: how a record value (a JSON object) becomes an event."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator
from pydantic_core import InitErrorDetails

from driftwatch.decoding.decoder import EventFormat, ModelSource, model_id_problem
from driftwatch.settings.common import FieldName, Name, _problem, _raise, _Section

_EVENT_DEFAULTS = EventFormat()


def _check_label_value(value: Any) -> Any:
    if isinstance(value, str | int):  # bool is an int
        return value
    raise ValueError(f"must be a string, an integer or true/false, got {value!r}")


Label = str | int | bool


class EventsSettings(_Section):
    """How a Kafka record value (a JSON object) becomes an event; the rules are those of
    :func:`driftwatch.decoding.decoder.decode`."""

    label_field: FieldName = Field(
        default=_EVENT_DEFAULTS.label_field, description="Field holding the true label."
    )
    score_field: FieldName = Field(
        default=_EVENT_DEFAULTS.score_field,
        description="Field holding the model's score: any finite real, higher = more positive.",
    )
    prediction_field: FieldName = Field(
        default=_EVENT_DEFAULTS.prediction_field,
        description=(
            "Optional field holding the crisp prediction (0/1); when absent, the prediction "
            "is score >= the model's threshold."
        ),
    )
    time_field: FieldName = Field(
        default=_EVENT_DEFAULTS.time_field,
        description="Optional field holding the event time, in seconds since the epoch.",
    )
    model_source: ModelSource = Field(
        default=_EVENT_DEFAULTS.model_source,
        description=(
            "Where the model id comes from: field (model_field of the value), key (the "
            "Kafka record key) or constant (model_constant: one model, e.g. a sidecar)."
        ),
    )
    model_field: FieldName = Field(
        default=_EVENT_DEFAULTS.model_field,
        description="Field holding the model id when model_source is field.",
    )
    model_constant: Name = Field(
        default=_EVENT_DEFAULTS.model_constant,
        description=(
            "The model id when model_source is constant, and for records that lack the "
            "model field or key."
        ),
    )
    only_models: list[Name] = Field(
        default_factory=list,
        max_length=1000,
        description=(
            "Monitor only these model ids; records of other models are skipped and counted "
            "(driftwatch_events_skipped_total{reason=\"unwatched_model\"}), not rejected; "
            "driftwatch replay skips them alike and counts them in its report. "
            "Empty: every model. For a sidecar reading a topic that several models share "
            "(with kafka.assignment all_partitions). A record is decoded before its model is "
            "known, so a malformed record is rejected whatever its model."
        ),
    )
    positive_label: Label = Field(
        default=_EVENT_DEFAULTS.positive_label,
        description=(
            "The label value of the positive class (a string, an integer or true/false). "
            "From the environment the value is a string."
        ),
    )
    negative_label: Label = Field(
        default=_EVENT_DEFAULTS.negative_label,
        description="The label value of the negative class; must differ from positive_label.",
    )
    max_model_id_length: int = Field(
        default=_EVENT_DEFAULTS.max_model_id_length,
        ge=1,
        le=10_000,
        description=(
            "Longest model id, in characters; longer ids are rejected (reason bad_model). "
            "A model id is the model label of every series of the model. Ids must also be "
            "printable text: no control, format or separator characters and no lone "
            "surrogates (which Prometheus, the checkpoint and log lines could not carry)."
        ),
    )
    numeric_string_scores: bool = Field(
        default=_EVENT_DEFAULTS.numeric_string_scores,
        description=(
            'Also accept scores sent as strings holding a decimal number ("0.83", "8.3E-7": '
            "Java BigDecimal, Kafka Connect decimals). Only an optional sign, ASCII digits, "
            "one decimal point and an exponent; \"nan\", \"inf\", hex, whitespace, digit "
            "separators and values beyond float range stay bad_score. Off: strings are "
            "bad_score."
        ),
    )
    max_record_bytes: int = Field(
        default=_EVENT_DEFAULTS.max_record_bytes,
        ge=64,
        le=100 * 1024 * 1024,
        description=(
            "Records larger than this are rejected unread (reason too_large), so one huge "
            "record cannot stall or exhaust the agent. Default: 1 MiB, Kafka's default "
            "message size limit."
        ),
    )

    @field_validator("positive_label", "negative_label", mode="before")
    @classmethod
    def _label_type(cls, value: Any) -> Any:
        return _check_label_value(value)

    @model_validator(mode="after")
    def _consistent(self) -> EventsSettings:
        problems: list[InitErrorDetails] = []
        if self.positive_label == self.negative_label:
            problems.append(_problem(
                ("negative_label",),
                f"must differ from positive_label ({self.positive_label!r})",
                self.negative_label,
            ))
        used = ["label_field", "score_field", "prediction_field", "time_field"]
        if self.model_source == "field":
            used.append("model_field")
        seen: dict[str, str] = {}
        for key in used:
            name = getattr(self, key)
            if name in seen:
                problems.append(_problem(
                    (key,), f"{name!r} is already the {seen[name]}", name
                ))
            seen.setdefault(name, key)
        problem = model_id_problem(self.model_constant, self.max_model_id_length)
        if problem is not None:
            problems.append(_problem(
                ("model_constant",), f"not a valid model id: {problem}", self.model_constant
            ))
        for i, model in enumerate(self.only_models):
            problem = model_id_problem(model, self.max_model_id_length)
            if problem is not None:
                problems.append(_problem(("only_models", i), f"never applies: not a valid "
                                         f"model id: {problem}", model))
        if self.only_models and self.model_source == "constant":
            problems.append(_problem(
                ("only_models",), "model_source is constant, so every record is "
                f"{self.model_constant!r}'s: there is nothing to filter; leave it empty",
            ))
        _raise(type(self).__name__, problems)
        return self

    def event_format(self) -> EventFormat:
        """The decoder's view of these settings."""
        return EventFormat(
            label_field=self.label_field,
            score_field=self.score_field,
            prediction_field=self.prediction_field,
            time_field=self.time_field,
            model_field=self.model_field,
            model_source=self.model_source,
            model_constant=self.model_constant,
            positive_label=self.positive_label,
            negative_label=self.negative_label,
            max_record_bytes=self.max_record_bytes,
            max_model_id_length=self.max_model_id_length,
            numeric_string_scores=self.numeric_string_scores,
        )
