"""The shape every view keeps, read from the code: one return type, one way to handle an API
failure, database work left to the rules, error codes named."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PORTAL = Path(__file__).resolve().parents[2] / "portal"
FEATURES = sorted(path.parent for path in PORTAL.glob("*/pages/**/routes.py"))
API_FAILURES = {"ApiFailure", "ApiRefusal", "ApiUnavailable"}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _views(feature: Path) -> list[ast.FunctionDef]:
    """The functions of a feature's routes.py that a `@bp.<route|get|post>` decorator registers."""
    views = []
    for node in ast.walk(_tree(feature / "routes.py")):
        if isinstance(node, ast.FunctionDef) and any(
            isinstance(d, ast.Call)
            and isinstance(d.func, ast.Attribute)
            and d.func.attr in ("route", "get", "post")
            for d in node.decorator_list
        ):
            views.append(node)
    return views


def test_the_features_are_found():
    assert len(FEATURES) >= 12
    assert sum(len(_views(feature)) for feature in FEATURES) > 40


@pytest.mark.parametrize("feature", FEATURES, ids=lambda path: path.name)
def test_every_view_returns_a_response(feature):
    other = {
        view.name: ast.unparse(view.returns) if view.returns else None
        for view in _views(feature)
        if view.returns is None or ast.unparse(view.returns) != "Response"
    }
    assert other == {}


@pytest.mark.parametrize("feature", FEATURES, ids=lambda path: path.name)
def test_views_meet_api_failures_through_the_one_helper(feature):
    """`except ApiFailure as failure:` and `api_errors.handle_api_error(...)`; never a hand-written
    answer."""
    wrong = []
    for path in [feature / "routes.py"]:
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.ExceptHandler) or node.type is None:
                continue
            names = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
            if not names & API_FAILURES:
                continue
            calls = {
                n.func.id
                for n in ast.walk(node)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            }
            if names != {"ApiFailure"} or "handle_api_error" not in calls:
                wrong.append(f"{path.name}:{node.lineno}")
    assert wrong == []


@pytest.mark.parametrize("feature", FEATURES, ids=lambda path: path.name)
def test_views_leave_database_commits_to_the_rules(feature):
    found = [
        f"{path.name}:{node.lineno}"
        for path in feature.glob("*.py")
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Attribute)
        and node.attr in ("commit", "rollback")
        and ast.unparse(node.value).endswith("session")
    ]
    assert found == []


def _bare_numbers(node: ast.expr) -> bool:
    """An int literal, or a tuple or set of them."""
    if isinstance(node, ast.Tuple | ast.Set):
        return any(_bare_numbers(item) for item in node.elts)
    return isinstance(node, ast.Constant) and type(node.value) is int


def test_error_codes_are_compared_by_name_never_as_bare_numbers():
    """`refusal.code == ErrorCode.UNAUTHENTICATED`, not `refusal.code == 2`."""
    found = [
        f"{path.relative_to(PORTAL)}:{node.lineno}"
        for path in PORTAL.rglob("*.py")
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Attribute)
        and node.left.attr in ("code", "error_code")
        and all(isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops)
        and any(_bare_numbers(comparator) for comparator in node.comparators)
    ]
    assert found == []
