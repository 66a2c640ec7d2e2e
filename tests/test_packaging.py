"""What users are told to install is what CI builds and checks.

Nothing is published to PyPI, so the README must not send users to ``pip install
driftwatch-agent``; ``.ci/run`` builds the wheel and the sdist, installs the wheel into a
clean environment and runs the installed ``driftwatch`` on the example settings. The README's
test command and ``.ci/run``'s must be the same line.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"
TEST_COMMAND = ("python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && "
                ".venv/bin/python -m pytest")


def test_the_readme_and_ci_run_the_same_tests() -> None:
    assert TEST_COMMAND in README.read_text(encoding="utf-8").splitlines()
    assert TEST_COMMAND in CI.read_text(encoding="utf-8").splitlines()


def test_the_readme_installs_only_what_exists() -> None:
    text = README.read_text(encoding="utf-8")
    # From PyPI (unpublished): `pip install driftwatch-agent`, with or without extras.
    assert not re.search(r"pip install ['\"]?driftwatch-agent", text)
    assert "pip install ." in text and "python3 -m build" in text


def test_ci_checks_the_built_wheel_on_the_examples() -> None:
    text = CI.read_text(encoding="utf-8")
    build = text.index("-m build --outdir")
    install = text.index('pip" install -q "$dist"/driftwatch_agent-*.whl')
    assert build < install < text.index('driftwatch" --version')
    assert install < text.index('driftwatch" config validate "$settings"')
    # The examples it validates: every YAML file there but the Prometheus rules.
    settings = [p for p in (ROOT / "examples").glob("*.yaml")
                if not re.search(r"^groups:", p.read_text(encoding="utf-8"), re.M)]
    assert {p.name for p in settings} >= {"multi-model.yaml", "sidecar.yaml"}
