"""In a real browser: the stylesheet and scripts are fetched once, on the first page, and not
asked for again on the pages after it, signing in included (portal/web/static_files.py).
Before, Chromium asked the portal again for each of the seven files on every page."""

from __future__ import annotations

from flask import Response, request
from playwright.sync_api import expect

from tests.support.browser import sign_in_as
from tests.support.portal_server import serve_in_thread


def test_a_browser_asks_for_the_static_files_on_its_first_page_only(browser, app, accounts):
    asked: list[str] = []

    @app.after_request
    def _static_asked(response: Response) -> Response:
        if request.endpoint == "static":
            asked.append(request.full_path)
        return response

    with serve_in_thread(app) as url:
        context = browser.new_context(base_url=url)
        page = context.new_page()
        page.goto("/login")
        first_page = list(asked)
        sign_in_as(page, accounts.owner)
        expect(page.get_by_role("button", name="Sign out")).to_be_attached()
        for path in ("/account", "/settings", "/account"):
            page.goto(path)
        context.close()
    assert len(first_page) == 7
    assert asked == first_page
