"""In a real browser: with hostile records on every main page, no script ever runs.

The hostile portal (tests/support/hostile_portal.py) is served from a thread; Chromium opens each
page and an htmx fragment, and neither a dialog nor a script error may appear.
"""

from __future__ import annotations

import pytest

from tests.support.attack import XSS
from tests.support.browser import sign_in_as
from tests.support.portal_server import serve_in_thread

pytestmark = pytest.mark.browser


def _script_error(message) -> bool:
    """Console errors other than a resource's HTTP status (the favicon's 404)."""
    return message.type == "error" and "Failed to load resource" not in message.text


@pytest.fixture(scope="module")
def served(hostile):
    """The hostile portal (hostile records and all) served over HTTP from a thread."""
    with serve_in_thread(hostile.app) as url:
        yield url


@pytest.mark.long
def test_no_script_runs_on_the_main_pages(browser, served, hostile):
    context = browser.new_context(base_url=served)
    page = context.new_page()
    fired: list[str] = []
    page.on("dialog", lambda dialog: (fired.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: fired.append(f"error: {error}"))
    page.on("console", lambda m: _script_error(m) and fired.append(f"console: {m.text}"))
    try:
        sign_in_as(page, "owner@acme.test")
        operation = hostile.ids["operation_id"]
        for path in (
            "/",
            "/operations",
            f"/operations/{operation}",
            "/transactions",
            f"/transactions/{hostile.ids['transaction_id']}",
            "/audit",
            "/settings/users",
            "/settings/checkout",
            "/operations?order_id=" + XSS[0],
        ):
            page.goto(path)
            page.wait_for_load_state("networkidle")
        page.goto("/operations")  # htmx: a filter typed in the list swaps the results in
        page.locator(".filters-fold > summary").click()
        page.get_by_label("Order number").fill(XSS[1])
        page.wait_for_load_state("networkidle")
        page.goto(f"/checkout/{hostile.ids['token']}")
        page.wait_for_load_state("networkidle")
        assert "alert(1)" in page.content(), "the hostile strings are on the page, as text"
    finally:
        context.close()
    assert fired == []
