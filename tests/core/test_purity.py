"""The core must stay pure: importing it never loads an I/O library (STYLE.md)."""

import subprocess
import sys
import textwrap

FORBIDDEN = ("kafka", "prometheus_client", "pydantic", "pydantic_settings", "yaml")


def test_core_imports_no_io_library() -> None:
    # A fresh interpreter, with the forbidden modules blocked, imports every core module.
    script = textwrap.dedent(
        f"""
        import importlib, pkgutil, sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {FORBIDDEN!r}:
                    raise ImportError("core imported " + name)
        sys.meta_path.insert(0, Block())
        import driftwatch.core as core
        for info in pkgutil.walk_packages(core.__path__, "driftwatch.core."):
            importlib.import_module(info.name)
        print("ok", len(sys.modules))
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")
