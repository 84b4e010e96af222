"""What each role sees: navigation by role, and a clear page when a role may not go somewhere."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import assert_accessible, signed_in_as


@pytest.mark.parametrize("role", ["operator", "accountant"])
def test_settings_are_for_owners_only(page: Page, role: str) -> None:
    signed_in_as(page, f"{role}@acme.test")
    navigation = page.get_by_role("navigation", name="Main")
    expect(navigation.get_by_role("link", name="Dashboard")).to_be_visible()
    expect(navigation.get_by_role("link", name="Operations")).to_be_visible()
    expect(navigation.get_by_role("link", name="Settings")).to_have_count(0)
    for path in ("/settings/api", "/settings/users"):
        response = page.goto(path)
        assert response.status == 403
        expect(
            page.get_by_role("heading", name="You do not have access to this page")
        ).to_be_visible()
    assert_accessible(page)


def test_unknown_page(page: Page) -> None:
    signed_in_as(page, "accountant@acme.test")
    response = page.goto("/no-such-page")
    assert response.status == 404
    expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
    page.get_by_role("link", name="Go to the dashboard").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    assert_accessible(page)
