"""What a person must decide, read from the mirror.

- `UNDECIDED`: a transaction whose status is `undefined` that nobody linked or rejected;
- `LATE`: money that reached an expired or canceled operation (a transaction neither linked
  nor rejected): link it, which confirms the operation, or reject it and refund;
- `PAYMENT`: a `new` operation that money already reached, partly paid or paid but not yet
  confirmed (the `state` the mirror keeps, `portal.payments.rules.operation_money`);
- `DIFFERENCE`: an operation whose money arrived wrong (`State.needs_attention`: overpaid,
  accepted underpaid, paid late) and has not ended, since the mirror's first sync or in the last
  `HISTORY_WITHIN`, so that a new connection is not flooded with its history; someone refunds,
  asks for the rest or accepts it, then marks it settled (`decisions.record_settled`);
- `FAILED`: an operation that failed in the last `FAILED_WITHIN` (nobody can act on a failure
  forever; older ones stay in the operations list).

An item someone linked, rejected or canceled through the portal leaves the list at once (a
`handled` decision, until the mirror syncs after it); a settled one stays away while its
received amount is the one it was settled at. Only the decisions of the current connection
count: a new connection's mirror starts afresh.
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
from portal.live.models import MirrorState
from portal.live.rules.events import current_generation
from portal.money.models import IntentState, Refund, RefundStage
from portal.payments.models import Decision, DecisionKind, MirroredOperation, MirroredTransaction
from portal.payments.rules.operation_money import ENDED_STATUSES, State, amount_due

FAILED_WITHIN = timedelta(days=7)
HISTORY_WITHIN = timedelta(days=30)
# What `DIFFERENCE` and `PAYMENT` hold, by the operation's state.
WRONG_AMOUNT = tuple(state.value for state in State if state.needs_attention)
PAID_SHORT_OR_UNCONFIRMED = (State.PARTLY_PAID.value, State.PAID_UNCONFIRMED.value)
CLOSED = ("expired", "canceled")
# The items shown of each reason, newest first; the count says how many there are in all.
SHOWN = 50


class Reason(enum.StrEnum):
    UNDECIDED = "undecided"
    LATE = "late"
    PAYMENT = "payment"
    DIFFERENCE = "difference"
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
    difference: Decimal | None  # received - due, as the mirror last read it


@dataclass(frozen=True)
class Group:
    reason: Reason
    total: int
    items: list[TransactionItem] | list[OperationItem]

    def by_operation(self) -> list[tuple[str | None, list[TransactionItem]]]:
        """The transaction items by operation, each operation where its newest one is: the API
        links and rejects the transactions of one operation at a time."""
        operations: dict[str | None, list[TransactionItem]] = {}
        for item in self.items:
            if isinstance(item, TransactionItem):
                operations.setdefault(item.transaction.operation_id, []).append(item)
        return list(operations.items())


def _operation_of_transaction() -> sa.ColumnElement[bool]:
    return sa.and_(
        MirroredOperation.merchant_id == MirroredTransaction.merchant_id,
        MirroredOperation.operation_id == MirroredTransaction.operation_id,
    )


@dataclass(frozen=True)
class _Scope:
    """What the selections depend on besides the mirror's rows."""

    merchant_id: int
    now: datetime
    generation: int  # the current connection's: older decisions belong to another mirror
    synced: datetime | None  # the mirror's last sync: a handled decision before it is known
    since: datetime  # the oldest money `DIFFERENCE` shows

    @classmethod
    def of(cls, merchant_id: int) -> _Scope:
        now = utcnow()
        state = db.session.get(MirrorState, merchant_id)
        first = state.first_sync_at if state and state.first_sync_at else now
        return cls(
            merchant_id,
            now,
            current_generation(merchant_id),
            state.last_sync_at if state else None,
            min(first, now - HISTORY_WITHIN),
        )

    def decided(self, kind: DecisionKind) -> sa.Select:
        """The merchant's decisions of `kind` about the row's operation, for an EXISTS."""
        return sa.select(Decision.id).where(
            Decision.merchant_id == self.merchant_id,
            Decision.connection_generation == self.generation,
            Decision.kind == kind,
            Decision.operation_id == MirroredOperation.operation_id,
        )

    def handled(self) -> sa.Select:
        """Handled decisions the mirror has not synced since."""
        decisions = self.decided(DecisionKind.HANDLED)
        if self.synced is None:
            return decisions
        return decisions.where(Decision.created_at >= self.synced)

    def operation_handled(self) -> sa.ColumnElement[bool]:
        return self.handled().exists()

    def transaction_handled(self) -> sa.ColumnElement[bool]:
        """The transaction, or its whole operation (a cancel), was handled."""
        return (
            self.handled()
            .where(
                Decision.operation_id == MirroredTransaction.operation_id,
                sa.or_(
                    Decision.transaction_id.is_(None),
                    Decision.transaction_id == MirroredTransaction.transaction_id,
                ),
            )
            .exists()
        )

    def settled(self) -> sa.ColumnElement[bool]:
        """Settled at the amount received now (both stored as the same exact text)."""
        return (
            self.decided(DecisionKind.SETTLED)
            .where(Decision.received == MirroredOperation.amount_paid)
            .exists()
        )


