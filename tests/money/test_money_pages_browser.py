"""The pages that move money, as a person uses them: withdrawals, vouchers, exchange, cross
exchanges and the audit log as an owner, and what the other roles do not get."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.support.browser import assert_accessible, signed_in_as
from tests.support.money import BTC_ADDRESS, ETH_ADDRESS
from tests.support.portal_server import PortalServer

OWNER = "owner@acme.test"


def _menu(page: Page, name: str) -> None:
    page.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True).click()


def test_withdrawal_review_and_confirm(page: Page, portal: PortalServer) -> None:
    signed_in_as(page, OWNER)
    _menu(page, "Withdrawals")
    expect(page.get_by_role("heading", name="Withdrawals", exact=True)).to_be_visible()
    page.get_by_role("link", name="New withdrawal").click()
    assert_accessible(page)
    page.get_by_label("Amount").fill("0.25")
    page.get_by_label("Wallet", exact=True).select_option("ETH")
    page.get_by_label("Address").fill("not an address")
    page.get_by_role("button", name="Review").click()
    expect(page.get_by_text("Enter an Ethereum address")).to_be_visible()
    assert_accessible(page)

    page.get_by_label("Address").fill(ETH_ADDRESS)
    page.get_by_role("button", name="Review").click()
    expect(page.get_by_role("heading", name="Review the withdrawal")).to_be_visible()
    expect(page.get_by_text("You are about to withdraw 0.25 ETH")).to_be_visible()
    assert_accessible(page)
    page.get_by_role("button", name="Confirm withdrawal").click()
    expect(page.get_by_role("status").filter(has_text="The withdrawal was sent.")).to_be_visible()
    expect(page.get_by_role("link", name=re.compile(r"^Operation \d+"))).to_be_visible()
    assert_accessible(page)

    page.get_by_role("link", name="Withdrawals", exact=True).last.click()
    row = page.get_by_role("row").filter(has_text=ETH_ADDRESS).first
    expect(row).to_contain_text("Sent")
    assert_accessible(page)


def test_voucher_create_reveal_cancel_and_pay_off(page: Page, portal: PortalServer) -> None:
    signed_in_as(page, OWNER)
    _menu(page, "Vouchers")
    assert_accessible(page)
    page.get_by_role("link", name="New voucher").click()
    expect(page.get_by_role("heading", name="New voucher")).to_be_visible()
    # The currencies the service's exchange rates name: no USD, which always failed.
    expect(page.get_by_label("Currency").locator("option[value=USD]")).to_have_count(0)
    page.get_by_label("Amount", exact=True).fill("5")
    page.get_by_label("Currency").select_option("USDT")
    page.get_by_role("button", name="Review").click()
    expect(page.get_by_role("heading", name="Review the voucher")).to_be_visible()
    expect(page.get_by_text("Nothing is created until you confirm.")).to_be_visible()
    expect(page.locator("dt:text-is('Amount') + dd")).to_have_text("5 USDT")
    assert_accessible(page)
    page.get_by_role("link", name="Change the details").click()
    expect(page.get_by_label("Amount", exact=True)).to_have_value("5")
    page.get_by_role("button", name="Review").click()
    page.get_by_role("button", name="Create voucher").click()
    expect(page.get_by_role("status")).to_contain_text("for 5 USDT is created.")
    expect(page.get_by_label("Hidden code")).to_be_visible()
    assert_accessible(page)

    page.get_by_role("link", name="Reveal code").click()
    expect(page.get_by_text("Revealing it is recorded in the audit log.")).to_be_visible()
    page.get_by_role("button", name="Reveal code").click()
    code = page.locator("#voucher-code-value")
    expect(code).to_have_text(re.compile(r"^[A-Z0-9]{4}(-[A-Z0-9]{4}){3}$"))
    expect(page.get_by_role("button", name="Copy code")).to_be_visible()
    assert_accessible(page)
    secret = code.inner_text()

    page.get_by_role("link", name="Cancel voucher").click()
    expect(page.get_by_role("heading", name=re.compile(r"^Cancel voucher \d+\?$"))).to_be_visible()
    assert_accessible(page)
    page.get_by_role("button", name="Cancel voucher").click()
    expect(page.get_by_role("status").filter(has_text="is canceled")).to_be_visible()

    page.get_by_role("link", name="Pay off a voucher").click()
    page.get_by_label("Voucher code").fill(secret)
    page.get_by_role("button", name="Pay off").click()
    expect(page.get_by_text("No voucher can be paid off with this code")).to_be_visible()
    assert_accessible(page)


def test_exchange_with_a_live_quote(page: Page, portal: PortalServer) -> None:
    signed_in_as(page, OWNER)
    _menu(page, "Exchange")
    expect(page.get_by_role("heading", name="Exchange rates")).to_be_visible()
    page.get_by_label("Sell currency").select_option("BTC")
    page.get_by_label("Buy currency").select_option("ETH")
    page.get_by_label("Buy amount").fill("0.3")
    page.get_by_label("Sell amount").fill("0.01")
    expect(page.get_by_text("Enter only one of the two amounts")).to_be_visible()
    page.get_by_label("Buy amount").fill("")
    expect(page.get_by_text(re.compile(r"Quote: 0.01 BTC for about [\d.]+ ETH"))).to_be_visible()
    assert_accessible(page)

    page.get_by_role("button", name="Review").click()
    expect(page.get_by_role("heading", name="Review the exchange")).to_be_visible()
    facts = page.locator("dl.facts")
    expect(facts).to_contain_text("0.01 BTC")
    expect(facts).to_contain_text(re.compile(r"about [\d.]+ ETH, less the fee"))
    expect(facts).to_contain_text(re.compile(r"[\d.]+ ETH per BTC"))
    expect(facts).to_contain_text("In BTC, the currency you sell")
    expect(page.get_by_role("status")).to_have_count(0)  # nothing is exchanged yet
    assert_accessible(page)

    page.get_by_role("button", name="Confirm exchange").click()
    expect(page.get_by_role("status")).to_have_text("The exchange is done.")
    result = page.get_by_role("region", name=re.compile(r"^Exchange \d+$"))
    expect(result).to_contain_text(re.compile(r"Fee\s*[\d.]+ BTC"))  # the fee with its currency
    assert_accessible(page)

    page.get_by_role("link", name="All exchanges made in the portal").click()
    expect(
        page.get_by_role("heading", name=re.compile(r"exchanges? made in the portal"))
    ).to_be_visible()
    expect(page.get_by_role("row").filter(has_text="0.01 BTC").first).to_be_visible()
    assert_accessible(page)


def test_cross_exchange_create_countdown_and_cancel(page: Page, portal: PortalServer) -> None:
    signed_in_as(page, OWNER)
    _menu(page, "Cross exchanges")
    assert_accessible(page)
    page.get_by_role("link", name="New cross exchange").click()
    page.get_by_label("Sell currency").select_option("BTC")
    page.get_by_label("Buy currency").select_option("ETH")
    page.get_by_label("Sell amount").fill("0.01")
    page.get_by_label("Buy amount").fill("1")
    page.get_by_label("Refund address").fill(BTC_ADDRESS)
    page.get_by_label("Payout address").fill(ETH_ADDRESS)
    page.get_by_role("button", name="Create cross exchange").click()
    expect(page.get_by_text("Enter only one of the two amounts")).to_be_visible()
    assert_accessible(page)

    page.get_by_label("Buy amount").fill("")
    page.get_by_role("button", name="Create cross exchange").click()
    expect(page.get_by_text("Awaiting payment")).to_be_visible()
    expect(page.locator("[data-countdown]")).to_have_text(re.compile(r"\(\d+ min \d+ s left\)"))
    assert_accessible(page)

    page.get_by_role("link", name="Cancel cross exchange").click()
    page.get_by_role("button", name="Cancel cross exchange").click()
    expect(page.get_by_role("status").filter(has_text="is canceled")).to_be_visible()
    heading = page.get_by_role("heading", level=1).inner_text()

    _menu(page, "Cross exchanges")
    page.get_by_role("link", name=heading).click()
    # The list may hold other canceled cross exchanges: the status is read once the page is in.
    expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    expect(page.get_by_text("Canceled", exact=True)).to_be_visible()


def test_the_audit_log(page: Page, portal: PortalServer) -> None:
    signed_in_as(page, OWNER)
    _menu(page, "Audit")
    expect(page.get_by_role("heading", name="Audit log")).to_be_visible()
    assert_accessible(page)
    page.get_by_label("Action").select_option("Sign-in")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("cell", name="Sign-in").first).to_be_visible()
    expect(page.get_by_role("link", name="Export CSV")).to_have_attribute(
        "href", "/audit/export.csv?action=sign_in"
    )


def test_other_roles_get_no_money_actions(page: Page, portal: PortalServer) -> None:
    signed_in_as(page, "operator@acme.test")
    menu = page.get_by_role("navigation", name="Main")
    expect(menu.get_by_role("link", name="Vouchers")).to_be_visible()
    expect(menu.get_by_role("link", name="Withdrawals")).to_have_count(0)
    expect(menu.get_by_role("link", name="Audit")).to_have_count(0)
    page.goto("/vouchers")
    expect(page.get_by_role("link", name="New voucher")).to_have_count(0)
    expect(page.get_by_role("link", name="Pay off a voucher")).to_be_visible()
    page.goto("/withdrawals/new")
    expect(page.get_by_role("heading", name="You do not have access to this page")).to_be_visible()

    page.context.clear_cookies()
    signed_in_as(page, "accountant@acme.test", "/exchange")
    expect(page.get_by_role("heading", name="Exchange rates")).to_be_visible()
    expect(page.get_by_label("Sell amount")).to_have_count(0)
    assert_accessible(page)
    page.get_by_role("link", name="Exchanges made").click()
    expect(
        page.get_by_role("heading", name=re.compile(r"exchanges? made in the portal"))
    ).to_be_visible()
    _menu(page, "Withdrawals")
    expect(page.get_by_role("heading", name="Withdrawals", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="New withdrawal")).to_have_count(0)
    assert_accessible(page)
    page.goto("/vouchers")
    expect(page.get_by_role("link", name="New voucher")).to_have_count(0)
    page.goto("/vouchers/new")
    expect(page.get_by_role("heading", name="You do not have access to this page")).to_be_visible()
