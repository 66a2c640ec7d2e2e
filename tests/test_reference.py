"""The generated reference docs match the code (regenerate: python -m driftwatch.reference)."""

import pytest

from driftwatch import reference


@pytest.mark.parametrize("name", sorted(reference.FILES))
def test_reference_docs_are_up_to_date(name: str) -> None:
    path = reference.DOCS / name
    assert path.read_text(encoding="utf-8") == reference.FILES[name](), (
        f"{path} is out of date: run `python -m driftwatch.reference`"
    )


def test_every_setting_and_metric_is_listed() -> None:
    settings = reference.settings_reference()
    for key in ("kafka.bootstrap_servers", "monitoring.defaults.window_size",
                "monitoring.defaults.watches[].detectors[].name", "metrics.port"):
        assert f"`{key}`" in settings
    metrics = reference.metrics_reference()
    for name in ("driftwatch_measure", "driftwatch_alarms_total", "driftwatch_build_info"):
        assert f"`{name}`" in metrics
