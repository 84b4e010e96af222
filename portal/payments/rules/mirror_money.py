"""The money of the mirror's operations, read again: each row's state and difference from its
record and the transactions the mirror holds for it (`operation_money`).

The mirror's sync does it for the operations each page touched (`portal.live.rules.mirror`,
which also writes the events of a state newly reached; a first sync gives its new operations
their columns before inserting them, `money_columns`); `restate` does it for all of a
merchant's operations when the merchant's payment tolerance changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from portal.api import Operation, Transaction
from portal.api.records import parse_record, with_fields
from portal.api.wire import MalformedAnswer
from portal.extensions import db
from portal.identity.models import Merchant
from portal.payments.models import MirroredOperation, MirroredTransaction
from portal.payments.rules.operation_money import ENDED_STATUSES, OperationMoney, operation_money

# The mirror's transaction columns copied from the API record of the same name.
TRANSACTION_COLUMNS = (
    "operation_id",
    "tx_id",
    "amount",
    "status",
    "linked",
    "reject_reason",
    "created_at",
    "updated_at",
)
# Operations looked up with one query (SQLite allows 999 parameters per statement), and read
# again at once by `restate`.
LOOKUP_CHUNK = 500
# Statuses of an operation that money can still reach late, to be linked or rejected.
CLOSED = ("expired", "canceled")
# The largest payment tolerance a merchant may set, in percent of the due.
MAX_TOLERANCE = Decimal(10)


def mirrored_operations(
    merchant_id: int,
    rows: Sequence[MirroredOperation],
    read: Mapping[str, Operation] | None = None,
) -> dict[str, Operation]:
    """Each row's operation as the API last wrote it, with the transactions the mirror holds for
    it now (a transaction can change without its operation's record), by id; a row whose record
    this portal cannot read is left out (kept as the API wrote it, there is no money to read).
    `read`: operations whose record was just written from them (the sync's page), which need
    not be read again from their records."""
    transactions: dict[str | None, list[Transaction]] = {}
    ids = [row.operation_id for row in rows]
    columns = [getattr(MirroredTransaction, name) for name in TRANSACTION_COLUMNS]
    for start in range(0, len(ids), LOOKUP_CHUNK):
        for transaction_id, *values in db.session.execute(
            sa.select(MirroredTransaction.transaction_id, *columns).where(
                MirroredTransaction.merchant_id == merchant_id,
                MirroredTransaction.operation_id.in_(ids[start : start + LOOKUP_CHUNK]),
            )
        ):
            named = dict(zip(TRANSACTION_COLUMNS, values, strict=True))
            transaction = Transaction(**named, id=transaction_id)
            transactions.setdefault(transaction.operation_id, []).append(transaction)
    operations = {}
    for row in rows:
        operation = read.get(row.operation_id) if read else None
        try:
            operation = operation or parse_record(Operation, row.record)
        except MalformedAnswer:
            continue
        operations[row.operation_id] = with_fields(
            operation, transactions=tuple(transactions.get(row.operation_id, ()))
        )
    return operations


def mirrored_transaction(row: MirroredTransaction) -> Transaction:
    """The transaction as the mirror's columns hold it."""
    return Transaction(
        **{name: getattr(row, name) for name in TRANSACTION_COLUMNS}, id=row.transaction_id
    )


def restate_row(
    row: MirroredOperation, operation: Operation, tolerance_percent: Decimal
) -> OperationMoney:
    """Set the row's state, difference and late transactions from `operation`
    (`mirrored_operations`); an ended status is remembered, since money linked after it is late
    whatever the API says next."""
    ended_status = row.status if row.status in ENDED_STATUSES else row.ended_status
    money, columns = money_columns(operation, ended_status, tolerance_percent)
    for name, value in columns.items():
        setattr(row, name, value)
    return money


def money_columns(
    operation: Operation, ended_status: str | None, tolerance_percent: Decimal
) -> tuple[OperationMoney, dict[str, Any]]:
    """The money of `operation` (with the transactions the mirror holds for it) and the mirror's
    columns that keep it; `ended_status` is the ended status the mirror remembers, if any."""
    money = operation_money(operation, tolerance_percent, ended_before=ended_status is not None)
    return money, {
        "ended_status": ended_status,
        "state": money.state,
        "difference": money.difference,
        **late_money(operation),
    }


def late_money(operation: Operation) -> dict[str, Any]:
    """The mirror's columns of the transactions of an expired or canceled operation that are
    neither linked nor rejected, money that came late and waits for a person to link or reject
    it (the attention list): how many (`late_transactions`) and when the newest was created
    (`late_since`, the order in which the list reads such operations); None when there is
    none, so that the indexes of these operations hold only them."""
    waiting = [
        t
        for t in (operation.transactions if operation.status in CLOSED else [])
        if t.status != "rejected" and not t.linked
    ]
    return {
        "late_transactions": len(waiting) or None,
        "late_since": max((t.created_at for t in waiting), default=None),
    }


def restate(merchant: Merchant) -> int:
    """Read again the state of every operation the mirror holds for `merchant`, with its payment
    tolerance as it is now; how many operations changed state. A batch of rows at a time, each
    flushed; the caller commits. The changes are no events: nothing happened to the money."""
    changed = 0
    after = 0
    while True:
        rows = list(
            db.session.scalars(
                sa.select(MirroredOperation)
                .where(MirroredOperation.merchant_id == merchant.id, MirroredOperation.id > after)
                .order_by(MirroredOperation.id)
                .limit(LOOKUP_CHUNK)
            )
        )
        if not rows:
            return changed
        operations = mirrored_operations(merchant.id, rows)
        for row in rows:
            operation = operations.get(row.operation_id)
            if operation is None:
                continue
            known = row.state
            money = restate_row(row, operation, merchant.payment_tolerance_percent)
            changed += money.state != known
        db.session.flush()
        after = rows[-1].id


def set_tolerance(merchant: Merchant, percent: Decimal) -> int:
    """Save the merchant's payment tolerance and read the states of its mirrored operations
    again with it (`restate`); how many operations changed state."""
    merchant.payment_tolerance_percent = percent
    changed = restate(merchant)
    db.session.commit()
    return changed
