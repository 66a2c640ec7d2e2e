"""The values table of the chart's README, generated from ``values.yaml``.

Every value the chart takes is a leaf of ``values.yaml`` (a scalar, a list, or an empty
mapping), or a mapping documented as a whole. A value's description is the comment block
right above its key that starts with ``# --`` (helm-docs' convention, so the file reads the
same to either tool), continued by the ``#`` lines that follow it up to the key. The table
lists every value with its type, its default and that description, in file order.

``python -m tests.helm.values_readme`` rewrites the part of ``helm/driftwatch/README.md``
below the marker line; ``tests/helm/test_chart.py`` fails when the README is out of date.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped, unused-ignore]

CHART = Path(__file__).resolve().parents[2] / "helm" / "driftwatch"
VALUES = CHART / "values.yaml"
README = CHART / "README.md"
MARKER = ("<!-- The table below is generated from values.yaml by "
          "`python -m tests.helm.values_readme`: do not edit it by hand. -->")

_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.-]+):(?: |$)")
_DOC = re.compile(r"^ *# -- (?P<text>.*)$")
_MORE = re.compile(r"^ *#(?: (?P<text>.*))?$")
_LONG = 60


def descriptions(text: str) -> dict[str, str]:
    """Dotted key path -> its ``# --`` description, from the file's text."""
    found: dict[str, str] = {}
    stack: list[tuple[int, str]] = []  # (indent, key) of the enclosing mappings
    pending: list[str] | None = None
    for line in text.splitlines():
        if _DOC.match(line):
            pending = [_DOC.match(line)["text"]]  # type: ignore[index]
            continue
        more = _MORE.match(line)
        if more:
            if pending is not None:
                pending.append(more["text"] or "")
            continue
        key = _KEY.match(line)
        if key is None:
            pending = None  # a blank line or a list item ends a description
            continue
        indent = len(key["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([*(k for _, k in stack), key["key"]])
        if pending is not None:
            found[path] = " ".join(" ".join(pending).split())
        pending = None
        stack.append((indent, key["key"]))
    return found


def _type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object"


def _default(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return f"`{text}`" if len(text) <= _LONG else "(see values.yaml)"


def leaves(values: dict[str, Any], docs: dict[str, str], prefix: str = ""
           ) -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of every value, in file order."""
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and path not in docs:
            yield from leaves(value, docs, f"{path}.")
        else:
            yield path, value


def table() -> str:
    text = VALUES.read_text(encoding="utf-8")
    docs = descriptions(text)
    unknown = set(docs) - {path for path, _ in leaves(yaml.safe_load(text), docs)}
    # A description on a mapping with documented keys inside would be lost.
    unknown = {path for path in unknown
               if not any(other.startswith(f"{path}.") for other in docs)}
    if unknown:
        raise ValueError(f"values.yaml: descriptions of keys that are not values: {unknown}")
    rows = ["| value | type | default | description |", "|---|---|---|---|"]
    for path, value in leaves(yaml.safe_load(text), docs):
        cells = (f"`{path}`", _type(value), _default(value), docs.get(path, ""))
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows) + "\n"


def readme(current: str) -> str:
    """``current`` with everything after the marker line replaced by the table."""
    head, found, _ = current.partition(MARKER)
    if not found:
        raise ValueError(f"{README}: the marker line is missing:\n{MARKER}")
    return f"{head}{MARKER}\n\n{table()}"


def main() -> int:
    current = README.read_text(encoding="utf-8")
    text = readme(current)
    if text == current:
        print(f"{README}: up to date")
    else:
        README.write_text(text, encoding="utf-8")
        print(f"{README}: values table regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