def _selections(scope: _Scope) -> dict[Reason, sa.Select]:
    """For each reason, the rows it takes (transactions with their operation, or operations)."""
    merchant_id = scope.merchant_id
    transactions = sa.select(
        MirroredTransaction,
        MirroredOperation.currency_paid,
        MirroredOperation.status,
        MirroredOperation.order_id,
    ).where(MirroredTransaction.merchant_id == merchant_id, ~scope.transaction_handled())
    operations = sa.select(MirroredOperation).where(
        MirroredOperation.merchant_id == merchant_id, ~scope.operation_handled()
    )
    newest_operations = (MirroredOperation.updated_at.desc(), MirroredOperation.id.desc())
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
            MirroredOperation.state.in_(PAID_SHORT_OR_UNCONFIRMED),
        ).order_by(*newest_operations),
        Reason.DIFFERENCE: operations.where(
            MirroredOperation.state.in_(WRONG_AMOUNT),
            # An operation that ended is on the list by its late transactions or its failure.
            MirroredOperation.status.not_in(ENDED_STATUSES),
            MirroredOperation.updated_at >= scope.since,
            ~scope.settled(),
            ~_refunding(),
        ).order_by(*newest_operations),
        Reason.FAILED: operations.where(
            MirroredOperation.status == "failed",
            MirroredOperation.updated_at >= scope.now - FAILED_WITHIN,
        ).order_by(*newest_operations),
    }


def counts(merchant_id: int) -> dict[Reason, int]:
    """How many items of each reason, in one query."""
    selections = _selections(_Scope.of(merchant_id))
    totals = [
        sa.select(sa.func.count())
        .select_from(selection.order_by(None).subquery())
        .scalar_subquery()
        .label(reason.value)
        for reason, selection in selections.items()
    ]
    row = db.session.execute(sa.select(*totals)).one()
    return {reason: row._mapping[reason.value] for reason in selections}


# merchant id -> (the mirror's last sync and the last decision, the count then): per process,
# for the menu.
_counted: dict[int, tuple[tuple[datetime, datetime | None], int]] = {}


def count(merchant: Merchant) -> int:
    """Everything that waits for a decision: the figure in the menu of every page.

    Counting reads indexes, but at 100,000 operations it still takes tens of milliseconds, and
    the figure can only change when the mirror syncs or someone decides: it is counted once per
    sync and decision (and process), and 0 before the first sync. When the mirror last synced
    comes with the merchant (the signed-in session's query, `accounts.WITH_USER`). The attention
    page itself always counts afresh.
    """
    synced = merchant.last_synced_at
    if synced is None or merchant.mirror_state is None:
        return 0
    decided = merchant.mirror_state.decided_at
    counted = _counted.get(merchant.id)
    if counted is None or counted[0] != (synced, decided):
        counted = (synced, decided), sum(counts(merchant.id).values())
        _counted[merchant.id] = counted
    return counted[1]


def needs_attention(merchant_id: int) -> list[Group]:
    """Each reason with its newest `SHOWN` items and how many there are in all."""
    totals = counts(merchant_id)
    groups = []
    for reason, selection in _selections(_Scope.of(merchant_id)).items():
        rows = db.session.execute(selection.limit(SHOWN)).all()
        if reason in (Reason.UNDECIDED, Reason.LATE):
            items: list = [TransactionItem(*row) for row in rows]
        else:
            items = [_operation_item(row[0]) for row in rows]
        groups.append(Group(reason, totals[reason], items))
    return groups


def _operation_item(row: MirroredOperation) -> OperationItem:
    """The operation with the state the mirror keeps, and its due read from the API's record."""
    state = State(row.state) if row.state else None
    try:
        due = amount_due(parse_record(Operation, row.record))
    except MalformedAnswer:  # a record the portal cannot read: no due to show
        due = None
    return OperationItem(row, state, due, row.difference)


def settleable(merchant_id: int, operation_id: str) -> MirroredOperation | None:
    """The operation if it is on the list to be settled (`DIFFERENCE`), else None."""
    selection = _selections(_Scope.of(merchant_id))[Reason.DIFFERENCE]
    return db.session.scalars(
        selection.where(MirroredOperation.operation_id == operation_id)
    ).first()


def is_mirrored(merchant_id: int, operation_id: str) -> bool:
    """Whether the merchant's mirror holds the operation: an id of another merchant, or of
    nothing, is not found (whatever else the request says)."""
    return (
        db.session.scalar(
            sa.select(MirroredOperation.id).where(
                MirroredOperation.merchant_id == merchant_id,
                MirroredOperation.operation_id == operation_id,
            )
        )
        is not None
    )


def _refunding() -> sa.ColumnElement[bool]:
    """The operation has a refund on its way or sent: someone decided, it leaves the list (and
    comes back if the refund is canceled, expires or is refused)."""
    return sa.exists().where(
        Refund.merchant_id == MirroredOperation.merchant_id,
        Refund.operation_id == MirroredOperation.operation_id,
        Refund.stage.not_in([RefundStage.CANCELED, RefundStage.EXPIRED]),
        sa.or_(Refund.state.is_(None), Refund.state != IntentState.REFUSED),
    )
