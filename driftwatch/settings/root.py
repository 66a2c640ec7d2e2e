"""The root :class:`Settings`: every area composed, the sources ranked (arguments, then
the environment, then the file), and the checks that span areas."""

from __future__ import annotations

import difflib
import hashlib
import os
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator
from pydantic_core import InitErrorDetails
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from driftwatch.decoding.decoder import model_id_problem
from driftwatch.settings.alerts import AlertsSettings
from driftwatch.settings.checkpoint import CheckpointSettings
from driftwatch.settings.common import ENV_NESTED_DELIMITER, ENV_PREFIX, _pick, _problem, _raise
from driftwatch.settings.comparisons import ComparisonSettings
from driftwatch.settings.events import EventsSettings
from driftwatch.settings.exporters import ExportersSettings
from driftwatch.settings.join import JoinSettings
from driftwatch.settings.kafka import KafkaSettings
from driftwatch.settings.limits import LimitsSettings
from driftwatch.settings.logs import LoggingSettings
from driftwatch.settings.metrics import MetricsSettings, ReadinessSettings
from driftwatch.settings.monitoring import MonitoringSettings
from driftwatch.settings.source import SourceSettings

if TYPE_CHECKING:
    from driftwatch.core.comparison.window import ComparisonConfig

_FILE_DATA: ContextVar[dict[str, Any] | None] = ContextVar("driftwatch_settings_file", default=None)


