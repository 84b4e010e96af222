"""Signing in and out in a real browser, as a person does."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import Page, expect

from portal.identity.models import Role
from portal.web.features import menu_of
from tests.support import walks
from tests.support.browser import assert_accessible, sign_in_as
from tests.support.forms import PASSWORD
from tests.support.portal_server import PortalServer


def test_wrong_password_says_so(page: Page) -> None:
    sign_in_as(page, "owner@acme.test", "not the password")
    expect(page.get_by_role("alert")).to_have_text("The email or password is incorrect.")
    expect(page.get_by_label("Password")).to_have_value("")
    assert_accessible(page)


def test_sign_in_shows_the_dashboard_and_the_sandbox_banner(page: Page) -> None:
    page.goto("/login")
    assert_accessible(page)
    sign_in_as(page, "owner@acme.test")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    expect(page.get_by_role("complementary", name="Environment")).to_contain_text("Sandbox")
    navigation = page.get_by_role("navigation", name="Main")
    expect(navigation.get_by_role("link")).to_have_text(menu_for(Role.OWNER))
    expect(page.get_by_text(re.compile(r"Application token"))).to_be_visible()
    assert_accessible(page)


@pytest.mark.parametrize("role", [Role.OPERATOR, Role.ACCOUNTANT])
def test_each_role_sees_the_menu_of_the_features_it_may_open(page: Page, role: Role) -> None:
    sign_in_as(page, f"{role}@acme.test")
    navigation = page.get_by_role("navigation", name="Main")
    expect(navigation.get_by_role("link")).to_have_text(menu_for(role))


def menu_for(role: Role) -> list[str | re.Pattern[str]]:
    """The labels of the registry's menu entries whose feature serves `role`, in order; the
    needs-attention entry with how many items wait, once the mirror has any."""
    return [
        re.compile(rf"^{re.escape(entry.label)}( \d+)?$") if entry.count else entry.label
        for feature, entry in menu_of(walks.site())
        if role in feature.serves
    ]


def test_sign_out_ends_the_session(page: Page) -> None:
    sign_in_as(page, "operator@acme.test")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("status")).to_have_text("You have signed out.")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login\?next=/$"))


def test_sign_in_returns_to_the_page_asked_for(page: Page) -> None:
    page.goto("/settings/users")
    expect(page.get_by_role("status")).to_have_text("Please sign in to continue.")
    page.get_by_label("Email").fill("owner@acme.test")
    page.get_by_label("Password").fill("correct horse battery staple")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Users", exact=True)).to_be_visible()
    expect(page).to_have_url(re.compile(r"/settings/users$"))


def test_a_foreign_next_is_ignored(page: Page) -> None:
    page.goto("/login?next=//example.com/steal")
    page.get_by_label("Email").fill("owner@acme.test")
    page.get_by_label("Password").fill("correct horse battery staple")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    expect(page).to_have_url(re.compile(r"^http://127\.0\.0\.1:\d+/$"))


def test_change_ones_own_password_on_the_account_page(page: Page, portal: PortalServer) -> None:
    email = portal.add_user(f"password-{uuid.uuid4().hex[:8]}@acme.test", "accountant")
    sign_in_as(page, email)
    page.get_by_role("link", name="Account").click()
    page.get_by_label("Current password").fill("not my password")
    page.get_by_label("New password", exact=True).fill("a new passphrase")
    page.get_by_label("New password again").fill("a new passphrase")
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_text("That is not your current password.")).to_be_visible()
    assert_accessible(page)
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_label("New password", exact=True).fill("a new passphrase")
    page.get_by_label("New password again").fill("a new passphrase")
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_text("Your password is changed")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_text("You have signed out.")).to_be_visible()
    sign_in_as(page, email, "a new passphrase")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
