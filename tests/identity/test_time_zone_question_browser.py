"""Everyone who never chose a time zone is asked once, on the first page after signing in,
offered the browser's zone; lists say the zone their times are in."""

from __future__ import annotations

import uuid

from playwright.sync_api import Page, expect

from portal.api import MerchantApiClient
from tests.support.browser import assert_accessible, sign_in_as
from tests.support.portal_server import PortalServer

QUESTION = "Your time zone"


def listed_operations(portal: PortalServer) -> None:
    """One operation at least, so that the operations list draws its table."""
    api = MerchantApiClient(portal.sandbox.base_url, token=portal.sandbox.token)
    api.create_operation("0.01", "BTC", f"zone-{uuid.uuid4().hex[:8]}")


def new_user(portal: PortalServer) -> str:
    return portal.add_user(f"zone-{uuid.uuid4().hex[:8]}@acme.test", "operator")


def lists_say_and_asked_no_more(page: Page, portal: PortalServer, email: str, zone: str) -> None:
    """The operations list says its times are in `zone`; signing in again asks nothing."""
    listed_operations(portal)
    page.goto("/operations")
    expect(page.get_by_role("table").locator("caption")).to_have_text(f"Times in {zone}")
    sign_out(page)
    sign_in_as(page, email)
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    expect(page.get_by_role("region", name=QUESTION)).to_have_count(0)


def sign_out(page: Page) -> None:
    page.get_by_role("button", name="Sign out", include_hidden=True).dispatch_event("click")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()


def test_the_browsers_zone_is_offered_once_after_sign_in(browser, portal: PortalServer) -> None:
    context = browser.new_context(base_url=portal.url, timezone_id="Europe/Berlin")
    page = context.new_page()
    email = new_user(portal)
    sign_in_as(page, email)
    question = page.get_by_role("region", name=QUESTION)
    expect(question).to_contain_text("Your browser is in Europe/Berlin")
    expect(question.get_by_label("Show times in")).to_have_value("Europe/Berlin")
    assert_accessible(page)
    question.get_by_role("button", name="Use this time zone").click()
    expect(page.get_by_role("status").first).to_contain_text("Times are now shown in Europe/Berlin")
    expect(page.get_by_role("region", name=QUESTION)).to_have_count(0)

    lists_say_and_asked_no_more(page, portal, email, "Europe/Berlin")
    context.close()


def test_not_now_keeps_utc_and_is_not_asked_again(page: Page, portal: PortalServer) -> None:
    email = new_user(portal)
    sign_in_as(page, email)
    page.get_by_role("region", name=QUESTION).get_by_role("button", name="Not now").click()
    expect(page.get_by_role("region", name=QUESTION)).to_have_count(0)
    lists_say_and_asked_no_more(page, portal, email, "UTC")


def test_without_javascript_the_zone_is_chosen_in_the_list(browser, portal: PortalServer) -> None:
    context = browser.new_context(base_url=portal.url, java_script_enabled=False)
    page = context.new_page()
    sign_in_as(page, new_user(portal))
    question = page.get_by_role("region", name=QUESTION)
    expect(question.get_by_label("Show times in")).to_have_value("UTC")
    question.get_by_label("Show times in").select_option("America/Sao_Paulo")
    question.get_by_role("button", name="Use this time zone").click()
    expect(page.get_by_text("Times are now shown in America/Sao_Paulo")).to_be_visible()
    context.close()


def test_someone_who_chose_a_zone_is_not_asked(page: Page, portal: PortalServer) -> None:
    from portal.identity.rules import accounts

    email = new_user(portal)
    with portal.app.app_context():
        accounts.set_time_zone(accounts.find_user(email), "Europe/Berlin")
    sign_in_as(page, email)
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    expect(page.get_by_role("region", name=QUESTION)).to_have_count(0)
