"""The business rules read no request and make no page (docs/architecture.md, "Enforcing the
layers").

`lint-imports` forbids modules, and a rule may import `flask` for `current_app` and `g`: the
names of the request, the session and rendering are refused here, by reading the source.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.sandbox_server import ROOT

RULES = sorted((ROOT / "portal").glob("*/rules/*.py"))
# Flask's names of the request being answered and of what answers it: a view's business.
WEB_NAMES = frozenset(
    {"request", "session", "render_template", "url_for", "flash", "make_response"}
)


def web_names_used(source: str) -> list[str]:
    """`line: name` for each of WEB_NAMES taken from Flask: `from flask import request` (any
    alias, `flask.globals` too) or `flask.request` after `import flask`."""
    tree = ast.parse(source)
    flask_aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            flask_aliases |= {
                alias.asname or alias.name for alias in node.names if _is_flask(alias.name)
            }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_flask(node.module or ""):
            found += [f"{node.lineno}: {a.name}" for a in node.names if a.name in WEB_NAMES]
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in WEB_NAMES
            and isinstance(node.value, ast.Name)
            and node.value.id in flask_aliases
        ):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return sorted(found, key=lambda entry: int(entry.split(":")[0]))


def _is_flask(module: str) -> bool:
    return module == "flask" or module.startswith("flask.")


@pytest.mark.parametrize("path", RULES, ids=lambda path: path.name)
def test_a_rule_takes_no_request_session_or_page_from_flask(path: Path):
    assert web_names_used(path.read_text()) == []


def test_every_way_of_reaching_the_request_is_caught():
    source = "\n".join(
        [
            "from flask import current_app, g",
            "from flask import request as incoming",
            "from flask.globals import session",
            "import flask",
            "flask.url_for('x')",
            "def later():",
            "    from flask import render_template, flash",
            "    return flask.current_app",
        ]
    )
    assert web_names_used(source) == [
        "2: request",
        "3: session",
        "5: flask.url_for",
        "7: render_template",
        "7: flash",
    ]
