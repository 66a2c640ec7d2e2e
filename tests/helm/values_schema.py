"""The ``settings`` part of the chart's values.schema.json, derived from the settings model.

The chart's ``settings`` value is the agent's settings file, so its schema is the settings
model's own JSON Schema (``driftwatch config schema``): the same keys, types, enums and
bounds, with ``additionalProperties: false`` everywhere, so that ``helm install`` refuses a
typo or an out-of-range value before anything reaches the cluster. Two changes:

- the secret keys (``kafka.sasl_plain_password``, ``kafka.ssl_password``,
  ``metrics.basic_auth_password``, ``exporters.otlp.headers``: pydantic marks them or their
  values ``writeOnly``) are removed, so values
  that would put a secret into the ConfigMap are refused; the chart takes them from Secrets;
- the root model becomes ``definitions.Settings`` (the chart's root is the values object);
- JSON Schema draft-07 (``definitions``, not pydantic's 2020-12 ``$defs``): Helm up to 3.17
  validates with gojsonschema, which knows draft-07 at most; Helm 3.18+ and 4 know both.
  Every keyword pydantic emits for these models exists in draft-07 (a test checks the file
  with a draft-07 validator).

The hand-written rest of values.schema.json (mode, image, replicaCount, ...) is left as it
is. ``tests/helm/test_chart.py`` fails when the file's copy differs from this derivation;
``python -m tests.helm.values_schema`` rewrites it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

CHART = Path(__file__).resolve().parents[2] / "helm" / "driftwatch"
SCHEMA_FILE = CHART / "values.schema.json"

SECRET_KEYS = (
    ("KafkaSettings", "sasl_plain_password"),
    ("KafkaSettings", "ssl_password"),
    ("MetricsSettings", "basic_auth_password"),
    ("OtlpExporterSettings", "headers"),  # masked values: an API key, a bearer token
)


def _is_secret(schema: dict[str, Any]) -> bool:
    values = schema.get("additionalProperties")  # a mapping of secrets (headers)
    return bool(schema.get("writeOnly")) or any(
        bool(member.get("writeOnly")) for member in schema.get("anyOf", ())
    ) or (isinstance(values, dict) and bool(values.get("writeOnly")))


def _draft7_refs(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: (value.replace("#/$defs/", "#/definitions/")
                  if key == "$ref" and isinstance(value, str) else _draft7_refs(value))
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_draft7_refs(item) for item in node]
    return node


def settings_defs() -> dict[str, Any]:
    """``definitions`` entries for the ``settings`` value: the settings model's, plus
    ``Settings``."""
    from driftwatch.settings import Settings

    schema = _draft7_refs(Settings.model_json_schema())
    defs: dict[str, Any] = schema.pop("$defs")
    removed = []
    for name, definition in defs.items():
        for key, prop in list(definition.get("properties", {}).items()):
            if _is_secret(prop):
                del definition["properties"][key]
                removed.append((name, key))
    if sorted(removed) != sorted(SECRET_KEYS):
        raise AssertionError(f"secret keys changed: {removed}; update SECRET_KEYS and the chart")
    schema["description"] = (
        "The agent's settings file (driftwatch config schema), rendered into the ConfigMap. "
        "Secrets (kafka.sasl_plain_password, kafka.ssl_password, "
        "metrics.basic_auth_password, exporters.otlp.headers) are not accepted here: see "
        "secrets and extraEnv."
    )
    defs["Settings"] = schema
    return defs


def expected_schema(current: dict[str, Any]) -> dict[str, Any]:
    """``current`` (the file's content) with its settings definitions regenerated."""
    generated = settings_defs()
    own = {k: v for k, v in current.get("definitions", {}).items() if k not in generated}
    return {**current, "definitions": {**own, **generated}}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    current = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    text = render(expected_schema(current))
    if SCHEMA_FILE.read_text(encoding="utf-8") == text:
        print(f"{SCHEMA_FILE}: up to date")
    else:
        SCHEMA_FILE.write_text(text, encoding="utf-8")
        print(f"{SCHEMA_FILE}: settings definitions regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
