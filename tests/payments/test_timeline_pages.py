"""The operation page's timeline: the operation's events from the mirror, in order, in words with
their amounts, in the reader's time zone; never another merchant's; refreshed by the page's
polling; a plain sentence before the mirror has anything."""

from __future__ import annotations

import dataclasses
import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from portal.api import MerchantApiClient
from tests.support.forms import signed_in
from tests.support.htmx import HTMX
from tests.support.mirror import add_event, mirror_operations
from tests.support.portal_app import connected_portal, email

HOSTILE = '<img src=x onerror="alert(1)">'


@pytest.fixture
def app(tmp_path, sandbox):
    with connected_portal(tmp_path, sandbox, WTF_CSRF_ENABLED=False) as application:
        yield application


@pytest.fixture
def api(sandbox) -> MerchantApiClient:
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


def timeline(page: str) -> list[str]:
    """The timeline's lines as a person reads them (tags dropped, entities kept)."""
    section = re.search(r'aria-labelledby="timeline-title".*?</section>', page, re.S).group(0)
    items = re.findall(r"<li[^>]*>(.*?)</li>", section, re.S)
    return [re.sub(r"<[^>]+>", "", item).strip() for item in items]


def pay(sandbox, operation_id: str, amount: str) -> None:
    body = {"amount": amount, "tx_id": uuid.uuid4().hex, "status": "confirmed"}
    sandbox.control("POST", f"operations/{operation_id}/transactions", body)


def test_events_in_order_with_words_and_amounts(app, api, sandbox):
    created = api.create_operation("0.5", "BTC", "order-1")
    pay(sandbox, created.id, "0.2")
    paid = api.get_operation(created.id)
    transaction = paid.transactions[0]
    rejected = dataclasses.replace(transaction, status="rejected", reject_reason=HOSTILE)
    start = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    mirror_operations(app, [paid])
    # Written out of order: the timeline orders by when each happened.
    add_event(
        app,
        "operation.partly_paid",
        paid,
        operation_id=paid.id,
        occurred_at=start + timedelta(minutes=2),
    )
    add_event(app, "operation.created", created, operation_id=paid.id, occurred_at=start)
    add_event(
        app,
        "transaction.received",
        transaction,
        operation_id=paid.id,
        occurred_at=start + timedelta(minutes=1),
    )
    add_event(
        app,
        "transaction.rejected",
        rejected,
        operation_id=paid.id,
        occurred_at=start + timedelta(minutes=3),
    )
    add_event(
        app,
        "operation.expired",
        paid,
        operation_id=paid.id,
        occurred_at=start + timedelta(minutes=4),
    )
    add_event(  # another merchant's event under the same operation id: never shown here
        app, "operation.confirmed", paid, operation_id=paid.id, occurred_at=start, merchant="Other"
    )

    page = signed_in(app, email("accountant")).get(f"/operations/{paid.id}").text
    assert timeline(page) == [
        "2024-05-01 12:00:00 UTC: Operation created for 0.5 BTC.",
        f"2024-05-01 12:01:00 UTC: Transaction {transaction.id} of 0.2 BTC received.",
        "2024-05-01 12:02:00 UTC: Partly paid: 0.2 BTC of 0.5 BTC due.",
        f"2024-05-01 12:03:00 UTC: Transaction {transaction.id} of 0.2 BTC rejected: "
        "“&lt;img src=x onerror=&#34;alert(1)&#34;&gt;”.",
        "2024-05-01 12:04:00 UTC: Expired, after 0.2 BTC had arrived.",
    ]
    assert HOSTILE not in page
    assert "Confirmed" not in " ".join(timeline(page))


def test_times_are_in_the_readers_zone(app, api):
    created = api.create_operation("10", "USDT", "order-2")
    mirror_operations(app, [created])
    add_event(app, "operation.created", created, operation_id=created.id,
              occurred_at=datetime(2024, 1, 10, 23, 30, tzinfo=UTC))  # fmt: skip
    client = signed_in(app, email("operator"))
    with app.app_context():
        from portal.extensions import db
        from portal.identity.models import User

        db.session.execute(
            db.update(User).where(User.email == email("operator")).values(time_zone="Europe/Berlin")
        )
        db.session.commit()
    lines = timeline(client.get(f"/operations/{created.id}").text)
    assert lines == ["2024-01-11 00:30:00 CET: Operation created for 10 USDT."]


def test_before_the_mirror_has_the_operation_the_page_says_when_it_will(app, api):
    created = api.create_operation("0.5", "BTC", "order-3")
    page = signed_in(app, email("owner")).get(f"/operations/{created.id}").text
    assert "The timeline appears once the portal's copy has synced (every 10 seconds)." in page


def test_the_pages_polling_brings_new_events(app, api):
    created = api.create_operation("0.5", "BTC", "order-4")
    client = signed_in(app, email("owner"))
    poll = {**HTMX, "HX-Trigger": "operation-poll"}
    first = client.get(f"/operations/{created.id}", headers=poll).text
    assert "The timeline appears once" in first and 'id="operation-poll"' in first
    mirror_operations(app, [created])
    add_event(
        app, "operation.created", created, operation_id=created.id, occurred_at=created.created_at
    )
    again = client.get(f"/operations/{created.id}", headers=poll).text
    assert timeline(again) == [
        f"{created.created_at:%Y-%m-%d %H:%M:%S} UTC: Operation created for 0.5 BTC."
    ]


def test_the_page_keeps_polling_until_the_mirror_has_caught_up(app, api, sandbox):
    """Confirmed on the API, still `new` in the mirror: the confirmation's event is still to
    come, so the page asks again; once the mirror has it, the polling stops."""
    created = api.create_operation("0.1", "BTC", "order-5")
    mirror_operations(app, [created])
    add_event(
        app, "operation.created", created, operation_id=created.id, occurred_at=created.created_at
    )
    pay(sandbox, created.id, "0.1")  # in full: the sandbox confirms it
    confirmed = api.get_operation(created.id)
    assert confirmed.status == "confirmed" and confirmed.updated_at > created.updated_at
    client = signed_in(app, email("owner"))
    assert 'id="operation-poll"' in client.get(f"/operations/{created.id}").text
    with app.app_context():
        from portal.extensions import db
        from portal.payments.models import MirroredOperation

        db.session.execute(
            db.update(MirroredOperation).values(status="confirmed", updated_at=confirmed.updated_at)
        )
        db.session.commit()
    assert 'id="operation-poll"' not in client.get(f"/operations/{created.id}").text
