"""Create an operation and hand out its link; its money; link, reject and cancel, each
confirmation showing the money and taking the focus; what accountants see."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import Page, expect

from portal.api import MerchantApiClient
from portal.payments.pages.operations.routes import POLL_SECONDS as OPERATION_POLL_SECONDS
from portal.payments.pages.state_badges import LIST_POLL_SECONDS
from tests.support.browser import assert_accessible, next_poll, signed_in_as
from tests.support.portal_server import PortalServer


@pytest.fixture(scope="module")
def api(portal: PortalServer) -> MerchantApiClient:
    return MerchantApiClient(portal.sandbox.base_url, token=portal.sandbox.token)


def operation_with_transactions(portal: PortalServer, api: MerchantApiClient, count: int):
    """A new operation of this test, with `count` undefined transactions waiting for a decision."""
    operation = api.create_operation("0.02", "BTC", f"browser-{uuid.uuid4().hex[:8]}")
    ids = []
    for _ in range(count):
        body = {"amount": "0.01", "tx_id": uuid.uuid4().hex, "status": "undefined"}
        created = portal.sandbox.control("POST", f"operations/{operation.id}/transactions", body)
        ids.append(created.json()["data"]["id"])
    return operation, ids


def test_create_an_operation_and_copy_its_payment_link(page: Page, portal: PortalServer) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    signed_in_as(page, "operator@acme.test")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Operations").click()
    page.get_by_role("link", name="New operation").click()
    expect(page.get_by_role("heading", name="New operation")).to_be_visible()
    assert_accessible(page)

    page.get_by_label("Amount").fill("0")
    page.get_by_label("Order number").fill("A-1001")
    page.get_by_role("button", name="Create operation").click()
    expect(page.get_by_text("The amount must be greater than zero.")).to_be_visible()
    assert_accessible(page)

    page.get_by_label("Amount").fill("25.50")
    page.get_by_label("Currency", exact=True).select_option("USDT")
    page.get_by_label("Payment currency").select_option("ETH")
    page.get_by_role("button", name="Create operation").click()
    expect(page.get_by_role("heading", name=re.compile(r"^Operation \d+$"))).to_be_visible()
    expect(page.get_by_role("status").first).to_contain_text("was created")
    expect(page.get_by_role("heading", name="Payment link")).to_be_visible()
    expect(page.get_by_role("img", name="QR code of the payment link")).to_be_visible()
    link = page.get_by_role("textbox", name="Payment link").input_value()
    assert re.fullmatch(rf"{re.escape(portal.sandbox.base_url)}/pay/\d+", link)
    redirect = page.locator("dt:text-is('Redirect URL') + dd")
    expect(redirect).to_contain_text(f"{portal.url}/checkout/")
    assert_accessible(page)

    page.get_by_role("button", name="Copy link").click()
    expect(page.get_by_text("Copied.")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText().then(t => t, e => String(e))") == link


def test_link_selected_after_confirmation(
    page: Page, portal: PortalServer, api: MerchantApiClient
) -> None:
    operation, (first, second) = operation_with_transactions(portal, api, 2)
    signed_in_as(page, "operator@acme.test", f"/operations/{operation.id}")
    page.get_by_role("checkbox", name=f"Select transaction {first}").check()
    page.get_by_role("button", name="Link selected").click()
    heading = page.get_by_role("heading", name="Link 1 transaction?")
    expect(heading).to_be_focused()  # the confirmation takes the focus, in view
    expect(heading).to_be_in_viewport()
    confirmation = page.locator("section.confirm")
    expect(confirmation.locator("dt:text-is('Due') + dd")).to_have_text("0.02 BTC")
    expect(confirmation.locator("dt:text-is('Received after linking') + dd")).to_contain_text(
        "0.01 BTC"
    )
    expect(confirmation.locator("dt:text-is('Difference') + dd")).to_have_text(
        "0.01 BTC short of the due (shortfall)"
    )
    assert api.get_transaction(first).linked is False
    assert_accessible(page)

    with page.expect_response(re.compile(r"/link-transactions$")) as refused:
        page.get_by_role("button", name="Confirm link").click()
    assert refused.value.status == 422
    expect(page.get_by_text("Tick the box to confirm")).to_be_visible()
    link_path = f"/operations/{operation.id}/link-transactions"
    assert portal.sandbox.requests_received("PUT", link_path) == 0  # nothing was sent
    assert api.get_transaction(first).linked is False

    page.get_by_label("Yes, accept an underpayment of 0.01 BTC").check()
    page.get_by_role("button", name="Confirm link").click()
    expect(page.locator(".flash")).to_have_text("1 transaction linked to the operation.")
    expect(page.locator("dt:text-is('State') + dd")).to_have_text("Underpaid")
    assert portal.sandbox.requests_received("PUT", link_path) == 1
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=first, exact=True))
    expect(row).to_contain_text("Yes")
    assert api.get_transaction(first).linked is True
    assert api.get_transaction(second).linked is False
    audit = portal.signed_in_session("owner@acme.test").get(
        f"{portal.url}/audit/export.csv", params={"action": "transactions.link"}
    )
    about = f"operation_id: {operation.id};"
    accepted_line, refused_line = [line for line in audit.text.splitlines() if about in line]
    assert ",Refused," in refused_line  # the newest first
    assert ",Success," in accepted_line
    assert "underpayment_accepted" in accepted_line and "0.01000000 BTC" in accepted_line


def test_reject_selected_with_a_reason(
    page: Page, portal: PortalServer, api: MerchantApiClient
) -> None:
    operation, (first,) = operation_with_transactions(portal, api, 1)
    signed_in_as(page, "owner@acme.test", f"/operations/{operation.id}")
    page.get_by_role("checkbox", name=f"Select transaction {first}").check()
    page.get_by_role("button", name="Reject selected").click()
    expect(page.get_by_text("Enter the reason for the rejection.")).to_be_visible()
    page.get_by_label("Reason").fill("Paid twice")
    page.get_by_role("button", name="Reject selected").click()
    expect(page.get_by_role("heading", name="Reject 1 transaction?")).to_be_visible()
    page.get_by_role("button", name="Confirm rejection").click()
    expect(page.get_by_text("1 transaction rejected.")).to_be_visible()
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=first, exact=True))
    expect(row).to_contain_text("Rejected")
    expect(row).to_contain_text("Paid twice")


def test_cancel_operation_after_confirmation(
    page: Page, portal: PortalServer, api: MerchantApiClient
) -> None:
    operation, _ = operation_with_transactions(portal, api, 0)
    signed_in_as(page, "operator@acme.test", f"/operations/{operation.id}")
    page.get_by_role("button", name="Cancel operation").click()
    expect(page.get_by_role("heading", name=f"Cancel operation {operation.id}?")).to_be_visible()
    assert api.get_operation(operation.id).status == "new"
    page.get_by_role("link", name="Keep the operation").click()
    expect(page.get_by_role("button", name="Cancel operation")).to_be_visible()
    page.get_by_role("button", name="Cancel operation").click()
    page.get_by_role("button", name="Confirm cancellation").click()
    expect(page.locator(".flash")).to_have_text("The operation was canceled.")
    expect(page.locator("dt:text-is('State') + dd")).to_have_text("Canceled")
    expect(page.get_by_role("button", name="Cancel operation")).to_have_count(0)
    expect(page.get_by_role("heading", name="Payment link")).to_have_count(0)


def test_a_refused_cancellation_is_explained(
    page: Page, portal: PortalServer, api: MerchantApiClient
) -> None:
    """The operation expires while the page is open; the API refuses with code 8."""
    operation, _ = operation_with_transactions(portal, api, 0)
    signed_in_as(page, "operator@acme.test", f"/operations/{operation.id}")
    page.get_by_role("button", name="Cancel operation").click()
    portal.sandbox.control("POST", f"operations/{operation.id}/expire")
    page.get_by_role("button", name="Confirm cancellation").click()
    expect(page.get_by_role("alert")).to_contain_text("error 8")
    expect(page.locator("dt:text-is('State') + dd")).to_have_text("Expired")


def test_accountants_see_no_controls_and_are_refused(
    page: Page, portal: PortalServer, api: MerchantApiClient
) -> None:
    operation, (first,) = operation_with_transactions(portal, api, 1)
    signed_in_as(page, "accountant@acme.test", "/operations")
    expect(page.get_by_role("link", name="New operation")).to_have_count(0)
    page.goto(f"/operations/{operation.id}")
    expect(page.get_by_role("link", name=first, exact=True)).to_be_visible()
    for name in ("Link selected", "Reject selected", "Cancel operation"):
        expect(page.get_by_role("button", name=name)).to_have_count(0)
    expect(page.get_by_role("checkbox")).to_have_count(0)
    assert page.goto("/operations/new").status == 403
    refused = page.request.post(
        f"/operations/{operation.id}/cancel", form={"confirm": "1"}, max_redirects=0
    )
    assert refused.status == 403
    assert api.get_operation(operation.id).status == "new"
    assert_accessible(page)


def ticked_boxes(page: Page) -> list[str]:
    return [
        box.get_attribute("value")
        for box in page.locator("input[name=transaction_id]:checked").all()
    ]


def test_after_link_selected_no_box_stays_ticked(
    page: Page, portal: PortalServer, api: MerchantApiClient
) -> None:
    """Once, the linked ones stayed ticked, and the next Reject selected rejected them too."""
    operation, (first, second) = operation_with_transactions(portal, api, 2)
    signed_in_as(page, "operator@acme.test", f"/operations/{operation.id}")
    page.get_by_role("checkbox", name=f"Select transaction {first}").check()
    page.get_by_role("button", name="Link selected").click()
    confirmation = page.locator("section.confirm")
    expect(confirmation.get_by_role("row")).to_have_count(2)  # the header and the one chosen
    expect(confirmation.get_by_role("row").nth(1)).to_contain_text("0.01 BTC")
    expect(confirmation.get_by_role("row").nth(1)).to_contain_text("Undefined")
    page.get_by_label("Yes, accept an underpayment of 0.01 BTC").check()
    page.get_by_role("button", name="Confirm link").click()
    expect(page.locator(".flash")).to_have_text("1 transaction linked to the operation.")
    assert ticked_boxes(page) == []

    page.get_by_label("Reason").fill("Not ours")
    page.get_by_role("button", name="Reject selected").click()
    expect(page.get_by_text("Select at least one transaction.")).to_be_visible()
    assert api.get_transaction(first).status == "confirmed"

    page.get_by_role("checkbox", name=f"Select transaction {first}").check()
    page.get_by_role("button", name="Reject selected").click()
    expect(page.get_by_text("1 of these already counts as paid")).to_be_visible()
    assert_accessible(page)
    page.get_by_role("button", name="Confirm rejection").click()
    expect(page.get_by_text("Tick the box to confirm")).to_be_visible()
    assert api.get_transaction(first).status == "confirmed"
    page.get_by_label("Yes, reject transactions that already count as paid").check()
    page.get_by_role("button", name="Confirm rejection").click()
    expect(page.locator(".flash")).to_have_text("1 transaction rejected.")
    assert ticked_boxes(page) == []
    assert api.get_transaction(first).status == "rejected"
    assert api.get_transaction(second).status == "undefined"


def test_a_payment_that_arrives_shows_without_a_reload(
    page: Page, portal: PortalServer, api: MerchantApiClient
) -> None:
    operation, (waiting,) = operation_with_transactions(portal, api, 1)
    page.clock.install()
    signed_in_as(page, "operator@acme.test", f"/operations/{operation.id}")
    status = page.locator("dt:text-is('State') + dd")
    expect(status).to_contain_text("Awaiting a decision")
    page.get_by_role("checkbox", name=f"Select transaction {waiting}").check()
    page.get_by_label("Reason").fill("Typed before the payment")

    body = {"amount": "0.005", "tx_id": uuid.uuid4().hex, "status": "confirmed"}
    portal.sandbox.control("POST", f"operations/{operation.id}/transactions", body)
    next_poll(page, OPERATION_POLL_SECONDS)
    expect(status).to_contain_text("Partly paid", timeout=15_000)
    expect(page.locator("dt:text-is('Received') + dd")).to_contain_text("0.005 BTC")
    expect(page.get_by_role("row")).to_have_count(3)  # the header, the waiting one, the payment
    # What the person had chosen and typed survived the update.
    expect(page.get_by_role("checkbox", name=f"Select transaction {waiting}")).to_be_checked()
    expect(page.get_by_label("Reason")).to_have_value("Typed before the payment")

    body = {"amount": "0.015", "tx_id": uuid.uuid4().hex, "status": "confirmed"}
    portal.sandbox.control("POST", f"operations/{operation.id}/transactions", body)
    next_poll(page, OPERATION_POLL_SECONDS)
    expect(status).to_have_text("Paid", timeout=15_000)
    expect(page.locator("#operation-poll")).to_have_count(0)  # a final state: no more polling
    assert_accessible(page)


def test_the_operations_list_shows_a_payment_without_a_reload(
    page: Page, portal: PortalServer, api: MerchantApiClient
) -> None:
    operation, _ = operation_with_transactions(portal, api, 0)
    page.clock.install()
    signed_in_as(page, "accountant@acme.test", "/operations?per_page=10")
    row = page.get_by_role("row").filter(
        has=page.get_by_role("link", name=operation.id, exact=True)
    )
    expect(row).to_contain_text("Awaiting payment")
    url, history = page.url, page.evaluate("history.length")
    body = {"amount": "0.01", "tx_id": uuid.uuid4().hex, "status": "confirmed"}
    portal.sandbox.control("POST", f"operations/{operation.id}/transactions", body)
    next_poll(page, LIST_POLL_SECONDS)
    expect(row).to_contain_text("Partly paid", timeout=25_000)
    assert page.url == url
    assert page.evaluate("history.length") == history  # the updates pushed nothing to it


def test_the_operation_page_opens_with_its_money(
    page: Page, portal: PortalServer, api: MerchantApiClient
) -> None:
    """10 USDT paid in ETH: the due at the operation's rate, the money so far, the expiry the
    portal assumes; then what arrived undecided, also in the cancel warning."""
    operation = api.create_operation("10", "USDT", f"browser-{uuid.uuid4().hex[:8]}", "ETH")
    signed_in_as(page, "operator@acme.test", f"/operations/{operation.id}")
    summary = page.locator("section.money-summary")
    due = summary.locator("dt:text-is('Due') + dd")
    expect(due).to_contain_text("ETH")
    expect(due).to_contain_text("at the operation's rate")
    expect(summary.locator("dt:text-is('Received') + dd")).to_have_text("0 ETH")
    expect(summary.locator("dt:text-is('Difference') + dd")).to_contain_text("short of the due")
    expiry = summary.locator("dt:text-is('Expires (assumed)') + dd")
    expect(expiry).to_contain_text(re.compile(r"(59|60) minutes left"))
    expect(expiry).to_contain_text("the API gives no expiry")
    figure = due.inner_text().split(" ETH")[0]
    expect(summary.get_by_text("To pay:")).to_contain_text(f"{figure} ETH")
    assert_accessible(page)

    body = {"amount": figure, "tx_id": uuid.uuid4().hex, "status": "undefined"}
    portal.sandbox.control("POST", f"operations/{operation.id}/transactions", body)
    page.reload()
    expect(summary.locator("dt:text-is('State') + dd")).to_have_text("Awaiting a decision")
    expect(summary.locator("dt:text-is('Awaiting a decision') + dd")).to_contain_text(
        f"{figure} ETH"
    )
    expect(summary.get_by_text("To pay:")).to_have_count(0)

    page.get_by_role("button", name="Cancel operation").click()
    heading = page.get_by_role("heading", name=f"Cancel operation {operation.id}?")
    expect(heading).to_be_focused()
    expect(heading).to_be_in_viewport()
    expect(page.locator("section.confirm .warning")).to_contain_text(
        f"0 ETH received and {figure} ETH awaiting a decision"
    )
