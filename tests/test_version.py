"""Where ``driftwatch_build_info``'s revision comes from (driftwatch/version.py), each source
met for real: a file baked at build time, the commit pip records for a git URL (PEP 610, read
through importlib.metadata from a distribution on sys.path), ``git describe`` in a checkout,
and "unknown" when none applies."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from driftwatch import version
from tests.conftest import require_tool


@pytest.fixture(autouse=True)
def fresh_revision() -> Iterator[None]:
    version.revision.cache_clear()
    yield
    version.revision.cache_clear()


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No baked file and a package directory outside any source tree."""
    package = tmp_path / "site-packages" / "driftwatch"
    package.mkdir(parents=True)
    monkeypatch.setattr(version, "REVISION_FILE", package / "REVISION")
    monkeypatch.setattr(version, "PACKAGE", package)
    return package


def git(directory: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True,
                          check=True)
    return done.stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A source tree as a clone has it: pyproject.toml beside the package, one commit."""
    require_tool("git", "the revision of a checkout is git describe's")
    root = tmp_path / "clone"
    (root / "driftwatch").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    return root


def test_without_any_source_the_revision_is_unknown(nowhere: Path) -> None:
    # This test's own distribution is an editable install: pip records a directory, no commit.
    assert version.revision() == "unknown"


def test_a_baked_file_wins(nowhere: Path) -> None:
    (nowhere / "REVISION").write_text("v0.2.0-3-gabcdef012345\n", encoding="utf-8")
    assert version.revision() == "v0.2.0-3-gabcdef012345"


def test_an_empty_baked_file_is_no_revision(nowhere: Path) -> None:
    (nowhere / "REVISION").write_text("\n", encoding="utf-8")
    assert version.revision() == "unknown"


def test_pip_s_record_of_a_git_install(nowhere: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "git-install"
    info = site / "driftwatch_agent-0.2.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: driftwatch-agent\n"
                                   "Version: 0.2.0\n", encoding="utf-8")
    commit = "0123456789abcdef0123456789abcdef01234567"
    (info / "direct_url.json").write_text(json.dumps({
        "url": "https://github.com/driftwatch/driftwatch.git",
        "vcs_info": {"vcs": "git", "commit_id": commit}}), encoding="utf-8")
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])

    assert version.revision() == commit


def test_a_checkout_is_described_by_git(checkout: Path, nowhere: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(version, "PACKAGE", checkout / "driftwatch")
    head = git(checkout, "rev-parse", "--short=12", "HEAD")
    assert version.revision() == head

    (checkout / "pyproject.toml").write_text("changed\n", encoding="utf-8")
    version.revision.cache_clear()
    assert version.revision() == f"{head}-dirty"


def test_a_package_inside_a_checkout_but_not_its_source_is_not_described(
        checkout: Path, nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A virtual environment inside a clone: its site-packages is in the git tree but is not
    the source the package was built from."""
    installed = checkout / ".venv" / "lib" / "site-packages" / "driftwatch"
    installed.mkdir(parents=True)
    monkeypatch.setattr(version, "PACKAGE", installed)
    assert version.revision() == "unknown"

