"""A refund as the people involved use it, in Chromium: the owner refunds an overpaid
operation's surplus by a claim link; the customer, in a browser of their own with no session,
gives the address once; the worker sends exactly one withdrawal of the surplus there."""

from __future__ import annotations

import re
import uuid
from decimal import Decimal

from playwright.sync_api import Browser, Page, expect

from portal.api import MerchantApiClient
from tests.money.test_refunds import fresh_address
from tests.support.browser import assert_accessible, signed_in_as
from tests.support.portal_server import PortalServer

OWNER = "owner@acme.test"
STATUS = "dt:text-is('Status') + dd"
LINK = re.compile(r"https?://\S+/refund/[\w-]+")


def test_a_surplus_refunded_by_claim_link_sends_one_withdrawal_however_often_it_is_claimed(
    page: Page, browser: Browser, portal: PortalServer
) -> None:
    from portal.money.rules import refunds

    api = MerchantApiClient(portal.sandbox.base_url, token=portal.sandbox.token)
    operation = api.create_operation("0.5", "BTC", f"order-{uuid.uuid4().hex[:8]}")
    portal.sandbox.receive(operation.id, "0.7")
    signed_in_as(page, OWNER, f"/operations/{operation.id}")
    page.get_by_role("link", name=f"Refund operation {operation.id}").click()
    expect(page.get_by_label("The surplus only")).to_be_checked()
    assert_accessible(page)
    page.get_by_role("button", name="Request refund").click()
    expect(page.get_by_role("status").filter(has_text="claim link below")).to_be_visible()
    expect(page.get_by_text("Requested: waiting for the customer's address")).to_be_visible()
    page.get_by_role("button", name="Show claim link").click()
    expect(page.locator("#claim-link")).to_have_text(LINK)
    link = page.locator("#claim-link").inner_text()
    assert_accessible(page)

    customer = browser.new_context().new_page()  # no session: anyone with the link
    late = browser.new_context().new_page()  # the same link, opened before the claim
    address, other = fresh_address(), fresh_address()
    for opened, typed in ((customer, address), (late, other)):
        opened.goto(link)
        opened.get_by_label("Your address", exact=True).fill(typed)
        opened.get_by_label("Your address again").fill(typed)
    assert_accessible(customer)
    customer.get_by_role("button", name="Send my refund to this address").dblclick()
    expect(customer.get_by_text("Claimed: being sent")).to_be_visible()
    late.get_by_role("button", name="Send my refund to this address").click()
    expect(late.get_by_role("alert")).to_have_text(
        "This refund was already claimed: nothing more will be sent."
    )
    with portal.app.app_context():
        refunds.send_due()  # the worker's pass
        refunds.send_due()  # and the next tick's: nothing more

    sent = api.list_operations(address=address).items
    assert [(w.amount, w.currency) for w in sent] == [(Decimal("0.2"), "BTC")]
    assert portal.sandbox.operations_to(other) == 0
    customer.reload()
    expect(customer.locator(STATUS)).to_have_text("Sent")
    expect(customer.get_by_text(address)).to_be_visible()
    page.reload()
    expect(page.locator(STATUS)).to_have_text("Sent")
