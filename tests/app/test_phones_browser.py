"""The portal on a phone (390 x 844) as on a desktop (1280 px): the menu folds, the list filters
fold, a list row shows its id, amount and status on screen, dates stay on one line, and every
page is as accessible at either width, and laid out whole: no text overflows its container, no
line holds a single character (tests/support/layout.py). The money forms' refusals and lost
answers, and the pages of the records only a portal that changes data holds, too."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from portal.identity.models import Role
from portal.money.models import IntentKind
from tests.support import walks
from tests.support.browser import assert_accessible, load_axe_in_every_page, signed_in_as
from tests.support.layout import layout_problems
from tests.support.money import BTC_ADDRESS, CROSS_EXCHANGE, in_book
from tests.support.portal_server import PortalServer
from tests.support.sandbox_server import SandboxServer

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
OWNER = "owner@acme.test"
CLAIM_LINK = re.compile(r"https?://\S+/refund/[\w-]+")
OPERATION = "#operation"  # the part of an operation's page its actions swap
# Pages of a record that the seeded portal, which changes no data, holds none of: the
# withdrawals, cross exchanges, refunds and approvals the portal made (and the refund form,
# linked only from an operation that received money).
NO_RECORD_IN_A_READ_ONLY_PORTAL = frozenset(
    {
        "withdrawals.show",
        "cross_exchanges.show",
        "cross_exchanges.cancel",
        "refunds.show",
        "refunds.link",
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
@pytest.mark.parametrize("visitor", [Role.OWNER, None], ids=["owner", "signed-out"])
def test_every_page_is_accessible_and_fits_the_screen(
    browser: Browser, seeded_portal: PortalServer, visitor: Role | None
) -> None:
    """Every page of every registered feature that the owner (or someone signed out) may
    open, as tests/support/walks.py computes them; a record's page through a link to it. Each
    page is opened once and checked at a desktop's width, then at a phone's."""

    def check(page: Page) -> None:
        expect(page.locator("main h1")).to_be_visible()
        _fits_both_widths(page, accessible=True)

    app = walks.site()
    with _page(browser, seeded_portal, DESKTOP) as page:
        load_axe_in_every_page(page.context)
        if visitor is not None:
            signed_in_as(page, OWNER)
        unreached = walks.walk(page, app, walks.pages(app, visitor), check)
    assert {route.endpoint for route in unreached} <= NO_RECORD_IN_A_READ_ONLY_PORTAL


# The money forms, each as a person sends it: its page, valid fields (by name), the buttons
# pressed in turn, and the fields the sandbox refuses (none: refused by the day's exchange limit).
MONEY_FORMS: dict[str, tuple[str, dict[str, str], tuple[str, ...], dict[str, str]]] = {
    "operation": (
        "/operations/new",
        {"amount": "0.5", "currency": "BTC"},
        ("Create operation",),
        {"amount": "5000000000"},  # above the most the API takes
    ),
    "voucher": (
        "/vouchers/new",
        {"amount": "0.01", "currency": "BTC"},
        ("Review", "Create voucher"),
        {"amount": "900000000"},  # more than the wallet holds
    ),
    "exchange": (
        "/exchange",
        {"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "0.001"},
        ("Review", "Confirm exchange"),
        {},
    ),
    "cross_exchange": ("/cross-exchanges/new", CROSS_EXCHANGE, ("Create cross exchange",), {}),
    "voucher_payoff": (  # refused, or lost, whatever the code
        "/vouchers/payoff",
        {"code": "ABCD-EFGH-JKLM-NPQR"},
        ("Pay off",),
        {"code": "ABCD-EFGH-JKLM-NPQR"},  # no voucher has it
    ),
    "withdrawal": (
        "/withdrawals/new",
        {"amount": "0.001", "wallet": "ETH"},
        ("Review", "Confirm withdrawal"),
        {"amount": "900000000"},  # more than the wallet holds
    ),
}


def _unique(portal: PortalServer, form: str) -> dict[str, str]:
    """The fields a form needs new each time: an order number, an address never paid to (put in
    the address book, so that only the payment service refuses it)."""
    unique = uuid.uuid4().hex
    if form == "withdrawal":
        address = "0x" + unique + unique[:8]
        in_book(portal.app, MONEY_FORMS[form][1]["wallet"], address)
        return {"address": address}
    return {"order_id": f"walk-{unique[:8]}"} if form == "operation" else {}


def _fill(page: Page, fields: dict[str, str]) -> None:
    """Type, choose or tick each field of the page's main part, found by its name."""
    for name, value in fields.items():
        field = page.locator(f'main [name="{name}"]')
        if field.first.get_attribute("type") == "radio":
            field.and_(page.locator(f'[value="{value}"]')).check()
        elif field.evaluate("element => element.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)


def _send(page: Page, path: str, fields: dict[str, str], buttons: tuple[str, ...]) -> None:
    """Open the form, fill it in and press its buttons in turn (a review, then the sending)."""
    page.goto(path)
    _fill(page, fields)
    for button in buttons:
        _press(page, button)


def _press(page: Page, button: str, part: str = "main") -> None:
    """Press the button in `part` of the page and wait for what it sends to take its place
    (swapped in by htmx, or a new document): the part marked before is gone."""
    marked = page.locator(part)
    marked.evaluate("part => { part.dataset.pressed = 'yes'; }")
    marked.get_by_role("button", name=button, exact=True).click()
    expect(page.locator(f"{part}[data-pressed]")).to_have_count(0)


def _lost(page: Page, sandbox: SandboxServer, button: str, part: str = "main") -> None:
    """Press the button with the sandbox resetting the connection once it has acted: the page
    (or part) that says the outcome is unknown."""
    sandbox.control("POST", "faults", {"mode": "reset", "methods": ["POST", "PUT"]})
    _press(page, button, part)
    sandbox.control("POST", "faults", {"mode": "none"})
    expect(page.get_by_role("heading", name="Outcome unknown")).to_be_visible()


def _fits_both_widths(page: Page, *, accessible: bool = False) -> None:
    """The page as laid out at either width: whole, no wider than the screen, and, if asked,
    with no serious accessibility violation (what axe finds changes with the width: the menu
    folds on a phone)."""
    expect(page.locator("main h1").first).to_be_visible()
    for viewport in (DESKTOP, PHONE):
        page.set_viewport_size(viewport)
        if accessible:
            assert_accessible(page)
        assert _sideways(page) == 0, f"{page.url} scrolls sideways at {viewport['width']} px"
        assert layout_problems(page) == [], f"{page.url} at {viewport['width']} px"
    page.set_viewport_size(DESKTOP)


@pytest.mark.long
def test_every_refusal_lost_answer_and_record_page_fits_the_screen(
    browser: Browser, portal: PortalServer
) -> None:
    """Each money form refused by the sandbox, then with its answer lost (the sandbox acts, the
    connection is reset); a refund refused; the pages of records the seeded portal has none of
    (a withdrawal, a cross exchange, a refund, an approval, and the customer's checkout and
    refund claim pages); cancellations lost and refused; a transaction's link and rejection
    refused and lost. Each page at both widths."""
    assert set(IntentKind) <= MONEY_FORMS.keys(), "a money form the walk does not send"
    sandbox = portal.sandbox
    seen: list[str] = []

    def visited(page: Page) -> None:
        _fits_both_widths(page)
        seen.extend(walks.links_on(page))

    with _page(browser, portal, DESKTOP) as page:
        signed_in_as(page, OWNER)
        try:
            for form, (path, fields, buttons, refused) in MONEY_FORMS.items():
                sandbox.control("POST", "flags", {"exchange_daily_limit": 1000 if refused else 0})
                _send(page, path, {**fields, **_unique(portal, form), **refused}, buttons)
                expect(page.locator("main").locator(".form-error, .errors").first).to_be_visible()
                visited(page)

                sandbox.control("POST", "flags", {"exchange_daily_limit": 1000})
                _send(page, path, {**fields, **_unique(portal, form)}, buttons[:-1])
                if buttons[:-1]:
                    visited(page)  # the review page
                _lost(page, sandbox, buttons[-1])
                visited(page)

            # The records a read-only portal holds none of, and the customer's pages of them.
            order = _unique(portal, "operation")
            _send(
                page,
                "/operations/new",
                {"amount": "0.5", "currency": "BTC", **order},
                ("Create operation",),
            )
            operation_id = page.url.rsplit("/", 1)[1]
            sandbox.receive(operation_id, "0.7")  # 0.2 BTC more than due: a surplus to refund
            _send(page, "/cross-exchanges/new", CROSS_EXCHANGE, ("Create cross exchange",))
            visited(page)
            cross_exchange = urlsplit(page.url).path
            _send(
                page,
                "/vouchers/new",
                {"amount": "0.01", "currency": "BTC"},
                MONEY_FORMS["voucher"][2],
            )
            voucher = urlsplit(page.url).path
            refund = f"/refunds/new/{operation_id}"
            _send(page, refund, {"basis": "amount", "amount": "0.70000001"}, ("Request refund",))
            expect(page.locator("main .form-error").first).to_be_visible()
            visited(page)
            _send(page, refund, {}, ("Request refund",))
            visited(page)
            _press(page, "Show claim link")
            claim = CLAIM_LINK.search(page.locator("main").inner_text()).group(0)
            visited(page)
            with _page(browser, portal, DESKTOP) as operator:  # a refund waiting for approval
                signed_in_as(operator, "operator@acme.test")
                typed = {"basis": "amount", "amount": "0.1", "address": BTC_ADDRESS}
                _send(operator, refund, typed, ("Request refund",))
            page.goto("/approvals")
            visited(page)
            app = walks.site()
            routes = [
                r
                for r in walks.pages(app, Role.OWNER)
                if r.endpoint in NO_RECORD_IN_A_READ_ONLY_PORTAL
            ]
            assert walks.walk(page, app, routes, _fits_both_widths, seen) == []

            # A cancellation whose answer is lost (the sandbox cancels), then refused (canceled).
            for record, button in (
                (voucher, "Cancel voucher"),
                (cross_exchange, "Cancel cross exchange"),
            ):
                page.goto(f"{record}/cancel")
                _lost(page, sandbox, button)
                visited(page)
                _send(page, f"{record}/cancel", {}, (button,))
                expect(page.locator("main .form-error")).to_be_visible()
                visited(page)

            # An operation's cancellation, in the operation's part of its page: refused (the
            # operation expired meanwhile), then lost.
            for expired in (True, False):
                _send(
                    page,
                    "/operations/new",
                    {**MONEY_FORMS["operation"][1], **_unique(portal, "operation")},
                    ("Create operation",),
                )
                operation_id = page.url.rsplit("/", 1)[1]
                _press(page, "Cancel operation", OPERATION)
                if expired:
                    sandbox.control("POST", f"operations/{operation_id}/expire")
                    _press(page, "Confirm cancellation", OPERATION)
                    expect(page.locator(f"{OPERATION} .form-error")).to_be_visible()
                else:
                    _lost(page, sandbox, "Confirm cancellation", OPERATION)
                visited(page)

            # Linking (an underpayment) and rejecting a transaction, in the operation's part of
            # its page: refused (the underpayment not accepted, no reason given), then lost.
            refused = f"{OPERATION} :is(.form-error, .errors)"
            for linking in (True, False):
                _send(
                    page,
                    "/operations/new",
                    {**MONEY_FORMS["operation"][1], **_unique(portal, "operation")},
                    ("Create operation",),
                )
                transaction = sandbox.receive(page.url.rsplit("/", 1)[1], "0.25", "undefined")
                page.reload()
                page.get_by_role("checkbox", name=f"Select transaction {transaction}").check()
                if linking:
                    _press(page, "Link selected", OPERATION)
                    _press(page, "Confirm link", OPERATION)
                    expect(page.locator(refused).first).to_be_visible()
                    visited(page)
                    page.get_by_label(re.compile("Yes, accept an underpayment")).check()
                    _lost(page, sandbox, "Confirm link", OPERATION)
                else:
                    _press(page, "Reject selected", OPERATION)
                    expect(page.locator(refused).first).to_be_visible()
                    visited(page)
                    _fill(page, {"reason": "Paid twice"})
                    _press(page, "Reject selected", OPERATION)
                    _lost(page, sandbox, "Confirm rejection", OPERATION)
                visited(page)
        finally:
            sandbox.reset()
    with _page(browser, portal, DESKTOP) as customer:  # no session: the customer's browser
        for link in (_checkout_link(portal, order["order_id"]), claim):
            customer.goto(link)
            _fits_both_widths(customer)


def _checkout_link(portal: PortalServer, order: str) -> str:
    """The customer's way back from the payment page: the checkout page of the order."""
    from portal.extensions import db
    from portal.payments.models import CheckoutLink

    with portal.app.app_context():
        link = db.session.scalars(db.select(CheckoutLink).filter_by(order_id=order)).one()
        return f"/checkout/{link.token}"


def test_the_menu_folds_on_a_phone(phone: Page) -> None:
    signed_in_as(phone, OWNER)
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
    signed_in_as(page, OWNER)
    page.locator(".menu > summary").click()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Rates").click()
    expect(page.get_by_role("heading", name="Rates", exact=True)).to_be_visible()


def test_the_desktop_shows_the_whole_menu(browser: Browser, seeded_portal: PortalServer) -> None:
    with _page(browser, seeded_portal, DESKTOP) as page:
        signed_in_as(page, OWNER)
        expect(page.locator(".menu > summary")).to_be_hidden()
        expect(page.get_by_role("navigation", name="Main")).to_be_visible()
        page.goto("/operations")
        # The filters fold at every width: the chips above them say which are set.
        expect(page.get_by_role("group", name="Status")).to_be_hidden()


def test_first_operation_row_is_on_the_first_screen(phone: Page) -> None:
    signed_in_as(phone, OWNER, "/operations")
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
        signed_in_as(page, OWNER, "/operations")
        time = page.locator("#results time").first
        lines = time.evaluate("e => e.getClientRects().length")
        assert lines == 1, "the date is broken over lines"
