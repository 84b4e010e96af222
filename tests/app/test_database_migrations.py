"""The migrations on SQLite and PostgreSQL, and the portal's sign-in on PostgreSQL.

PostgreSQL runs when PORTAL_TEST_DATABASE_URL is set (each test in a schema of its own).
"""

from __future__ import annotations

import flask_migrate
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from tests.support.forms import sign_in

TABLES = {"alembic_version", "merchants", "users", "user_sessions", "api_connections"}


@pytest.fixture(params=["sqlite", "postgresql"])
def portal_config(request, portal_config):
    if request.param == "postgresql":
        portal_config["DATABASE_URL"] = request.getfixturevalue("fresh_postgres_url")
    return portal_config


def test_migrations_make_the_models_schema_and_undo_it(app):
    from portal.extensions import db
    from portal.payments.models import is_modelled

    with app.app_context():
        assert set(sa.inspect(db.engine).get_table_names()) >= TABLES
        with db.engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"include_name": is_modelled})
            differences = compare_metadata(context, db.metadata)
        assert differences == [], "the models and the migrations disagree"
        flask_migrate.downgrade(revision="base")
        assert set(sa.inspect(db.engine).get_table_names()) <= {"alembic_version"}
        flask_migrate.upgrade()
        assert set(sa.inspect(db.engine).get_table_names()) >= TABLES


def test_sign_in_and_out(client, accounts):
    assert sign_in(client, accounts.owner, "wrong password").status_code == 401
    assert sign_in(client, accounts.owner).status_code == 302
    assert client.get("/settings/users").status_code == 200
    page = client.get("/").get_data(as_text=True)
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    client.post("/logout", data={"csrf_token": token})
    assert client.get("/").status_code == 302


def test_removing_a_merchant_removes_its_users(app, accounts):
    from portal.extensions import db
    from portal.identity.models import User
    from portal.identity.rules.accounts import merchant_named

    with app.app_context():
        db.session.delete(merchant_named("Other"))
        db.session.commit()
        assert db.session.scalar(sa.select(sa.func.count()).select_from(User)) == 3


