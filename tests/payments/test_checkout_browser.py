"""Customers: from the sandbox's hosted payment page back to the portal's checkout page.

Operations are made as the portal makes them (a reserved link as redirect_url, attached to the
operation); the customer's browser then drives the hosted page, every redirect code included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import ROUND_CEILING, Decimal
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from portal.payments.pages.checkout.routes import POLL_SECONDS
from tests.support.browser import assert_accessible, next_poll, signed_in_as
from tests.support.checkout import Checkout, new_checkout
from tests.support.money import flags
from tests.support.portal_server import PortalServer

SHOP = "Checkout Shop"
OWNER = "owner@checkout-shop.test"
PHONE = {"width": 375, "height": 740}
POLL_TIMEOUT = 15_000  # ms: time for one more poll, should `next_poll` catch one sent before


@pytest.fixture(scope="module")
def shop(portal: PortalServer) -> Iterator[Callable[..., Checkout]]:
    """A merchant of its own, connected to the sandbox; calling it makes a new checkout."""
    from portal import create_app
    from portal.identity.rules import accounts

    with portal.app.app_context():  # set up again when the worker comes back to this module
        known = accounts.find_user(OWNER) is not None
    if not known:
        portal.add_user(OWNER, "owner", merchant=SHOP)
    portal.connect(SHOP)
    app = create_app(
        {
            "DATABASE_URL": portal.env["PORTAL_DATABASE_URL"],
            "SECRET_KEY": portal.env["PORTAL_SECRET_KEY"],
            "TOKEN_KEYS": portal.env["PORTAL_TOKEN_KEYS"],
            "PUBLIC_URL": portal.url,
        }
    )
    yield lambda **options: new_checkout(app, SHOP, **options)
    portal.sandbox.reset()


@pytest.fixture
def customer(page: Page) -> Page:
    """The browser of a customer on a phone."""
    page.set_viewport_size(PHONE)
    return page


def _payment(page: Page, region: str = "Your payment"):
    return page.get_by_role("region", name=region, exact=True)


def _expect_checkout(
    page: Page, checkout: Checkout, heading: str, state: str, region: str = "Your payment"
) -> None:
    expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    assert page.url.startswith(checkout.url)
    expect(_payment(page, region).locator(".badge")).to_have_text(state)


def _create_operation(page: Page, order_number: str) -> str:
    """Create an operation through the portal's form, as an owner; returns its payment link."""
    signed_in_as(page, OWNER, "/operations/new")
    page.get_by_label("Amount").fill("25.5")
    page.get_by_label("Currency", exact=True).select_option("USD")
    page.get_by_label("Payment currency").select_option("BTC")
    page.get_by_label("Order number").fill(order_number)
    page.get_by_role("button", name="Create operation").click()
    return page.get_by_role("textbox", name="Payment link").input_value()


def test_pay_in_full_and_see_the_confirmation(page: Page, shop) -> None:
    payment_link = _create_operation(page, "ORDER-7731")
    page.context.clear_cookies()  # from here on, the customer's browser
    page.set_viewport_size(PHONE)
    page.goto(payment_link)
    page.get_by_role("button", name="Pay in full").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Thank you for your payment")
    landed = urlsplit(page.url)
    assert landed.path.startswith("/checkout/") and landed.query == "", "only the token"
    payment = _payment(page)
    expect(payment.locator(".badge")).to_have_text("Paid")
    expect(payment).to_contain_text("ORDER-7731")
    expect(payment).to_contain_text("25.50 USD")
    expect(page.get_by_text(SHOP).first).to_be_visible()
    assert "ORDER-7731" not in page.url
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert_accessible(page)


WAITING = "Waiting for your payment"
# code -> (what the customer does on the hosted page, the heading, the state shown). The heading
# is the state's while the API answers; the code's only when the API refuses (3 and 7).
FAILURES = {
    1: ("Cancel payment", "Payment canceled", "Canceled"),
    2: (None, WAITING, "Awaiting payment"),
    3: ({"application_banned": True}, "The shop's payment setup was not found", "Not available"),
    4: ("Let it expire", "The time to pay has run out", "Expired"),
    5: ("Pay in full", "Thank you for your payment", "Paid"),
    6: ({"payment_gateways_available": False}, WAITING, "Awaiting payment"),
    7: ({"company_banned": True}, "This shop cannot take payments", "Not available"),
    8: ({"payment_gateway_fails": True}, "The payment failed", "Failed"),
}  # fmt: skip


