"""A merchant's first sync writes each record once: an operation's money is read from the page
before its row is inserted, and the events of records new to the mirror are written without
looking for them first. What it writes is what reading the mirror again gives."""

from __future__ import annotations

import threading
import uuid

import pytest
import sqlalchemy as sa

from portal.api import MerchantApiClient
from tests.live.conftest import SEED
from tests.live.test_mirror import events_of, merchant_id, sync
from tests.support.portal_app import connected_portal
from tests.support.statements import recorded_statements

MONEY_COLUMNS = ("state", "difference", "late_transactions", "late_since", "ended_status")


@pytest.fixture(params=["sqlite", "postgresql"])
def portal(request, tmp_path, seeded):
    """The portal connected to the seeded sandbox, on each database."""
    config = {}
    if request.param == "postgresql":
        config["DATABASE_URL"] = request.getfixturevalue("postgres_url")
    with connected_portal(tmp_path, seeded, SYNC_SECONDS=0, **config) as app:
        yield app


def statements_of_sync(app) -> list[str]:
    """The SQL statements a sync of the merchant runs."""
    with recorded_statements(app) as statements:
        assert sync(app).error is None
    return [" ".join(statement.split()) for statement in statements]


def test_a_first_sync_neither_reads_back_nor_rewrites_the_operations_it_inserts(portal):
    statements = statements_of_sync(portal)

    assert not [s for s in statements if s.startswith("UPDATE mirrored_operations")]
    # Each page looks its operations up by id (none mirrored yet), and reads no row again.
    reads = [s for s in statements if s.startswith("SELECT mirrored_operations.id")]
    assert len(reads) == 2, reads  # the two pages of 100 operations
    assert not [s for s in statements if s.startswith("SELECT") and "FROM events" in s]
    assert len(events_of(portal)) > 2 * SEED


def test_a_first_sync_retried_after_an_interruption_notifies_what_changed_since(
    portal, seeded, monkeypatch
):
    """A first sync stopped after its first page leaves no watermark, so the next one is a first
    sync again. An operation the first page mirrored and that was paid meanwhile is news to
    tell; the operations the retry reads for the first time are still history."""
    from portal import shutdown
    from portal.extensions import db
    from portal.live.rules import mirror
    from portal.payments.models import MirroredOperation

    api = MerchantApiClient(seeded.base_url, token=seeded.token)
    waiting = api.create_operation("0.5", "BTC", f"order-{uuid.uuid4().hex[:8]}")  # on page 1
    stopping = threading.Event()
    monkeypatch.setattr(shutdown, "_requested", stopping)
    stopping.set()  # the worker shuts down: the sync stops after the page under way
    assert sync(portal) is None
    stopping.clear()
    with portal.app_context():
        first_page = set(db.session.scalars(sa.select(MirroredOperation.operation_id)))
    assert len(first_page) == mirror.PER_PAGE and waiting.id in first_page
    seeded.receive(waiting.id, "0.5")

    report = sync(portal)
    assert report.kind == "first" and report.error is None
    notified = [(event.type, event.operation_id) for event in events_of(portal) if event.notify]
    assert sorted(notified) == [
        ("operation.confirmed", waiting.id),
        ("transaction.received", waiting.id),
    ]
    history = [event for event in events_of(portal) if event.operation_id not in first_page]
    created = [event for event in history if event.type == "operation.created"]
    assert len(created) == SEED + 1 - mirror.PER_PAGE
    assert not any(event.notify for event in history)


def money_of(app) -> dict:
    """Each mirrored operation's money columns, and the ledger's movements with their values."""
    from portal.extensions import db
    from portal.money.models import LedgerEntry
    from portal.payments.models import MirroredOperation

    with app.app_context():
        operations = {
            row.operation_id: tuple(getattr(row, name) for name in MONEY_COLUMNS)
            for row in db.session.scalars(sa.select(MirroredOperation))
        }
        ledger = {
            entry.key: (entry.amount, entry.occurred_at, entry.value, entry.rate)
            for entry in db.session.scalars(sa.select(LedgerEntry))
        }
    return {"operations": operations, "ledger": ledger}