class _FileSource(PydanticBaseSettingsSource):
    """The parsed settings file, ranked below the environment (see :func:`load_settings`)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return _FILE_DATA.get() or {}


class Settings(BaseSettings):
    """driftwatch's settings. Build with :func:`load_settings`; ``Settings()`` reads the
    environment only."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED_DELIMITER,
        case_sensitive=False,
        extra="forbid",
        frozen=True,
    )

    kafka: KafkaSettings = Field(
        default_factory=KafkaSettings, description="Kafka: brokers, topics, group, security."
    )
    source: SourceSettings = Field(
        default_factory=SourceSettings,
        description="Where records come from: kafka (the default) or another source by name.",
    )
    events: EventsSettings = Field(
        default_factory=EventsSettings, description="How record values become events."
    )
    monitoring: MonitoringSettings = Field(
        default_factory=MonitoringSettings,
        description="Windows, measures and detectors, by default and per model.",
    )
    alerts: AlertsSettings = Field(
        default_factory=AlertsSettings,
        description="Alert thresholds, by default and per model, exported as metrics.",
    )
    limits: LimitsSettings = Field(
        default_factory=LimitsSettings, description="Bounds on models (and so on metrics)."
    )
    metrics: MetricsSettings = Field(
        default_factory=MetricsSettings,
        description="The HTTP endpoint: /metrics for Prometheus, /healthz and /readyz.",
    )
    exporters: ExportersSettings = Field(
        default_factory=ExportersSettings,
        description="Where the metrics go: Prometheus (on by default) and OTLP (off).",
    )
    checkpoint: CheckpointSettings = Field(
        default_factory=CheckpointSettings, description="Saving monitor state across restarts."
    )
    readiness: ReadinessSettings = Field(
        default_factory=ReadinessSettings,
        description="When /readyz reports a broker outage, and its recovery.",
    )
    logging: LoggingSettings = Field(
        default_factory=LoggingSettings, description="Log level and format."
    )
    comparisons: list[ComparisonSettings] = Field(
        default_factory=list,
        max_length=100,
        description=(
            "Champion/challenger comparisons: models whose records carry a second model's "
            "score, compared over the same events."
        ),
    )

    join: JoinSettings = Field(
        default_factory=JoinSettings,
        description="Predictions and labels as separate records, joined by event id.",
    )

    def checkpoint_backend(self) -> Literal["kafka", "file"]:
        """``checkpoint.backend`` with ``auto`` resolved: kafka, whole-stream agents
        (``kafka.assignment`` all_partitions) included: a replaced replica with an empty disk
        restores its model's window from the topic its siblings write. Except a whole-stream
        agent with ``join``: several writers of the join's records are not exact (the state
        topic's module docstring), so it keeps the file; and an agent whose ``source`` is
        not Kafka."""
        backend = self.checkpoint.backend
        if backend == "auto" and self.source.kind != "kafka":
            return "file"  # the state topic lives beside Kafka input
        if backend == "auto":
            whole_stream = self.kafka.assignment == "all_partitions"
            return "file" if whole_stream and self.join.enabled else "kafka"
        return backend

    def _join_reads_two_topics(self) -> bool:
        join = self.join
        return join.enabled and join.predictions_topic is not None and \
            join.labels_topic is not None and join.predictions_topic != join.labels_topic

    def state_topic(self) -> str:
        """The state topic: ``checkpoint.topic``, or ``<kafka.group_id>-state``, and with
        ``events.only_models`` ``<kafka.group_id>-state-<12 hex digits>``: the start of the
        SHA-256 of the sorted model ids joined by newlines (model ids may hold characters a
        topic name cannot). Agents with different filters keep different state: the meta
        records' rejection counts and the set of model records differ, so they must not
        share a topic, even when they share a group id (which only labels the lag metrics
        of whole-stream sidecars)."""
        if self.checkpoint.topic:
            return self.checkpoint.topic
        if not self.events.only_models:
            return f"{self.kafka.group_id}-state"
        models = "\n".join(sorted(set(self.events.only_models))).encode("utf-8")
        return f"{self.kafka.group_id}-state-{hashlib.sha256(models).hexdigest()[:12]}"

    def comparison_configs(self) -> list[ComparisonConfig]:
        """Each comparison with the model's window size and thresholds filled in."""
        # Imported here: the comparisons' statistics are no start-up cost of a command that
        # runs none (their module builds a few dozen dataclass methods, ~10 ms).
        from driftwatch.core.comparison.window import ComparisonConfig

        configs = []
        for comparison in self.comparisons:
            monitor = self.monitoring.monitor_config(comparison.model)
            window = _pick(comparison.window_size, monitor.window_size)
            configs.append(ComparisonConfig(
                name=comparison.name,
                model=comparison.model,
                challenger_score_field=comparison.challenger_score_field,
                challenger_prediction_field=comparison.challenger_prediction_field,
                window_size=window,
                threshold=monitor.threshold,
                challenger_threshold=_pick(comparison.challenger_threshold, monitor.threshold),
                block_size=_pick(comparison.block_size, window),
                blocks=comparison.blocks,
            ))
        return configs

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment above the file, so a deployment overrides one value of a shared file.
        return init_settings, env_settings, _FileSource(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _known_environment_sections(cls, data: Any) -> Any:
        """Refuse ``DRIFTWATCH_<SECTION>__...`` variables whose section does not exist.

        pydantic-settings ignores them, so ``DRIFTWATCH_METRIC__PORT=9200`` (a typo) would
        leave the port at its default without a word. Only names with the ``__`` separator
        are settings: ``DRIFTWATCH_CONFIG`` (the file) and other single-word names
        (``DRIFTWATCH_REQUIRE_TOOLS``, used by the test suite) are not this model's.
        """
        problems: list[InitErrorDetails] = []
        sections = list(cls.model_fields)
        for name in sorted(os.environ):
            if not name.upper().startswith(ENV_PREFIX):
                continue
            section, separator, _ = name[len(ENV_PREFIX):].partition(ENV_NESTED_DELIMITER)
            if not separator or section.lower() in sections:
                continue
            close = difflib.get_close_matches(section.lower(), sections, n=1)
            hint = f"; did you mean {close[0]}?" if close else f"; sections: {', '.join(sections)}"
            problems.append(_problem(
                (), f"environment variable {name}: unknown settings section "
                f"{section.lower()!r}{hint}",
            ))
        _raise(cls.__name__, problems)
        return data

    @model_validator(mode="after")
    def _across_sections(self) -> Settings:
        problems: list[InitErrorDetails] = []
        # Per-model overrides (monitoring.models, alerts.models) must name a model that can
        # occur: a valid model id and, with a constant model source, that constant.
        for section, models in (("monitoring", self.monitoring.models),
                                ("alerts", self.alerts.models)):
            for model in models:
                problem = model_id_problem(model, self.events.max_model_id_length)
                if problem is not None:
                    problems.append(_problem(
                        (section, "models", model),
                        f"never applies: not a valid model id: {problem} ("
                        f"events.max_model_id_length={self.events.max_model_id_length})",
                    ))
                elif self.events.model_source == "constant" \
                        and model != self.events.model_constant:
                    problems.append(_problem(
                        (section, "models", model),
                        f"never applies: events.model_source is constant, so every event "
                        f"belongs to model {self.events.model_constant!r}",
                    ))
        names: set[str] = set()
        for i, comparison in enumerate(self.comparisons):
            if comparison.name in names:
                problems.append(_problem(("comparisons", i, "name"),
                                         f"{comparison.name!r} names two comparisons"))
            names.add(comparison.name)
            problem = model_id_problem(comparison.model, self.events.max_model_id_length)
            if problem is not None:
                problems.append(_problem(("comparisons", i, "model"),
                                         f"never applies: not a valid model id: {problem}"))
            if comparison.challenger_score_field == self.events.score_field:
                problems.append(_problem(
                    ("comparisons", i, "challenger_score_field"),
                    f"is events.score_field ({self.events.score_field!r}), the champion's "
                    f"score: name the field holding the challenger's",
                ))
        if self.checkpoint.backend == "kafka" and self.kafka.assignment == "all_partitions" \
                and self.join.enabled:
            problems.append(_problem(
                ("checkpoint", "backend"),
                "kafka with kafka.assignment all_partitions has every replica write the "
                "join's records, and a join record of one replica with the model records "
                "of another is not exact: use file (or auto, which picks it) with join",
                "kafka"))
        if self.checkpoint.backend == "kafka" and self.source.kind != "kafka":
            problems.append(_problem(
                ("checkpoint", "backend"),
                f"kafka keeps the state beside Kafka input, but source.kind is "
                f"{self.source.kind!r}: use file (or auto, which picks it)", "kafka"))
        if len(self.monitoring.models) > self.limits.max_models:
            problems.append(_problem(
                ("monitoring", "models"),
                f"{len(self.monitoring.models)} models have overrides but limits.max_models is "
                f"{self.limits.max_models}",
            ))
        problems += [
            {**problem, "loc": ("monitoring", "defaults", "estimation", *problem["loc"])}
            for problem in self.monitoring.defaults.estimation.load(self.events.event_format())
        ]
        _raise(type(self).__name__, problems)
        return self

    @model_validator(mode="after")
    def _join_topics_consumed(self) -> Settings:
        problems: list[InitErrorDetails] = []
        topics = self.kafka.topics
        if self.join.enabled and self.events.only_models:
            problems.append(_problem(
                ("events", "only_models"), "not with join.enabled: label records carry no "
                "model id, so other models' labels could not be skipped; give each model "
                "its own topics instead",
            ))
        strategy = self.kafka.assignment_strategy
        if strategy != "range" and self._join_reads_two_topics():
            problems.append(_problem(
                ("kafka", "assignment_strategy"),
                f"{strategy} may give predictions[p] and labels[p] to different replicas, "
                "which then never join them: with join.predictions_topic and "
                "join.labels_topic use range", strategy))
        if self.join.enabled and topics is not None:
            for key in ("predictions_topic", "labels_topic"):
                topic = getattr(self.join, key)
                if topic is not None and topic not in topics:
                    problems.append(_problem(("join", key), f"{topic!r} is not in kafka.topics, "
                                                            "so it would never be read", topic))
        _raise(type(self).__name__, problems)
        return self
