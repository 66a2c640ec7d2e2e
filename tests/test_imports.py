"""driftwatch's structure: no import cycle, a layer map of its folders, loggers named for
their modules.

What this protects is cohesion, which a line count does not measure: a module that does two
jobs drags its importers into both, and the sign is an import that goes the wrong way (a
runtime part importing the agent, the core importing I/O) or goes round in a circle (two
modules that are really one object). So the test reads every import statement (module level
or inside a function, and, for the circle and the layers, those under ``if TYPE_CHECKING:``
too, since a type-only back edge is still one object spread over two modules) and fails on
any cycle, naming it, and on any import between folders that :data:`LAYERS` does not allow.
An allowed edge nobody uses fails too, so the map stays a true picture of the package.

It does not judge what a module's names are about; the reviewer does. Module length is not
checked: a long module holding one algorithm with its derivation is fine, a short one
mixing the Kafka client and the exposition is not.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import driftwatch

ROOT = Path(driftwatch.__file__).parent


def module_files() -> dict[str, Path]:
    files = {}
    for path in ROOT.rglob("*.py"):
        parts = ("driftwatch", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files[".".join(parts)] = path
    return files


def _imported(node: ast.AST, modules: set[str], typing: bool = False) -> Iterator[str]:
    """The driftwatch modules that ``node``'s body imports when it runs (with ``typing``, also
    those it imports for type hints only, under ``if TYPE_CHECKING:``)."""
    for child in ast.iter_child_nodes(node):
        if (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
                and not typing):
            # The else branch runs: read its statements themselves, not only their children.
            yield from _imported(ast.Module(body=child.orelse, type_ignores=[]), modules)
            continue
        if isinstance(child, ast.Import):
            yield from (alias.name for alias in child.names if alias.name in modules)
        elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module in modules:
            for alias in child.names:  # `from package import module` imports the module
                submodule = f"{child.module}.{alias.name}"
                yield submodule if submodule in modules else child.module
        yield from _imported(child, modules, typing)


def import_graph(typing: bool = False) -> dict[str, set[str]]:
    files = module_files()
    modules = set(files)
    return {
        name: set(_imported(ast.parse(path.read_text(encoding="utf-8")), modules, typing))
        - {name}
        for name, path in files.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path whose last node is its first, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_graph_sees_deferred_imports() -> None:
    graph = import_graph()
    assert "driftwatch.agent.loop" in graph["driftwatch.commands.run"]  # inside the run handler
    assert {"driftwatch.commands.demo", "driftwatch.commands.replay"} <= graph[
        "driftwatch.commands.main"]


def test_find_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


# -- cycles and layers ------------------------------------------------------------------------

PENDING_BACK_EDGES: dict[tuple[str, str], str] = {}
"""Type-only imports that close a circle, each with why it is still there, kept until the
code is fixed (each must still exist: a fixed one leaves the list). Empty since the agent's
helpers stopped reading its private attributes (issue 22)."""


def test_no_import_cycle_type_hints_included() -> None:
    graph = import_graph(typing=True)
    for (a, b), reason in PENDING_BACK_EDGES.items():
        assert b in graph[a], f"{a} → {b} ({reason}) is gone: remove it from the list"
        graph[a] = graph[a] - {b}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def _within(module: str, *packages: str) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def _violations(importer: Callable[[str], bool], imported: Callable[[str], bool]
                ) -> list[str]:
    """Every edge ``a → b`` (type hints included) with ``importer(a)`` and ``imported(b)``."""
    return sorted(f"{a} → {b}" for a, targets in import_graph(typing=True).items()
                  for b in targets if importer(a) and imported(b))


def test_the_layer_rules_see_type_only_imports() -> None:
    tree = ast.parse("if TYPE_CHECKING:\n    import a\nelse:\n    import b\nimport c\n")
    assert set(_imported(tree, {"a", "b", "c"})) == {"b", "c"}
    assert set(_imported(tree, {"a", "b", "c"}, typing=True)) == {"a", "b", "c"}


def test_the_core_imports_nothing_from_the_shell() -> None:
    assert _violations(lambda a: _within(a, "driftwatch.core"),
                       lambda b: not _within(b, "driftwatch.core")) == []


LAYERS: dict[str, set[str]] = {
    "core": set(),
    "decoding": {"core"},
    "settings": {"core", "decoding", "sources"},  # a source's options
    "simulate": {"core"},
    "api": {"core", "settings"},
    "sources": {"core"},  # the plug-in scan
    "kafka": {"decoding", "sources"},  # dead letters carry the decoder's rejection
    "state": {"kafka"},  # the state topic is a Kafka client too
    "sinks": {"core", "settings"},  # the alert thresholds are exported
    "pipeline": {"core", "decoding"},
    "agent": {"core", "decoding", "kafka", "pipeline", "settings", "sinks", "sources",
              "state"},
    "replay": {"core", "decoding", "kafka", "pipeline", "sources"},
    "compare": {"core", "decoding", "replay"},
    "reference": {"core", "settings", "sinks"},
    "demo": {"agent", "core", "decoding", "kafka", "settings", "simulate", "sinks"},
    "commands": {"agent", "compare", "core", "decoding", "demo", "kafka", "replay",
                 "settings", "simulate", "sources", "state"},
    "__main__": {"commands"},
    "driftwatch": {"api"},  # the package root re-exports the public API
    "exits": set(),
    "logs": set(),
    "signals": set(),
    "version": set(),
}
"""Which folders (or top-level modules) each may import, bottom to top: the pure core; the
decoder and the settings on it; the parts of the runtime named for what they talk to
(Kafka, the sinks, saved state) and the one processing step; the agent, replay and compare
built on them; the demo and the command line on top. :data:`UTILITIES` are open to all but
the core."""

UTILITIES = frozenset({"driftwatch", "exits", "logs", "signals", "version"})
"""The package root (``__version__``), the source revision and the small leaf modules."""


def _folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "driftwatch"


def layer_violations(graph: dict[str, set[str]], layers: dict[str, set[str]]) -> list[str]:
    """Every edge of ``graph`` between folders that ``layers`` does not allow."""
    def allowed(a: str, b: str) -> bool:
        return a == b or b in layers.get(a, set()) or (b in UTILITIES and a != "core")
    return sorted(f"{a} → {b}" for a, targets in graph.items() for b in targets
                  if not allowed(_folder(a), _folder(b)))


def unused_layer_edges(graph: dict[str, set[str]], layers: dict[str, set[str]]) -> list[str]:
    """Every edge ``layers`` allows that no import of ``graph`` uses."""
    used = {(_folder(a), _folder(b)) for a, targets in graph.items() for b in targets}
    return sorted(f"{a} → {b}" for a, allowed in layers.items() for b in allowed
                  if (a, b) not in used)


def test_every_folder_has_its_place_in_the_layers() -> None:
    assert {_folder(module) for module in module_files()} - LAYERS.keys() == set()
    assert find_cycle(LAYERS) is None


def test_imports_follow_the_layers() -> None:
    graph = import_graph(typing=True)
    assert layer_violations(graph, LAYERS) == []
    assert unused_layer_edges(graph, LAYERS) == [], "allowed but unused: narrow LAYERS"


def test_the_layer_checks_catch_a_violation_and_a_stale_rule() -> None:
    graph = {"driftwatch.kafka.source": {"driftwatch.agent.loop", "driftwatch.logs"},
             "driftwatch.core.window": {"driftwatch.exits"}}
    layers = {"kafka": {"decoding"}, "core": set()}
    assert layer_violations(graph, layers) == [
        "driftwatch.core.window → driftwatch.exits",
        "driftwatch.kafka.source → driftwatch.agent.loop"]
    assert unused_layer_edges(graph, layers) == ["kafka → decoding"]


def test_the_demo_tooling_serves_the_commands_only() -> None:
    assert _violations(lambda a: not _within(a, "driftwatch.demo", "driftwatch.commands"),
                       lambda b: _within(b, "driftwatch.demo")) == []


def test_nothing_imports_the_commands_back() -> None:
    assert _violations(lambda a: not _within(a, "driftwatch.commands", "driftwatch.__main__"),
                       lambda b: _within(b, "driftwatch.commands")) == []


def test_the_rules_catch_a_violation() -> None:
    assert "driftwatch.commands.main → driftwatch.commands.demo" in _violations(
        lambda a: a == "driftwatch.commands.main", lambda b: _within(b, "driftwatch.commands"))


# -- loggers ---------------------------------------------------------------------------------

CHANNELS = frozenset({"driftwatch.alarms", "kafka"})
"""Logger names that are not a module's: the alarm log, which users filter alarms by, and
kafka-python's, whose level :mod:`driftwatch.logs` sets."""


def misnamed_loggers(source: str) -> list[str]:
    """The ``logging.getLogger(...)`` calls of ``source`` named neither ``__name__`` nor a
    channel."""
    wrong = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and ast.unparse(node.func) == "logging.getLogger"
                and node.args):
            argument = node.args[0]
            named = ast.unparse(argument) == "__name__" or (
                isinstance(argument, ast.Constant) and argument.value in CHANNELS)
            if not named:
                wrong.append(ast.unparse(node))
    return wrong


def test_loggers_are_named_for_their_module() -> None:
    assert {name: wrong for name, path in module_files().items()
            if (wrong := misnamed_loggers(path.read_text(encoding="utf-8")))} == {}
    assert misnamed_loggers('logging.getLogger("driftwatch.agent")\nlogging.getLogger()\n'
                            "logging.getLogger(__name__)") == [
        "logging.getLogger('driftwatch.agent')"]
