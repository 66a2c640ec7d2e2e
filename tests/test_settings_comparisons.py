"""The ``comparisons`` settings: defaults from the champion's monitor, problems at their keys."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

from driftwatch.core.comparison.window import ComparisonConfig
from driftwatch.settings import Settings, load_settings, settings_errors


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("DRIFTWATCH_"):
            monkeypatch.delenv(name)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "driftwatch.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_defaults_come_from_the_champions_monitor(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, """
        monitoring:
          defaults: {threshold: 0.4}
          models:
            churn: {window_size: 500, threshold: 0.3}
        comparisons:
          - {name: churn-v2, model: churn, challenger_score_field: v2_score}
          - name: fraud-v3
            model: fraud
            challenger_score_field: v3_score
            challenger_prediction_field: v3_pred
            challenger_threshold: 0.6
            window_size: 2000
            block_size: 250
            blocks: 20
    """))
    assert settings.comparison_configs() == [
        ComparisonConfig("churn-v2", "churn", "v2_score", None, 500, 0.3, 0.3, 500, 10),
        ComparisonConfig("fraud-v3", "fraud", "v3_score", "v3_pred", 2000, 0.4, 0.6, 250, 20),
    ]
    assert Settings().comparison_configs() == []


def test_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    value = [{"name": "v2", "model": "default", "challenger_score_field": "v2_score"}]
    monkeypatch.setenv("DRIFTWATCH_COMPARISONS", json.dumps(value))
    (config,) = load_settings(None).comparison_configs()
    assert (config.name, config.window_size) == ("v2", 1000)


def problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        load_settings(write(tmp_path, text))
    return settings_errors(caught.value)


def test_problems_are_reported_at_their_keys(tmp_path: Path) -> None:
    found = problems(tmp_path, """
        comparisons:
          - {name: b, model: m, challenger_score_field: q, blocks: 0}
    """)
    assert len(found) == 1 and found[0].startswith("comparisons.0.blocks"), found
    found = problems(tmp_path, """
        comparisons:
          - {name: a, model: m, challenger_score_field: score}
          - {name: a, model: "bad\\u0001id", challenger_score_field: q}
    """)
    assert len(found) == 3, found
    text = "\n".join(found)
    assert "comparisons.0.challenger_score_field" in text and "events.score_field" in text
    assert "comparisons.1.name" in text and "'a' names two comparisons" in text
    assert "comparisons.1.model" in text and "not a valid model id" in text
