"""A forgotten password, reset in a real browser from the link a real SMTP server received."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from flask import Flask
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import assert_accessible, sign_in_as
from tests.support.portal_app import connected_portal
from tests.support.portal_server import serve_in_thread
from tests.support.smtp import MailServer, link_in

NEW_PASSWORD = "my own new passphrase"


@pytest.fixture
def mail_portal(tmp_path, browser_sandbox, mail_server) -> Iterator[tuple[Flask, str]]:
    """A portal with e-mail on, served from this process."""
    config = {"SMTP_URL": mail_server.url, "PUBLIC_URL": "http://portal.test"}
    with connected_portal(tmp_path, browser_sandbox, **config) as app, serve_in_thread(app) as url:
        yield app, url


@pytest.fixture
def mail_page(browser: Browser, mail_portal) -> Iterator[Page]:
    context = browser.new_context(base_url=mail_portal[1])
    yield context.new_page()
    context.close()


def test_a_forgotten_password_is_reset_from_the_mailed_link(
    mail_page: Page, mail_portal, mail_server: MailServer
) -> None:
    page, (app, _url) = mail_page, mail_portal
    page.goto("/login")
    page.get_by_role("link", name="Forgot password?").click()
    assert_accessible(page)
    page.get_by_label("Email").fill("operator@acme.test")
    page.get_by_role("button", name="Send me a link").click()
    expect(page.get_by_role("status")).to_contain_text("If an account exists for that address")

    from portal.live.rules import mail

    with app.app_context():
        mail.send_due()  # the worker's tick
    page.goto(urlsplit(link_in(mail_server.wait_for(1)[0])).path)
    expect(page.get_by_text("Choose a new password for operator@acme.test")).to_be_visible()
    assert_accessible(page)
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New password again").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Set password").click()
    expect(page.get_by_role("status")).to_contain_text("Your password is set")

    sign_in_as(page, "operator@acme.test", NEW_PASSWORD)
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
