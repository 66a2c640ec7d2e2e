"""The core must stay pure: importing it never loads an I/O library.

Windows, measures, normalization, detectors and the monitor import only the standard library,
numpy and sortedcontainers, so that they can be tested with plain lists and never see Kafka,
Prometheus, pydantic or YAML. A fresh interpreter imports every module under
``driftwatch/core`` with the I/O libraries blocked and reports which third-party packages the
core loaded.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import driftwatch.core

FORBIDDEN = ("kafka", "prometheus_client", "pydantic", "pydantic_settings", "yaml")
ALLOWED_THIRD_PARTY = {"numpy", "sortedcontainers"}


def core_modules_on_disk() -> set[str]:
    """Every module and subpackage file under driftwatch/core, as a dotted name."""
    root = Path(driftwatch.core.__file__).parent
    names = set()
    for path in root.rglob("*.py"):
        parts = ("driftwatch", "core", *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) > 2:  # driftwatch.core itself is imported first, not walked
            names.add(".".join(parts))
    return names


def test_core_imports_no_io_library() -> None:
    script = textwrap.dedent(
        f"""
        import importlib, json, pkgutil, sys
        before = set(sys.modules)
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {FORBIDDEN!r}:
                    raise ImportError("core imported " + name)
        sys.meta_path.insert(0, Block())
        import driftwatch.core as core
        walked = [info.name for info in pkgutil.walk_packages(core.__path__, "driftwatch.core.")]
        for name in walked:
            importlib.import_module(name)
        loaded = {{name.split(".")[0] for name in set(sys.modules) - before}}
        third_party = loaded - set(sys.stdlib_module_names) - {{"driftwatch"}}
        print(json.dumps({{"walked": walked, "third_party": sorted(third_party)}}))
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # A directory without __init__.py is invisible to the walk: every file must be reached.
    assert set(report["walked"]) == core_modules_on_disk()
    assert set(report["third_party"]) <= ALLOWED_THIRD_PARTY, report["third_party"]
