"""No import cycle among driftwatch's modules, deferred imports included.

A cycle kept alive by imports inside functions works until someone moves one of them to the
top of a module; this test reads every import statement (module level or inside a function,
but not under ``if TYPE_CHECKING:``, which never runs) and fails on any cycle, naming it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
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


def _imported(node: ast.AST, modules: set[str]) -> Iterator[str]:
    """The driftwatch modules that ``node``'s body imports when it runs."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for orelse in child.orelse:
                yield from _imported(orelse, modules)
            continue
        if isinstance(child, ast.Import):
            yield from (alias.name for alias in child.names if alias.name in modules)
        elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module in modules:
            for alias in child.names:  # `from package import module` imports the module
                submodule = f"{child.module}.{alias.name}"
                yield submodule if submodule in modules else child.module
        yield from _imported(child, modules)


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    modules = set(files)
    return {
        name: set(_imported(ast.parse(path.read_text(encoding="utf-8")), modules)) - {name}
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
    main = graph["driftwatch.commands.main"]
    assert "driftwatch.agent" in main  # imported inside the run handler
    assert {"driftwatch.commands.demo", "driftwatch.commands.replay"} <= main


def test_find_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])
