"""The pages while the payment service does not answer: the operations, transactions and rates
read from the mirror with a banner naming its last sync, no actions, and changes refused with
503 before anything reaches the API; the API asked again once the moment has passed."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import expect

from portal.api import MerchantApiClient
from tests.support import polling
from tests.support.browser import sign_in_as
from tests.support.forms import signed_in
from tests.support.mirror import sync_now
from tests.support.money import post
from tests.support.portal_app import email

BANNER = "#read-only-banner"


@pytest.fixture(scope="module")
def sandbox(module_servers):
    return module_servers.sandbox()


@pytest.fixture(scope="module")
def served(module_servers, sandbox):
    return module_servers.served_portal(sandbox)


@pytest.fixture
def page(browser, served):
    """A browser context on this module's portal (whose API the tests take down)."""
    context = browser.new_context(base_url=served.url)
    yield context.new_page()
    context.close()


def paid_operation(sandbox) -> tuple[str, str]:
    """A new operation with a transaction awaiting a decision: (operation id, transaction id)."""
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    made = api.create_operation("0.5", "BTC", f"down-{uuid.uuid4().hex[:8]}")
    return made.id, sandbox.receive(made.id, "0.1", "undefined")


def api_requests(sandbox) -> list[dict]:
    return sandbox.control("GET", "requests").json()["data"]


def test_pages_read_the_mirror_while_the_api_answers_500(page, served, sandbox):
    operation_id, transaction_id = paid_operation(sandbox)
    sync_now(served.app)
    sign_in_as(page, email("owner"))
    sandbox.control("POST", "faults", {"mode": "error500", "methods": ["GET"]})
    try:
        for path, shown in (
            ("/operations", operation_id),
            (f"/operations/{operation_id}", transaction_id),
            ("/transactions", transaction_id),
            (f"/transactions/{transaction_id}", operation_id),
            ("/rates", "BTC"),
        ):
            answer = page.goto(path)
            assert answer is not None and answer.status == 200, path
            expect(page.locator(BANNER)).to_contain_text("last sync")
            expect(page.get_by_role("main")).to_contain_text(shown)
        expect(page.locator("#rates table tbody tr").first).to_be_visible()

        page.goto(f"/operations/{operation_id}")
        expect(page.get_by_role("button", name="Cancel operation")).to_have_count(0)
        expect(page.get_by_role("button", name="Link selected")).to_have_count(0)
        page.goto("/operations?amount_from=1")
        expect(page.get_by_role("main")).to_contain_text("cannot filter or sort by Amount from")
        for path in ("/", "/attention"):
            page.goto(path)
            expect(page.locator(BANNER)).to_be_visible()
    finally:
        sandbox.control("POST", "faults", {"mode": "none"})

    # The API answers again, but the portal remembers it did not a moment ago: a change is
    # refused before anything is sent, not even a read of the operation.
    sandbox.control("DELETE", "requests")
    token = page.locator("input[name=csrf_token]").first.get_attribute("value")
    answer = page.request.post(
        f"/operations/{operation_id}/cancel", form={"csrf_token": token or "", "confirm": "1"}
    )
    assert answer.status == 503
    assert "Nothing was sent" in answer.text()
    assert api_requests(sandbox) == []


@pytest.mark.slow  # waits out a (short) read-only moment
def test_the_api_is_asked_again_once_the_moment_has_passed(module_servers, sandbox):
    app = module_servers.portal(sandbox, API_DOWN_SECONDS=2)
    owner = signed_in(app, email("owner"))
    sandbox.control("POST", "faults", {"mode": "error500", "methods": ["GET"]})
    try:
        assert "read-only-banner" in owner.get("/operations").get_data(as_text=True)
    finally:
        sandbox.control("POST", "faults", {"mode": "none"})
    sandbox.control("DELETE", "requests")
    remembered = owner.get("/operations")
    assert remembered.status_code == 200
    assert "read-only-banner" in remembered.get_data(as_text=True)
    assert api_requests(sandbox) == []
    refused = post(owner, f"/operations/{paid_operation(sandbox)[0]}/cancel", {"confirm": "1"})
    assert refused.status_code == 503

    def asked_again() -> bool:
        return "read-only-banner" not in owner.get("/operations").get_data(as_text=True)

    polling.wait_for(asked_again, timeout=30)
    assert {"method": "GET", "path": "/sandbox/v1/operations"} in api_requests(sandbox)
