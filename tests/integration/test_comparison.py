"""Champion and challenger in the agent: records carrying two scores, a real broker, a real
agent process, and its scraped metrics equal to a paired window fed the same records here."""

from __future__ import annotations

import json
import math
import random

import pytest

from driftwatch.core.comparison.window import PairedWindow
from tests.broker import Broker
from tests.integration.helpers import StartAgent, produce

pytestmark = pytest.mark.brokers(
    "tansu", reason="the comparison's metrics; the broker only carries the records"
)

WINDOW, BLOCK, BLOCKS = 400, 100, 8
RECORDS = 1500


def records() -> list[dict[str, object]]:
    """Champion AUC ≈ 0.75, challenger ≈ 0.85, correlated; a few without the challenger."""
    rng = random.Random(5)
    out: list[dict[str, object]] = []
    for i in range(RECORDS):
        y = int(rng.random() < 0.35)
        shared = rng.gauss(0, 1)
        record: dict[str, object] = {
            "label": y,
            "score": round(0.95 * y + shared, 4),
            "model": "churn",
            "v2": round(1.45 * y + 0.6 * shared + 0.8 * rng.gauss(0, 1), 4),
        }
        if i % 100 == 99:
            del record["v2"]  # this record feeds the champion's monitor only
        out.append(record)
    return out


def test_agent_exports_the_comparison(
    broker: Broker, topic: str, start_agent: StartAgent
) -> None:
    agent = start_agent("comparison", {
        "monitoring": {"defaults": {"window_size": WINDOW}},
        "comparisons": [{
            "name": "churn-v2", "model": "churn", "challenger_score_field": "v2",
            "challenger_threshold": 0.0, "block_size": BLOCK, "blocks": BLOCKS,
        }],
    })
    data = records()
    produce(broker.bootstrap, topic, [json.dumps(r).encode() for r in data])
    paired = [r for r in data if "v2" in r]
    labels = {"comparison": "churn-v2", "model": "churn"}
    metrics = agent.wait_metrics(
        lambda m: m.total("driftwatch_comparison_events_total") == len(paired)
        and m.total("driftwatch_events_processed_total") == RECORDS,
        f"{len(paired)} paired events",
    )
    expected = PairedWindow(WINDOW, 0.5, 0.0, block_size=BLOCK, blocks=BLOCKS)
    for r in paired:
        expected.update(r["label"], r["score"], r["v2"])  # type: ignore[arg-type]
    values = expected.statistics()
    assert metrics.total("driftwatch_comparison_unpaired_total", reason="missing_field", **labels) \
        == RECORDS - len(paired)
    assert math.isclose(
        metrics.total("driftwatch_comparison_auc_difference", **labels), values["auc_difference"]
    )
    assert values["auc_difference"] > 0.05
    for test in ("delong", "mcnemar", "sign", "wilcoxon"):
        assert math.isclose(
            metrics.total("driftwatch_comparison_p_value", test=test, **labels),
            values[f"{test}_p_value"],
        ), test
    assert metrics.total("driftwatch_comparison_blocks", **labels) == BLOCKS
    assert math.isclose(
        metrics.total("driftwatch_comparison_auc", role="challenger", **labels),
        values["challenger_auc"],
    )