@pytest.mark.parametrize("code", sorted(FAILURES))
def test_each_failure_code(customer: Page, shop, portal: PortalServer, code: int) -> None:
    action, heading, state = FAILURES[code]
    checkout = shop()
    sandbox = portal.sandbox
    try:
        if code == 2:  # an unknown invoice: the sandbox sends the customer to a fixed URL
            sandbox.control("POST", "flags", {"unknown_invoice_redirect_url": checkout.url})
            customer.goto(f"{sandbox.base_url}/pay/999999999")
        elif isinstance(action, dict):
            sandbox.control("POST", "flags", action)
            customer.goto(checkout.operation.payment_url)
            if code == 8:
                customer.get_by_role("button", name="Pay in full").click()
        else:
            customer.goto(checkout.operation.payment_url)
            customer.get_by_role("button", name=action).click()
            if code == 5:  # paid: opening the hosted page again says "already handled"
                expect(customer.get_by_role("heading", level=1)).to_be_visible()
                customer.goto(checkout.operation.payment_url)
        _expect_checkout(customer, checkout, heading, state)
        assert f"status={code}" in customer.url
        if code in (3, 7):  # the API will not say; the page still shows what was ordered
            expect(_payment(customer)).to_contain_text("ORDER-1001")
            expect(_payment(customer)).to_contain_text("25.50 USD")
        if code == 6:
            expect(customer.get_by_text("could not take payments a moment ago")).to_be_visible()
    finally:
        sandbox.reset()
    pay = customer.get_by_role("link", name="Pay now")
    expect(pay).to_have_count(1 if code in (2, 6) else 0)
    assert_accessible(customer)
    if code == 6:  # the gateways are back: paying again works
        pay.click()
        customer.get_by_role("button", name="Pay in full").click()
        _expect_checkout(customer, checkout, "Thank you for your payment", "Paid")


def test_the_state_updates_by_itself(customer: Page, shop, portal: PortalServer) -> None:
    checkout = shop()
    customer.clock.install()
    customer.goto(checkout.url)
    _expect_checkout(customer, checkout, WAITING, "Awaiting payment")
    expect(customer.get_by_text("Thank you")).to_have_count(0)
    # The sandbox rounds the amount due up to 8 decimals (docs/sandbox.md).
    due = (checkout.operation.amount * checkout.operation.rate).quantize(
        Decimal("1e-8"), rounding=ROUND_CEILING
    )
    portal.sandbox.control(
        "POST",
        f"operations/{checkout.operation.id}/transactions",
        {"amount": format(due, "f"), "status": "confirmed"},
    )
    next_poll(customer, POLL_SECONDS)
    expect(_payment(customer).locator(".badge")).to_have_text("Paid", timeout=POLL_TIMEOUT)
    expect(customer.get_by_role("heading", level=1)).to_have_text("Thank you for your payment")
    expect(customer.get_by_role("link", name="Pay now")).to_have_count(0)


def test_a_partial_payment_says_what_is_paid_and_left(
    customer: Page, shop, portal: PortalServer
) -> None:
    checkout = shop(amount="0.02", currency="BTC", payment_currency="BTC")
    customer.clock.install()
    customer.goto(checkout.url)
    portal.sandbox.control(
        "POST",
        f"operations/{checkout.operation.id}/transactions",
        {"amount": "0.005", "status": "confirmed"},
    )
    next_poll(customer, POLL_SECONDS)
    heading = customer.get_by_role("heading", level=1)
    expect(heading).to_have_text("Part of your payment has arrived", timeout=POLL_TIMEOUT)
    expect(customer.get_by_text("0.005 BTC paid, 0.015 BTC left.")).to_be_visible()
    expect(customer.get_by_role("link", name="Pay the rest")).to_be_visible()
    assert_accessible(customer)

    portal.sandbox.control("POST", f"operations/{checkout.operation.id}/expire")
    next_poll(customer, POLL_SECONDS)
    expect(heading).to_have_text(
        "The time to pay ran out before the full amount arrived", timeout=POLL_TIMEOUT
    )
    expect(customer.get_by_text("0.005 BTC arrived before the invoice expired.")).to_be_visible()
    expect(customer.get_by_role("link", name="Pay the rest")).to_have_count(0)


def test_a_fiat_order_shows_its_crypto_amount(customer: Page, shop) -> None:
    checkout = shop()
    customer.goto(checkout.url)
    due = (checkout.operation.amount * checkout.operation.rate).quantize(
        Decimal("1e-8"), rounding=ROUND_CEILING
    )
    payment = _payment(customer)
    expect(payment).to_contain_text("25.50 USD")
    expect(payment).to_contain_text(f"{format(due.normalize(), 'f')} BTC")


