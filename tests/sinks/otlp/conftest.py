"""Every OTLP test needs the ``otlp`` extra (the OpenTelemetry SDK, its OTLP/HTTP exporter and
opentelemetry-proto, which the test receiver decodes with): skipped locally without it,
failed in CI (``DRIFTWATCH_REQUIRE_TOOLS=1``), like a missing tool."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import tool_missing


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.fixture(autouse=True)
def otlp_extra() -> None:
    for module in ("opentelemetry.exporter.otlp.proto.http", "opentelemetry.proto"):
        if not _installed(module):
            tool_missing(module, "the otlp extra: pip install -e '.[test]' installs it")
