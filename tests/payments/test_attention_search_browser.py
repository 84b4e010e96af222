"""A person works the needs-attention list and searches, in Chromium: the count in the menu,
Link from the list with its confirmation on the list itself, a reason's own list, and the
header's search box."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

from playwright.sync_api import Page, expect

from portal.api import MerchantApiClient
from tests.support.browser import assert_accessible, signed_in_as
from tests.support.mirror_rows import mirror_all, mirror_from_sandbox, operation_record
from tests.support.portal_server import PortalServer


def undecided(
    portal: PortalServer, api: MerchantApiClient, order: str, paid: str
) -> tuple[str, str]:
    """An operation due 0.5 BTC with a transaction of `paid` nobody decided, in the mirror."""
    operation = api.create_operation("0.5", "BTC", order)
    body = {"amount": paid, "tx_id": f"hash-{uuid.uuid4().hex}", "status": "undefined"}
    path = f"operations/{operation.id}/transactions"
    transaction = portal.sandbox.control("POST", path, body)
    mirror_from_sandbox(portal.app, portal.sandbox, operation.id)
    return operation.id, transaction.json()["data"]["id"]


def test_link_from_the_list_then_find_it_by_a_part_of_its_order_number(
    page: Page, portal: PortalServer
) -> None:
    sandbox = portal.sandbox
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    _, waiting = undecided(portal, api, f"order-{uuid.uuid4().hex[:8]}", "0.5")
    order = f"Spring-Sale-{uuid.uuid4().hex[:6]}"
    operation, transaction_id = undecided(portal, api, order, "0.1")  # the newest: listed first

    signed_in_as(page, "operator@acme.test")
    menu = page.get_by_role("navigation", name="Main")
    menu.get_by_role("link", name="Needs attention").click()
    expect(menu.get_by_role("link", name="Needs attention")).to_have_text(re.compile(r" \d+$"))
    expect(page.get_by_role("heading", name="Transactions nobody decided (2)")).to_be_visible()
    assert_accessible(page)
    before = int(menu.get_by_role("link", name="Needs attention").inner_text().split()[-1])
    page.get_by_label(f"Select transaction {transaction_id}").check()
    page.get_by_role("button", name=f"Link selected of operation {operation}").click()

    # The confirmation opens on the list itself, with its money, and takes the focus.
    confirm = page.get_by_role("heading", name="Link 1 transaction?")
    expect(confirm).to_be_focused()
    expect(page).to_have_url(f"{portal.url}/attention")
    expect(page.get_by_role("heading", name="Needs attention", level=1)).to_be_visible()
    expect(page.locator(".link-money")).to_contain_text("Received after linking0.1 BTC")
    expect(page.locator(".link-money")).to_contain_text("0.4 BTC short of the due")
    assert_accessible(page)
    # 0.1 of 0.5 BTC: linking it confirms an underpayment, which the person accepts in words.
    page.get_by_role("button", name="Confirm link").click()
    expect(page.get_by_text("Tick the box to confirm")).to_be_visible()
    assert sandbox.requests_received("PUT", f"/operations/{operation}/link-transactions") == 0
    page.get_by_label("Yes, accept an underpayment of 0.4 BTC").check()
    page.get_by_role("button", name="Confirm link").click()

    # Back on the list: the notice, the item gone, the focus on the next item.
    expect(page.get_by_role("status")).to_have_text("1 transaction linked to the operation.")
    expect(page).to_have_url(f"{portal.url}/attention")
    expect(page.get_by_text(f"Transaction {transaction_id}", exact=True)).to_have_count(0)
    expect(page.get_by_role("link", name=f"Transaction {waiting}", exact=True)).to_be_focused()
    assert api.get_transaction(transaction_id).linked is True

    # Before the mirror's next sync, a full reload of the list no longer shows it.
    page.reload()
    expect(page.get_by_role("heading", name="Transactions nobody decided (1)")).to_be_visible()
    expect(page.get_by_text(f"Transaction {transaction_id}", exact=True)).to_have_count(0)
    expected = f"Needs attention {before - 1}" if before > 1 else "Needs attention"
    expect(menu.get_by_role("link", name="Needs attention")).to_have_text(expected)

    page.get_by_label("Search").fill(order[2:10].upper())
    page.get_by_label("Search").press("Enter")
    expect(page.get_by_role("heading", name="Search", exact=True)).to_be_visible()
    assert_accessible(page)
    page.get_by_role("link", name=operation, exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(operation)


def test_a_reasons_own_list_from_the_newest_of_each(page: Page, portal: PortalServer) -> None:
    records = [
        operation_record(status="failed", age=timedelta(minutes=minute)) for minute in range(1, 13)
    ]
    mirror_all(portal.app, records)
    signed_in_as(page, "accountant@acme.test")
    page.goto(f"{portal.url}/attention")
    failed = page.get_by_role("region", name=re.compile(r"^Failed in the last 7 days"))
    expect(failed.get_by_role("link", name=re.compile(r"^Open operation"))).to_have_count(10)
    failed.get_by_role("link", name=re.compile(r"^see them all")).click()

    expect(page).to_have_url(f"{portal.url}/attention?group=failed")
    listed = page.get_by_role("link", name=re.compile(r"^Open operation"))
    expect(listed).to_have_count(12)
    expect(listed.last).to_have_text(f"Open operation {records[-1]['id']}")
    expect(page.get_by_role("heading", name=re.compile(r"^Transactions nobody"))).to_have_count(0)
    assert_accessible(page)
    page.get_by_role("link", name="Everything that needs attention").click()
    expect(page).to_have_url(f"{portal.url}/attention")
