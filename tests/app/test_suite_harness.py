"""The suite's own machinery, which the other tests rely on without saying so: the `browser`
marker that `make test-fast` leaves out, the factories of the portal's rows, and the URL
builders the applications of one test process share."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from flask import url_for

from tests.support import factories
from tests.support.forms import sign_in
from tests.support.sandbox_server import ROOT


@pytest.mark.slow  # a pytest process of its own
def test_a_test_that_drives_chromium_is_marked_browser_wherever_it_lives():
    """`-m "not browser"` (make test-fast) collects none of the tests that ask for Chromium,
    though nothing in their modules marks them."""
    modules = ["tests/identity/test_sign_in_browser.py", "tests/money/test_money_pages_browser.py"]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-p", "no:xdist",
         "-p", "no:cacheprovider", "-m", "not browser", *modules],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    ).stdout  # fmt: skip
    deselected = re.search(r"no tests collected \((\d+) deselected\)", collected)
    assert deselected is not None and int(deselected.group(1)) > 5, collected


def test_a_user_from_the_factory_signs_in_with_the_test_password_and_a_code(app):
    made = factories.user(app, "ops@acme.test", "operator", two_factor=True)
    answer = sign_in(app.test_client(), "ops@acme.test")
    assert answer.status_code == 302
    assert answer.location.endswith("/login/two-factor"), "asked for a code next"
    assert made.email == "ops@acme.test" and made.totp_secret


def test_an_unchecked_address_is_stored_as_it_is(app):
    """As a user stored before addresses were checked: no form takes this address today."""
    from portal.identity.rules.accounts import find_user

    factories.user(app, "x@a.example,other@b.example", "owner", checked=False)
    with app.app_context():
        assert find_user("x@a.example,other@b.example") is not None


def test_applications_of_one_process_share_their_url_builders_and_build_their_own_urls(
    app, portal_config, tmp_path
):
    from portal import create_app

    other = create_app({**portal_config, "DATABASE_URL": f"sqlite:///{tmp_path / 'other.db'}"})
    rules = {rule.endpoint: rule for rule in other.url_map.iter_rules()}
    for rule in app.url_map.iter_rules():
        twin = rules[rule.endpoint]
        assert rule._build.__func__ is twin._build.__func__, rule.rule
    with app.test_request_context():
        assert url_for("withdrawals.show", key="a b") == "/withdrawals/a%20b"
