"""Sources by name: the built-ins, plug-ins found through real entry points (a distribution
laid out as pip installs one), broken plug-ins reported not fatal, and the ``source``
settings that name them: errors at ``source.kind`` and ``source.options.<key>``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from driftwatch.commands.main import main
from driftwatch.settings import Settings
from driftwatch.sources import MemorySource, Record
from driftwatch.sources import registry as sources
from driftwatch.sources.jsonl import JsonLinesFile
from driftwatch.sources.protocol import SourceContext
from tests.broker import free_port
from tests.plugin_dist import write_distribution

PLUGIN = '''
from driftwatch.sources import MemorySource, Record, SourceContext


def listed(context: SourceContext, *, values: list[str], topic: str = "listed") -> MemorySource:
    """The values as records of one partition, offsets from 0."""
    records = [Record(topic, 0, offset, None, value.encode(), 0)
               for offset, value in enumerate(values)]
    return MemorySource(records, on_assigned=context.on_assigned)


NOT_CALLABLE = 42


def no_context() -> None:
    pass


def not_a_source(context):
    return "a string"


def picky(context, *, token: str):
    raise ValueError("token is not accepted by the service")
'''


@pytest.fixture
def plugin_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on sys.path for the test; the modules imported from it are forgotten."""
    before = set(sys.modules)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("dw_plugin_"):
            del sys.modules[name]


def context() -> SourceContext:
    return SourceContext(lambda partitions: None, kafka=lambda: MemorySource([]))


def test_builtins_come_first_and_unknown_names_list_the_known_ones() -> None:
    assert list(sources.available())[:2] == ["kafka", "jsonl"]
    with pytest.raises(ValueError, match="unknown source 'nope'; known sources: jsonl, kafka"):
        sources.get("nope")


def test_the_kafka_source_is_the_one_the_agent_builds() -> None:
    built = MemorySource[Record]([])
    opened = sources.open_source("kafka", {}, SourceContext(lambda p: None, kafka=lambda: built))
    assert opened is built


def test_a_plugin_source_is_found_through_its_entry_point_and_built_with_its_options(
    plugin_root: Path,
) -> None:
    module = write_distribution(
        plugin_root, {"driftwatch.sources": {"listed": "{mod}:listed"}}, PLUGIN)
    assert "listed" in sources.available()
    assert sources.option_names(sources.get("listed")) == ("values", "topic")
    source = sources.open_source("listed", {"values": ["a", "b"]}, context())
    assert [(r.topic, r.offset, r.value) for r in source.poll()] == [
        ("listed", 0, b"a"), ("listed", 1, b"b")]
    assert sys.modules[module].listed is sources.get("listed")


def test_broken_plugins_are_reported_and_naming_one_says_what_is_wrong(
    plugin_root: Path,
) -> None:
    write_distribution(plugin_root, {"driftwatch.sources": {
        "number": "{mod}:NOT_CALLABLE", "bare": "{mod}:no_context",
        "missing": "dw_plugin_nowhere_at_all:thing", "jsonl": "{mod}:listed",
        "odd": "{mod}:not_a_source"}}, PLUGIN)
    errors = sources.plugin_errors()
    assert "is not callable: 42" in errors["number"]
    assert "takes no argument for the SourceContext" in errors["bare"]
    assert "failed to load: ModuleNotFoundError" in errors["missing"]
    assert "would replace the built-in source 'jsonl'" in errors["jsonl"]
    assert sources.get("jsonl") is sources.BUILTINS["jsonl"]
    assert not {"number", "bare", "missing"} & set(sources.available())
    with pytest.raises(sources.SourcePluginError, match="not callable"):
        sources.get("number")
    with pytest.raises(sources.SourcePluginError, match="lacks poll, commit, lag, close"):
        sources.open_source("odd", {}, context())


def test_a_name_two_distributions_declare_is_refused(plugin_root: Path) -> None:
    for _ in range(2):
        write_distribution(plugin_root, {"driftwatch.sources": {"twice": "{mod}:listed"}},
                           PLUGIN)
    assert "declared more than once" in sources.plugin_errors()["twice"]
    with pytest.raises(sources.SourcePluginError, match="declared more than once"):
        sources.get("twice")


