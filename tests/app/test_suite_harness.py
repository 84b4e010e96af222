"""The suite's own machinery, which the other tests rely on without saying so: the `browser`
marker that `make test-fast` leaves out, the session the browser tests sign in with once, the
factories of the portal's rows, and the URL builders the applications of one test process
share."""

from __future__ import annotations

import re
import subprocess
import sys
from urllib.parse import urlsplit

import pytest
from flask import url_for
from playwright.sync_api import Browser, expect

from tests.support import factories
from tests.support.browser import signed_in_as
from tests.support.forms import sign_in
from tests.support.portal_server import PortalServer
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


def test_a_browser_test_signs_in_once_then_reuses_the_session_until_it_ends(
    browser: Browser, portal: PortalServer
) -> None:
    """`signed_in_as` posts the sign-in form for a portal and user once, then opens pages in a
    fresh context with that session's cookies; once the session is signed out, it signs in
    again."""
    email = portal.add_user("reused-session@acme.test", "operator")
    sign_ins: list[str] = []

    def open_account(*, then_sign_out: bool = False) -> None:
        context = browser.new_context(base_url=portal.url)
        page = context.new_page()
        page.on(
            "request",
            lambda sent: (
                sent.method == "POST"
                and urlsplit(sent.url).path == "/login"
                and sign_ins.append(sent.url)
            ),
        )
        signed_in_as(page, email, "/account")
        expect(page.get_by_role("heading", name="Account", exact=True)).to_be_visible()
        if then_sign_out:
            page.get_by_role("button", name="Sign out").click()
            expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        context.close()

    open_account()
    assert len(sign_ins) == 1
    open_account(then_sign_out=True)
    assert len(sign_ins) == 1, "the session was not reused"
    open_account()
    assert len(sign_ins) == 2, "a signed-out session was reused"


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
