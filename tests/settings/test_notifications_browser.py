"""/settings/notifications in a real browser: an owner points webhooks at a shop, reveals the
secret with their password, queues a test event and sees the log fill in by itself once the
worker sent it, sends it again and rotates the secret."""

from __future__ import annotations

import re
import uuid

from playwright.sync_api import Page, expect

from tests.support.browser import assert_accessible, sign_in_as
from tests.support.forms import PASSWORD
from tests.support.portal_server import PortalServer
from tests.support.shop import run_shop


def deliver(portal: PortalServer) -> None:
    """What the worker's next delivery task does (this portal runs no worker)."""
    from portal.live.rules import webhooks

    with portal.app.app_context():
        webhooks.deliver_due()


def test_an_owner_sets_up_webhooks_and_sends_a_test_event(page: Page, portal: PortalServer) -> None:
    name = uuid.uuid4().hex[:8]
    sign_in_as(page, portal.add_user(f"owner-{name}@shop.test", "owner", merchant=f"Shop {name}"))
    page.goto("/settings/api")
    page.get_by_role("navigation", name="Settings").get_by_role(
        "link", name="Notifications"
    ).click()
    expect(page.get_by_role("heading", name="Notifications", exact=True)).to_be_visible()
    with run_shop() as shop:
        page.get_by_label("Webhook URL").fill("not an address")
        page.get_by_role("button", name="Save webhook settings").click()
        expect(
            page.get_by_text("Enter an address starting with http:// or https://")
        ).to_be_visible()
        assert_accessible(page)

        page.get_by_label("Webhook URL").fill(shop.url)
        page.get_by_label("operation.expired").check()
        page.get_by_role("button", name="Save webhook settings").click()
        expect(page.get_by_role("status")).to_have_text("The webhook settings are saved.")
        expect(page.get_by_label("operation.expired")).to_be_checked()
        masked = page.get_by_label("Hidden secret").inner_text()
        page.get_by_role("link", name="Reveal secret").click()
        page.get_by_label("Your password").fill(PASSWORD)
        page.get_by_role("button", name="Reveal secret").click()
        secret = page.get_by_role("textbox", name="Signing secret").input_value()
        assert secret.startswith("whsec_") and masked == f"whsec_••••{secret[-4:]}"

        page.goto("/settings/notifications")
        page.get_by_role("button", name="Send test event").click()
        expect(page.get_by_text("Waiting for the worker")).to_be_visible()
        deliver(portal)
        (received,) = shop.wait_for(1)
        assert received.signed_by(secret)
        row = page.get_by_role("row").filter(has_text=received.event_id)
        expect(row).to_contain_text("200")  # the log asked for itself
        expect(row).to_contain_text(re.compile(r"\d+ ms"))
        assert_accessible(page)

        row.get_by_role("button", name=re.compile("^Resend")).click()
        expect(page.get_by_text("Waiting for the worker")).to_be_visible()
        deliver(portal)
        expect(page.get_by_role("row").filter(has_text=received.event_id)).to_have_count(2)
        assert shop.event_ids() == [received.event_id] * 2

    page.get_by_role("link", name="Rotate secret").click()
    expect(page.get_by_text("keeps signing beside it for 24 hours")).to_be_visible()
    page.get_by_role("button", name="Rotate secret").click()
    expect(page.get_by_role("status")).to_contain_text("The previous one signs too")
    expect(page.get_by_label("Hidden secret")).not_to_have_text(masked)
