"""Lists, records, rates and the dashboard the way a merchant uses them, on seeded data."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Browser, Page, expect

from portal.api import MerchantApiClient
from portal.payments.rules.operation_money import WITHDRAWAL_CATEGORIES
from tests.support.browser import assert_accessible, signed_in_as
from tests.support.mirror import mirror_operations
from tests.support.portal_server import PortalServer


@pytest.fixture
def page(browser: Browser, seeded_portal: PortalServer):
    context = browser.new_context(base_url=seeded_portal.url)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    yield page
    context.close()
    assert problems == [], "script errors in the browser"


@pytest.fixture(scope="module")
def api(seeded_sandbox) -> MerchantApiClient:
    return MerchantApiClient(seeded_sandbox.base_url, token=seeded_sandbox.token)


def unfold_filters(page: Page) -> None:
    """Open the filter form, folded below the chips of the filters set."""
    page.locator(".filters-fold > summary").click()


def showing(first: int, last: int) -> str:
    """The range shown above a list, as the page writes it (with an en dash)."""
    return f"showing {first}\u2013{last}"


def total(api: MerchantApiClient, kind: str = "operations", **filters) -> int:
    return getattr(api, f"list_{kind}")(**filters).total


def test_filter_sort_page_and_history(page: Page, api: MerchantApiClient) -> None:
    signed_in_as(page, "accountant@acme.test")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Operations").click()
    summary = page.locator(".list-summary")
    expect(summary).to_contain_text(f"{total(api)} operations")
    expect(summary).to_contain_text(showing(1, 50))
    assert_accessible(page)

    unfold_filters(page)
    page.get_by_role("group", name="Status").get_by_label("Confirmed").check()
    confirmed = total(api, status=[1])
    expect(summary).to_contain_text(f"{confirmed} operations")
    expect(page).to_have_url(re.compile(r"/operations\?status=1$"))
    page.get_by_label("Currency", exact=True).press_sequentially("btc")
    both = total(api, status=[1], currency=["BTC"])
    expect(summary).to_contain_text(f"{both} operations")
    expect(page).to_have_url(re.compile(r"currency=btc"))
    # A confirmed operation reads as what its money amounts to, never as awaiting payment.
    for badge in page.get_by_role("table").locator(".badge").all():
        expect(badge).to_have_text(re.compile(r"^(Paid|Underpaid|Overpaid|Paid late)$"))

    page.get_by_label("Per page").select_option("10")
    expect(summary).to_contain_text(showing(1, 10))
    page.get_by_role("link", name="Amount", exact=True).click()
    expect(page).to_have_url(re.compile(r"sort=amount&sort_type=asc"))
    header = page.get_by_role("columnheader", name="Amount", exact=True)
    expect(header).to_have_attribute("aria-sort", "ascending")
    expect(page.get_by_label("Sort by")).to_have_value("amount")
    amounts = api.list_operations(
        status=[1], currency=["BTC"], sort="amount", sort_type="asc", per_page=10
    )
    first_page_ids = [o.id for o in amounts.items]
    expect(page.locator('tbody tr td[data-label="Id"]')).to_have_text(first_page_ids)

    page.get_by_role("link", name="Next").click()
    expect(summary).to_contain_text(showing(11, 20))
    expect(page.locator('a[rel="prev"]')).to_have_text("Previous")
    second_url = page.url
    page.go_back()
    expect(summary).to_contain_text(showing(1, 10))
    expect(page.locator('tbody tr td[data-label="Id"]')).to_have_text(first_page_ids)
    expect(page.get_by_label("Currency", exact=True)).to_have_value("BTC")
    # Back reloaded the page (htmx keeps no history cache); Forward is htmx's to handle only
    # once its script has run, which on a busy machine comes after the list is shown.
    page.wait_for_load_state()
    page.go_forward()
    expect(summary).to_contain_text(showing(11, 20))
    expect(page).to_have_url(second_url)
    page.reload()
    expect(summary).to_contain_text(showing(11, 20))
    unfold_filters(page)
    expect(page.get_by_role("group", name="Status").get_by_label("Confirmed")).to_be_checked()
    expect(page.get_by_label("Per page")).to_have_value("10")


def test_bad_filters_are_explained_next_to_the_field(page: Page) -> None:
    signed_in_as(page, "accountant@acme.test", "/operations")
    unfold_filters(page)
    page.get_by_label("Amount from").press_sequentially("ten")
    page.get_by_label("Created to").fill("2020-01-01")
    page.get_by_label("Created from").fill("2021-01-01")
    expect(page.locator("#amount_from-errors")).to_have_text("Enter a number such as 10 or 0.5.")
    expect(page.locator("#created_to-errors")).to_have_text("Must be on or after “Created from”.")
    expect(page.get_by_role("alert")).to_contain_text("Correct the values marked above")
    assert_accessible(page)
    page.get_by_label("Amount from").fill("10")
    page.get_by_label("Amount from").press("Enter")
    expect(page.locator("#amount_from-errors")).to_have_text("")


def test_empty_results_say_so(page: Page) -> None:
    signed_in_as(page, "accountant@acme.test", "/operations")
    unfold_filters(page)
    page.get_by_label("Order number").press_sequentially("no-such-order")
    expect(page.get_by_text("No operations match these filters.")).to_be_visible()
    expect(page.locator(".list-summary")).to_contain_text("0 operations")


def test_without_javascript_the_form_is_a_plain_get(
    browser: Browser, seeded_portal: PortalServer, api: MerchantApiClient
) -> None:
    context = browser.new_context(base_url=seeded_portal.url, java_script_enabled=False)
    page = context.new_page()
    try:
        signed_in_as(page, "accountant@acme.test", "/operations")
        unfold_filters(page)
        page.get_by_role("group", name="Status").get_by_label("Expired").check()
        page.get_by_label("Category").select_option("Application")
        page.get_by_role("button", name="Apply filters").click()
        expected = total(api, status=[3], category="application")
        expect(page.locator(".list-summary")).to_contain_text(f"{expected} operations")
        assert "status=3" in page.url and "category=application" in page.url
        page.get_by_role("link", name="Created", exact=True).click()
        expect(page.get_by_role("columnheader", name="Created")).to_have_attribute(
            "aria-sort", "ascending"
        )
    finally:
        context.close()


def test_open_an_operation_and_its_transactions(page: Page, api: MerchantApiClient) -> None:
    transaction = api.list_transactions(status=[4], per_page=1).items[0]
    signed_in_as(page, "accountant@acme.test", f"/transactions?id={transaction.id}")
    expect(page.locator(".list-summary")).to_contain_text("1 transaction")
    page.get_by_role("link", name=transaction.id, exact=True).click()
    expect(page.get_by_role("heading", name=f"Transaction {transaction.id}")).to_be_visible()
    expect(page.get_by_text(transaction.reject_reason).first).to_be_visible()
    assert_accessible(page)
    page.get_by_role("link", name=f"Operation {transaction.operation_id}").click()
    heading = page.get_by_role("heading", name=f"Operation {transaction.operation_id}")
    expect(heading).to_be_visible()
    expect(page.get_by_role("cell", name="Rejected")).not_to_have_count(0)
    expect(page.get_by_role("button", name="Link selected")).to_have_count(0)
    assert_accessible(page)


def test_transactions_list(page: Page, api: MerchantApiClient) -> None:
    signed_in_as(page, "operator@acme.test")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Transactions").click()
    expect(page.locator(".list-summary")).to_contain_text(f"{total(api, 'transactions')}")
    assert_accessible(page)
    unfold_filters(page)
    page.get_by_label("Linked").select_option("Linked by hand")
    linked = total(api, "transactions", linked=True)
    expect(page.locator(".list-summary")).to_contain_text(f"{linked} transaction")
    expect(page).to_have_url(re.compile(r"linked=1"))
    page.get_by_role("link", name="Reject reason").click()
    expect(page.get_by_role("columnheader", name="Reject reason")).to_have_attribute(
        "aria-sort", "ascending"
    )


def test_rates_refresh_every_30_seconds(page: Page, api: MerchantApiClient) -> None:
    page.clock.install()
    signed_in_as(page, "accountant@acme.test", "/rates")
    rows = page.get_by_role("table").get_by_role("row")
    expect(rows).to_have_count(len(api.get_rates()) + 1)
    expect(page.get_by_role("rowheader", name="BTC/USD", exact=True)).to_be_visible()
    assert_accessible(page)
    with page.expect_response(
        lambda r: "/rates" in r.url and r.request.headers.get("hx-request") == "true"
    ) as polled:
        page.clock.run_for("00:31")
    assert polled.value.ok
    expect(page.get_by_role("heading", name="Current rates")).to_have_count(1)


def test_dashboard(page: Page, api: MerchantApiClient, seeded_portal: PortalServer) -> None:
    operations = list(api.iter_operations())
    mirror_operations(seeded_portal.app, operations)  # as the sync would copy them
    today = datetime.now(UTC).date()
    sales = [o for o in operations if o.category not in WITHDRAWAL_CATEGORIES]
    in_30_days = [o for o in sales if (today - o.created_at.date()).days < 30]
    signed_in_as(page, "accountant@acme.test")
    expect(page.get_by_role("heading", name="Last 30 days")).to_be_visible()
    expect(page.get_by_role("heading", name="Money counted when it arrived")).to_be_visible()
    expect(
        page.get_by_role("heading", name="Operations counted when they were created")
    ).to_be_visible()
    expect(page.locator("#figure-created")).to_have_text(str(len(in_30_days)))
    expect(page.get_by_role("img", name=re.compile("Daily volume"))).to_be_visible()
    latest = api.list_operations(per_page=5).items
    table = page.get_by_role("region", name="Latest operations").get_by_role("table")
    expect(table.locator("tbody tr td:first-child")).to_have_text([o.id for o in latest])
    expect(page.get_by_role("heading", name="Current rates")).to_be_visible()
    assert_accessible(page)

    page.get_by_role("link", name="Last 7 days").click()
    expect(page).to_have_url(re.compile(r"period=7-days"))
    in_7_days = [o for o in in_30_days if (today - o.created_at.date()).days < 7]
    expect(page.locator("#figure-created")).to_have_text(str(len(in_7_days)))

    expect(page.get_by_label("From", exact=True)).to_be_hidden()  # the dates folded
    page.get_by_text("Choose dates").click()
    page.get_by_label("From", exact=True).fill(f"{today}")
    page.get_by_label("To", exact=True).fill(f"{today - timedelta(days=1)}")
    page.get_by_role("button", name="Show figures").click()
    expect(page.get_by_role("alert")).to_contain_text("That period cannot be shown")
    expect(page.get_by_role("heading", name="Last 30 days")).to_be_visible()


def test_time_zone_of_the_account(page: Page, api: MerchantApiClient) -> None:
    operation = api.list_operations(per_page=1).items[0]
    signed_in_as(page, "operator@acme.test")
    page.get_by_role("link", name="Account").click()
    assert_accessible(page)
    page.get_by_label("Time zone").select_option("Asia/Tokyo")
    page.get_by_role("button", name="Save time zone").click()
    expect(page.get_by_role("status")).to_have_text("Times are now shown in Asia/Tokyo.")
    page.goto(f"/operations/{operation.id}")
    created = page.locator("dt:text-is('Created') + dd")
    expect(created).to_contain_text("JST")
    expect(created).to_contain_text(operation.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"))
    page.goto("/account")
    page.get_by_label("Time zone").select_option("UTC")
    page.get_by_role("button", name="Save time zone").click()


def test_active_filters_read_as_chips_above_the_folded_form(page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    signed_in_as(page, "accountant@acme.test", "/operations?status=1&currency=BTC")
    chips = page.locator("#filter-chips")
    expect(chips.get_by_role("link")).to_have_text(
        ["Remove the filter Status: Confirmed \u00d7", "Remove the filter Currency: BTC \u00d7"]
    )
    expect(page.get_by_role("group", name="Status")).to_be_hidden()  # folded
    unfold_filters(page)
    expect(page.get_by_role("group", name="Status")).to_be_visible()

    # State and amount come first, the state whole at a desktop's width.
    headers = page.get_by_role("table").locator("thead th")
    expect(headers.nth(0)).to_have_text("State")
    expect(headers.nth(1)).to_contain_text("Amount")
    cut = page.eval_on_selector_all(
        "td.state", "cells => cells.filter(c => c.scrollWidth > c.clientWidth).length"
    )
    assert cut == 0

    chips.get_by_role("link", name="Status: Confirmed").click()
    expect(page).to_have_url(re.compile(r"/operations\?currency=BTC$"))
    expect(chips.get_by_role("link")).to_have_text(["Remove the filter Currency: BTC \u00d7"])


def test_stacked_cells_keep_their_column_names_on_a_phone(page: Page) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    signed_in_as(page, "accountant@acme.test", "/operations")
    labels = page.eval_on_selector_all(
        "table tbody tr:first-child td",
        "cells => cells.map(c => getComputedStyle(c, '::before').content)",
    )
    assert labels[:3] == ['"State: "', '"Amount: "', '"Amount paid: "'], labels
