"""Which code is running: the package version and the source revision it was built from.

``driftwatch_build_info{version, revision}`` and ``driftwatch --version`` report both, so a
dashboard or a bug report tells two builds of one version apart. The revision is found, in
this order:

1. ``driftwatch/REVISION``, a one-line file baked into the package at build time (the
   ``Dockerfile`` writes it from its ``REVISION`` build argument; ``pyproject.toml`` ships it
   in the wheel although git ignores it);
2. the commit pip recorded when it installed from a git URL (the ``vcs_info`` of the
   distribution's ``direct_url.json``, PEP 610);
3. ``git describe --always --dirty`` in the checkout the package runs from (an editable
   install or ``python -m driftwatch`` in a clone), when git is installed;
4. ``"unknown"`` otherwise (a wheel built without a revision).
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import subprocess
from pathlib import Path

from driftwatch import __version__

DISTRIBUTION = "driftwatch-agent"
PACKAGE = Path(__file__).resolve().parent
REVISION_FILE = PACKAGE / "REVISION"
UNKNOWN = "unknown"
GIT_TIMEOUT_SECONDS = 5.0

__all__ = ["DISTRIBUTION", "REVISION_FILE", "UNKNOWN", "__version__", "revision"]


@functools.cache
def revision() -> str:
    """The source revision of the running code (see the module's docstring), computed once."""
    return _baked() or _pip_vcs_commit() or _git_describe(PACKAGE.parent) or UNKNOWN


def _baked() -> str | None:
    try:
        text = REVISION_FILE.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


def _pip_vcs_commit() -> str | None:
    try:
        text = importlib.metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    try:
        commit = json.loads(text or "{}").get("vcs_info", {}).get("commit_id")
    except (ValueError, AttributeError):
        return None
    return commit if isinstance(commit, str) and commit else None


def _git_describe(directory: Path) -> str | None:
    """``git describe`` of the source tree ``directory``, or None when it is not one: the
    package's parent holds ``pyproject.toml`` only in a checkout (an editable install or a
    clone), never in site-packages, even a virtual environment's inside a checkout."""
    if not (directory / "pyproject.toml").is_file():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(directory), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True, text=True, timeout=GIT_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    described = done.stdout.strip()
    return described if done.returncode == 0 and described else None