def test_a_first_sync_states_each_operations_money_as_reading_the_mirror_again_does(portal):
    from portal.extensions import db
    from portal.identity.models import Merchant
    from portal.live.rules import mirror
    from portal.payments.rules import mirror_money

    assert sync(portal).kind == "first"
    first = money_of(portal)
    states = {state for state, *_ in first["operations"].values()}
    assert len(first["operations"]) == SEED and len(states) >= 3, states
    assert first["ledger"]

    # A full resync reads every operation's money again from the mirror's rows: it finds
    # nothing to change, to tell or to book.
    with portal.app_context():
        assert mirror.request_full_resync(merchant_id(portal))
    report = sync(portal)
    assert report.kind == "full" and report.events == 0
    assert money_of(portal) == first
    with portal.app_context():
        merchant = db.session.get_one(Merchant, merchant_id(portal))
        assert mirror_money.restate(merchant) == 0
        db.session.rollback()


def test_the_search_index_holds_the_rows_each_sync_writes_and_none_a_new_connection_deletes(
    tmp_path, seeded, sandbox, monkeypatch
):
    """The mirror puts the rows it inserts in SQLite's search tables itself, a statement per
    page (migration 0037); a new connection deletes its rows from them by trigger."""
    from portal.extensions import db
    from portal.payments.models import MirroredTransaction
    from portal.payments.rules import search
    from tests.live.test_mirror_connections import switch_to
    from tests.support.mirror_rows import search_index_checked

    monkeypatch.setattr(search, "SCAN_AT_MOST", 0)  # every search asks the index
    with connected_portal(tmp_path, seeded, SYNC_SECONDS=0) as app:
        assert sync(app).error is None
        search_index_checked(app)
        with app.app_context():
            paid = db.session.scalars(
                sa.select(MirroredTransaction).where(MirroredTransaction.tx_id.is_not(None))
            ).first()
            assert paid is not None
            found = search.search_mirror(merchant_id(app), paid.tx_id[3:15].upper())
            assert [t.transaction_id for t in found.transactions] == [paid.transaction_id]
            found = search.search_mirror(merchant_id(app), paid.operation_id)
            assert paid.operation_id in [o.operation_id for o in found.operations]

        switch_to(app, sandbox)  # the mirror of the seeded account is deleted
        search_index_checked(app)
        assert sync(app).error is None
        search_index_checked(app)
        with app.app_context():
            assert search.search_mirror(merchant_id(app), paid.tx_id[3:15]).transactions == []


def test_a_first_sync_on_postgresql_makes_the_statistics_of_the_tables_it_fills(
    tmp_path, seeded, fresh_postgres_url
):
    """Each page looks its operations, transactions and ledger movements up by id. PostgreSQL
    plans those lookups from its statistics, which in a new schema (or for a merchant new to a
    large one) say the merchant has no rows: it would read every row of the merchant for each
    page's lookup. A first sync makes them again as its pages double (after pages 1 and 2 here)."""
    from portal.extensions import db

    with connected_portal(tmp_path, seeded, DATABASE_URL=fresh_postgres_url, SYNC_SECONDS=0) as app:
        assert sync(app).error is None
        with app.app_context():
            tables = ("mirrored_operations", "mirrored_transactions", "ledger_entries")
            estimate = sa.text("SELECT reltuples FROM pg_class WHERE oid = CAST(:t AS regclass)")
            counted = {
                t: db.session.scalar(sa.select(sa.func.count()).select_from(sa.table(t)))
                for t in tables
            }
            estimated = {t: db.session.scalar(estimate, {"t": t}) for t in tables}
    assert counted["mirrored_operations"] == SEED
    assert estimated["mirrored_operations"] == SEED
    assert estimated["mirrored_transactions"] == counted["mirrored_transactions"] > 0
    # The vouchers' movements are booked after the operations' pages.
    assert 0 < estimated["ledger_entries"] <= counted["ledger_entries"]
