"""Reference tables generated from the code, so the docs cannot drift from it.

``python -m driftwatch.reference`` rewrites ``docs/settings.md`` (every setting: key, type,
default, environment variable, description, from the pydantic settings model) and
``docs/metrics.md`` (every metric: name, type, labels, help, from the exporter's collector;
then every value of the ``measure`` label, from the measure registry).
``tests/test_reference.py`` fails when either file is out of date.
"""

from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from driftwatch.core.measures import registry as measure_registry
from driftwatch.settings import Settings, env_name
from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.prometheus.comparison_collector import ComparisonCollector
from driftwatch.sinks.prometheus.export_collector import ExportCollector
from driftwatch.sinks.prometheus.join_collector import JoinCollector
from driftwatch.sinks.prometheus.server import HttpCollector
from driftwatch.sinks.snapshot import AgentSnapshot

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


THRESHOLD_GLOSSARY = """\
## "Threshold": five meanings

The word names five different things in driftwatch; the settings keep the names users
already write (the decision threshold is the `threshold` of every model), so this is which
is which.

1. **Decision threshold**: `monitoring.defaults.threshold`, `monitoring.models.<id>.threshold`
   and `comparisons[].challenger_threshold`. The score at or above which an event without a
   prediction field counts as predicted positive (`score >= threshold`). It decides the
   confusion matrix behind every crisp measure and the predicted-positive rate of the
   label-free signals; it raises no alarm itself.
2. **Adjusted threshold**: the metric `driftwatch_measure_threshold{model, measure}`. A
   watch's `floor` is set on the class-ratio-normalized scale (Brzezinski et al. 2019, eq. 10: 0.8
   means better than 80 % of all confusion matrices at the window's P:N); this is the raw value
   that means the same at the current class ratio, for rules comparing it with
   `driftwatch_measure`.
3. **Threshold alarm**: `detector="threshold"` (and `level="threshold"`) in
   `driftwatch_alarms_total`, the logs and the alarms topic. A watched measure fell below
   its floor; no detector is involved.
4. **A detector's own threshold**, under `watches[].detectors[].params`: Page-Hinkley's
   `threshold` (λ, in input units), DDM's `warning_level` and `drift_level` (in standard
   deviations), and CUSUM's decision interval h, which is not set directly but derived from
   `arl`, the in-control average run length (so its false-alarm rate is what is chosen).
5. **Alert thresholds**: the `alerts` section (`auc_floor`, `auc_max_drop`,
   `no_events_seconds`, `batch_labels`), exported as `driftwatch_auc_floor_threshold` and its
   siblings for the shipped Prometheus alert rules. They change when alerts fire, not what the
   monitors detect.
"""
"""Appended to the settings reference: the word's meanings, each with its keys and metrics."""


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
        THRESHOLD_GLOSSARY,
    ]
    return "\n".join(lines)


def metrics_reference() -> str:
    collector = SnapshotCollector(lambda: AgentSnapshot.empty(0.0))
    lines = [
        "# Metrics reference",
        "",
        "Generated from the exporter's collectors (`driftwatch.sinks.prometheus.collector`, "
        "`.join_collector`, `.comparison_collector`, `.server` and `.export_collector`) by "
        "`python -m driftwatch.reference`; do not edit. The join's families (`driftwatch_join_*`, "
        "`driftwatch_label_delay_seconds`, "
        "`driftwatch_score_drift*`) appear with the `join` settings, the comparisons' "
        "(`driftwatch_comparison_*`) with `comparisons`, the push exporters' "
        "(`driftwatch_exporter_*`) with `exporters.otlp`.",
        "",
        "| metric | type | labels | help |",
        "|---|---|---|---|",
    ]
    comparisons = ComparisonCollector(lambda: ())
    join = JoinCollector(lambda: None)
    for family in (*collector.describe(), *join.describe(), *HttpCollector().describe(),
                   *comparisons.describe(), *ExportCollector({}).describe()):
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
        *measures_reference(),
    ]
    return "\n".join(lines)


_KINDS = {
    "window": "window (`driftwatch_measure`)",
    "event": "every event (watches only)",
    "block": "blocks (`feed: blocks` watches only)",
    "score": "predictions, label-free (`join.score_drift` detectors)",
}


def _range(low: float, high: float) -> str:
    left = "(−∞" if low == -math.inf else f"[{low:g}"
    right = "∞)" if high == math.inf else f"{high:g}]"
    return f"{left}, {right}"


def measures_reference() -> list[str]:
    """The ``measure`` label's values: one row per measure of the registry."""
    lines = [
        "## Measures",
        "",
        "The values of the `measure` label, from `driftwatch.core.measures.registry`. "
        "*Bad change* is a watch's default `direction`; *normalized* measures also get "
        "`driftwatch_measure_normalized` and can take a `floor`. An undefined value is not "
        "exported.",
        "",
        "| measure | measured on | what | bad change | range | normalized | undefined when |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in measure_registry.measures():
        cells = (f"`{m.name}`", _KINDS[m.kind], m.description,
                 "either" if m.two_sided else "drop" if m.higher_is_better else "rise",
                 _range(m.minimum, m.maximum),
                 "yes" if m.normalizable else "no", m.undefined)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    lines.append("")
    return lines


FILES = {"settings.md": settings_reference, "metrics.md": metrics_reference}


def main() -> None:
    DOCS.mkdir(exist_ok=True)
    for name, make in FILES.items():
        (DOCS / name).write_text(make(), encoding="utf-8")
        print(f"wrote {DOCS / name}", file=sys.stderr)


if __name__ == "__main__":
    main()
