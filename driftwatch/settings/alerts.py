"""``alerts``: per-model thresholds that the shipped alert rules read from ``/metrics``."""

from __future__ import annotations

import dataclasses
from typing import Annotated

from pydantic import Field

from driftwatch.settings.common import Name, _pick, _Section


@dataclasses.dataclass(frozen=True, slots=True)
class AlertThresholds:
    """One model's alert thresholds, resolved from ``alerts.defaults`` and its overrides.

    The exporter publishes them as gauges (``driftwatch_auc_floor_threshold{model}`` ...), so
    that one set of alert rules compares every model with its own thresholds
    (``driftwatch_measure{measure="auc"} < ignoring(measure) driftwatch_auc_floor_threshold``)
    and operators tune alerts in the settings file, without editing rules.
    """

    auc_floor: float
    auc_max_drop: float
    no_events_seconds: float
    batch_labels: bool


_AUC_FLOOR = (
    "AUC below which the model's AUC alerts fire (DriftwatchAucBelowFloor on the value, "
    "DriftwatchAucSignificantlyBelowFloor when even its upper confidence bound is below, "
    "DriftwatchEstimatedAucBelowFloor when that of the AUC estimated before the labels is). "
    "0 turns them off for the model."
)
_AUC_MAX_DROP = (
    "Largest drop of AUC below the model's own 6-hour average that is not an alert "
    "(DriftwatchAucDropped). 1 turns it off."
)
_NO_EVENTS_SECONDS = (
    "Seconds without any processed event of the model after which DriftwatchNoEvents fires "
    "(labels arriving late count: set it above the model's longest normal gap)."
)
_BATCH_LABELS = (
    "The model's labels arrive in batches (e.g. once a day): it never fires "
    "DriftwatchNoEvents (which may page); a gap beyond no_events_seconds raises the "
    "informational DriftwatchBatchEventsOverdue instead."
)
AucFloor = Annotated[float, Field(ge=0, le=1)]
AucMaxDrop = Annotated[float, Field(gt=0, le=1)]
NoEventsSeconds = Annotated[float, Field(ge=60, le=30 * 86_400)]


class AlertDefaults(_Section):
    """Every model's alert thresholds, unless its entry in ``alerts.models`` overrides them."""

    auc_floor: AucFloor = Field(default=0.7, description=_AUC_FLOOR)
    auc_max_drop: AucMaxDrop = Field(default=0.05, description=_AUC_MAX_DROP)
    no_events_seconds: NoEventsSeconds = Field(default=1200.0, description=_NO_EVENTS_SECONDS)
    batch_labels: bool = Field(default=False, description=_BATCH_LABELS)


class AlertOverrides(_Section):
    """One model's differences from ``alerts.defaults``; omitted keys are inherited."""

    auc_floor: AucFloor | None = Field(default=None, description=_AUC_FLOOR)
    auc_max_drop: AucMaxDrop | None = Field(default=None, description=_AUC_MAX_DROP)
    no_events_seconds: NoEventsSeconds | None = Field(
        default=None, description=_NO_EVENTS_SECONDS)
    batch_labels: bool | None = Field(default=None, description=_BATCH_LABELS)


class AlertsSettings(_Section):
    """Per-model alert thresholds, exported as metrics for the shipped alert rules."""

    defaults: AlertDefaults = Field(
        default_factory=AlertDefaults, description="Thresholds of every model."
    )
    models: dict[Name, AlertOverrides] = Field(
        default_factory=dict,
        max_length=100_000,
        description=(
            "Overrides by model id, like monitoring.models. Environment variable names are "
            "case-insensitive, so ids set from the environment are lower case."
        ),
    )

    def thresholds(self, model: str) -> AlertThresholds:
        """``model``'s thresholds: the defaults with its overrides applied key by key."""
        overrides = self.models.get(model)
        defaults = self.defaults
        if overrides is None:
            return AlertThresholds(defaults.auc_floor, defaults.auc_max_drop,
                                   defaults.no_events_seconds, defaults.batch_labels)
        return AlertThresholds(
            auc_floor=_pick(overrides.auc_floor, defaults.auc_floor),
            auc_max_drop=_pick(overrides.auc_max_drop, defaults.auc_max_drop),
            no_events_seconds=_pick(overrides.no_events_seconds, defaults.no_events_seconds),
            batch_labels=_pick(overrides.batch_labels, defaults.batch_labels),
        )
