"""docs/metrics.md lists every family a real agent exports, scraped from its /metrics endpoint.

Two agents run in-process on memory sources with their real metrics servers on free loopback
ports: one joins predictions with delayed labels and watches the scores (the ``join``
families), the other compares a champion with a challenger (the ``comparisons`` families);
both export the snapshot's, the HTTP server's and prometheus_client's process families. Every
family either scrape shows must have its row in the generated reference (or, for
prometheus_client's own collectors, its mention there): a family added to an exporter without
``python -m driftwatch.reference`` fails here.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from driftwatch import reference
from driftwatch.core.join import Prediction
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.simulate import delayed_labels, generate
from tests.sinks.prometheus.in_process import scrape_after

DOCS = Path(__file__).resolve().parents[3] / "docs" / "metrics.md"


def scraped_families(settings: Settings, values: list[bytes]) -> set[str]:
    """The names of the families (as exposed: ``_total`` on counters) that one scrape of an
    agent shows after it processed ``values``."""
    batch = [Record("events", 0, i, None, value, 0) for i, value in enumerate(values)]
    text = scrape_after(settings, batch)
    families = set()
    for family in text_string_to_metric_families(text):
        if family.samples:
            suffix = {"counter": "_total", "info": "_info"}.get(family.type, "")
            families.add(family.name + suffix)
    return families


def joined_values() -> list[bytes]:
    stream = delayed_labels(generate("stationary", seed=3, length=3000), seed=4, model="m",
                            mean_delay=20.0)
    values = []
    for record in stream:
        fields: dict[str, Any] = (
            {"kind": "prediction", "model": record.model, "score": record.y_score}
            if isinstance(record, Prediction) else {"kind": "label", "label": record.y_true})
        values.append(json.dumps({**fields, "event_id": record.event_id,
                                  "ts": record.ts}).encode())
    return values


def compared_values() -> list[bytes]:
    rng = random.Random(5)
    values = []
    for i in range(3000):
        label = int(rng.random() < 0.4)
        values.append(json.dumps({"model": "m", "label": label, "ts": 1_750_000_000 + i,
                                  "score": rng.gauss(1.5 * label, 1.0),
                                  "challenger": rng.gauss(1.2 * label, 1.0)}).encode())
    return values


def common(tmp_path: Path) -> dict[str, Any]:
    return {"checkpoint": {"backend": "file", "directory": str(tmp_path)},
            "metrics": {"host": "127.0.0.1", "port": 0},
            "events": {"time_field": "ts"},
            "monitoring": {"defaults": {"window_size": 200}}}


def test_every_exported_family_is_in_the_metrics_reference(tmp_path: Path) -> None:
    join = Settings(**common(tmp_path / "join"),
                    join={"enabled": True, "kind_field": "kind", "max_pending": 500,
                          "score_drift": {"window": 200, "block_size": 100,
                                          "reference_size": 500}})
    comparisons = Settings(**common(tmp_path / "comparisons"),
                           comparisons=[{"name": "v2", "model": "m",
                                         "challenger_score_field": "challenger"}])
    exported = (scraped_families(join, joined_values())
                | scraped_families(comparisons, compared_values()))
    # The scrapes hold what the test is about: the join's, the comparisons' and the rest.
    for family in ("driftwatch_join_matched_total", "driftwatch_score_drift",
                   "driftwatch_label_delay_seconds", "driftwatch_comparison_auc",
                   "driftwatch_measure", "driftwatch_build_info", "process_cpu_seconds_total"):
        assert family in exported

    docs = DOCS.read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", docs, flags=re.MULTILINE))
    mentioned = set(re.findall(r"`([a-z_]+)`", docs))
    missing = {family for family in exported
               if family not in rows
               and not (family.startswith(("process_", "python_")) and family in mentioned)}
    assert missing == set(), f"exported but not in docs/metrics.md: {sorted(missing)}"


def test_the_reference_is_generated_from_every_collector() -> None:
    text = reference.metrics_reference()
    for family in ("driftwatch_join_dropped_total", "driftwatch_score_drift_alarms_total",
                   "driftwatch_comparison_p_value", "driftwatch_http_connections"):
        assert f"| `{family}` |" in text
