"""docs/security.md names the test behind each defence: every test it names exists."""

from __future__ import annotations

import ast
import re

from tests.support.sandbox_server import ROOT

# `file.py::test_name`, and `::test_name` for another test of the file named before it.
REFERENCE = re.compile(r"`(?:([\w/]+\.py))?::(\w+)`")


def test_every_test_the_security_page_names_exists():
    text = (ROOT / "docs" / "security.md").read_text()
    named, current = [], None
    for match in REFERENCE.finditer(text):
        current = match.group(1) or current
        named.append((current, match.group(2)))
    assert len(named) > 40
    functions: dict[str, set[str]] = {}  # each file read once, however many tests it names
    for path in {path for path, _name in named}:
        tree = ast.parse((ROOT / "tests" / path).read_text())
        functions[path] = {
            node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
        }
    missing = [f"{path}::{name}" for path, name in named if name not in functions[path]]
    assert missing == []
