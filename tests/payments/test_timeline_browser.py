"""The operation page's timeline in a browser: shown from the mirror, refreshed by the page's
own polling while the operation is open, text from the API shown as text."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from playwright.sync_api import Page, expect

from portal.api import MerchantApiClient
from tests.support.browser import assert_accessible, signed_in_as
from tests.support.mirror import add_event, mirror_operations
from tests.support.portal_server import PortalServer


def test_the_timeline_fills_in_while_the_page_is_open(page: Page, portal: PortalServer) -> None:
    api = MerchantApiClient(portal.sandbox.base_url, token=portal.sandbox.token)
    operation = api.create_operation("0.5", "BTC", f"timeline-{uuid.uuid4().hex[:8]}")
    page.clock.install()
    signed_in_as(page, "accountant@acme.test", f"/operations/{operation.id}")
    timeline = page.get_by_role("region", name="Timeline")
    expect(timeline).to_contain_text("The timeline appears once the portal's copy has synced")
    assert_accessible(page)

    mirror_operations(portal.app, [operation])  # the sync ran meanwhile
    add_event(portal.app, "operation.created", operation, operation_id=operation.id,
              occurred_at=datetime(2024, 5, 1, 12, tzinfo=UTC))  # fmt: skip
    transaction = {"id": "<b>tx-1</b>", "amount": "0.2", "status": "undefined", "linked": False}
    add_event(portal.app, "transaction.received", transaction, operation_id=operation.id,
              occurred_at=datetime(2024, 5, 1, 12, 1, tzinfo=UTC))  # fmt: skip
    with page.expect_response(lambda r: r.request.headers.get("hx-trigger") == "operation-poll"):
        page.clock.run_for("00:06")
    expect(timeline.get_by_role("listitem")).to_have_text(
        [
            "2024-05-01 12:00:00 UTC: Operation created for 0.5 BTC.",
            "2024-05-01 12:01:00 UTC: Transaction <b>tx-1</b> of 0.2 BTC received.",
        ]
    )
    assert_accessible(page)
