"""``join``: predictions and labels that arrive as separate records."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, model_validator
from pydantic_core import InitErrorDetails

from driftwatch.core.config_error import ConfigError
from driftwatch.core.delayed import DelayedLabels
from driftwatch.core.join import Join
from driftwatch.core.prediction_watch import PredictionWatch, default_detectors
from driftwatch.core.score_drift import ScoreDrift
from driftwatch.decoding.joinable import JoinFormat
from driftwatch.settings.common import (
    FieldName,
    Name,
    TopicName,
    _core_problems,
    _problem,
    _raise,
    _Section,
)


class ScoreDriftSettings(_Section):
    """Label-free signals of each model's predictions (driftwatch.core.score_drift)."""

    enabled: bool = Field(default=True, description="Compute and watch the label-free signals.")
    window: int = Field(
        default=1000, ge=10, le=1_000_000,
        description="Recent predictions whose KS distance, PSI and positive rate are exported.")
    block_size: int = Field(
        default=500, ge=10, le=1_000_000,
        description=(
            "Predictions per block: each block is compared with the reference and its "
            "standardized signals feed the detectors (one input per block)."))
    reference: Literal["frozen", "previous"] = Field(
        default="frozen",
        description=(
            "frozen: the first reference_size predictions after the start (the model as "
            "deployed; a restart with its checkpoint keeps it); previous: the reference_size "
            "predictions just before those compared (follows slow changes)."))
    reference_size: int = Field(
        default=10_000, ge=100, le=1_000_000,
        description=(
            "Predictions in the reference. Blocks share it, so their values correlate by "
            "about block_size / (block_size + reference_size): keep it 20 blocks or more. "
            "Memory per model, measured at the defaults: 0.23 MB with a frozen reference "
            "(8 bytes per reference score, about 90 per windowed prediction), 1 MB with "
            "previous (the reference is held as predictions too)."))
    bins: int = Field(default=10, ge=2, le=100,
                      description="Bins of the PSI, at the reference's quantiles.")
    arl: float = Field(
        default=10_000.0, ge=10.0, le=1e9,
        description=(
            "In-control average run length of each signal's CUSUM, in blocks: the mean "
            "number of blocks between false alarms while the scores hold."))

    @model_validator(mode="after")
    def _core_rules(self) -> ScoreDriftSettings:
        """Build the core's signals and detectors once, so whatever they refuse is reported
        at its key here rather than when the first model appears."""
        try:
            self.signals(threshold=0.5)
            default_detectors(self.arl)
        except ConfigError as exc:
            _raise(type(self).__name__, _core_problems(exc))
        return self

    def signals(self, threshold: float) -> ScoreDrift:
        """The core's label-free signals of one model whose decision threshold is ``threshold``."""
        return ScoreDrift(window=self.window, block_size=self.block_size,
                          reference=self.reference, reference_size=self.reference_size,
                          bins=self.bins, threshold=threshold)


_JOIN_KEYS = {"max_age": "max_age_seconds", "max_label_age": "max_label_age_seconds"}
"""The settings' names of the core join's parameters where they differ (units in the name)."""


class JoinSettings(_Section):
    """Predictions and labels as separate records, joined by event id in the agent."""

    enabled: bool = Field(
        default=False,
        description=(
            "Read predictions and labels as separate records and join them by event id "
            "(off: each record holds a label and a score)."))
    predictions_topic: TopicName | None = Field(
        default=None,
        description="Topic of the prediction records (with labels_topic; must be in "
                    "kafka.topics).")
    labels_topic: TopicName | None = Field(
        default=None,
        description="Topic of the label records (with predictions_topic).")
    kind_field: FieldName | None = Field(
        default=None,
        description=(
            "Instead of two topics: the field whose value says whether a record is a "
            "prediction (prediction_kind) or a label (label_kind)."))
    prediction_kind: Name = Field(default="prediction",
                                  description="kind_field's value for a prediction.")
    label_kind: Name = Field(default="label", description="kind_field's value for a label.")
    event_id_field: FieldName = Field(
        default="event_id",
        description="Field holding the event id (a string or an integer) on both kinds.")
    max_pending: int = Field(
        default=100_000, ge=1, le=100_000_000,
        description=(
            "Predictions waiting for their label, per model; beyond it the oldest leaves "
            "(counted as overflow, alert DriftwatchJoinOverflow). About 350 bytes each, 640 "
            "at a checkpoint save (measured, 12-character ids). The Helm chart sets 250, "
            "which fits its default memory limit with 100 models (docs/fleet.md)."))
    max_age_seconds: float = Field(
        default=30 * 86_400.0, gt=0,
        description=(
            "How long a prediction waits for its label, on the labels' clock (a label "
            "stamped this much later than it has been seen); then it expires."))
    max_pending_labels: int = Field(
        default=100_000, ge=1, le=100_000_000,
        description="Labels waiting for their prediction (all models); beyond it the oldest "
                    "leaves.")
    max_label_age_seconds: float = Field(
        default=3_600.0, gt=0,
        description=(
            "How long a label waits for its prediction, on the predictions' clock; then it "
            "expires."))
    remember: int = Field(
        default=100_000, ge=1, le=100_000_000,
        description="Recently joined event ids kept to recognize replayed (duplicate) records.")
    score_drift: ScoreDriftSettings = Field(
        default_factory=ScoreDriftSettings,
        description="Label-free signals of the predictions.")

    @model_validator(mode="after")
    def _form(self) -> JoinSettings:
        problems: list[InitErrorDetails] = []
        if self.enabled:
            topics = (self.predictions_topic, self.labels_topic)
            if self.kind_field is None and None in topics:
                missing = "predictions_topic" if topics[0] is None else "labels_topic"
                problems.append(_problem((missing,), "required when join is enabled without "
                                                     "kind_field (two topics)"))
            if self.kind_field is not None and topics != (None, None):
                problems.append(_problem(("kind_field",), "give either kind_field (one topic) "
                                                          "or predictions_topic and labels_topic"))
            if topics[0] is not None and topics[0] == topics[1]:
                problems.append(_problem(("labels_topic",), "must differ from "
                                                            "predictions_topic"))
            if self.prediction_kind == self.label_kind:
                problems.append(_problem(("label_kind",), "must differ from prediction_kind"))
        try:
            Join(**self.limits())
        except ConfigError as exc:
            problems += _core_problems(exc, keys=_JOIN_KEYS)
        _raise(type(self).__name__, problems)
        return self

    def limits(self) -> dict[str, Any]:
        """The core join's bounds (driftwatch.core.join.Join's keyword arguments)."""
        return {"max_pending": self.max_pending, "max_age": self.max_age_seconds,
                "max_pending_labels": self.max_pending_labels,
                "max_label_age": self.max_label_age_seconds, "remember": self.remember}

    def join_format(self) -> JoinFormat:
        """How records are told apart and keyed, for the decoder."""
        return JoinFormat(self.event_id_field, self.kind_field, self.prediction_kind,
                          self.label_kind)

    def delayed_labels(self, threshold_for: Callable[[str], float]) -> DelayedLabels:
        """A fresh join with the models' label-free watches (when ``score_drift`` is on);
        ``threshold_for(model)`` is the model's crisp threshold (its monitor's)."""
        drift = self.score_drift

        def watch_for(model: str) -> PredictionWatch:
            return PredictionWatch(model, drift.signals(threshold_for(model)),
                                   default_detectors(drift.arl))

        return DelayedLabels(Join(**self.limits()), watch_for if drift.enabled else None)
