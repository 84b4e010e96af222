"""The mirror against a real sandbox: what it copies, the events it writes once, its lease and
what an upstream failure leaves behind."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from portal.api import MerchantApiClient
from tests.live.conftest import SEED
from tests.reports.test_exports_pages import api_records
from tests.support.forms import signed_in
from tests.support.money import post, text
from tests.support.portal_app import connected_portal, email


@pytest.fixture
def portal(tmp_path, sandbox):
    """The portal connected to an empty sandbox, syncing whenever asked."""
    with connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app:
        yield app


def sync(app):
    from portal.live.rules import mirror

    with app.app_context():
        return mirror.sync_merchant(merchant_id(app))


def merchant_id(app) -> int:
    from portal.identity.rules import accounts

    with app.app_context():
        return accounts.merchant_named("Acme").id


def events_of(app, **where) -> list:
    from portal.live.models import Event

    with app.app_context():
        from portal.extensions import db

        query = sa.select(Event).filter_by(**where).order_by(Event.id)
        return list(db.session.scalars(query))


def test_the_first_sync_copies_every_record_exactly_and_tells_nobody_of_the_past(
    seeded_portal, seeded
):
    from portal.extensions import db
    from portal.payments.models import MirroredOperation, MirroredTransaction

    portal = seeded_portal
    report = sync(portal)
    assert report.error is None and report.kind == "first"
    # The two pages of 100 operations, each counted once by paging's workers, and the vouchers.
    assert report.requests == 3

    operations = api_records(seeded, "operations")
    transactions = api_records(seeded, "transactions")
    assert len(operations) == SEED
    with portal.app_context():
        mirrored = {
            row.operation_id: row for row in db.session.scalars(sa.select(MirroredOperation))
        }
        mirrored_tx = {
            row.transaction_id: row for row in db.session.scalars(sa.select(MirroredTransaction))
        }
    assert {op["id"]: op for op in operations} == {key: row.record for key, row in mirrored.items()}
    assert {tx["id"]: tx for tx in transactions} == {
        key: row.record for key, row in mirrored_tx.items()
    }
    some = operations[0]
    row = mirrored[some["id"]]
    assert row.amount == Decimal(some["amount"]) and isinstance(row.amount, Decimal)
    assert row.status == some["status"] and row.order_id == some["order_id"]

    history = events_of(portal)
    assert len([e for e in history if e.type == "operation.created"]) == SEED
    assert len([e for e in history if e.type == "transaction.received"]) == len(transactions)
    assert not any(event.notify for event in history)
    assert sync(portal).events == 0  # nothing changed: nothing new


def pay(sandbox, operation_id: str, amount: str, status: str) -> None:
    body = {"amount": amount, "tx_id": uuid.uuid4().hex, "status": status}
    sandbox.control("POST", f"operations/{operation_id}/transactions", body)


def test_a_payment_is_written_once_as_the_events_a_shop_needs(portal, sandbox):
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    sync(portal)
    operation = api.create_operation("0.5", "BTC", f"order-{uuid.uuid4().hex[:8]}")
    sync(portal)
    (created,) = events_of(portal, operation_id=operation.id)
    assert (created.type, created.notify) == ("operation.created", True)

    pay(sandbox, operation.id, "0.2", "undefined")  # nobody decided on this one yet
    pay(sandbox, operation.id, "0.3", "confirmed")
    report = sync(portal)
    assert report.requests == 3  # one page of each list (and of vouchers) reaches back far enough
    written = events_of(portal, operation_id=operation.id)[1:]
    assert [event.type for event in written] == [
        "transaction.received",
        "transaction.needs_review",
        "transaction.received",
        "operation.partly_paid",
    ]
    assert all(event.notify for event in written)
    received, needs_review, _, partly_paid = written
    assert received.transaction_id == needs_review.transaction_id
    assert Decimal(needs_review.data["amount"]) == Decimal("0.2")
    assert needs_review.data["operation_id"] == operation.id
    assert partly_paid.data["id"] == operation.id
    assert Decimal(partly_paid.data["amount_paid"]) == Decimal("0.3")
    assert len(partly_paid.data["transactions"]) == 2
    assert sync(portal).events == 0  # the overlap reads it all again: nothing new

    pay(sandbox, operation.id, "0.2", "confirmed")  # the rest: the service confirms
    sync(portal)
    later = events_of(portal, operation_id=operation.id)[1 + len(written) :]
    assert [event.type for event in later] == ["transaction.received", "operation.confirmed"]
    assert later[1].data["status"] == "confirmed"
    assert later[1].data["portal"]["state"] == "paid"
    assert sync(portal).events == 0


def test_late_money_on_an_expired_operation_is_a_received_transaction(portal, sandbox):
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    operation = api.create_operation("0.5", "BTC", f"order-{uuid.uuid4().hex[:8]}")
    sync(portal)
    sandbox.control("POST", f"operations/{operation.id}/expire")
    pay(sandbox, operation.id, "0.5", "undefined")
    sync(portal)
    types = [event.type for event in events_of(portal, operation_id=operation.id)]
    assert types.index("operation.expired") < types.index("operation.paid_late")
    assert "transaction.received" in types


def test_an_upstream_failure_is_noted_and_the_next_sync_recovers(portal, sandbox):
    from portal.extensions import db
    from portal.live.models import MirrorState

    sync(portal)
    with portal.app_context():
        before = db.session.get(MirrorState, merchant_id(portal)).operations_watermark
    sandbox.control("POST", "faults", {"mode": "error500", "probability": 1.0})
    try:
        failed = sync(portal)
    finally:
        sandbox.control("POST", "faults", {"mode": "none"})
    assert failed.error
    assert sandbox.token not in failed.error
    with portal.app_context():
        state = db.session.get(MirrorState, merchant_id(portal))
        assert state.last_error == failed.error
        assert state.operations_watermark == before
        assert state.lease_owner is None  # released for the next tick
    recovered = sync(portal)
    assert recovered.error is None
    with portal.app_context():
        assert db.session.get(MirrorState, merchant_id(portal)).last_error is None


def test_the_resync_command_notifies_what_the_increments_missed(portal, sandbox):
    from portal.extensions import db
    from portal.live.models import MirrorState

    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    operation = api.create_operation("0.5", "BTC", f"order-{uuid.uuid4().hex[:8]}")
    sync(portal)
    # A change committed so late that the increments' overlap no longer reaches it: the
    # mirror's watermark already stands minutes after the change's `updated_at`.
    with portal.app_context():
        state = db.session.get(MirrorState, merchant_id(portal))
        state.operations_watermark += timedelta(minutes=5)
        db.session.commit()
    changed_at = (operation.updated_at + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    with contextlib.closing(sqlite3.connect(sandbox.database)) as connection:
        connection.execute(
            "UPDATE operations SET status = 4, updated_at = ? WHERE id = ?",
            (changed_at, operation.id),
        )
        connection.commit()
    assert sync(portal).events == 0

    result = portal.test_cli_runner().invoke(args=["resync", "--merchant", "Acme"])
    assert result.exit_code == 0, result.output
    assert "1 operation(s)" in result.output
    canceled = events_of(portal, operation_id=operation.id, type="operation.canceled")
    assert [(event.notify, event.data["status"]) for event in canceled] == [(True, "canceled")]


def test_one_of_two_syncs_at_once_runs_and_an_expired_lease_is_taken_over(
    tmp_path, seeded, postgres_url
):
    from portal.extensions import db
    from portal.live.models import MirrorState
    from portal.live.rules import mirror

    with connected_portal(tmp_path, seeded, DATABASE_URL=postgres_url, SYNC_SECONDS=0) as app:
        merchant = merchant_id(app)
        results = []
        start = threading.Barrier(4)

        def one() -> None:
            with app.app_context():
                start.wait()
                results.append(mirror.sync_merchant(merchant))

        threads = [threading.Thread(target=one) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        ran = [report for report in results if report is not None]
        assert len(ran) == 1 and ran[0].kind == "first", results
        assert len(events_of(app, type="operation.created")) == SEED

        with app.app_context():  # a worker that died holding the lease
            state = db.session.get(MirrorState, merchant)
            state.lease_owner, state.lease_until = (
                "dead-worker",
                mirror.utcnow() + timedelta(minutes=1),
            )
            db.session.commit()
        assert sync(app) is None
        with app.app_context():
            state = db.session.get(MirrorState, merchant)
            state.lease_until = mirror.utcnow() - timedelta(seconds=1)
            db.session.commit()
        assert sync(app) is not None


def test_owners_see_the_mirror_and_ask_for_a_full_resync_with_the_button(portal, sandbox):
    from portal.extensions import db
    from portal.live.models import MirrorState

    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    api.create_operation("0.5", "BTC", "order-1")
    owner = signed_in(portal, email("owner"))
    assert "Last sync Not yet" in text(owner.get("/settings/api"))
    sync(portal)
    page = text(owner.get("/settings/api"))
    assert "Mirror of the payment service" in page
    assert "Operations mirrored 1" in page
    assert "Last error None" in page
    assert "Sync now (full resync)" in page

    assert owner.post("/settings/api/resync").status_code == 400  # no CSRF token: refused
    with portal.app_context():
        assert db.session.get(MirrorState, merchant_id(portal)).full_sync_requested_at is None

    answer = post(owner, "/settings/api/resync")
    assert answer.status_code == 302 and answer.location == "/settings/api"
    page = text(owner.get("/settings/api"))
    assert "A full resync is requested" in page
    assert "A full resync is waiting for the worker." in page
    assert sync(portal).kind == "full"
    assert "A full resync is waiting" not in text(owner.get("/settings/api"))

    for role in ("operator", "accountant"):
        assert post(signed_in(portal, email(role)), "/settings/api/resync").status_code == 403


def test_the_last_error_is_shown_to_owners_without_the_token(portal, sandbox):
    sandbox.control("POST", "faults", {"mode": "malformed", "probability": 1.0})
    try:
        assert sync(portal).error
    finally:
        sandbox.control("POST", "faults", {"mode": "none"})
    page = text(signed_in(portal, email("owner")).get("/settings/api"))
    assert "Last error ApiUnavailable" in page
    assert sandbox.token not in page


def test_each_change_of_status_and_each_new_amount_paid_is_an_event(portal, sandbox):
    """A change's dedup key names what it changed to: a status that goes back, an amount paid
    that grows again, are new changes, each written (and sent) once."""
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    paid_twice = api.create_operation("1", "BTC", "order-paid-twice")
    back_and_forth = api.create_operation("1", "BTC", "order-back-and-forth")
    sync(portal)
    for _ in range(2):
        pay(sandbox, paid_twice.id, "0.3", "confirmed")
        sync(portal)
    arrived = sandbox.control(
        "POST", f"operations/{back_and_forth.id}/transactions", {"amount": "0.2"}
    ).json()["data"]["id"]
    api.link_transactions(back_and_forth.id, [arrived])  # confirmed
    sync(portal)
    api.reject_transactions(back_and_forth.id, [arrived], "not this order's")  # new again
    sync(portal)

    partly = events_of(portal, operation_id=paid_twice.id, type="operation.partly_paid")
    paid = [Decimal(event.data["amount_paid"]) for event in partly]
    assert paid == [Decimal("0.3"), Decimal("0.6")]
    statuses = [
        (event.type, event.data["status"])
        for event in events_of(portal, operation_id=back_and_forth.id)
        if event.type.startswith("operation.") and event.type != "operation.created"
    ]
    assert statuses == [
        ("operation.underpaid", "confirmed"),  # a link below the due
        ("operation.confirmed", "confirmed"),
        ("operation.status_changed", "new"),
    ]
