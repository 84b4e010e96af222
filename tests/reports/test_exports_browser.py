"""Exports the way an accountant makes them: filter, Export CSV, watch the progress, cancel.

On the session's seeded sandbox (300 operations, three pages of the API).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.reports.test_exports_pages import api_records
from tests.support.browser import assert_accessible, signed_in_as
from tests.support.portal_server import PortalServer


@pytest.fixture
def accountant_page(browser, seeded_portal: PortalServer) -> Iterator[Page]:
    context = browser.new_context(base_url=seeded_portal.url, accept_downloads=True)
    page = context.new_page()
    signed_in_as(page, "accountant@acme.test")
    yield page
    context.close()
    seeded_portal.sandbox.reset()


def test_export_of_the_filtered_list_with_progress(accountant_page, tmp_path):
    page = accountant_page
    page.goto("/operations?created_from=2000-01-01")
    expect(page.get_by_text("300 operations")).to_be_visible()
    assert_accessible(page)
    with page.expect_download() as download:
        page.get_by_role("link", name="Export CSV").click()
    expect(page.get_by_role("status").filter(has_text="Done")).to_have_text("Done: 300 rows.")
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name == "acme_operations_2000-01-01_to_today_UTC.csv"
    with saved.open(newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    assert len(rows) == 301
    assert_accessible(page)


def test_the_transactions_of_the_filtered_operations_with_their_order_numbers(
    accountant_page, seeded_portal, tmp_path
):
    confirmed = {
        operation["id"]: operation["order_id"]
        for operation in api_records(seeded_portal.sandbox, "operations")
        if operation["status"] == "confirmed"
    }
    page = accountant_page
    page.goto("/operations?status=1")
    with page.expect_download() as download:
        page.get_by_role("link", name="Export transactions (CSV), times in UTC").click()
    expect(page.get_by_role("status").filter(has_text="Done")).to_be_visible()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name == "acme_transactions-of-operations_all-dates_UTC.csv"
    with saved.open(newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert {row["operation_id"] for row in rows} == confirmed.keys()  # each has a payment
    for row in rows:
        assert row["order_id"] == (confirmed[row["operation_id"]] or "")


def test_a_slow_export_can_be_cancelled(accountant_page, seeded_portal):
    page = accountant_page
    page.goto("/operations")
    seeded_portal.sandbox.control("POST", "faults", {"mode": "slow", "delay_ms": 3000})
    page.get_by_role("link", name="Export CSV").click()
    cancel = page.get_by_role("button", name="Cancel export")
    expect(cancel).to_be_visible()
    cancel.click()
    expect(page.get_by_role("status").filter(has_text="cancelled")).to_have_text(
        "Export cancelled."
    )
    expect(cancel).to_be_hidden()


def test_accountants_see_exports_but_no_action(accountant_page):
    page = accountant_page
    page.goto("/operations")
    expect(page.get_by_role("link", name="Export CSV")).to_be_visible()
    expect(page.get_by_role("link", name="New operation")).to_have_count(0)
    page.goto("/transactions")
    expect(page.get_by_role("link", name="Export CSV")).to_be_visible()
