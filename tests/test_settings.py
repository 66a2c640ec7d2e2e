"""The settings model: sources and their ranks, validation messages, and the views it builds
for the core (MonitorConfig), the decoder (EventFormat) and kafka-python (consumer_config)."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from driftwatch.core.detectors import registry
from driftwatch.core.monitor import DEFAULT_WATCHES, DetectorSpec, Monitor, MonitorConfig, Watch
from driftwatch.decoding.decoder import EventFormat
from driftwatch.settings import (
    DetectorSettings,
    EventsSettings,
    KafkaSettings,
    MonitorDefaults,
    Settings,
    SettingsFileError,
    env_name,
    load_settings,
    settings_errors,
)
from tests.conftest import tool_missing


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see only the DRIFTWATCH_* variables they set themselves."""
    import os

    for name in list(os.environ):
        if name.upper().startswith("DRIFTWATCH_"):
            monkeypatch.delenv(name)


def write(tmp_path: Path, text: str, name: str = "driftwatch.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems_of(tmp_path: Path, text: str) -> list[str]:
    """The error lines for a settings file that must be invalid."""
    with pytest.raises((ValidationError, SettingsFileError)) as caught:
        load_settings(write(tmp_path, text))
    return settings_errors(caught.value)


def line_for(problems: list[str], prefix: str) -> str:
    matches = [line for line in problems if line.startswith(prefix)]
    assert matches, f"no problem starts with {prefix!r}: {problems}"
    return matches[0]


# ------------------------------------------------------------------------------------------
# Sources


def test_defaults_load_with_no_file() -> None:
    settings = load_settings(None)
    assert settings == Settings()
    assert settings.kafka.bootstrap_servers == ["localhost:9092"]
    assert settings.kafka.topics == ["driftwatch-events"]
    assert settings.kafka.topic_pattern is None
    assert settings.metrics.host == "0.0.0.0"
    assert settings.metrics.port == 9108
    assert settings.limits.max_models == 100
    assert settings.logging.level == "INFO"
    # The core's defaults, not copies of them.
    assert settings.monitoring.monitor_config("any") == MonitorConfig()
    assert settings.monitoring.monitor_config("any").watches == DEFAULT_WATCHES
    assert settings.events.event_format() == EventFormat()


def test_documented_group_timing_defaults() -> None:
    kafka = KafkaSettings()
    # The values measured with Tansu; kafka-python's defaults stall a rebalance.
    assert (kafka.max_poll_interval_ms, kafka.session_timeout_ms, kafka.heartbeat_interval_ms) == (
        5000,
        6000,
        1000,
    )
    for key in ("max_poll_interval_ms", "session_timeout_ms", "heartbeat_interval_ms"):
        assert KafkaSettings.model_fields[key].description


def test_yaml_file_values_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        kafka:
          bootstrap_servers: [b1:9092, b2:9092]
          topic_pattern: "scores-.*"
          group_id: fraud
          poll_batch: 200
          alarms_topic: alarms
        events:
          label_field: y
          model_source: key
          positive_label: fraud
          negative_label: legit
        monitoring:
          defaults:
            window_size: 2000
            sample_every: 50
            watches:
              - measure: auc
                detectors:
                  - name: page_hinkley
                    params: {delta: 1e-3, threshold: 25}
        limits: {max_models: 5}
        metrics: {host: 127.0.0.1, port: 9200}
        checkpoint: {enabled: false, directory: /var/lib/driftwatch, interval_seconds: 10}
        logging: {level: debug, format: json}
    """,
    )
    settings = load_settings(path)
    assert settings.kafka.bootstrap_servers == ["b1:9092", "b2:9092"]
    assert settings.kafka.topics is None
    assert settings.kafka.topic_pattern == "scores-.*"
    assert settings.kafka.group_id == "fraud"
    assert settings.kafka.poll_batch == 200
    assert settings.kafka.alarms_topic == "alarms"
    assert settings.events.label_field == "y"
    assert settings.events.positive_label == "fraud"
    assert settings.monitoring.defaults.window_size == 2000
    # 1e-3 is a number (YAML 1.1 alone would read it as a string).
    watch = settings.monitoring.defaults.watches[0]
    assert watch.detectors[0].params == {"delta": 0.001, "threshold": 25.0}
    assert settings.limits.max_models == 5
    assert (settings.metrics.host, settings.metrics.port) == ("127.0.0.1", 9200)
    assert settings.checkpoint.directory == Path("/var/lib/driftwatch")
    assert not settings.checkpoint.enabled
    assert (settings.logging.level, settings.logging.format) == ("DEBUG", "json")


def test_config_file_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "kafka: {group_id: from-file}\n")
    monkeypatch.setenv("DRIFTWATCH_CONFIG", str(path))
    assert load_settings(None).kafka.group_id == "from-file"


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    assert load_settings(write(tmp_path, "# nothing set\n")) == Settings()


def test_environment_overrides_file_key_by_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(
        tmp_path,
        """
        kafka:
          bootstrap_servers: [file:9092]
          group_id: from-file
          client_id: kept
        monitoring:
          defaults: {window_size: 2000, sample_every: 20}
    """,
    )
    monkeypatch.setenv("DRIFTWATCH_KAFKA__GROUP_ID", "from-env")
    monkeypatch.setenv("DRIFTWATCH_KAFKA__BOOTSTRAP_SERVERS", "env-1:9092,env-2:9092")
    monkeypatch.setenv("DRIFTWATCH_MONITORING__DEFAULTS__WINDOW_SIZE", "500")
    settings = load_settings(path)
    assert settings.kafka.group_id == "from-env"
    assert settings.kafka.bootstrap_servers == ["env-1:9092", "env-2:9092"]
    assert settings.kafka.client_id == "kept"
    assert settings.monitoring.defaults.window_size == 500
    assert settings.monitoring.defaults.sample_every == 20


@pytest.mark.parametrize("value", ["a:9092,b:9092", " a:9092 , b:9092 ", '["a:9092", "b:9092"]'])
def test_environment_lists_comma_separated_or_json(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("DRIFTWATCH_KAFKA__BOOTSTRAP_SERVERS", value)
    monkeypatch.setenv("DRIFTWATCH_KAFKA__TOPICS", value.replace(":9092", ""))
    settings = load_settings(None)
    assert settings.kafka.bootstrap_servers == ["a:9092", "b:9092"]
    assert settings.kafka.topics == ["a", "b"]


def test_environment_sets_per_model_overrides_and_watches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DRIFTWATCH_MONITORING__MODELS__FRAUD__WINDOW_SIZE", "300")
    monkeypatch.setenv(
        "DRIFTWATCH_MONITORING__DEFAULTS__WATCHES",
        '[{"measure": "error_stream", "detectors": [{"name": "ddm"}]}]',
    )
    settings = load_settings(None)
    assert settings.monitoring.monitor_config("fraud").window_size == 300
    assert settings.monitoring.monitor_config("other").window_size == 1000
    assert settings.monitoring.monitor_config("fraud").watches == (
        Watch("error_stream", (DetectorSpec("ddm"),)),
    )


def test_keyword_arguments_rank_above_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFTWATCH_LIMITS__MAX_MODELS", "7")
    assert Settings().limits.max_models == 7
    assert Settings(limits={"max_models": 3}).limits.max_models == 3  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# Errors: each names the key, its environment variable, and what is wrong


def test_env_name_follows_the_path() -> None:
    assert env_name(("kafka", "bootstrap_servers")) == "DRIFTWATCH_KAFKA__BOOTSTRAP_SERVERS"
    assert env_name(("kafka", "bootstrap_servers", 1)) == "DRIFTWATCH_KAFKA__BOOTSTRAP_SERVERS"
    assert env_name(("monitoring", "models", "fraud", "window_size")) == (
        "DRIFTWATCH_MONITORING__MODELS__FRAUD__WINDOW_SIZE"
    )
    assert env_name(()) == ""


def test_typo_names_the_key_and_suggests_the_right_one(tmp_path: Path) -> None:
    problems = problems_of(
        tmp_path,
        """
        kafka:
          bootstrap_server: [a:9092]
        logging: {levl: INFO}
        kafak: {}
    """,
    )
    assert line_for(problems, "kafka.bootstrap_server ") == (
        "kafka.bootstrap_server (DRIFTWATCH_KAFKA__BOOTSTRAP_SERVER): unknown key; "
        "did you mean 'bootstrap_servers'?"
    )
    assert "did you mean 'level'?" in line_for(problems, "logging.levl (DRIFTWATCH_LOGGING__LEVL)")
    assert "did you mean 'kafka'?" in line_for(problems, "kafak (DRIFTWATCH_KAFAK)")


BAD_VALUES = [
    pytest.param(
        "kafka: {assignment: all_partitions, topic_pattern: 'scores-.*'}",
        "kafka.topic_pattern (DRIFTWATCH_KAFKA__TOPIC_PATTERN): ",
        "assignment all_partitions reads the partitions of named topics",
        id="whole-stream-needs-topics",
    ),
    pytest.param(
        "kafka: {assignment: everything}",
        "kafka.assignment (DRIFTWATCH_KAFKA__ASSIGNMENT): ",
        "'group' or 'all_partitions'",
        id="assignment-unknown",
    ),
    pytest.param(
        "events: {model_source: constant, model_constant: fraud, only_models: [fraud]}",
        "events.only_models (DRIFTWATCH_EVENTS__ONLY_MODELS): ",
        "every record is 'fraud''s: there is nothing to filter",
        id="only-models-with-constant",
    ),
    pytest.param(
        "events: {model_source: key, only_models: [fraud, \"bad\\tid\"]}",
        "events.only_models.1 (DRIFTWATCH_EVENTS__ONLY_MODELS): ",
        "never applies: not a valid model id",
        id="only-models-bad-id",
    ),
    pytest.param(
        "events: {model_source: key, only_models: [fraud]}\n"
        "kafka: {topics: [p, l]}\n"
        "join: {enabled: true, predictions_topic: p, labels_topic: l}",
        "events.only_models (DRIFTWATCH_EVENTS__ONLY_MODELS): ",
        "not with join.enabled: label records carry no model id",
        id="only-models-with-join",
    ),
    pytest.param(
        "monitoring: {defaults: {watches: [{measure: auc, feed: blocks, detectors: "
        "[{name: cusum, params: {arl: 5}}]}]}}",
        "monitoring.defaults.watches.0.detectors.0.params.arl "
        "(DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): ",
        "greater than or equal to 10",
        id="cusum-arl-too-short",
    ),
    pytest.param(
        "monitoring: {defaults: {watches: [{measure: false_negative_rate}]}}",
        "monitoring.defaults.watches.0.feed (DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): ",
        "false_negative_rate is measured on blocks only; set feed: blocks",
        id="rate-needs-blocks",
    ),
    pytest.param(
        "monitoring: {defaults: {block_min_class: 1}}",
        "monitoring.defaults.block_min_class "
        "(DRIFTWATCH_MONITORING__DEFAULTS__BLOCK_MIN_CLASS): ",
        "greater than or equal to 2",
        id="block-min-class",
    ),
    pytest.param(
        "monitoring: {defaults: {window_size: -5}}",
        "monitoring.defaults.window_size (DRIFTWATCH_MONITORING__DEFAULTS__WINDOW_SIZE): ",
        "greater than or equal to 1, got -5",
        id="negative-window-size",
    ),
    pytest.param(
        "monitoring: {defaults: {window_size: 2000000}}",
        "monitoring.defaults.window_size (DRIFTWATCH_MONITORING__DEFAULTS__WINDOW_SIZE): ",
        "less than or equal to 1000000",
        id="huge-window-size",
    ),
    pytest.param(
        "monitoring: {defaults: {watches: [{measure: auc, detectors: [{name: shewhart}]}]}}",
        "monitoring.defaults.watches.0.detectors.0.name "
        "(DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): ",
        "unknown detector 'shewhart'; known detectors: adwin, cusum, ddm, page_hinkley",
        id="unknown-detector",
    ),
    pytest.param(
        "monitoring: {defaults: {watches: [{measure: auc, detectors: "
        "[{name: page_hinkley, params: {delta: -1}}]}]}}",
        "monitoring.defaults.watches.0.detectors.0.params.delta "
        "(DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): ",
        "(DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): must be a finite number in [0, ∞], got -1",
        id="detector-rejects-delta",
    ),
    pytest.param(
        "monitoring: {defaults: {watches: [{measure: auc, detectors: "
        "[{name: adwin, params: {delta: fast}}]}]}}",
        "monitoring.defaults.watches.0.detectors.0.params.delta "
        "(DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): ",
        "valid number, got 'fast'",
        id="ill-typed-param",
    ),
    pytest.param(
        "monitoring: {defaults: {watches: [{measure: auc, detectors: "
        "[{name: adwin, params: {min_samples: 10}}]}]}}",
        "monitoring.defaults.watches.0.detectors.0.params.min_samples "
        "(DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): ",
        "adwin has no such parameter; its parameters: delta, clock,",
        id="unknown-param",
    ),
    pytest.param(
        "monitoring: {defaults: {watches: [{measure: error_stream, detectors: "
        "[{name: ddm, params: {warning_level: 3, drift_level: 2}}]}]}}",
        "monitoring.defaults.watches.0.detectors.0.params.drift_level "
        "(DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): ",
        "(DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): must be ≥ warning_level (3.0), got 2",
        id="detector-cross-parameter-rule",
    ),
    pytest.param(
        "monitoring: {defaults: {watches: [{measure: auc}, {measure: kappa, detectors: "
        "[{name: page_hinkley}, {name: ddm}]}]}}",
        "monitoring.defaults.watches.1.detectors.1 (DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): ",
        "ddm needs inputs in [0, 1] but kappa can leave [0, 1]",
        id="ddm-on-raw-kappa",
    ),
    pytest.param(
        "monitoring: {defaults: {watches: [{measure: kappa_per, floor: 0.8}]}}",
        "monitoring.defaults.watches.0.floor (DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): ",
        "kappa_per has no class-ratio normalization",
        id="floor-without-normalization",
    ),
    pytest.param(
        "monitoring: {defaults: {watches: [{measure: auroc}]}}",
        "monitoring.defaults.watches.0.measure (DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): ",
        "unknown measure 'auroc'",
        id="unknown-measure",
    ),
    pytest.param(
        "monitoring: {models: {fraud: {sample_every: 0}}}",
        "monitoring.models.fraud.sample_every "
        "(DRIFTWATCH_MONITORING__MODELS__FRAUD__SAMPLE_EVERY): ",
        "greater than or equal to 1",
        id="bad-model-override",
    ),
    pytest.param(
        "kafka: {heartbeat_interval_ms: 6000}",
        "kafka.heartbeat_interval_ms (DRIFTWATCH_KAFKA__HEARTBEAT_INTERVAL_MS): ",
        "must be at most a third of session_timeout_ms (6000), got 6000",
        id="heartbeat-not-below-session-timeout",
    ),
    pytest.param(
        "kafka: {poll_timeout_ms: 5000}",
        "kafka.poll_timeout_ms (DRIFTWATCH_KAFKA__POLL_TIMEOUT_MS): ",
        "must be below max_poll_interval_ms (5000)",
        id="poll-timeout-too-long",
    ),
    pytest.param(
        "kafka: {topics: [a], topic_pattern: 'a.*'}",
        "kafka.topic_pattern (DRIFTWATCH_KAFKA__TOPIC_PATTERN): ",
        "set either topics or topic_pattern, not both",
        id="topics-and-pattern",
    ),
    pytest.param(
        "kafka: {topic_pattern: 'scores-('}",
        "kafka.topic_pattern (DRIFTWATCH_KAFKA__TOPIC_PATTERN): ",
        "not a valid regular expression",
        id="bad-pattern",
    ),
    pytest.param(
        "kafka: {topics: [scores], dead_letter_topic: scores}",
        "kafka.dead_letter_topic (DRIFTWATCH_KAFKA__DEAD_LETTER_TOPIC): ",
        "is one of the consumed topics",
        id="dead-letter-loop",
    ),
    pytest.param(
        "kafka: {bootstrap_servers: ['a:9092', 'b 9092']}",
        "kafka.bootstrap_servers.1 (DRIFTWATCH_KAFKA__BOOTSTRAP_SERVERS): ",
        "should match pattern",
        id="bad-list-item-keeps-index",
    ),
    pytest.param(
        "kafka: {security_protocol: SASL_SSL}",
        "kafka.sasl_mechanism (DRIFTWATCH_KAFKA__SASL_MECHANISM): ",
        "required with security_protocol SASL_SSL",
        id="sasl-without-mechanism",
    ),
    pytest.param(
        "kafka: {security_protocol: SASL_SSL, sasl_mechanism: SCRAM-SHA-512, "
        "sasl_plain_username: u}",
        "kafka.sasl_plain_password (DRIFTWATCH_KAFKA__SASL_PLAIN_PASSWORD): ",
        "required by SCRAM-SHA-512",
        id="scram-without-password",
    ),
    pytest.param(
        "kafka: {ssl_cafile: /etc/ca.pem}",
        "kafka.ssl_cafile (DRIFTWATCH_KAFKA__SSL_CAFILE): ",
        "only used with security_protocol SSL or SASL_SSL, not PLAINTEXT",
        id="tls-file-without-tls",
    ),
    pytest.param(
        "kafka: {client_options: {group_id: other}}",
        "kafka.client_options.group_id (DRIFTWATCH_KAFKA__CLIENT_OPTIONS__GROUP_ID): ",
        "set by kafka.group_id, not here",
        id="client-option-owned-by-a-setting",
    ),
    pytest.param(
        "kafka: {client_options: {partition_assignment_strategy: [range]}}",
        "kafka.client_options.partition_assignment_strategy ",
        "set by kafka.assignment_strategy, not here",
        id="assignors-owned-by-a-setting",
    ),
    pytest.param(
        "kafka: {client_options: {group_instance_id: pod-0}}",
        "kafka.client_options.group_instance_id ",
        "set by kafka.group_instance_id, not here",
        id="instance-id-owned-by-a-setting",
    ),
    pytest.param(
        "kafka: {topics: [a], assignment: all_partitions, group_instance_id: pod-0}",
        "kafka.group_instance_id (DRIFTWATCH_KAFKA__GROUP_INSTANCE_ID): ",
        "assignment all_partitions joins no group",
        id="instance-id-without-a-group",
    ),
    pytest.param(
        "kafka: {group_instance_id: 'pod 0'}",
        "kafka.group_instance_id (DRIFTWATCH_KAFKA__GROUP_INSTANCE_ID): ",
        "should match pattern",
        id="instance-id-kafka-refuses",
    ),
    pytest.param(
        "kafka: {group_instance_id: '..'}",
        "kafka.group_instance_id (DRIFTWATCH_KAFKA__GROUP_INSTANCE_ID): ",
        "Kafka refuses '..'",
        id="instance-id-dots",
    ),
    pytest.param(
        "kafka: {assignment_strategy: sticky}",
        "kafka.assignment_strategy (DRIFTWATCH_KAFKA__ASSIGNMENT_STRATEGY): ",
        "'cooperative-sticky', 'range' or 'roundrobin', got 'sticky'",
        id="unknown-assignor",
    ),
    pytest.param(
        "kafka: {client_options: {enable_auto_commit: true}}",
        "kafka.client_options.enable_auto_commit ",
        "at-least-once",
        id="auto-commit-refused",
    ),
    pytest.param(
        "kafka: {auto_offset_reset: newest}",
        "kafka.auto_offset_reset (DRIFTWATCH_KAFKA__AUTO_OFFSET_RESET): ",
        "'earliest' or 'latest', got 'newest'",
        id="bad-choice",
    ),
    pytest.param(
        "events: {positive_label: yes, negative_label: true}",
        "events.negative_label (DRIFTWATCH_EVENTS__NEGATIVE_LABEL): ",
        "must differ from positive_label",
        id="same-labels",
    ),
    pytest.param(
        "events: {label_field: value, score_field: value}",
        "events.score_field (DRIFTWATCH_EVENTS__SCORE_FIELD): ",
        "'value' is already the label_field",
        id="same-field-twice",
    ),
    pytest.param(
        "events: {positive_label: 0.5}",
        "events.positive_label (DRIFTWATCH_EVENTS__POSITIVE_LABEL): ",
        "must be a string, an integer or true/false, got 0.5",
        id="float-label",
    ),
    pytest.param(
        "metrics: {basic_auth_username: prometheus}",
        "metrics.basic_auth_password (DRIFTWATCH_METRICS__BASIC_AUTH_PASSWORD): ",
        "required when basic_auth_username is set",
        id="basic-auth-half",
    ),
    pytest.param(
        "metrics: {tls_keyfile: /k.pem}",
        "metrics.tls_certfile (DRIFTWATCH_METRICS__TLS_CERTFILE): ",
        "required when tls_keyfile is set",
        id="tls-half",
    ),
    pytest.param(
        "metrics: {port: 70000}",
        "metrics.port (DRIFTWATCH_METRICS__PORT): ",
        "less than or equal to 65535",
        id="bad-port",
    ),
    pytest.param(
        "limits: {max_models: 1}\nmonitoring: {models: {a: {}, b: {}}}",
        "monitoring.models (DRIFTWATCH_MONITORING__MODELS): ",
        "2 models have overrides but limits.max_models is 1",
        id="more-overrides-than-models",
    ),
    pytest.param(
        "events: {model_source: constant, model_constant: solo}\n"
        "monitoring: {models: {other: {window_size: 10}}}",
        "monitoring.models.other (DRIFTWATCH_MONITORING__MODELS__OTHER): ",
        "never applies: events.model_source is constant",
        id="override-that-never-applies",
    ),
    pytest.param(
        "alerts: {defaults: {auc_floor: 1.2}}",
        "alerts.defaults.auc_floor (DRIFTWATCH_ALERTS__DEFAULTS__AUC_FLOOR): ",
        "less than or equal to 1",
        id="auc-floor-above-1",
    ),
    pytest.param(
        "alerts: {models: {fraud: {no_events_seconds: 5}}}",
        "alerts.models.fraud.no_events_seconds "
        "(DRIFTWATCH_ALERTS__MODELS__FRAUD__NO_EVENTS_SECONDS): ",
        "greater than or equal to 60",
        id="no-events-tolerance-below-a-minute",
    ),
    pytest.param(
        "events: {model_source: constant, model_constant: solo}\n"
        "alerts: {models: {other: {auc_floor: 0.8}}}",
        "alerts.models.other (DRIFTWATCH_ALERTS__MODELS__OTHER): ",
        "never applies: events.model_source is constant",
        id="alert-override-that-never-applies",
    ),
    pytest.param(
        "logging: {level: LOUD}",
        "logging.level (DRIFTWATCH_LOGGING__LEVEL): ",
        "got 'LOUD'",
        id="bad-log-level",
    ),
]


BAD_VALUES += [
    pytest.param(
        "metrics: {basic_auth_username: prometheus, basic_auth_password: ''}",
        "metrics.basic_auth_password (DRIFTWATCH_METRICS__BASIC_AUTH_PASSWORD): ",
        "must not be empty (an empty password would leave /metrics open)",
        id="basic-auth-empty-password",
    ),
    pytest.param(
        "metrics: {basic_auth_password: s3cret}",
        "metrics.basic_auth_username (DRIFTWATCH_METRICS__BASIC_AUTH_USERNAME): ",
        "required when basic_auth_password is set",
        id="basic-auth-password-without-user",
    ),
    pytest.param(
        "metrics: {basic_auth_username: '', basic_auth_password: s3cret}",
        "metrics.basic_auth_username (DRIFTWATCH_METRICS__BASIC_AUTH_USERNAME): ",
        "at least 1 character",
        id="basic-auth-empty-user",
    ),
    pytest.param(
        "metrics: {max_connections: 0}",
        "metrics.max_connections (DRIFTWATCH_METRICS__MAX_CONNECTIONS): ",
        "greater than or equal to 1",
        id="no-connections",
    ),
    pytest.param(
        "metrics: {request_timeout_seconds: 0}",
        "metrics.request_timeout_seconds (DRIFTWATCH_METRICS__REQUEST_TIMEOUT_SECONDS): ",
        "greater than or equal to 0.1",
        id="no-request-time",
    ),
    pytest.param(
        "kafka: {client_options: {fetch_max_wait_ms: soon}}",
        "kafka.client_options.fetch_max_wait_ms "
        "(DRIFTWATCH_KAFKA__CLIENT_OPTIONS__FETCH_MAX_WAIT_MS): ",
        "must be an integer >= 0, got 'soon'",
        id="client-option-int",
    ),
    pytest.param(
        "kafka: {client_options: {fetch_max_wait_ms: true}}",
        "kafka.client_options.fetch_max_wait_ms ",
        "must be an integer >= 0",
        id="client-option-bool-is-not-int",
    ),
    pytest.param(
        "kafka: {client_options: {check_crcs: 'yes'}}",
        "kafka.client_options.check_crcs ",
        "must be true or false",
        id="client-option-bool",
    ),
    pytest.param(
        "kafka: {client_options: {isolation_level: 3}}",
        "kafka.client_options.isolation_level ",
        "must be a string",
        id="client-option-str",
    ),
    pytest.param(
        "kafka: {client_options: {api_version: 'two'}}",
        "kafka.client_options.api_version ",
        "must be a broker version such as [2, 5, 0] or '2.5.0'",
        id="client-option-api-version",
    ),
    pytest.param(
        "kafka: {client_options: {value_deserializer: json}}",
        "kafka.client_options.value_deserializer ",
        "takes a Python object",
        id="client-option-object",
    ),
    pytest.param(
        "kafka: {client_options: {receive_buffer_bytes: -1}}",
        "kafka.client_options.receive_buffer_bytes ",
        "must be an integer >= 1",
        id="client-option-size",
    ),
    pytest.param(
        "kafka: {client_options: {ssl_crlfile: /nonexistent/crl.pem}}",
        "kafka.client_options.ssl_crlfile ",
        "no such file: /nonexistent/crl.pem",
        id="client-option-missing-crl",
    ),
    pytest.param(
        "kafka: {security_protocol: SSL, ssl_cafile: /nonexistent/ca.pem}",
        "kafka.ssl_cafile (DRIFTWATCH_KAFKA__SSL_CAFILE): ",
        "no such file: /nonexistent/ca.pem",
        id="missing-ca-file",
    ),
    pytest.param(
        "kafka: {security_protocol: SSL, ssl_certfile: /nonexistent/c.pem, "
        "ssl_keyfile: /nonexistent/k.pem}",
        "kafka.ssl_keyfile (DRIFTWATCH_KAFKA__SSL_KEYFILE): ",
        "no such file: /nonexistent/k.pem",
        id="missing-key-file",
    ),
    pytest.param(
        "metrics: {tls_certfile: /nonexistent/tls.crt, tls_keyfile: /tmp}",
        "metrics.tls_keyfile (DRIFTWATCH_METRICS__TLS_KEYFILE): ",
        "is a directory, not a file: /tmp",
        id="metrics-key-is-a-directory",
    ),
    pytest.param(
        "metrics: {tls_certfile: /nonexistent/tls.crt, tls_keyfile: /tmp}",
        "metrics.tls_certfile (DRIFTWATCH_METRICS__TLS_CERTFILE): ",
        "no such file: /nonexistent/tls.crt",
        id="missing-metrics-certificate",
    ),
    pytest.param(
        "events: {model_constant: \"a\\nb\"}",
        "events.model_constant (DRIFTWATCH_EVENTS__MODEL_CONSTANT): ",
        "not a valid model id: is not printable text",
        id="unprintable-model-constant",
    ),
    pytest.param(
        "events: {max_model_id_length: 5}",
        "events.model_constant (DRIFTWATCH_EVENTS__MODEL_CONSTANT): ",
        "not a valid model id: is 7 characters, over 5",
        id="model-constant-longer-than-the-limit",
    ),
    pytest.param(
        "events: {max_model_id_length: 8}\nmonitoring: {models: {fraud-model-v2: {}}}",
        "monitoring.models.fraud-model-v2 (DRIFTWATCH_MONITORING__MODELS__FRAUD-MODEL-V2): ",
        "never applies: not a valid model id: is 14 characters, over 8 (",
        id="override-for-an-impossible-model-id",
    ),
    pytest.param(
        "events: {max_model_id_length: 8}\nalerts: {models: {fraud-model-v2: {}}}",
        "alerts.models.fraud-model-v2 (DRIFTWATCH_ALERTS__MODELS__FRAUD-MODEL-V2): ",
        "never applies: not a valid model id: is 14 characters, over 8 (",
        id="alert-override-for-an-impossible-model-id",
    ),
    pytest.param(
        # Raw and normalized G-mean in two watches: settings used to accept it and the
        # agent then failed to build the model's monitor (the core's one-watch rule).
        "monitoring: {defaults: {watches: [{measure: gmean, detectors: [{name: adwin}]}, "
        "{measure: gmean, normalized: true, detectors: [{name: page_hinkley}]}]}}",
        "monitoring.defaults.watches.1.measure (DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): ",
        "gmean is already watched (watches.0); metrics and alarms are labelled by measure and "
        "detector, so a measure has one watch",
        id="measure-watched-twice",
    ),
    pytest.param(
        "monitoring: {models: {m: {watches: [{measure: f1, floor: 0.5}, "
        "{measure: f1, normalized: true, floor: 0.7}]}}}",
        "monitoring.models.m.watches.1.measure (DRIFTWATCH_MONITORING__MODELS__M__WATCHES): ",
        "f1 is already watched (watches.0)",
        id="two-floors-for-a-measure",
    ),
    pytest.param(
        "monitoring: {defaults: {watches: [{measure: auc, feed: blocks, detectors: "
        "[{name: cusum}, {name: cusum, params: {arl: 1000}}]}]}}",
        "monitoring.defaults.watches.0.detectors.1.name "
        "(DRIFTWATCH_MONITORING__DEFAULTS__WATCHES): ",
        "cusum already watches auc (detectors.0); metrics and alarms are labelled by measure "
        "and detector, so each pair may appear once",
        id="same-detector-twice-on-one-measure",
    ),
]


@pytest.mark.parametrize(("text", "prefix", "message"), BAD_VALUES)
def test_bad_value_is_reported_at_its_key(
    tmp_path: Path, text: str, prefix: str, message: str
) -> None:
    line = line_for(problems_of(tmp_path, text + "\n"), prefix)
    assert message in line, line
    assert "\n" not in line


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    problems = problems_of(
        tmp_path,
        """
        kafka: {poll_batch: 0, group_id: ""}
        monitoring:
          defaults:
            window_size: 0
            watches:
              - measure: auc
                detectors:
                  - {name: page_hinkley, params: {delta: -1}}
                  - {name: adwin, params: {delta: 2}}
        metrics: {port: -1}
    """,
    )
    assert len(problems) == 6, problems


def test_error_from_the_environment_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFTWATCH_MONITORING__DEFAULTS__WINDOW_SIZE", "many")
    with pytest.raises(ValidationError) as caught:
        load_settings(None)
    (line,) = settings_errors(caught.value)
    assert line.startswith(
        "monitoring.defaults.window_size (DRIFTWATCH_MONITORING__DEFAULTS__WINDOW_SIZE): "
    )
    assert "got 'many'" in line


def test_malformed_json_in_the_environment_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFTWATCH_KAFKA__CLIENT_OPTIONS", "{not json")
    with pytest.raises(Exception) as caught:
        load_settings(None)
    (line,) = settings_errors(caught.value)
    assert line.startswith("environment: ") and "kafka" in line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kafka:\n  topics: [a\n", "driftwatch.yaml:3:1: invalid YAML: expected ','"),
        ("kafka: {group_id: a}\nkafka: {group_id: b}\n", "found duplicate key 'kafka'"),
        ("- kafka\n", "the top level must be a mapping of sections"),
        ("kafka: [\t\n", "invalid YAML"),
    ],
)
def test_unreadable_file_is_one_line(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SettingsFileError) as caught:
        load_settings(path)
    (line,) = settings_errors(caught.value)
    assert line.startswith(str(path)) and expected in line
    assert "\n" not in line


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SettingsFileError) as caught:
        load_settings(tmp_path / "absent.yaml")
    assert settings_errors(caught.value) == [f"{tmp_path / 'absent.yaml'}: no such file"]


# ------------------------------------------------------------------------------------------
# Secrets


SECRETS = {
    "DRIFTWATCH_KAFKA__SECURITY_PROTOCOL": "SASL_SSL",
    "DRIFTWATCH_KAFKA__SASL_MECHANISM": "PLAIN",
    "DRIFTWATCH_KAFKA__SASL_PLAIN_USERNAME": "agent",
    "DRIFTWATCH_KAFKA__SASL_PLAIN_PASSWORD": "sasl-hunter2",
    "DRIFTWATCH_KAFKA__SSL_CERTFILE": "/tls/client.pem",
    "DRIFTWATCH_KAFKA__SSL_PASSWORD": "key-hunter2",
    "DRIFTWATCH_METRICS__BASIC_AUTH_USERNAME": "prometheus",
    "DRIFTWATCH_METRICS__BASIC_AUTH_PASSWORD": "metrics-hunter2",
}


def test_secrets_masked_in_repr_and_str(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(None, check_files=False)  # SECRETS name files that do not exist
    for text in (
        repr(settings),
        str(settings),
        repr(settings.kafka),
        str(settings.metrics),
        str(settings.model_dump()),
        str(settings.model_dump(mode="json")),
    ):
        assert "hunter2" not in text
    assert "**********" in str(settings.kafka)
    assert settings.metrics.basic_auth_password is not None
    assert settings.metrics.basic_auth_password.get_secret_value() == "metrics-hunter2"


def test_secret_values_never_quoted_in_errors(tmp_path: Path) -> None:
    problems = problems_of(
        tmp_path,
        """
        kafka:
          security_protocol: SASL_SSL
          sasl_mechanism: PLAIN
          sasl_plain_username: agent
          sasl_plain_password: [hunter2]
    """,
    )
    line = line_for(problems, "kafka.sasl_plain_password ")
    assert "hunter2" not in line


def test_consumer_config_reveals_secrets_and_passes_sasl_and_tls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DRIFTWATCH_KAFKA__SSL_CAFILE", "/tls/ca.pem")
    monkeypatch.setenv("DRIFTWATCH_KAFKA__SSL_KEYFILE", "/tls/client.key")
    monkeypatch.setenv(
        "DRIFTWATCH_KAFKA__CLIENT_OPTIONS",
        '{"ssl_check_hostname": false, "fetch_max_wait_ms": 100}',
    )
    config = load_settings(None, check_files=False).kafka.consumer_config()
    assert config["security_protocol"] == "SASL_SSL"
    assert config["sasl_mechanism"] == "PLAIN"
    assert config["sasl_plain_username"] == "agent"
    assert config["sasl_plain_password"] == "sasl-hunter2"
    assert config["ssl_cafile"] == "/tls/ca.pem"
    assert config["ssl_certfile"] == "/tls/client.pem"
    assert config["ssl_keyfile"] == "/tls/client.key"
    assert config["ssl_password"] == "key-hunter2"
    assert config["ssl_check_hostname"] is False
    assert config["fetch_max_wait_ms"] == 100
    assert config["enable_auto_commit"] is False


def test_consumer_config_defaults() -> None:
    config = KafkaSettings().consumer_config()
    assert config == {
        "bootstrap_servers": ["localhost:9092"],
        "group_id": "driftwatch",
        "client_id": "driftwatch",
        "max_poll_records": 500,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "max_poll_interval_ms": 5000,
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 1000,
        "reconnect_backoff_ms": 500,
        "reconnect_backoff_max_ms": 30000,
        "security_protocol": "PLAINTEXT",
    }


def kafka_python() -> Any:
    """kafka-python, or skip (fail in CI: conftest's tool_missing)."""
    try:
        import kafka  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        tool_missing("kafka-python", "checks settings against KafkaConsumer's options")
    return kafka


def test_consumer_config_keys_are_kafka_python_options(tmp_path: Path) -> None:
    kafka = kafka_python()
    for name in ("ca.pem", "c.pem", "k.pem"):
        (tmp_path / name).write_text("PEM\n")
    settings = KafkaSettings(
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="u",
        sasl_plain_password="p",  # type: ignore[arg-type]
        ssl_cafile=tmp_path / "ca.pem",
        ssl_certfile=tmp_path / "c.pem",
        ssl_keyfile=tmp_path / "k.pem",
        ssl_password="k",  # type: ignore[arg-type]
    )
    assert set(settings.consumer_config()) <= set(kafka.KafkaConsumer.DEFAULT_CONFIG)


def test_a_group_instance_id_reaches_the_consumer_and_no_group_less_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Downward API's Pod name, as the chart passes it, makes the agent a static member;
    a range replay (no group) leaves it out: kafka-python refuses an instance id without a
    group."""
    kafka = kafka_python()
    from driftwatch.replay.kafka_range import KafkaRangeSource

    monkeypatch.setenv("DRIFTWATCH_KAFKA__GROUP_INSTANCE_ID", "driftwatch-7d9f-x2")
    config = load_settings(None).kafka.consumer_config()
    assert config["group_instance_id"] == "driftwatch-7d9f-x2"
    assert "group_instance_id" not in KafkaSettings().consumer_config()
    replay = KafkaRangeSource("scores", {**config, "api_version": (2, 5, 0),
                                         "bootstrap_servers": ["127.0.0.1:1"]})
    kafka.KafkaConsumer(**replay._config).close()  # no KafkaConfigurationError


def test_client_options_from_the_environment_are_converted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kafka_python()
    # Environment variables are strings: digits and true/false become what kafka-python takes.
    monkeypatch.setenv("DRIFTWATCH_KAFKA__CLIENT_OPTIONS__FETCH_MAX_WAIT_MS", "100")
    monkeypatch.setenv("DRIFTWATCH_KAFKA__CLIENT_OPTIONS__CHECK_CRCS", "false")
    monkeypatch.setenv("DRIFTWATCH_KAFKA__CLIENT_OPTIONS__API_VERSION", "2.5.0")
    monkeypatch.setenv("DRIFTWATCH_KAFKA__CLIENT_OPTIONS__CONSUMER_TIMEOUT_MS", "1.5")
    options = load_settings(None).kafka.client_options
    assert options == {"fetch_max_wait_ms": 100, "check_crcs": False, "api_version": (2, 5, 0),
                       "consumer_timeout_ms": 1.5}
    assert type(options["fetch_max_wait_ms"]) is int


def test_client_options_a_kafka_consumer_accepts(tmp_path: Path) -> None:
    """Every accepted value is one kafka-python's consumer really takes (no broker needed:
    it fails at bootstrap, after checking the options)."""
    kafka = kafka_python()
    crl = tmp_path / "crl.pem"
    crl.write_text("CRL\n")
    settings = KafkaSettings(
        bootstrap_servers=["127.0.0.1:1"],
        client_options={"fetch_max_wait_ms": "250", "check_crcs": "true",
                        "api_version": [2, 5, 0], "ssl_crlfile": str(crl),
                        "socket_options": [[6, 1, 1]], "request_timeout_ms": 30001,
                        "isolation_level": "read_committed", "bootstrap_timeout_ms": 10},
    )
    config = settings.consumer_config()
    assert config["api_version"] == (2, 5, 0) and config["socket_options"] == [(6, 1, 1)]
    consumer = kafka.KafkaConsumer(**config)  # api_version given: no bootstrap round trip
    try:
        assert consumer.config["fetch_max_wait_ms"] == 250
        assert consumer.config["check_crcs"] is True
    finally:
        consumer.close()


def test_tls_files_must_be_readable(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("PEM\n")
    assert load_settings(write(tmp_path, f"kafka: {{security_protocol: SSL, ssl_cafile: {ca}}}")
                         ).kafka.ssl_cafile == ca
    under_a_file = ca / "ca.pem"  # a path through a regular file: cannot be opened
    problems = problems_of(
        tmp_path, f"kafka: {{security_protocol: SSL, ssl_cafile: {under_a_file}}}"
    )
    assert line_for(problems, "kafka.ssl_cafile ").endswith(
        f"cannot be opened: {under_a_file}: Not a directory"
    )


def test_file_checks_can_be_skipped_for_a_file_meant_elsewhere(tmp_path: Path) -> None:
    text = "kafka: {security_protocol: SSL, ssl_cafile: /elsewhere/ca.pem}"
    settings = load_settings(write(tmp_path, text), check_files=False)
    assert str(settings.kafka.ssl_cafile) == "/elsewhere/ca.pem"
    with pytest.raises(ValidationError):
        load_settings(write(tmp_path, text))


def test_config_validate_names_a_missing_tls_file(tmp_path: Path) -> None:
    from driftwatch.commands.main import main

    path = write(tmp_path, "metrics: {tls_certfile: /nope/tls.crt, tls_keyfile: /nope/tls.key}")
    assert main(["config", "validate", str(path)]) == 2
    assert main(["config", "validate", "--no-file-checks", str(path)]) == 0


def test_unknown_environment_section_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFTWATCH_METRIC__PORT", "9200")
    with pytest.raises(ValidationError) as caught:
        load_settings(None)
    assert settings_errors(caught.value) == [
        "(settings): environment variable DRIFTWATCH_METRIC__PORT: unknown settings section "
        "'metric'; did you mean metrics?"
    ]
    monkeypatch.delenv("DRIFTWATCH_METRIC__PORT")
    monkeypatch.setenv("driftwatch_zzz__a", "1")  # names are case-insensitive
    with pytest.raises(ValidationError, match="unknown settings section 'zzz'; sections: kafka"):
        load_settings(None)


def test_other_driftwatch_variables_are_not_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # DRIFTWATCH_CONFIG names the file, DRIFTWATCH_REQUIRE_TOOLS is the test suite's; a
    # single-word name is never a nested key.
    monkeypatch.setenv("DRIFTWATCH_CONFIG", str(write(tmp_path, "metrics: {port: 9300}")))
    monkeypatch.setenv("DRIFTWATCH_REQUIRE_TOOLS", "1")
    monkeypatch.setenv("DRIFTWATCH_METRICS__PORT", "9301")
    assert load_settings(None).metrics.port == 9301


def test_numeric_string_scores_and_model_id_length_reach_the_decoder() -> None:
    fmt = EventsSettings(numeric_string_scores=True, max_model_id_length=50).event_format()
    assert fmt.numeric_string_scores is True and fmt.max_model_id_length == 50
    assert EventsSettings().event_format() == EventFormat()


def test_unknown_client_option_suggests_the_right_one(tmp_path: Path) -> None:
    kafka_python()
    problems = problems_of(tmp_path, "kafka: {client_options: {fetch_max_wait: 100}}\n")
    assert line_for(problems, "kafka.client_options.fetch_max_wait ").endswith(
        "not a kafka-python consumer option; did you mean 'fetch_max_wait_ms'?"
    )


# ------------------------------------------------------------------------------------------
# Views for the core and the decoder


def test_monitor_config_merges_per_model_overrides(tmp_path: Path) -> None:
    settings = load_settings(
        write(
            tmp_path,
            """
        monitoring:
          defaults:
            window_size: 2000
            sample_every: 50
            threshold: 0.3
          models:
            fraud: {window_size: 500}
            quiet: {watches: []}
            churn:
              threshold: 0.7
              watches:
                - measure: error_stream
                  detectors: [{name: ddm, params: {drift_level: 4}}]
    """,
        )
    )
    monitoring = settings.monitoring
    assert monitoring.monitor_config("unlisted") == MonitorConfig(2000, 50, 0.3, DEFAULT_WATCHES)
    assert monitoring.monitor_config("fraud") == MonitorConfig(500, 50, 0.3, DEFAULT_WATCHES)
    assert monitoring.monitor_config("quiet") == MonitorConfig(2000, 50, 0.3, ())
    assert monitoring.monitor_config("churn") == MonitorConfig(
        2000, 50, 0.7, (Watch("error_stream", (DetectorSpec("ddm", {"drift_level": 4.0}),)),)
    )
    for model in ("unlisted", "fraud", "quiet", "churn"):
        Monitor(model, monitoring.monitor_config(model))  # the core accepts every one
    # Models without overrides share the defaults' (frozen) config; a listed one has its own.
    assert monitoring.monitor_config("unlisted") is monitoring.monitor_config("another")
    assert monitoring.monitor_config("fraud") is not monitoring.monitor_config("unlisted")


def test_watch_direction_is_left_to_the_monitor() -> None:
    # Parameters not given stay absent, so the Monitor passes the watch's direction on.
    defaults = MonitorDefaults.model_validate(
        {
            "watches": [
                {"measure": "error", "direction": "up", "detectors": [{"name": "page_hinkley"}]}
            ]
        }
    )
    (watch,) = defaults.watches
    assert watch.watch() == Watch("error", (DetectorSpec("page_hinkley", {}),), direction="up")


def test_default_watches_round_trip() -> None:
    assert tuple(w.watch() for w in MonitorDefaults().watches) == DEFAULT_WATCHES


def test_every_registered_detector_validates_with_its_defaults() -> None:
    for name, detector in registry.available().items():
        assert DetectorSettings(name=name).spec() == DetectorSpec(name, {})
        params = {p: getattr(detector(), p) for p in detector.parameter_names()}
        assert DetectorSettings(name=name, params=params).params == params


def test_detector_params_are_strict(tmp_path: Path) -> None:
    problems = problems_of(
        tmp_path,
        """
        monitoring:
          defaults:
            watches:
              - measure: auc
                detectors: [{name: page_hinkley, params: {delta: true, min_samples: 2.5}}]
    """,
    )
    prefix = "monitoring.defaults.watches.0.detectors.0.params."
    assert "valid number" in line_for(problems, prefix + "delta ")
    assert "valid integer" in line_for(problems, prefix + "min_samples ")


def test_event_format_round_trip() -> None:
    fmt = EventFormat(
        label_field="y",
        score_field="p",
        prediction_field="y_hat",
        time_field="at",
        model_field="m",
        model_source="key",
        model_constant="solo",
        positive_label="fraud",
        negative_label="legit",
        max_record_bytes=4096,
    )
    events = EventsSettings(**dataclasses.asdict(fmt))
    assert events.event_format() == fmt
    assert EventsSettings(**dataclasses.asdict(events.event_format())) == events


def test_labels_keep_their_yaml_type(tmp_path: Path) -> None:
    text = "events: {positive_label: true, negative_label: false}\n"
    settings = load_settings(write(tmp_path, text))
    assert settings.events.positive_label is True
    assert settings.events.negative_label is False
    settings = load_settings(write(tmp_path, "events: {positive_label: 1, negative_label: 0}\n"))
    assert settings.events.positive_label == 1 and type(settings.events.positive_label) is int


def test_documented_example_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "running.md").read_text("utf-8")
    section = page.split("### An example settings file", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    monkeypatch.setenv("DRIFTWATCH_KAFKA__SASL_PLAIN_PASSWORD", "from-the-environment")
    # The example's CA file is a path on the agent's machine, not this one.
    settings = load_settings(write(tmp_path, example), check_files=False)
    assert settings.kafka.sasl_mechanism == "SCRAM-SHA-512"
    assert settings.monitoring.monitor_config("fraud-v2").window_size == 5000
    assert settings.monitoring.monitor_config("fraud-v2").watches == (
        settings.monitoring.monitor_config("other").watches
    )


def test_alert_thresholds_per_model_inherit_key_by_key() -> None:
    from driftwatch.settings import AlertThresholds

    settings = Settings(alerts={
        "defaults": {"auc_floor": 0.75, "no_events_seconds": 600},
        "models": {"fraud": {"auc_floor": 0.8}, "daily": {"batch_labels": True,
                                                          "no_events_seconds": 93_600}},
    })
    assert settings.alerts.thresholds("fraud") == AlertThresholds(0.8, 0.05, 600, False)
    assert settings.alerts.thresholds("daily") == AlertThresholds(0.75, 0.05, 93_600, True)
    assert settings.alerts.thresholds("other") == AlertThresholds(0.75, 0.05, 600, False)
    assert Settings().alerts.thresholds("any") == AlertThresholds(0.7, 0.05, 1200, False)
