"""The settings model: one YAML file, overridden by environment variables, validated by pydantic.

The model is the single source of truth for every option: its default, its bounds, its
description (which ``driftwatch config schema`` exports as a JSON Schema for editors), and
the check that produces a clear message naming the bad key. One model per area (``kafka``,
``events``, ``monitoring``, ``alerts``, ``limits``, ``metrics``, ``checkpoint``,
``readiness``, ``exporters``, ``logging``) is composed into the root :class:`Settings`.

Where values come from, highest rank first:

1. keyword arguments to ``Settings(...)`` (tests and embedding code);
2. environment variables: ``DRIFTWATCH_`` + the key path joined by ``__``, upper case, e.g.
   ``DRIFTWATCH_KAFKA__BOOTSTRAP_SERVERS=broker-1:9092,broker-2:9092`` (lists also accept
   JSON: ``'["broker-1:9092"]'``; mappings and lists of objects take JSON);
3. the YAML file named by ``--config`` or by ``DRIFTWATCH_CONFIG``;
4. the defaults below.

Sources merge key by key, so an environment variable replaces one value of the file and
keeps the rest. Unknown keys are errors (``extra="forbid"``), so a typo is reported, never
silently ignored. :func:`load_settings` reads the file, :func:`settings_errors` turns any
failure into lines ``path.to.key (ENV_NAME): message``.

One module per area (``kafka`` with ``kafka_options``, ``events``, ``detectors`` and
``monitoring``, ``alerts``, ``comparisons``, ``join``, ``limits``, ``metrics`` with
``readiness``, ``exporters``, ``checkpoint``, ``logs``), the root model in ``root``, reading
and reporting in ``loading``, and what they share in ``common``. Import from here: the names
below are the package's interface.

The rules of the core's own configuration (a monitor's watches and detectors, the join's
bounds, the label-free signals) live in the core: it raises
:class:`~driftwatch.core.config_error.ConfigError`, whose problems carry the path of the key
they are about, and the settings add where that object sits in the file. No message text is
parsed. A new setting of an area goes in that area's module, and into the root model only
when it is a new area.

An example file, every key optional (checked by a test): docs/running.md#an-example-settings-file.
"""

from driftwatch.settings.alerts import (
    AlertDefaults,
    AlertOverrides,
    AlertsSettings,
    AlertThresholds,
)
from driftwatch.settings.checkpoint import CheckpointSettings
from driftwatch.settings.common import CONFIG_ENV, ENV_NESTED_DELIMITER, ENV_PREFIX
from driftwatch.settings.comparisons import ComparisonSettings
from driftwatch.settings.detectors import DetectorSettings
from driftwatch.settings.events import EventsSettings
from driftwatch.settings.exporters import (
    ExportersSettings,
    OtlpExporterSettings,
    PrometheusExporterSettings,
)
from driftwatch.settings.join import JoinSettings, ScoreDriftSettings
from driftwatch.settings.kafka import DEFAULT_TOPIC, KafkaSettings
from driftwatch.settings.limits import LimitsSettings
from driftwatch.settings.loading import (
    SettingsFileError,
    env_name,
    load_settings,
    read_settings_file,
    settings_errors,
)
from driftwatch.settings.logs import LoggingSettings
from driftwatch.settings.metrics import MetricsSettings, ReadinessSettings
from driftwatch.settings.monitoring import (
    MAX_WINDOW_SIZE,
    MonitorDefaults,
    MonitoringSettings,
    MonitorOverrides,
    WatchSettings,
)
from driftwatch.settings.root import Settings

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_TOPIC",
    "ENV_NESTED_DELIMITER",
    "ENV_PREFIX",
    "MAX_WINDOW_SIZE",
    "AlertDefaults",
    "AlertOverrides",
    "AlertThresholds",
    "AlertsSettings",
    "CheckpointSettings",
    "ComparisonSettings",
    "DetectorSettings",
    "EventsSettings",
    "ExportersSettings",
    "JoinSettings",
    "KafkaSettings",
    "LimitsSettings",
    "LoggingSettings",
    "MetricsSettings",
    "MonitorDefaults",
    "MonitorOverrides",
    "MonitoringSettings",
    "OtlpExporterSettings",
    "PrometheusExporterSettings",
    "ReadinessSettings",
    "ScoreDriftSettings",
    "Settings",
    "SettingsFileError",
    "WatchSettings",
    "env_name",
    "load_settings",
    "read_settings_file",
    "settings_errors",
]
