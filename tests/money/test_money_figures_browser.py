"""The refused withdrawal's figures laid out in Chromium at a desktop's and a phone's width."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Route

from tests.support.forms import signed_in
from tests.support.layout import layout_problems
from tests.support.money import connect, post, review_withdrawal

STATIC = Path(__file__).resolve().parents[2] / "static"
ORIGIN = "http://portal.test"


@pytest.mark.parametrize(
    "viewport", [{"width": 1280, "height": 800}, {"width": 390, "height": 844}]
)
def test_the_refused_withdrawal_reads_in_lines(browser, app, accounts, sandbox, viewport):
    connect(app, sandbox)
    owner = signed_in(app, accounts.owner)
    _address, first = review_withdrawal(owner, "150")
    assert post(owner, first + "/confirm").status_code == 302
    _address, second = review_withdrawal(owner, "60")
    refused = post(owner, second + "/confirm").get_data(as_text=True)

    def serve(route: Route) -> None:
        path = route.request.url.removeprefix(ORIGIN)
        if path.startswith("/static/"):
            route.fulfill(path=STATIC / path.removeprefix("/static/"))
        else:
            route.fulfill(body=refused, content_type="text/html")

    context = browser.new_context(viewport=viewport, java_script_enabled=True)
    try:
        page = context.new_page()
        page.route(f"{ORIGIN}/**", serve)
        page.goto(f"{ORIGIN}/withdrawals/new")
        assert "plus the network fee" in page.get_by_label("The refused withdrawal").inner_text()
        assert layout_problems(page) == []
    finally:
        context.close()
