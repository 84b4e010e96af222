"""The owner's settings pages: connecting the API (with every refusal) and managing users."""

from __future__ import annotations

import re
import uuid

from playwright.sync_api import Page, expect

from tests.support.browser import assert_accessible, sign_in_as
from tests.support.portal_server import PortalServer
from tests.support.sandbox_server import free_port


def _new_owner(portal: PortalServer) -> str:
    """An owner of a merchant of its own, not connected yet."""
    name = f"Shop {uuid.uuid4().hex[:8]}"
    return portal.add_user(f"owner-{name.split()[1]}@shop.test", "owner", merchant=name)


def _fill_connection(page: Page, base_url: str, token: str) -> None:
    page.get_by_label("Base URL").fill(base_url)
    page.get_by_label("Environment").select_option("Sandbox")
    page.get_by_label("Application token").fill(token)
    page.get_by_role("button", name="Check and save").click()


def test_connect_the_api(page: Page, portal: PortalServer) -> None:
    sign_in_as(page, _new_owner(portal))
    expect(page.get_by_role("complementary", name="Environment")).to_have_count(0)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", name="API settings")).to_be_visible()
    assert_accessible(page)

    _fill_connection(page, f"http://127.0.0.1:{free_port()}", portal.sandbox.token)
    expect(page.get_by_role("alert")).to_contain_text("could not be reached")
    assert_accessible(page)

    _fill_connection(page, portal.sandbox.base_url, "not-the-right-token")
    expect(page.get_by_role("alert")).to_contain_text("rejected the application token")
    expect(page.get_by_role("heading", name="Current connection")).to_have_count(0)

    _fill_connection(page, portal.sandbox.base_url, portal.sandbox.token)
    expect(page.get_by_role("status")).to_have_text(
        "The payment service accepted the credentials. They are saved."
    )
    expect(page.get_by_text("••••" + portal.sandbox.token[-4:]).first).to_be_visible()
    assert portal.sandbox.token not in page.content()
    expect(page.get_by_role("complementary", name="Environment")).to_contain_text("Sandbox")
    assert_accessible(page)


def test_banned_application_and_company(page: Page, portal: PortalServer) -> None:
    sign_in_as(page, _new_owner(portal))
    page.goto("/settings/api")
    try:
        portal.sandbox.control("POST", "flags", {"application_banned": True})
        _fill_connection(page, portal.sandbox.base_url, portal.sandbox.token)
        expect(page.get_by_role("alert")).to_contain_text("application is banned (error 3)")
        portal.sandbox.control("POST", "flags", {"company_banned": True})
        _fill_connection(page, portal.sandbox.base_url, portal.sandbox.token)
        expect(page.get_by_role("alert")).to_contain_text("company is banned (error 4)")
    finally:
        portal.sandbox.reset()
    expect(page.get_by_role("heading", name="Current connection")).to_have_count(0)


def test_manage_users(page: Page, portal: PortalServer) -> None:
    owner = _new_owner(portal)
    colleague = "colleague-" + owner
    sign_in_as(page, owner)
    page.goto("/settings/users")
    assert_accessible(page)

    page.get_by_label("Email").fill(colleague)
    page.get_by_label("Role").select_option("Operator")
    page.get_by_label("Password").fill("a long enough password")
    page.get_by_role("button", name="Add user").click()
    expect(page.get_by_role("status")).to_have_text(f"{colleague} can now sign in as operator.")
    row = page.get_by_role("row").filter(has_text=colleague)
    expect(row.get_by_role("cell").nth(1)).to_have_text("Operator")

    row.get_by_role("link", name=re.compile("^Change")).click()
    expect(page.get_by_role("heading", name=f"Change {colleague}")).to_be_visible()
    assert_accessible(page)
    page.get_by_label("Role").select_option("Accountant")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("status")).to_have_text(f"The changes to {colleague} are saved.")
    expect(row.get_by_role("cell").nth(1)).to_have_text("Accountant")

    row.get_by_role("link", name=re.compile("^Remove")).click()
    expect(page.get_by_role("heading", name=f"Remove {colleague}?")).to_be_visible()
    assert_accessible(page)
    page.get_by_role("button", name="Remove user").click()
    expect(page.get_by_role("status")).to_have_text(
        f"{colleague} was removed and can no longer sign in."
    )
    expect(page.get_by_role("row").filter(has_text=colleague)).to_have_count(0)


def test_an_invalid_user_form_says_what_is_wrong(page: Page, portal: PortalServer) -> None:
    sign_in_as(page, _new_owner(portal))
    page.goto("/settings/users")
    page.get_by_label("Email").fill("not an email")
    page.get_by_label("Password").fill("short")
    page.get_by_role("button", name="Add user").click()
    expect(page.get_by_text("Enter one email address, such as name@example.com.")).to_be_visible()
    expect(page.get_by_text("Use at least 10 characters.")).to_be_visible()
    assert_accessible(page)