def test_the_customer_switches_the_language_and_the_link_keeps_it(customer: Page, shop) -> None:
    checkout = shop()
    customer.goto(checkout.url + "?status=6")
    languages = customer.get_by_role("navigation", name="Language")
    languages.get_by_role("link", name="Deutsch").click()
    expect(customer.get_by_role("heading", level=1)).to_have_text("Wir warten auf Ihre Zahlung")
    expect(customer.locator("html")).to_have_attribute("lang", "de")
    expect(customer.get_by_text("Versuchen Sie es in einigen Minuten erneut")).to_be_visible()
    assert_accessible(customer)

    customer.goto(checkout.url)  # the shop's link again, later
    expect(customer.get_by_role("heading", level=1)).to_have_text("Wir warten auf Ihre Zahlung")
    customer.get_by_role("navigation", name="Sprache").get_by_role("link", name="Русский").click()
    expect(customer.get_by_role("heading", level=1)).to_have_text("Ожидаем вашу оплату")

    customer.goto(shop(order_id="ORDER-1002").url)
    expect(customer.get_by_role("heading", level=1)).to_have_text(WAITING)


@pytest.mark.parametrize(
    ("language", "heading", "region", "label", "state"),
    [
        ("es-ES,es;q=0.9", "Pago cancelado", "Tu pago", "Número de pedido", "Cancelado"),
        ("de-DE,de;q=0.9", "Zahlung storniert", "Ihre Zahlung", "Bestellnummer", "Storniert"),
        ("ru-RU,ru;q=0.9", "Платёж отменён", "Ваш платёж", "Номер заказа", "Отменён"),
    ],
)
def test_the_customer_language(
    customer: Page, shop, language, heading, region, label, state
) -> None:
    customer.set_extra_http_headers({"Accept-Language": language})
    checkout = shop()
    customer.goto(checkout.operation.payment_url)
    customer.get_by_role("button", name="Cancel payment").click()
    _expect_checkout(customer, checkout, heading, state, region)
    expect(_payment(customer, region)).to_contain_text(label)
    expect(customer.locator("html")).to_have_attribute("lang", language[:2])
    assert_accessible(customer)


def test_tampered_and_odd_links(customer: Page, shop) -> None:
    checkout = shop()
    tampered = checkout.url[:-1] + ("A" if checkout.url[-1] != "A" else "B")
    response = customer.goto(tampered + "?status=5")
    assert response is not None and response.status == 404
    expect(customer.get_by_role("heading", level=1)).to_have_text("Payment page not found")
    assert_accessible(customer)

    response = customer.goto(checkout.url + "?status=%E2%9C%93&code=99&" + "x" * 4000)
    assert response is not None and response.status == 200
    expect(customer.get_by_role("heading", level=1)).to_have_text(WAITING)


def test_the_owner_names_the_shop_and_its_url(page: Page, shop) -> None:
    signed_in_as(page, OWNER, "/settings/checkout")
    assert_accessible(page)
    page.get_by_label("Display name").fill("Café Nord")
    page.get_by_label("Shop URL").fill("javascript:alert(1)")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Enter an address starting with http:// or https://.")).to_be_visible()
    page.get_by_label("Shop URL").fill("https://cafe-nord.example/")
    page.get_by_label("Support email").fill("help at cafe-nord")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(
        page.get_by_text("Enter one email address, such as support@example.com.")
    ).to_be_visible()
    page.get_by_label("Support email").fill("help@cafe-nord.example")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("The checkout page settings are saved.")

    page.goto(shop().url)
    expect(page.get_by_text("Café Nord").first).to_be_visible()
    back = page.get_by_role("link", name="Return to Café Nord")
    expect(back).to_have_attribute("href", "https://cafe-nord.example/")
    support = page.get_by_role("link", name="Write to help@cafe-nord.example")
    expect(support).to_have_attribute("href", "mailto:help@cafe-nord.example")


def test_with_the_api_down_the_customer_is_told_it_is_being_checked(
    customer: Page, shop, portal: PortalServer
) -> None:
    """Back from the hosted page with no code (its success return) while the API is down: the
    page says it is checking, in German, never a thanks, and shows the state once it can."""
    checkout = shop()
    customer.clock.install()
    with flags(portal.sandbox, fault={"mode": "error500"}):
        customer.goto(f"{checkout.url}?lang=de")
        expect(customer.get_by_role("heading", level=1)).to_have_text("Wir prüfen Ihre Zahlung")
        expect(_payment(customer, "Ihre Zahlung").get_by_text("Wird geprüft")).to_be_visible()
        expect(customer.get_by_text("Vielen Dank")).to_have_count(0)
        assert_accessible(customer)
    next_poll(customer, POLL_SECONDS)
    expect(customer.get_by_role("heading", level=1)).to_have_text(
        "Wir warten auf Ihre Zahlung", timeout=POLL_TIMEOUT
    )
