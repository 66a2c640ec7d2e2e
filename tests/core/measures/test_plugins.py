"""Measures from plug-ins: a ``Measure`` declared as a ``driftwatch.measures`` entry point of
a distribution laid out as pip installs one is registered (reported by windows, watchable,
accepted by the settings); broken ones are left out with the reason, which a watch naming
one is told."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from driftwatch.core.measures import registry
from driftwatch.core.window import PrequentialWindow
from driftwatch.settings import WatchSettings
from tests.plugin_dist import write_distribution

PLUGIN = '''
import math

from driftwatch.core.measures.registry import Measure


def _mean_score(window, tally):
    events = window.export_state()["events"]
    return math.fsum(score for _, score, _ in events) / len(events) if events else math.nan


MEAN_SCORE = Measure("mean_score", "mean score", "The mean score of the window's events.",
                     "the window is empty", window=_mean_score)
NAMED_OTHERWISE = Measure("other_name", "other", "Named unlike its entry point.", "never",
                          window=_mean_score)
BLOCK = Measure("block_thing", "block thing", "A block measure.", "never", kind="block")
AUC_AGAIN = Measure("auc", "AUC", "A second AUC.", "never", window=_mean_score)
NOT_A_MEASURE = "mean_score"
'''


@pytest.fixture
def plugin_root(tmp_path: Path) -> Iterator[Path]:
    """A directory on sys.path; afterwards it leaves sys.path, its modules are forgotten,
    its measures unregistered and the registry's plug-in problems read afresh."""
    before_modules, before_measures = set(sys.modules), set(registry.names())
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in set(sys.modules) - before_modules:
            if name.startswith("dw_plugin_"):
                del sys.modules[name]
        for name in set(registry.names()) - before_measures:
            registry.unregister(name)
        registry.load_plugins()


def test_a_plugin_measure_is_registered_reported_and_watchable(plugin_root: Path) -> None:
    write_distribution(plugin_root, {"driftwatch.measures": {"mean_score": "{mod}:MEAN_SCORE"}},
                       PLUGIN)
    assert "mean_score" not in registry.names()
    added = registry.load_plugins()
    assert list(added) == ["mean_score"]
    assert registry.load_plugins() == {}  # once only
    assert registry.window_measures()[-1].name == "mean_score"
    assert "mean_score" in registry.watchable_names()
    assert WatchSettings(measure="mean_score").measure == "mean_score"
    window = PrequentialWindow(size=3)
    for label, score in [(0, 0.2), (1, 0.5), (1, 0.8), (0, 0.3)]:
        window.update(label, score)
    assert window.measures()["mean_score"] == math.fsum([0.5, 0.8, 0.3]) / 3
    assert registry.plugin_errors() == {}


def test_broken_plugin_measures_are_left_out_with_the_reason(plugin_root: Path) -> None:
    write_distribution(plugin_root, {"driftwatch.measures": {
        "mean_score": "{mod}:NOT_A_MEASURE", "named": "{mod}:NAMED_OTHERWISE",
        "block_thing": "{mod}:BLOCK", "auc": "{mod}:AUC_AGAIN",
        "gone": "dw_plugin_nowhere_at_all:X"}}, PLUGIN)
    before = registry.measures()
    assert registry.load_plugins() == {}
    assert registry.measures() == before
    errors = registry.plugin_errors()
    assert "is not a driftwatch Measure: 'mean_score'" in errors["mean_score"]
    assert "names a measure 'other_name', which must be named as the entry point, 'named'" \
        in errors["named"]
    assert "is a block measure; plug-ins add window measures only" in errors["block_thing"]
    assert "would replace the built-in measure 'auc'" in errors["auc"]
    assert "failed to load: ModuleNotFoundError" in errors["gone"]
    assert registry.get("auc").description.startswith("Prequential AUC")
    with pytest.raises(ValidationError, match="is not a driftwatch Measure"):
        WatchSettings(measure="mean_score")


def test_a_name_two_distributions_declare_is_refused(plugin_root: Path) -> None:
    for _ in range(2):
        write_distribution(plugin_root, {"driftwatch.measures": {
            "mean_score": "{mod}:MEAN_SCORE"}}, PLUGIN)
    assert registry.load_plugins() == {}
    assert "declared more than once" in registry.plugin_errors()["mean_score"]


def test_a_plugin_cannot_take_the_name_of_a_measure_a_program_registered(
    plugin_root: Path,
) -> None:
    write_distribution(plugin_root, {"driftwatch.measures": {"mean_score": "{mod}:MEAN_SCORE"}},
                       PLUGIN)
    mine = registry.Measure("mean_score", "mine", "Registered by the program.", "never",
                            window=lambda window, tally: 0.0)
    with registry.registered(mine):
        assert registry.load_plugins() == {}
        assert registry.get("mean_score") is mine
        assert "already registered" in registry.plugin_errors()["mean_score"]
