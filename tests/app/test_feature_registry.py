"""A feature declared once is registered, shown in the menu and found by every walk: a
throw-away feature registered on a test application, as a new page package's would be."""

from __future__ import annotations

import re

import pytest
from flask import Blueprint

from portal.identity.models import Role
from portal.web.access import roles
from portal.web.features import Feature, MenuEntry, register
from tests.app import test_access_matrix as matrix
from tests.app import test_bad_input_properties as bad_input
from tests.support import walks
from tests.support.forms import sign_in

OWNERS_AND_ACCOUNTANTS = frozenset({Role.OWNER, Role.ACCOUNTANT})


def _scratch_feature() -> Feature:
    scratch = Blueprint("scratch", __name__)

    @scratch.get("")
    @roles(*OWNERS_AND_ACCOUNTANTS)
    def index():
        return "<h1>Scratch</h1>"

    @scratch.get("/export.csv")
    @roles(*OWNERS_AND_ACCOUNTANTS)
    def export_csv():
        return "id\r\n", {"Content-Type": "text/csv"}

    return Feature(
        scratch, "/scratch", OWNERS_AND_ACCOUNTANTS, MenuEntry("Scratch", "scratch.index", 15)
    )


@pytest.fixture
def scratch_app(app):
    register(app, [_scratch_feature()])
    return app


def test_a_feature_is_mounted_at_its_prefix(scratch_app):
    rules = {rule.endpoint: rule.rule for rule in scratch_app.url_map.iter_rules()}
    assert rules["scratch.index"] == "/scratch"
    assert rules["scratch.export_csv"] == "/scratch/export.csv"


def test_every_walk_finds_its_pages(scratch_app):
    owner_pages = {route.rule for route in walks.pages(scratch_app, Role.OWNER)}
    operator_pages = {route.rule for route in walks.pages(scratch_app, Role.OPERATOR)}
    assert "/scratch" in owner_pages, "the phone, accessibility and bad-input walks"
    assert "/scratch" not in operator_pages
    assert "/scratch/export.csv" not in owner_pages, "a file is not a page"
    assert {rule.rule for rule in walks.feature_routes(scratch_app)} >= {
        "/scratch",
        "/scratch/export.csv",
    }, "the exports of the bad-input walk"
    expected = matrix.expected_access(scratch_app)
    assert expected["scratch.index"] == OWNERS_AND_ACCOUNTANTS, "the access matrix"
    assert expected["scratch.export_csv"] == OWNERS_AND_ACCOUNTANTS


def test_the_bad_input_walk_computes_its_pages():
    """Its pages come from the registry, not a list: the portal's own features are all there."""
    assert {"/operations", "/settings/notifications", "/exchange/made"} <= set(bad_input.PAGES)
    assert "/operations/export.csv" in bad_input.EXPORTS


def test_a_route_of_no_feature_has_no_expectation(app):
    """The access matrix fails closed: a blueprint mounted without a feature has no row."""
    stray = Blueprint("stray", __name__)
    stray.add_url_rule("/stray", "index", lambda: "")
    app.register_blueprint(stray)
    assert "stray.index" not in matrix.expected_access(app)


def test_its_menu_entry_shows_in_place_to_the_roles_it_serves(scratch_app, accounts):
    for role, shown in ((Role.OWNER, True), (Role.ACCOUNTANT, True), (Role.OPERATOR, False)):
        client = scratch_app.test_client()
        assert sign_in(client, accounts.by_role(role)).status_code == 302
        html = client.get("/account").get_data(as_text=True)
        menu = re.search(r'<nav[^>]*aria-label="Main".*?</nav>', html, re.DOTALL)
        assert menu is not None
        labels = re.findall(r'<a href="[^"]*"[^>]*>([^<]+)', menu.group(0))
        assert ("Scratch" in labels) is shown, role
        if shown:
            assert labels.index("Scratch") == labels.index("Dashboard") + 1, "position 15"
