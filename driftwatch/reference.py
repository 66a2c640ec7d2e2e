"""Reference tables generated from the code, so the docs cannot drift from it.

``python -m driftwatch.reference`` rewrites ``docs/settings.md`` (every setting: key, type,
default, environment variable, description, from the pydantic settings model) and
``docs/metrics.md`` (every metric: name, type, labels, help, from the exporter's collector).
``tests/test_reference.py`` fails when either file is out of date.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from driftwatch.io.collector import AgentSnapshot, SnapshotCollector
from driftwatch.io.comparisons import ComparisonCollector
from driftwatch.io.server import HttpCollector
from driftwatch.settings import Settings, env_name

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _type_name(annotation: Any) -> str:
    """A readable type: constraints dropped (they are in the description and the schema)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type_name(args[0])
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(arg) for arg in args)
    if origin is Literal:
        return " / ".join(str(arg) for arg in args)
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type_name(arg) for arg in args)}]"
    if annotation is type(None):
        return "null"
    return str(getattr(annotation, "__name__", annotation))


def _default(field: FieldInfo) -> str:
    if field.default is PydanticUndefined:
        if field.default_factory is None:
            return "required"
        value = field.default_factory()  # type: ignore[call-arg]
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(section)"
    if isinstance(value, tuple | list) and value and isinstance(value[0], BaseModel):
        return "(the built-in defaults)"
    try:
        text = json.dumps(value, default=str)
    except TypeError:
        text = str(value)
    return f"`{text}`" if len(text) <= 60 else "(long: see `driftwatch config show`)"


def _section_rows(model: type[BaseModel], path: tuple[str, ...], in_list: bool = False
                  ) -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        loc = (*path, name)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows += _section_rows(annotation, loc, in_list)
            continue
        env = "(the list's variable, as JSON)" if in_list else f"`{env_name(loc)}`"
        cells = (f"`{'.'.join(loc)}`", _type_name(annotation), _default(field), env,
                 " ".join((field.description or "").split()))
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        item = _list_item_model(annotation)
        if item is not None:
            rows += _section_rows(item, (*loc[:-1], f"{name}[]"), in_list=True)
    return rows


def _list_item_model(annotation: Any) -> type[BaseModel] | None:
    """The model of a list's items (through Optional and Annotated), if it is one."""
    for arg in (annotation, *get_args(annotation)):
        if get_origin(arg) is Annotated:
            arg = get_args(arg)[0]
        if get_origin(arg) is list:
            (item,) = get_args(arg)
            if get_origin(item) is Annotated:
                item = get_args(item)[0]
            if isinstance(item, type) and issubclass(item, BaseModel):
                return item
    return None


def settings_reference() -> str:
    lines = [
        "# Settings reference",
        "",
        "Generated from `driftwatch.settings` by `python -m driftwatch.reference`; do not edit.",
        "Every key can be set in the YAML file (`--config` or `DRIFTWATCH_CONFIG`) or by its",
        "environment variable, which wins. `driftwatch config schema` prints the JSON Schema;",
        "`driftwatch config show` the effective values.",
        "",
        "| key | type | default | environment | description |",
        "|---|---|---|---|---|",
        *_section_rows(Settings, ()),
        "",
    ]
    return "\n".join(lines)


def metrics_reference() -> str:
    collector = SnapshotCollector(lambda: AgentSnapshot.empty(0.0))
    lines = [
        "# Metrics reference",
        "",
        "Generated from `driftwatch.io.collector`, `driftwatch.io.server` and "
        "`driftwatch.io.comparisons` by `python -m driftwatch.reference`; do not edit.",
        "",
        "| metric | type | labels | help |",
        "|---|---|---|---|",
    ]
    comparisons = ComparisonCollector(lambda: ())
    for family in (*collector.describe(), *HttpCollector().describe(), *comparisons.describe()):
        name = family.name + {"counter": "_total", "info": "_info"}.get(family.type, "")
        labels = getattr(family, "_labelnames", ())
        lines.append(f"| `{name}` | {family.type} | {', '.join(labels) or '–'} | "
                     f"{family.documentation} |")
    lines += [
        "",
        "The agent also exports prometheus_client's process and platform collectors: "
        "`process_cpu_seconds_total`, `process_resident_memory_bytes`, "
        "`process_virtual_memory_bytes`, `process_open_fds`, `process_max_fds`, "
        "`process_start_time_seconds` (Linux) and `python_info`.",
        "",
    ]
    return "\n".join(lines)


FILES = {"settings.md": settings_reference, "metrics.md": metrics_reference}


def main() -> None:
    DOCS.mkdir(exist_ok=True)
    for name, make in FILES.items():
        (DOCS / name).write_text(make(), encoding="utf-8")
        print(f"wrote {DOCS / name}", file=sys.stderr)


if __name__ == "__main__":
    main()
