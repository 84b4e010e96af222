"""The portal on a phone (390 x 844) as on a desktop (1280 px): the menu folds, the list filters
fold, a list row shows its id, amount and status on screen, dates stay on one line, and every
page is as accessible at either width."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, Page, expect

from portal.identity.models import Role
from tests.support import walks
from tests.support.browser import assert_accessible, sign_in_as
from tests.support.portal_server import PortalServer

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
OWNER = "owner@acme.test"
# Pages of a record that the seeded portal, which changes no data, holds none of: the
# withdrawals, cross exchanges, refunds and approvals the portal made (and the refund form,
# linked only from an operation that received money).
NO_RECORD_IN_A_READ_ONLY_PORTAL = frozenset(
    {
        "withdrawals.show",
        "cross_exchanges.show",
        "cross_exchanges.cancel",
        "refunds.show",
        "refunds.new",
        "approvals.show",
    }
)


@contextmanager
def _page(browser: Browser, portal: PortalServer, viewport: dict, **options) -> Iterator[Page]:
    context = browser.new_context(base_url=portal.url, viewport=viewport, **options)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    yield page
    context.close()
    assert problems == [], "script errors in the browser"


@pytest.fixture
def phone(browser: Browser, seeded_portal: PortalServer) -> Iterator[Page]:
    with _page(browser, seeded_portal, PHONE) as page:
        yield page


@pytest.fixture
def phone_without_script(browser: Browser, seeded_portal: PortalServer) -> Iterator[Page]:
    with _page(browser, seeded_portal, PHONE, java_script_enabled=False) as page:
        yield page


def _sideways(page: Page) -> int:
    """How many pixels the page is wider than the screen (0: nothing to scroll sideways)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


@pytest.mark.long
@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
@pytest.mark.parametrize("visitor", [Role.OWNER, None], ids=["owner", "signed-out"])
def test_every_page_is_accessible_and_fits_the_screen(
    browser: Browser, seeded_portal: PortalServer, viewport: dict, visitor: Role | None
) -> None:
    """Every page of every registered feature that the owner (or someone signed out) may
    open, as tests/support/walks.py computes them; a record's page through a link to it."""

    def check(page: Page) -> None:
        expect(page.locator("main h1")).to_be_visible()
        assert_accessible(page)
        assert _sideways(page) == 0, f"{page.url} scrolls sideways at {viewport['width']} px"

    app = walks.site()
    with _page(browser, seeded_portal, viewport) as page:
        if visitor is not None:
            sign_in_as(page, OWNER)
        unreached = walks.walk(page, app, walks.pages(app, visitor), check)
    assert {route.endpoint for route in unreached} <= NO_RECORD_IN_A_READ_ONLY_PORTAL


def test_the_menu_folds_on_a_phone(phone: Page) -> None:
    sign_in_as(phone, OWNER)
    menu = phone.get_by_role("navigation", name="Main")
    expect(menu).to_be_hidden()
    header = phone.locator(".site-header").bounding_box()
    assert header is not None and header["height"] < 80

    phone.locator(".menu > summary").click()
    expect(menu).to_be_visible()
    menu.get_by_role("link", name="Operations", exact=True).click()
    expect(phone.get_by_role("heading", name="Operations", exact=True)).to_be_visible()
    expect(menu).to_be_hidden()


def test_the_menu_works_without_javascript(phone_without_script: Page) -> None:
    page = phone_without_script
    sign_in_as(page, OWNER)
    page.locator(".menu > summary").click()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Rates").click()
    expect(page.get_by_role("heading", name="Rates", exact=True)).to_be_visible()


def test_the_desktop_shows_the_whole_menu(browser: Browser, seeded_portal: PortalServer) -> None:
    with _page(browser, seeded_portal, DESKTOP) as page:
        sign_in_as(page, OWNER)
        expect(page.locator(".menu > summary")).to_be_hidden()
        expect(page.get_by_role("navigation", name="Main")).to_be_visible()
        page.goto("/operations")
        # The filters fold at every width: the chips above them say which are set.
        expect(page.get_by_role("group", name="Status")).to_be_hidden()


def test_first_operation_row_is_on_the_first_screen(phone: Page) -> None:
    sign_in_as(phone, OWNER)
    phone.goto("/operations")
    expect(phone.get_by_role("group", name="Status")).to_be_hidden()
    row = phone.locator("#results tbody tr").first
    for cell in (row.locator("td").first, row.locator("td.number").first, row.locator(".badge")):
        box = cell.bounding_box()
        assert box is not None
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], "off screen sideways"
        assert box["y"] + box["height"] <= PHONE["height"], "below the first screen"

    phone.get_by_text("Filters", exact=True).click()
    phone.get_by_role("group", name="Status").get_by_label("Confirmed").check()
    expect(phone).to_have_url(re.compile(r"status=1"))
    expect(phone.locator(".filters-fold > summary")).to_contain_text("(1 set)")


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_dates_stay_on_one_line(browser: Browser, seeded_portal: PortalServer, viewport) -> None:
    with _page(browser, seeded_portal, viewport) as page:
        sign_in_as(page, OWNER)
        page.goto("/operations")
        time = page.locator("#results time").first
        lines = time.evaluate("e => e.getClientRects().length")
        assert lines == 1, "the date is broken over lines"
