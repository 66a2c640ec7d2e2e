"""A plug-in distribution laid out as pip installs one, for the plug-in tests: a module and
a ``*.dist-info`` directory (METADATA, entry_points.txt) in a directory that goes on
``sys.path`` (or ``PYTHONPATH`` for a subprocess), so ``importlib.metadata`` finds its entry
points as it finds an installed package's."""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Mapping
from pathlib import Path


def write_distribution(root: Path, entry_points: Mapping[str, Mapping[str, str]],
                       module_source: str | None = None, dist: str | None = None) -> str:
    """Write the distribution into ``root``; return its module's name.

    ``entry_points`` maps each group to ``{name: target}``, ``{mod}`` in a target standing
    for the module's name (unique per call, so tests never share a cached import).
    """
    module = f"dw_plugin_{uuid.uuid4().hex[:10]}"
    dist = dist or module.replace("_", "-")
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    sections = []
    for group, entries in entry_points.items():
        lines = [f"{name} = {target.format(mod=module)}" for name, target in entries.items()]
        sections.append(f"[{group}]\n" + "\n".join(lines) + "\n")
    (info / "entry_points.txt").write_text("\n".join(sections))
    (info / "RECORD").write_text("")
    if module_source is not None:
        (root / f"{module}.py").write_text(textwrap.dedent(module_source))
    return module
