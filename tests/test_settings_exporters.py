"""The ``exporters`` settings section: Prometheus on and OTLP off by default, each bad value
named by its key and reason, and enabling OTLP without its extra a clear error."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from pydantic import ValidationError

from driftwatch.settings import Settings, settings_errors
from driftwatch.settings.exporters import OTLP_EXTRA_MODULE


def problems(values: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as info:
        Settings.model_validate(values)
    return [(".".join(map(str, e["loc"])), e["msg"]) for e in info.value.errors()]


def test_prometheus_is_on_and_otlp_off_by_default() -> None:
    exporters = Settings().exporters
    assert exporters.prometheus.enabled
    assert not exporters.otlp.enabled
    assert exporters.otlp.endpoint == "http://localhost:4318/v1/metrics"


@pytest.mark.parametrize(("otlp", "key", "words"), [
    ({"endpoint": "localhost:4318"}, "exporters.otlp.endpoint", "http:// or https:// URL"),
    ({"endpoint": "http:///v1/metrics"}, "exporters.otlp.endpoint", "with a host"),
    ({"interval_seconds": 0.5}, "exporters.otlp.interval_seconds", "greater than or equal"),
    ({"timeout_seconds": 0}, "exporters.otlp.timeout_seconds", "greater than or equal"),
    ({"interval_seconds": 5, "timeout_seconds": 6}, "exporters.otlp.timeout_seconds",
     "at most interval_seconds (5)"),
    ({"headers": {"bad name": "x"}}, "exporters.otlp.headers.bad name", "HTTP header name"),
    ({"endpoints": "http://x:4318"}, "exporters.otlp.endpoints", "Extra inputs"),
])
def test_bad_otlp_settings_name_the_key(otlp: dict[str, Any], key: str, words: str) -> None:
    found = problems({"exporters": {"otlp": otlp}})
    assert any(loc == key and words in msg for loc, msg in found), found


def test_enabling_otlp_without_the_extra_names_the_key_and_the_pip_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # As if the otlp extra were not installed: the module cannot be found.
    monkeypatch.setitem(sys.modules, OTLP_EXTRA_MODULE, None)
    assert Settings.model_validate({"exporters": {"otlp": {"enabled": False}}})  # off: fine
    with pytest.raises(ValidationError) as info:
        Settings.model_validate({"exporters": {"otlp": {"enabled": True}}})
    (line,) = settings_errors(info.value)
    assert line.startswith("exporters.otlp.enabled (DRIFTWATCH_EXPORTERS__OTLP__ENABLED)")
    assert "pip install 'driftwatch-agent[otlp]'" in line


def test_the_environment_sets_the_otlp_exporter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFTWATCH_EXPORTERS__OTLP__ENDPOINT", "https://otel:4318/v1/metrics")
    monkeypatch.setenv("DRIFTWATCH_EXPORTERS__OTLP__HEADERS", '{"Authorization": "Bearer t"}')
    monkeypatch.setenv("DRIFTWATCH_EXPORTERS__PROMETHEUS__ENABLED", "false")
    exporters = Settings().exporters
    assert exporters.otlp.endpoint == "https://otel:4318/v1/metrics"
    assert exporters.otlp.headers["Authorization"].get_secret_value() == "Bearer t"
    assert "Bearer" not in repr(exporters)  # masked in logs and `config show`
    assert not exporters.prometheus.enabled