# --- the settings --------------------------------------------------------------------------


def errors(**data: object) -> dict[tuple[str | int, ...], str]:
    with pytest.raises(ValidationError) as caught:
        Settings(**data)  # type: ignore[arg-type]
    return {error["loc"]: error["msg"] for error in caught.value.errors()}


def test_the_default_source_is_kafka_with_the_state_topic() -> None:
    settings = Settings()
    assert (settings.source.kind, settings.source.options) == ("kafka", {})
    assert settings.checkpoint_backend() == "kafka"


def test_an_unknown_source_is_an_error_at_source_kind() -> None:
    assert errors(source={"kind": "kafak"}) == {
        ("source", "kind"): "unknown source 'kafak'; known sources: jsonl, kafka"}


def test_options_are_checked_against_the_factory_signature() -> None:
    found = errors(source={"kind": "jsonl", "options": {"pth": "x", "poll_interval_seconds":
                                                        "fast"}})
    assert set(found) == {("source", "options", "path"), ("source", "options", "pth"),
                          ("source", "options", "poll_interval_seconds")}
    assert all(message.startswith("source 'jsonl': ") for message in found.values())
    assert "Field required" in found[("source", "options", "path")]
    assert "Extra inputs are not permitted" in found[("source", "options", "pth")]
    assert list(errors(source={"kind": "kafka", "options": {"topics": ["t"]}})) == [
        ("source", "options", "topics")]


def test_the_jsonl_options_are_checked_by_the_settings_from_its_annotations() -> None:
    found = errors(source={"kind": "jsonl", "options": {"path": "",
                                                        "poll_interval_seconds": 0}})
    assert set(found) == {("source", "options", "path"),
                          ("source", "options", "poll_interval_seconds")}
    assert "at least 1 character" in found[("source", "options", "path")]
    assert "greater than 0" in found[("source", "options", "poll_interval_seconds")]


def test_options_a_source_refuses_when_built_stop_run_naming_the_key(
    plugin_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    write_distribution(plugin_root, {"driftwatch.sources": {"picky": "{mod}:picky"}}, PLUGIN)
    config = tmp_path / "driftwatch.yaml"
    config.write_text(
        "source: {kind: picky, options: {token: abc}}\n"
        f"checkpoint: {{directory: {tmp_path / 'state'}}}\n"
        f"metrics: {{host: 127.0.0.1, port: {free_port()}}}\n")
    assert main(["run", "--config", str(config)]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "source.options (DRIFTWATCH_SOURCE__OPTIONS): source 'picky': token is not accepted "
        "by the service")


def test_a_source_without_kafka_keeps_its_checkpoint_in_a_file() -> None:
    jsonl = {"kind": "jsonl", "options": {"path": "in.jsonl"}}
    settings = Settings.model_validate({"source": jsonl})
    assert settings.checkpoint_backend() == "file"
    assert "use file (or auto, which picks it)" in errors(
        source={"kind": "jsonl", "options": {"path": "in.jsonl"}},
        checkpoint={"backend": "kafka"})[("checkpoint", "backend")]


def test_a_plugin_source_is_accepted_by_the_settings_with_typed_options(
    plugin_root: Path,
) -> None:
    write_distribution(plugin_root, {"driftwatch.sources": {"listed": "{mod}:listed"}}, PLUGIN)
    settings = Settings.model_validate({"source": {"kind": "listed", "options": {"values": ["a"]}}})
    assert settings.source.options == {"values": ["a"]}
    assert list(errors(source={"kind": "listed", "options": {"values": "a"}})) == [
        ("source", "options", "values")]


def test_the_jsonl_factory_is_what_the_registry_builds(tmp_path: Path) -> None:
    source = sources.open_source("jsonl", {"path": str(tmp_path / "x.jsonl")}, context())
    assert isinstance(source, JsonLinesFile)
    source.close()
