"""The front door stays short and its links lead somewhere.

The README is what a newcomer reads in five minutes: at most :data:`README_WORDS` words
(``wc -w``, code blocks included); the depth lives in ``docs/``. Every relative link of the
README, the changelog and ``docs/`` names a file of the repository and, with a ``#``, a
heading of it (GitHub's anchor: lower case, punctuation dropped, spaces as hyphens).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_WORDS = 2500
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_is_a_five_minute_read() -> None:
    words = len((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert words <= README_WORDS, f"README.md has {words} words; move depth into docs/"


def test_anchors_follow_github() -> None:
    assert anchor("Reliability: what is guaranteed, and how to configure it") == \
        "reliability-what-is-guaranteed-and-how-to-configure-it"
    assert anchor("Alerts without a cluster: `--prometheus`") == \
        "alerts-without-a-cluster---prometheus"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    broken = []
    for url in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", url):
            continue
        path, _, fragment = url.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{url}: no such file")
        elif fragment and target.suffix == ".md":
            headings = re.findall(r"^#+ (.*)$", target.read_text(encoding="utf-8"), re.M)
            if fragment not in {anchor(h) for h in headings}:
                broken.append(f"{url}: no such heading")
    assert broken == []


def test_every_docs_pointer_in_the_code_resolves() -> None:
    """Docstrings keep what a reader of the code needs and point to ``docs/page.md#heading``
    for the rest: every such pointer names a page and, with a ``#``, one of its headings."""
    broken = []
    for module in sorted((ROOT / "driftwatch").rglob("*.py")):
        for page, fragment in re.findall(r"docs/([\w.-]+\.md)(?:#([\w-]+))?",
                                         module.read_text(encoding="utf-8")):
            target = ROOT / "docs" / page
            where = f"{module.relative_to(ROOT)}: docs/{page}#{fragment}"
            if not target.exists():
                broken.append(f"{where}: no such file")
            elif fragment:
                headings = re.findall(r"^#+ (.*)$", target.read_text(encoding="utf-8"), re.M)
                if fragment not in {anchor(h) for h in headings}:
                    broken.append(f"{where}: no such heading")
    assert broken == []
