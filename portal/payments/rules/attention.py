"""What a person must decide, read from the mirror.

- `UNDECIDED`: a transaction whose status is `undefined` that nobody linked or rejected;
- `LATE`: money that reached an expired or canceled operation (a transaction neither linked
  nor rejected): link it, which confirms the operation, or reject it and refund;
- `PAYMENT`: a `new` operation that money already reached, partly paid or overpaid
  (`portal.payments.rules.operation_money` says which);
- `FAILED`: an operation that failed in the last `FAILED_WITHIN` (nobody can act on a failure
  forever; older ones stay in the operations list).

An item leaves the list when the mirror sees the change the person made at the API (its next
sync): the mirror alone writes its rows, so that each change becomes its event once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

import sqlalchemy as sa

from portal.api import Operation
from portal.api.records import parse_record
from portal.api.wire import MalformedAnswer
from portal.database import utcnow
from portal.extensions import db
from portal.identity.models import Merchant
from portal.payments.models import MirroredOperation, MirroredTransaction
from portal.payments.rules.operation_money import State, amount_due, operation_money

FAILED_WITHIN = timedelta(days=7)
CLOSED = ("expired", "canceled")
# The items shown of each reason, newest first; the count says how many there are in all.
SHOWN = 50


class Reason(enum.StrEnum):
    UNDECIDED = "undecided"
    LATE = "late"
    PAYMENT = "payment"
    FAILED = "failed"


@dataclass(frozen=True)
class TransactionItem:
    """A transaction to link or reject, with what its operation tells about it."""

    transaction: MirroredTransaction
    currency: str | None  # the operation's payment currency, when the mirror has it
    operation_status: str | None
    order_id: str | None  # what the shop calls the order: how people know it


@dataclass(frozen=True)
class OperationItem:
    operation: MirroredOperation
    state: State | None
    due: Decimal | None  # what the customer owes, in the payment currency


@dataclass(frozen=True)
class Group:
    reason: Reason
    total: int
    items: list[TransactionItem] | list[OperationItem]


def _operation_of_transaction() -> sa.ColumnElement[bool]:
    return sa.and_(
        MirroredOperation.merchant_id == MirroredTransaction.merchant_id,
        MirroredOperation.operation_id == MirroredTransaction.operation_id,
    )


def _selections(merchant_id: int, now: datetime) -> dict[Reason, sa.Select]:
    """For each reason, the rows it takes (transactions with their operation, or operations)."""
    transactions = sa.select(
        MirroredTransaction,
        MirroredOperation.currency_paid,
        MirroredOperation.status,
        MirroredOperation.order_id,
    ).where(MirroredTransaction.merchant_id == merchant_id)
    operations = sa.select(MirroredOperation).where(MirroredOperation.merchant_id == merchant_id)
    return {
        Reason.UNDECIDED: transactions.outerjoin(MirroredOperation, _operation_of_transaction())
        .where(
            MirroredTransaction.status == "undefined",
            MirroredTransaction.linked.is_(False),
            sa.or_(MirroredOperation.status.is_(None), MirroredOperation.status.not_in(CLOSED)),
        )
        .order_by(MirroredTransaction.created_at.desc(), MirroredTransaction.id.desc()),
        # From the operations closed (a covering index), to their transactions: the planner
        # would otherwise read every transaction of the merchant.
        Reason.LATE: transactions.join(MirroredOperation, _operation_of_transaction())
        .where(
            MirroredTransaction.operation_id.in_(
                sa.select(MirroredOperation.operation_id).where(
                    MirroredOperation.merchant_id == merchant_id,
                    MirroredOperation.status.in_(CLOSED),
                )
            ),
            MirroredOperation.status.in_(CLOSED),
            MirroredTransaction.status != "rejected",
            MirroredTransaction.linked.is_(False),
        )
        .order_by(MirroredTransaction.created_at.desc(), MirroredTransaction.id.desc()),
        Reason.PAYMENT: operations.where(
            MirroredOperation.status == "new",
            MirroredOperation.amount_paid.is_not(None),
            sa.cast(MirroredOperation.amount_paid, sa.Numeric) > 0,  # positive, so exact enough
        ).order_by(MirroredOperation.updated_at.desc(), MirroredOperation.id.desc()),
        Reason.FAILED: operations.where(
            MirroredOperation.status == "failed",
            MirroredOperation.updated_at >= now - FAILED_WITHIN,
        ).order_by(MirroredOperation.updated_at.desc(), MirroredOperation.id.desc()),
    }


def counts(merchant_id: int) -> dict[Reason, int]:
    """How many items of each reason, in one query."""
    selections = _selections(merchant_id, utcnow())
    totals = [
        sa.select(sa.func.count())
        .select_from(selection.order_by(None).subquery())
        .scalar_subquery()
        .label(reason.value)
        for reason, selection in selections.items()
    ]
    row = db.session.execute(sa.select(*totals)).one()
    return {reason: row._mapping[reason.value] for reason in selections}


# merchant id -> (the mirror's last sync, the count then): per process, for the menu.
_counted: dict[int, tuple[datetime, int]] = {}


def count(merchant: Merchant) -> int:
    """Everything that waits for a decision: the figure in the menu of every page.

    Counting reads indexes, but at 100,000 operations it still takes tens of milliseconds, and
    the figure can only change when the mirror syncs: it is counted once per sync (and process),
    and 0 before the first sync. When the mirror last synced comes with the merchant (the
    signed-in session's query, `accounts.WITH_USER`). The attention page itself always counts
    afresh.
    """
    synced = merchant.last_synced_at
    if synced is None:
        return 0
    counted = _counted.get(merchant.id)
    if counted is None or counted[0] != synced:
        counted = synced, sum(counts(merchant.id).values())
        _counted[merchant.id] = counted
    return counted[1]


def needs_attention(merchant_id: int) -> list[Group]:
    """Each reason with its newest `SHOWN` items and how many there are in all."""
    totals = counts(merchant_id)
    groups = []
    for reason, selection in _selections(merchant_id, utcnow()).items():
        rows = db.session.execute(selection.limit(SHOWN)).all()
        if reason in (Reason.UNDECIDED, Reason.LATE):
            items: list = [TransactionItem(*row) for row in rows]
        else:
            items = [_operation_item(row[0]) for row in rows]
        groups.append(Group(reason, totals[reason], items))
    return groups


def _operation_item(row: MirroredOperation) -> OperationItem:
    """The operation with its payment state, read from the API's record the mirror keeps."""
    try:
        operation = parse_record(Operation, row.record)
    except MalformedAnswer:  # a record the portal cannot read: no payment state
        return OperationItem(row, None, None)
    return OperationItem(row, operation_money(operation).state, amount_due(operation))
