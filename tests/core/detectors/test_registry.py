"""The registry: built-ins, real entry-point plug-ins, and broken plug-ins that must not hurt."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from driftwatch.core.detectors import ADWIN, DDM, Detector, DetectorState, PageHinkley, registry
from driftwatch.core.detectors.registry import DetectorPluginError

GOOD_PLUGIN = '''
from collections.abc import Mapping
from typing import Any, ClassVar

from driftwatch.core.detectors.base import Detector, DetectorState, check_float


class OverLimit(Detector):
    """Drift when the input exceeds ``limit`` (a toy third-party detector)."""

    name: ClassVar[str] = "{name}"

    def __init__(self, *, limit: float = 10.0) -> None:
        self.limit = check_float("limit", limit)
        self.reset()

    def _reset(self) -> None:
        self._seen = 0

    def _update(self, x: float) -> DetectorState:
        self._seen += 1
        return DetectorState.DRIFT if x > self.limit else DetectorState.STABLE

    def _export(self) -> dict[str, Any]:
        return {{"seen": self._seen}}

    def _restore(self, data: Mapping[str, Any]) -> None:
        self._seen = int(data["seen"])


class Abstract(Detector):
    name: ClassVar[str] = "abstract"


def not_a_detector() -> None:
    pass
'''


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory put on sys.path for the test; modules imported from it are forgotten."""
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("dw_plugin_"):
            del sys.modules[name]


def install(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    entries: dict[str, str],
    module_source: str | None = None,
    dist: str | None = None,
) -> str:
    """Write a distribution (``*.dist-info`` with METADATA and entry_points.txt) and
    optionally its module into ``root``, put ``root`` on sys.path; return the module name.

    ``entries`` maps entry-point names to targets, ``{mod}`` standing for the module name.
    """
    module = f"dw_plugin_{uuid.uuid4().hex[:10]}"
    dist = dist or module.replace("_", "-")
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = [f"{name} = {target.format(mod=module)}" for name, target in entries.items()]
    (info / "entry_points.txt").write_text("[driftwatch.detectors]\n" + "\n".join(lines) + "\n")
    if module_source is not None:
        (root / f"{module}.py").write_text(textwrap.dedent(module_source))
    monkeypatch.syspath_prepend(str(root))
    return module


# --- Built-ins ----------------------------------------------------------------------------


def test_builtins() -> None:
    found = registry.available()
    assert {"page_hinkley": PageHinkley, "adwin": ADWIN, "ddm": DDM}.items() <= found.items()
    assert list(found)[:3] == ["page_hinkley", "adwin", "ddm"]
    for name, cls in found.items():
        assert registry.get(name) is cls
        assert cls.name == name


def test_unknown_name_lists_known_names() -> None:
    with pytest.raises(ValueError, match="unknown detector 'shewhart'") as info:
        registry.get("shewhart")
    assert "adwin, cusum, ddm, page_hinkley" in str(info.value)
    with pytest.raises(ValueError, match="name"):
        registry.get(None)


def test_create() -> None:
    adwin = registry.create("adwin", delta=0.01, direction="both")
    assert isinstance(adwin, ADWIN) and adwin.delta == 0.01 and adwin.direction == "both"
    assert repr(registry.create("ddm")) == repr(DDM())


def test_create_refuses_unknown_parameters_and_bad_values() -> None:
    with pytest.raises(ValueError, match="'threshhold'") as info:
        registry.create("page_hinkley", threshhold=5.0)
    assert "threshold" in str(info.value).split("parameters:")[1]
    with pytest.raises(ValueError, match="threshold"):
        registry.create("page_hinkley", threshold=-5.0)


# --- Plug-ins through real entry points -----------------------------------------------------


def test_plugin_found_through_a_real_entry_point(
    plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"over_limit_{uuid.uuid4().hex[:6]}"
    assert name not in registry.available()
    install(plugin_dir, monkeypatch, {name: "{mod}:OverLimit"}, GOOD_PLUGIN.format(name=name))

    found = registry.available()  # no stale cache: the new distribution is seen at once
    assert name in found
    assert list(found)[:3] == ["page_hinkley", "adwin", "ddm"]
    cls = registry.get(name)
    assert issubclass(cls, Detector) and cls is found[name]
    assert registry.plugin_errors() == {}

    detector = registry.create(name, limit=2.0)
    assert [detector.update(x) for x in (1.0, 3.0, 1.0)] == [
        DetectorState.STABLE,
        DetectorState.DRIFT,
        DetectorState.STABLE,
    ]
    restored = cls.from_state(json.loads(json.dumps(detector.export_state())))
    assert restored.export_state() == detector.export_state()
    assert repr(detector) == "OverLimit(limit=2.0)"


def test_plugin_disappears_with_its_distribution(
    plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"over_limit_{uuid.uuid4().hex[:6]}"
    install(plugin_dir, monkeypatch, {name: "{mod}:OverLimit"}, GOOD_PLUGIN.format(name=name))
    assert name in registry.available()
    monkeypatch.undo()  # takes the directory off sys.path again
    assert name not in registry.available()


BROKEN = {
    "import_fails": ("{mod}_missing:Anything", "failed to load: ModuleNotFoundError"),
    "missing_attr": ("{mod}:Nope", "failed to load: AttributeError"),
    "not_a_class": ("{mod}:not_a_detector", "not a subclass of driftwatch's Detector"),
    "abstract": ("{mod}:Abstract", "is abstract"),
    "wrong_name": ("{mod}:OverLimit", "declares name 'something_else'"),
}


def test_broken_plugins_are_reported_not_fatal(
    plugin_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    entries = {name: target for name, (target, _) in BROKEN.items()}
    entries["good_one"] = "{mod}:Good"
    source = GOOD_PLUGIN.format(name="something_else")
    source += "\n\nclass Good(OverLimit):\n    name = 'good_one'\n"
    install(plugin_dir, monkeypatch, entries, source)

    with caplog.at_level(logging.WARNING, logger=registry.__name__):
        found = registry.available()
    assert "good_one" in found  # the healthy plug-in of the same package still works
    assert not set(BROKEN) & set(found)
    errors = registry.plugin_errors()
    for name, (_, reason) in BROKEN.items():
        assert reason in errors[name]
        assert any(reason in record.getMessage() for record in caplog.records)
        with pytest.raises(DetectorPluginError, match=reason) as info:
            registry.get(name)
        assert isinstance(info.value, ValueError)  # the settings layer handles it as bad config
        assert "dw-plugin-" in str(info.value)  # names the distribution to blame
    with pytest.raises(DetectorPluginError) as info:
        registry.create("import_fails")
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_plugin_cannot_replace_a_builtin(
    plugin_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    install(plugin_dir, monkeypatch, {"adwin": "{mod}:OverLimit"}, GOOD_PLUGIN.format(name="adwin"))
    with caplog.at_level(logging.WARNING, logger=registry.__name__):
        assert registry.available()["adwin"] is ADWIN
    assert "would replace the built-in detector 'adwin'" in caplog.text
    assert registry.get("adwin") is ADWIN


def test_name_declared_by_two_distributions(
    plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = GOOD_PLUGIN.format(name="twin")
    install(plugin_dir, monkeypatch, {"twin": "{mod}:OverLimit"}, source, dist="dw-first")
    install(plugin_dir, monkeypatch, {"twin": "{mod}:OverLimit"}, source, dist="dw-second")
    assert "twin" not in registry.available()
    with pytest.raises(DetectorPluginError, match="declared more than once") as info:
        registry.get("twin")
    assert "dw-first" in str(info.value) and "dw-second" in str(info.value)
