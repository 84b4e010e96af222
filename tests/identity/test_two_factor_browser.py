"""Two-factor sign-in in a real browser: set it up from the page's key, then sign in with a code."""

from __future__ import annotations

import time
import uuid

from playwright.sync_api import Page, expect

from tests.support.browser import assert_accessible, sign_in_as, sign_out_and_in
from tests.support.forms import PASSWORD
from tests.support.portal_server import PortalServer
from tests.support.two_factor import code_at


def test_set_up_two_factor_then_sign_in_with_a_code(page: Page, portal: PortalServer) -> None:
    email = portal.add_user(f"two-factor-{uuid.uuid4().hex[:8]}@acme.test", "operator")
    sign_in_as(page, email)
    page.get_by_role("link", name="Account").click()
    page.get_by_role("link", name="Set up two-factor sign-in").click()
    expect(page.get_by_role("img", name="QR code for your authenticator app")).to_be_visible()
    assert_accessible(page)

    secret = page.locator("#setup-key").inner_text().replace(" ", "")
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_label("Authenticator code").fill(code_at(secret, time.time()))
    page.get_by_role("button", name="Turn on two-factor sign-in").click()
    expect(page.get_by_role("heading", name="Your recovery codes")).to_be_visible()
    codes = page.get_by_role("list", name="Recovery codes").get_by_role("listitem")
    expect(codes).to_have_count(10)
    assert_accessible(page)
    page.get_by_role("link", name="I have saved my recovery codes").click()
    expect(page.get_by_role("heading", name="Two-factor sign-in is on")).to_be_visible()

    sign_out_and_in(page, email)
    expect(page.get_by_role("heading", name="Two-factor sign-in")).to_be_visible()
    expect(page.get_by_role("button", name="Sign out")).to_have_count(0)
    assert_accessible(page)
    # The code of the next step: the one used to set it up may not serve twice.
    page.get_by_label("Authenticator or recovery code").fill(code_at(secret, time.time() + 30))
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