def test_0016_keys_each_event_by_its_connection_and_gives_the_keys_back(app, accounts):
    """Events written before 0016 belong to their merchant's connection of the day (generation
    1; 0 for a merchant with none): their keys gain that prefix, and a downgrade takes it off
    again, a test event's `test:` key included."""
    from portal.extensions import db

    def keys() -> dict[str, str]:
        rows = db.session.execute(sa.text("SELECT public_id, dedup_key FROM events")).all()
        db.session.rollback()  # no transaction left open for the migrations to wait on
        return {public_id: key for public_id, key in rows}

    with app.app_context():
        flask_migrate.downgrade(revision="0015")
        acme, other = (
            db.session.scalar(sa.text("SELECT id FROM merchants WHERE name = :n"), {"n": name})
            for name in ("Acme", "Other")
        )
        db.session.execute(
            sa.text(
                "INSERT INTO api_connections (merchant_id, base_url, environment, "
                "token_encrypted, updated_at) VALUES (:m, 'http://api.test', 'sandbox', 'x', "
                "CURRENT_TIMESTAMP)"
            ),
            {"m": acme},
        )
        for public_id, merchant, key in (
            ("evt_a", acme, "operation:1:status:confirmed"),
            ("evt_t", acme, "test:evt_t"),
            ("evt_o", other, "operation:1:status:confirmed"),
        ):
            db.session.execute(
                sa.text(
                    "INSERT INTO events (public_id, merchant_id, type, dedup_key, data, notify, "
                    "occurred_at, created_at) VALUES (:p, :m, 'operation.confirmed', :k, '{}', "
                    "true, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                ),
                {"p": public_id, "m": merchant, "k": key},
            )
        db.session.commit()
        before = keys()

        flask_migrate.upgrade(revision="0016")
        assert keys() == {
            "evt_a": "1:operation:1:status:confirmed",
            "evt_t": "1:test:evt_t",
            "evt_o": "0:operation:1:status:confirmed",
        }
        rows = db.session.execute(sa.text("SELECT public_id, connection_generation FROM events"))
        generations = {public_id: generation for public_id, generation in rows}
        db.session.rollback()
        assert generations == {"evt_a": 1, "evt_t": 1, "evt_o": 0}

        flask_migrate.downgrade(revision="0015")
        assert keys() == before
        flask_migrate.upgrade()


def test_0021_marks_every_endpoint_of_today_for_rotation_and_allows_several(app, accounts):
    """An endpoint written before 0021 holds a secret of the old form: it is marked for the
    worker's forced rotation. Afterwards a merchant may have several endpoints; a downgrade
    keeps each merchant's first."""
    from portal.extensions import db

    def endpoint(merchant: int, url: str) -> None:
        db.session.execute(
            sa.text(
                "INSERT INTO webhook_endpoints (merchant_id, url, event_types, secret_encrypted, "
                "enabled, since_event_id, created_at, updated_at) VALUES (:m, :u, '[]', 'x', "
                "true, 0, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
            ),
            {"m": merchant, "u": url},
        )
        db.session.commit()

    def urls() -> dict[str, bool]:
        rows = db.session.execute(sa.text("SELECT url, legacy_secret FROM webhook_endpoints"))
        found = {url: legacy for url, legacy in rows}
        db.session.rollback()
        return found

    with app.app_context():
        flask_migrate.downgrade(revision="0020")
        acme = db.session.scalar(sa.text("SELECT id FROM merchants WHERE name = 'Acme'"))
        endpoint(acme, "https://shop.test/old")
        with pytest.raises(sa.exc.IntegrityError):
            endpoint(acme, "https://shop.test/second")
        db.session.rollback()

        flask_migrate.upgrade()
        assert urls() == {"https://shop.test/old": True}
        endpoint(acme, "https://shop.test/second")
        assert urls() == {"https://shop.test/old": True, "https://shop.test/second": False}

        flask_migrate.downgrade(revision="0020")
        rows = db.session.execute(sa.text("SELECT url FROM webhook_endpoints")).scalars().all()
        db.session.rollback()
        assert rows == ["https://shop.test/old"]
        flask_migrate.upgrade()


def test_0031_counts_the_totals_of_a_ledger_booked_before_it(app, accounts):
    """The totals kept as movements were booked are the totals 0031 counts from the movements
    of a ledger booked before it (a month boundary, the microsecond before it, past months)."""
    from datetime import UTC, datetime
    from decimal import Decimal

    from tests.support import factories
    from tests.support.ledger import book, totals_of

    factories.api_connection(app)
    factories.api_connection(app, merchant="Other")
    january, february = (
        datetime(2026, 1, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 2, 1, tzinfo=UTC),
    )
    book(
        app,
        [("payment", "BTC", Decimal("0.5"), february), ("fee", "BTC", Decimal("-0.005"), february)],
    )
    book(
        app,
        [
            ("payment", "BTC", Decimal("1.25"), january),
            ("withdrawal", "ETH", Decimal("-2"), january),
        ],
    )
    book(app, [("payment", "BTC", Decimal("7"), january)], merchant="Other")
    kept = totals_of(app)
    assert len(kept) == 5 + 5  # each month's and each day's
    with app.app_context():
        flask_migrate.downgrade(revision="0030")
        flask_migrate.upgrade()
    assert totals_of(app) == kept


def test_0032_counts_the_operations_mirrored_before_it(app, accounts):
    """The totals the triggers kept as operations were mirrored are those 0032 counts from the
    operations mirrored before it (a month boundary, the microsecond before it, no state)."""
    from datetime import UTC, datetime

    from tests.support.mirror_rows import mirror_all, operation_record, operation_totals_of

    def made(moment: datetime, **fields: object) -> dict:
        stamp = moment.isoformat().replace("+00:00", "Z")
        return operation_record(created_at=stamp, updated_at=stamp, **fields)

    january, february = (
        datetime(2026, 1, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 2, 1, tzinfo=UTC),
    )
    mirror_all(
        app,
        [
            made(january, status="confirmed", amount_paid="0.5"),
            made(january, category="transfer"),
            made(february, amount_paid="0.1"),
            made(february),
        ],
    )
    mirror_all(app, [made(february, status="failed")], "Other")
    kept = operation_totals_of(app)
    assert sum(kept.values()) == 2 * 5  # each operation in its month and its day
    with app.app_context():
        flask_migrate.downgrade(revision="0031")
        flask_migrate.upgrade()
    assert operation_totals_of(app) == kept


def test_0037_leaves_every_mirrored_row_found_by_search_down_and_up(app, accounts, monkeypatch):
    """0037 gives SQLite's search tables a copy of their own of the rows 0014's read from the
    mirror, and its downgrade gives 0014's back: every mirrored row is still found."""
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.payments.rules import search
    from tests.support.mirror_rows import mirror_all, operation_record, search_index_checked

    monkeypatch.setattr(search, "SCAN_AT_MOST", 0)  # every search asks the index
    mirror_all(app, [operation_record(order_id=f"order-{n}-of-acme") for n in range(30)])
    mirror_all(app, [operation_record(order_id="order-1-of-other")], "Other")

    def found() -> list[str]:
        with app.app_context():
            rows = search.search_mirror(merchant_named("Acme").id, "-1-OF").operations
            db.session.rollback()
            return [row.order_id for row in rows]

    assert found() == ["order-1-of-acme"]
    search_index_checked(app)
    with app.app_context():
        flask_migrate.downgrade(revision="0036")
    search_index_checked(app)
    assert found() == ["order-1-of-acme"]
    with app.app_context():
        flask_migrate.upgrade()
    search_index_checked(app)
    assert found() == ["order-1-of-acme"]


def test_0041_names_the_refunds_of_stored_events_by_their_number(app, accounts):
    """A refund event stored before 0041 carried the portal's own refund id: a retry, resend or
    replay of it sends the refund's number among its operation's refunds instead."""
    import json

    from portal.extensions import db
    from tests.support import factories

    factories.api_connection(app)
    refund = factories.refund(app, accounts.owner, "op-7", number=2)
    with app.app_context():
        flask_migrate.downgrade(revision="0040")
        merchant = db.session.scalar(sa.text("SELECT id FROM merchants WHERE name = 'Acme'"))
        stored = {"id": refund, "operation_id": "op-7", "amount": "0.1", "currency": "BTC"}
        db.session.execute(
            sa.text(
                "INSERT INTO events (public_id, merchant_id, connection_generation, type, "
                "dedup_key, data, notify, occurred_at, created_at) VALUES ('evt_r', :m, 1, "
                "'refund.sent', 'refund:1:sent', :d, true, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
            ),
            {"m": merchant, "d": json.dumps(stored)},
        )
        db.session.commit()
        flask_migrate.upgrade()
        data = db.session.scalar(sa.text("SELECT data FROM events WHERE public_id = 'evt_r'"))
        db.session.rollback()
    data = json.loads(data) if isinstance(data, str) else data
    assert data == {"operation_id": "op-7", "number": 2, "amount": "0.1", "currency": "BTC"}


def test_0042_gives_stored_checkout_links_their_merchants_connection_now(app, accounts):
    """A checkout link stored before 0042 belongs to its merchant's connection now (1 for a
    merchant with none); a downgrade drops the column and keeps the links."""
    from portal.extensions import db
    from tests.support import factories

    def generations() -> dict[str, int]:
        rows = db.session.execute(
            sa.text("SELECT token, connection_generation FROM checkout_links")
        )
        kept = {token: generation for token, generation in rows}
        db.session.rollback()
        return kept

    factories.api_connection(app, generation=3)
    with app.app_context():
        flask_migrate.downgrade(revision="0041")
        for token, name in (("link-of-acme", "Acme"), ("link-of-other", "Other")):
            db.session.execute(
                sa.text(
                    "INSERT INTO checkout_links (token, merchant_id, operation_id, order_id, "
                    "created_at) VALUES (:t, (SELECT id FROM merchants WHERE name = :n), '1', "
                    "'order-1', CURRENT_TIMESTAMP)"
                ),
                {"t": token, "n": name},
            )
        db.session.commit()

        flask_migrate.upgrade(revision="0042")
        assert generations() == {"link-of-acme": 3, "link-of-other": 1}

        flask_migrate.downgrade(revision="0041")
        columns = {column["name"] for column in sa.inspect(db.engine).get_columns("checkout_links")}
        assert "connection_generation" not in columns
        tokens = db.session.scalars(sa.text("SELECT token FROM checkout_links")).all()
        db.session.rollback()
        assert sorted(tokens) == ["link-of-acme", "link-of-other"]
        flask_migrate.upgrade()
        assert generations() == {"link-of-acme": 3, "link-of-other": 1}
