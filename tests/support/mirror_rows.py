"""Rows of the mirror (MirroredOperation, MirroredTransaction) as the mirror's sync writes them:
the columns it filters on and `record`, the API's record as JSON.

For the pages that read the mirror, without running the sync: `operation_record` makes a
realistic record, `mirror` inserts it with its transactions, `mirror_from_sandbox` copies a
real sandbox operation (its answer to GET /operations/<id>) into the mirror.
"""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import requests
import sqlalchemy as sa

from tests.support.portal_app import MERCHANT
from tests.support.sandbox_server import SandboxServer

_ids = itertools.count(900_000)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def transaction_record(
    amount: str = "0.1", status: str = "confirmed", *, linked: bool = False, **fields: object
) -> dict:
    """A transaction as the API shows it inside its operation."""
    now = _stamp(datetime.now(UTC))
    return {
        "id": str(next(_ids)),
        "tx_id": uuid.uuid4().hex + uuid.uuid4().hex,
        "amount": amount,
        "status": status,
        "linked": linked,
        "reject_reason": None,
        "created_at": now,
        "updated_at": now,
        **fields,
    }


def operation_record(
    amount: str = "0.5",
    currency: str = "BTC",
    status: str = "new",
    *,
    amount_paid: str | None = None,
    transactions: list[dict] | None = None,
    age: timedelta = timedelta(minutes=5),
    **fields: object,
) -> dict:
    """An operation (category `application`) as GET /operations/<id> answers it."""
    created = datetime.now(UTC) - age
    return {
        "id": str(next(_ids)),
        "application_id": "1",
        "application_name": "Shop",
        "category": "application",
        "order_id": f"order-{uuid.uuid4().hex[:8]}",
        "amount": amount,
        "fee": str(Decimal(amount) / 100),
        "amount_paid": amount_paid,
        "rate": "1",
        "currency": currency,
        "currency_paid": currency,
        "status": status,
        "address": "tb1q" + uuid.uuid4().hex,
        "created_at": _stamp(created),
        "updated_at": _stamp(created + age / 2),
        "payment_url": None,
        "redirect_url": None,
        "transactions": transactions or [],
        **fields,
    }


def operation_columns(merchant_id: int, record: dict) -> dict:
    """The columns of a MirroredOperation for the API's `record`, with the state the mirror
    reads from it (no payment tolerance)."""
    from portal.api import Operation
    from portal.api.records import parse_record
    from portal.payments.rules.mirror_money import late_money
    from portal.payments.rules.operation_money import ENDED_STATUSES, operation_money

    operation = parse_record(Operation, record)
    money = operation_money(operation)
    names = ("order_id", "category", "status", "amount", "amount_paid", "currency")
    return {
        "merchant_id": merchant_id,
        "operation_id": operation.id,
        **{name: getattr(operation, name) for name in names},
        "currency_paid": operation.currency_paid,
        "address": operation.address,
        "created_at": operation.created_at,
        "updated_at": operation.updated_at,
        "record": record,
        "state": money.state,
        "difference": money.difference,
        "ended_status": operation.status if operation.status in ENDED_STATUSES else None,
        **late_money(operation),
    }


def transaction_columns(merchant_id: int, operation_id: str, record: dict) -> dict:
    """The columns of a MirroredTransaction for `record`, a transaction of the operation."""
    from portal.api import Transaction
    from portal.api.records import parse_record

    transaction = parse_record(Transaction, record)
    names = ("tx_id", "amount", "status", "linked", "reject_reason", "created_at", "updated_at")
    return {
        "merchant_id": merchant_id,
        "transaction_id": transaction.id,
        "operation_id": operation_id,
        **{name: getattr(transaction, name) for name in names},
        "record": {**record, "operation_id": operation_id},
    }


def mirror(app, record: dict, merchant: str = MERCHANT) -> dict:
    """Insert the operation `record` and its transactions into `merchant`'s mirror, and mark
    the mirror synced now, with the menu's count counted again as a sync counts it."""
    mirror_all(app, [record], merchant)
    return record


def mirror_all(app, records: list[dict], merchant: str = MERCHANT) -> list[dict]:
    """`mirror` for many operations at once, in one transaction."""
    from portal.database import utcnow
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.live.models import MirrorState
    from portal.payments.models import MirroredOperation, MirroredTransaction
    from portal.payments.rules import attention, search

    with app.app_context():
        merchant_id = merchant_named(merchant).id
        operations = [operation_columns(merchant_id, record) for record in records]
        transactions = [
            transaction_columns(merchant_id, record["id"], raw)
            for record in records
            for raw in record["transactions"]
        ]
        search.insert_searchable(MirroredOperation, operations)
        search.insert_searchable(MirroredTransaction, transactions)
        state = db.session.get(MirrorState, merchant_id) or MirrorState(merchant_id=merchant_id)
        state.last_sync_at = utcnow()
        db.session.add(state)
        db.session.flush()
        attention.recount(merchant_id)
        db.session.commit()
    return records


def mirror_from_sandbox(
    app, sandbox: SandboxServer, operation_id: str, merchant: str = MERCHANT
) -> dict:
    """Copy the sandbox's operation, as its API shows it now, into the mirror."""
    answer = requests.get(
        f"{sandbox.api_url}/operations/{operation_id}", headers=sandbox.headers(), timeout=10
    )
    answer.raise_for_status()
    return mirror(app, answer.json()["data"], merchant)


def operation_totals_of(app) -> Counter:
    """The operations' totals the database keeps (`OperationTotal`), those not at zero."""
    from portal.extensions import db
    from portal.payments.models import OperationTotal as Total

    with app.app_context():
        rows = db.session.execute(
            sa.select(
                Total.merchant_id,
                Total.span,
                Total.starts,
                Total.category,
                Total.state,
                Total.count,
            )
        )
        return Counter({tuple(row[:5]): row[5] for row in rows if row[5]})


def search_index_checked(app) -> None:
    """On SQLite, each search table holds exactly the rows of its mirrored table, with their
    searched columns, and SQLite finds its index sound against them (migration 0037; on
    PostgreSQL the indexes keep themselves)."""
    import sqlalchemy as sa

    from portal.extensions import db
    from portal.payments.rules.search import FTS_TABLES, SEARCHED_COLUMNS

    with app.app_context():
        if db.session.get_bind().dialect.name != "sqlite":
            return
        for model, table in FTS_TABLES.items():
            names = [column.key for column in SEARCHED_COLUMNS[model]]
            indexed = db.session.execute(sa.text(f"SELECT rowid, {', '.join(names)} FROM {table}"))  # noqa: S608  (fixed names)
            mirrored = db.session.execute(sa.select(model.id, *SEARCHED_COLUMNS[model]))
            assert {tuple(row) for row in indexed} == {tuple(row) for row in mirrored}
            check = f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)"  # noqa: S608
            db.session.execute(sa.text(check))
        db.session.rollback()
