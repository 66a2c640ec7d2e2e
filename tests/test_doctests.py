"""Every example in the package's docstrings runs, module by module.

The modules are found by walking the package, so a new module's examples run without a line
here; a module whose source shows an example (``>>>``) must have doctest find at least one,
so examples cannot silently drop out of the run (say, from a docstring doctest does not see).
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil

import pytest

import driftwatch

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(driftwatch.__path__, "driftwatch.")
)


def test_the_walk_finds_the_package() -> None:
    assert {"driftwatch.core.measures.auc", "driftwatch.demo.feed",
            "driftwatch.commands.main"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
    if ">>>" in inspect.getsource(module):
        assert result.attempted > 0, f"{name} shows examples that doctest does not find"
