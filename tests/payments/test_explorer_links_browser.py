"""Hashes and addresses link to the block explorer the operator set for the connection's
environment and currency, and copy with one click; the sandbox environment, or a currency
without a template, shows plain text with the same button."""

from __future__ import annotations

import json
import uuid

import pytest
from playwright.sync_api import Page, expect

from portal.api import MerchantApiClient
from tests.support.browser import assert_accessible, signed_in_as
from tests.support.portal_server import PortalServer

EXPLORERS = {
    "production": {
        "BTC": {
            "tx": "https://explorer.example/btc/tx/{}",
            "address": "https://explorer.example/btc/address/{}",
        }
    }
}


@pytest.fixture(scope="module")
def portal(module_servers) -> PortalServer:
    sandbox = module_servers.sandbox()
    env = {"PORTAL_EXPLORER_URLS": json.dumps(EXPLORERS)}
    return module_servers.served_portal(sandbox, env=env)


def set_environment(portal: PortalServer, name: str) -> None:
    """The connection's environment, as an owner saving it would leave it (the sandbox answers
    under /v1 as the production API does)."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.settings.models import Environment

    with portal.app.app_context():
        accounts.merchant_named("Acme").api_connection.environment = Environment(name)
        db.session.commit()


@pytest.fixture
def paid_operation(portal: PortalServer):
    """A BTC operation with one transaction; its address and the transaction's hash."""
    api = MerchantApiClient(portal.sandbox.base_url, token=portal.sandbox.token)
    operation = api.create_operation("0.02", "BTC", f"explorer-{uuid.uuid4().hex[:8]}")
    tx_hash = uuid.uuid4().hex + uuid.uuid4().hex
    body = {"amount": "0.02", "tx_id": tx_hash, "status": "confirmed"}
    portal.sandbox.control("POST", f"operations/{operation.id}/transactions", body)
    return operation, tx_hash


def test_production_hashes_and_addresses_link_to_the_explorer_and_copy(
    page: Page, portal: PortalServer, paid_operation
) -> None:
    operation, tx_hash = paid_operation
    set_environment(portal, "production")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    signed_in_as(page, "operator@acme.test", f"/operations/{operation.id}")
    address = page.get_by_role("link", name=operation.address, exact=True)
    expect(address).to_have_attribute(
        "href", f"https://explorer.example/btc/address/{operation.address}"
    )
    expect(page.get_by_role("link", name=tx_hash, exact=True)).to_have_attribute(
        "href", f"https://explorer.example/btc/tx/{tx_hash}"
    )
    row = page.get_by_role("row").filter(has_text=tx_hash)
    row.get_by_role("button", name="Copy hash").click()
    expect(row.get_by_role("status")).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == tx_hash
    assert_accessible(page)


def test_the_sandbox_environment_shows_plain_text_with_a_copy_button(
    page: Page, portal: PortalServer, paid_operation
) -> None:
    operation, tx_hash = paid_operation
    set_environment(portal, "sandbox")
    signed_in_as(page, "operator@acme.test", f"/operations/{operation.id}")
    expect(page.get_by_text(tx_hash, exact=True)).to_be_visible()
    expect(page.get_by_role("link", name=tx_hash)).to_have_count(0)
    expect(page.get_by_role("link", name=operation.address)).to_have_count(0)
    expect(page.get_by_role("button", name="Copy address")).to_be_visible()


def test_without_javascript_a_plain_link_and_no_button(
    browser, portal: PortalServer, paid_operation
):
    operation, tx_hash = paid_operation
    set_environment(portal, "production")
    context = browser.new_context(base_url=portal.url, java_script_enabled=False)
    page = context.new_page()
    signed_in_as(page, "operator@acme.test", f"/operations/{operation.id}")
    expect(page.get_by_role("link", name=tx_hash, exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Copy hash")).to_have_count(0)
    context.close()
