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
from sqlalchemy.orm import defer

from portal.api import Operation
from portal.api.records import parse_record
from portal.api.wire import MalformedAnswer
from portal.database import COUNTED, utcnow
from portal.extensions import Model, db
from portal.identity.models import Merchant
from portal.live.models import MirrorState
from portal.money.models import IntentState, Refund, RefundStage
from portal.payments.models import Decision, DecisionKind, MirroredOperation, MirroredTransaction
from portal.payments.rules.operation_money import ENDED_STATUSES, State, amount_due

FAILED_WITHIN = timedelta(days=7)
HISTORY_WITHIN = timedelta(days=30)
# What `DIFFERENCE` and `PAYMENT` hold, by the operation's state.
WRONG_AMOUNT = tuple(state.value for state in State if state.needs_attention)
PAID_SHORT_OR_UNCONFIRMED = (State.PARTLY_PAID.value, State.PAID_UNCONFIRMED.value)
# The items of each reason the list shows, newest first, beside how many there are (counted up
# to COUNTED + 1); each reason's own list (`waiting`) shows them all, by pages.
SHOWN = 10
NEWEST_TRANSACTIONS = (MirroredTransaction.created_at.desc(), MirroredTransaction.id.desc())
NEWEST_OPERATIONS = (MirroredOperation.updated_at.desc(), MirroredOperation.id.desc())


class Reason(enum.StrEnum):
    UNDECIDED = "undecided"
    LATE = "late"
    PAYMENT = "payment"
    DIFFERENCE = "difference"
    FAILED = "failed"


# The reasons whose items are transactions; the others' are operations.
OF_TRANSACTIONS = (Reason.UNDECIDED, Reason.LATE)
OF_OPERATIONS = (Reason.PAYMENT, Reason.DIFFERENCE, Reason.FAILED)


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
    since: datetime  # the oldest money `DIFFERENCE` shows
    # Handled decisions the mirror has not synced since (a few at most): the operations they
    # are about, those handled whole (a cancel), and the transactions linked or rejected.
    handled_operations: frozenset[str]
    handled_whole: frozenset[str]
    handled_transactions: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, merchant_id: int, synced: datetime | None = None) -> _Scope:
        """The scope as of now; `synced`: the mirror's last sync when its state does not say it
        yet (a sync counting as it ends). The mirror's state and the connection come with the
        signed-in session (no query in a request); the handled decisions are one query."""
        now = utcnow()
        state = db.session.get(MirrorState, merchant_id)
        first = state.first_sync_at if state and state.first_sync_at else now
        synced = synced or (state.last_sync_at if state else None)
        merchant = db.session.get(Merchant, merchant_id)
        connection = merchant.api_connection if merchant else None
        generation = connection.generation if connection else 0  # 0 while it has none
        handled = sa.select(Decision.operation_id, Decision.transaction_id).where(
            Decision.merchant_id == merchant_id,
            Decision.connection_generation == generation,
            Decision.kind == DecisionKind.HANDLED,
        )
        if synced is not None:
            handled = handled.where(Decision.created_at >= synced)
        pairs = db.session.execute(handled).all()
        return cls(
            merchant_id,
            now,
            generation,
            min(first, now - HISTORY_WITHIN),
            frozenset(operation for operation, _ in pairs),
            frozenset(operation for operation, transaction in pairs if transaction is None),
            frozenset((operation, transaction) for operation, transaction in pairs if transaction),
        )

    def operation_not_handled(self) -> sa.ColumnElement[bool]:
        if not self.handled_operations:
            return sa.true()
        return MirroredOperation.operation_id.not_in(self.handled_operations)

    def transaction_not_handled(self) -> sa.ColumnElement[bool]:
        """Neither the transaction nor its whole operation (a cancel) was handled."""
        conditions = []
        if self.handled_whole:
            conditions.append(
                sa.or_(
                    MirroredTransaction.operation_id.is_(None),
                    MirroredTransaction.operation_id.not_in(self.handled_whole),
                )
            )
        if self.handled_transactions:
            conditions.append(
                sa.tuple_(
                    MirroredTransaction.operation_id, MirroredTransaction.transaction_id
                ).not_in(self.handled_transactions)
            )
        return sa.and_(sa.true(), *conditions)

    def settled(self) -> sa.ColumnElement[bool]:
        """Settled at the amount received now (both stored as the same exact text)."""
        return sa.exists().where(
            Decision.merchant_id == self.merchant_id,
            Decision.connection_generation == self.generation,
            Decision.kind == DecisionKind.SETTLED,
            Decision.operation_id == MirroredOperation.operation_id,
            Decision.received == MirroredOperation.amount_paid,
        )


def _late_operations(
    merchant_id: int, index: str = "ix_mirrored_operations_merchant_late"
) -> sa.Select:
    """The ids of the expired or canceled operations that money still waits on (the mirror
    keeps how many of their transactions do, `mirror_money.late_money`): a few, read
    from one of their own indexes (by id, or by `late_since`)."""
    return _read_by(
        sa.select(MirroredOperation.operation_id).where(
            MirroredOperation.merchant_id == merchant_id,
            MirroredOperation.late_transactions.is_not(None),
        ),
        MirroredOperation,
        index,
    )


def _selections(scope: _Scope) -> dict[Reason, sa.Select]:
    """For each reason, the ids of the rows it takes (transactions or operations), newest
    first. Each reads one table through an index that holds every column it filters on and
    its order (a count reads no table row); the rows shown are read by their ids
    (`_transaction_rows`, `_operation_rows`)."""
    merchant_id = scope.merchant_id
    transactions = _unlinked(scope)
    operations = sa.select(MirroredOperation.id).where(
        MirroredOperation.merchant_id == merchant_id, scope.operation_not_handled()
    )
    return {
        # Not of a closed operation: those are `LATE`.
        Reason.UNDECIDED: _read_by(
            transactions.where(
                MirroredTransaction.status == "undefined",
                ~_late_operations(merchant_id)
                .where(MirroredOperation.operation_id == MirroredTransaction.operation_id)
                .exists(),
            ),
            MirroredTransaction,
            "ix_mirrored_transactions_merchant_status",
        ).order_by(*NEWEST_TRANSACTIONS),
        Reason.LATE: _late(transactions, _late_operations(merchant_id)),
        # A partly paid or unconfirmed payment's operation is `new` (`operation_money`).
        Reason.PAYMENT: _read_by(
            operations.where(
                MirroredOperation.status == _literal("new"),
                MirroredOperation.state.in_(_literals(PAID_SHORT_OR_UNCONFIRMED)),
            ),
            MirroredOperation,
            "ix_mirrored_operations_merchant_payment",
        ).order_by(*NEWEST_OPERATIONS),
        Reason.DIFFERENCE: _read_by(
            operations.where(
                MirroredOperation.state.in_(_literals(WRONG_AMOUNT)),
                # An operation that ended is on the list by its late transactions or failure.
                MirroredOperation.status.not_in(ENDED_STATUSES),
                MirroredOperation.updated_at >= scope.since,
                ~scope.settled(),
                ~_refunding(),
            ),
            MirroredOperation,
            "ix_mirrored_operations_merchant_difference",
        ).order_by(*NEWEST_OPERATIONS),
        Reason.FAILED: _read_by(
            operations.where(
                MirroredOperation.status == "failed",
                MirroredOperation.updated_at >= scope.now - FAILED_WITHIN,
            ),
            MirroredOperation,
            "ix_mirrored_operations_merchant_status",
        ).order_by(*NEWEST_OPERATIONS),
    }


def _literal(value: str) -> sa.BindParameter[str]:
    """`value` written into the statement, not bound: the payments' and differences' partial
    indexes (`portal/payments/models.py`) serve only a query whose conditions show that it
    takes their rows."""
    return sa.literal(value, literal_execute=True)


def _literals(values: tuple[str, ...]) -> list[sa.BindParameter[str]]:
    return [_literal(value) for value in values]


def _unlinked(scope: _Scope) -> sa.Select:
    """The ids of the merchant's transactions that nobody linked, through the API or here."""
    return sa.select(MirroredTransaction.id).where(
        MirroredTransaction.merchant_id == scope.merchant_id,
        MirroredTransaction.linked.is_(False),
        scope.transaction_not_handled(),
    )


def _late(transactions: sa.Select, operations: sa.Select | list[str]) -> sa.Select:
    """`LATE`: the waiting transactions of `operations` (ids of some that money waits on, or a
    statement that selects them)."""
    return _read_by(
        transactions.where(
            MirroredTransaction.operation_id.in_(operations),
            MirroredTransaction.status != "rejected",
        ),
        MirroredTransaction,
        "ix_mirrored_transactions_merchant_operation_status",
    ).order_by(*NEWEST_TRANSACTIONS)


def _read_by(selection: sa.Select, model: type[Model], index: str) -> sa.Select:
    """`selection` read through `index` on SQLite, whose planner (without statistics) would
    rather walk the whole table in the order listed, by its index of `updated_at`, for the
    newest `SHOWN`: slow when few rows match. PostgreSQL's planner has statistics."""
    return selection.with_hint(model.__table__, f"INDEXED BY {index}", "sqlite")


def _transaction_rows(shown: sa.Subquery) -> sa.Select:
    """The transactions of `shown` (`_newest`) with what their operations tell, and their
    reason and its count, newest first."""
    return (
        sa.select(
            MirroredTransaction,
            MirroredOperation.currency_paid,
            MirroredOperation.status,
            MirroredOperation.order_id,
            shown.c.reason,
            shown.c.total,
        )
        .join(shown, MirroredTransaction.id == shown.c.id)
        .outerjoin(MirroredOperation, _operation_of_transaction())
        .order_by(*NEWEST_TRANSACTIONS)
        .options(defer(MirroredTransaction.record, raiseload=True))  # the list shows columns
    )


def _operation_rows(shown: sa.Subquery) -> sa.Select:
    """The operations of `shown` (`_newest`), newest first, with their reason and its count, and
    the API's record only of those paid in another currency (`_operation_item`): the list shows
    columns, and reading a record is most of the cost of a row."""
    in_another_currency = MirroredOperation.currency.is_distinct_from(
        MirroredOperation.currency_paid
    )
    return (
        sa.select(
            MirroredOperation,
            sa.case((in_another_currency, MirroredOperation.record)),
            shown.c.reason,
            shown.c.total,
        )
        .join(shown, MirroredOperation.id == shown.c.id)
        .order_by(*NEWEST_OPERATIONS)
        .options(defer(MirroredOperation.record, raiseload=True))
    )


def _newest(
    selections: dict[Reason, sa.Select], reasons: tuple[Reason, ...], scope: _Scope
) -> sa.Subquery:
    """The ids of the newest `SHOWN` rows of each of `reasons` (all of one table), each with its
    reason and how many rows the reason takes, counted up to COUNTED + 1: the lists and their
    counts in one statement (a round trip to the database costs more than most of these reads).
    A reason without rows has no line: its count is 0."""
    return sa.union_all(
        *(
            sa.select(
                sa.literal(reason.value, sa.String).label("reason"),
                shown.c.id,
                _count(selections[reason].limit(COUNTED + 1)).label("total"),
            )
            for reason in reasons
            for shown in [_among_newest(reason, selections[reason], scope).limit(SHOWN).subquery()]
        )
    ).subquery()


def _among_newest(reason: Reason, selection: sa.Select, scope: _Scope) -> sa.Select:
    """`selection` cut to where its newest `SHOWN` rows are. Those of `LATE` belong to the
    operations whose newest waiting transaction is newest (the mirror keeps its time,
    `late_since`): no more than `SHOWN` of them, beside one for each operation a decision since
    the last sync may have hidden, and any as new as the last of those. So only their
    transactions are sorted, not every late one.

    Those operations' ids are read first, so that the statement names them. Named by a
    subquery, they were a guess to PostgreSQL's planner (a third of the late operations), which
    then walked the merchant's transactions newest first in parallel workers, one of which read
    them all: seconds a page at a million operations (docs/performance.md, "Seventh run")."""
    if reason is not Reason.LATE:
        return selection
    late = _late_operations(scope.merchant_id, "ix_mirrored_operations_merchant_late_since")
    enough = SHOWN + len(scope.handled_operations)
    newest = (
        late.with_only_columns(MirroredOperation.late_since)
        .order_by(MirroredOperation.late_since.desc())
        .limit(enough)
        .subquery()
    )
    oldest_kept = sa.select(sa.func.min(newest.c.late_since)).scalar_subquery()
    operations = db.session.scalars(late.where(MirroredOperation.late_since >= oldest_kept))
    return _late(_unlinked(scope), list(operations))


def _count(selection: sa.Select) -> sa.ScalarSelect[int]:
    return (
        sa.select(sa.func.count())
        .select_from(selection.order_by(None).subquery())
        .scalar_subquery()
    )


def counts(
    merchant_id: int, synced: datetime | None = None, *, up_to: int | None = None
) -> dict[Reason, int]:
    """How many items of each reason, in one query, each counted up to `up_to` when given;
    `synced` as `_Scope.of`."""
    selections = _selections(_Scope.of(merchant_id, synced))
    totals = [
        _count(selection if up_to is None else selection.limit(up_to)).label(reason.value)
        for reason, selection in selections.items()
    ]
    row = db.session.execute(sa.select(*totals)).one()
    return {reason: row._mapping[reason.value] for reason in selections}


def menu_count(merchant_id: int, synced: datetime | None = None) -> int:
    """The menu's figure: everything that waits for a decision, each reason counted up to
    COUNTED + 1 as the list counts it. Exact up to COUNTED; past it the menu says so rather
    than how many (`badge_count`), so the count costs every sync the same at any size (whole,
    it read every waiting row of a merchant with a million operations at each sync)."""
    return sum(counts(merchant_id, synced, up_to=COUNTED + 1).values())


def recount(merchant_id: int) -> None:
    """Count what waits for a decision again (`menu_count`) and keep it on the mirror's state,
    for the menu (a sync keeps its own count, `portal.live.rules.mirror`). The caller commits."""
    db.session.execute(
        sa.update(MirrorState)
        .where(MirrorState.merchant_id == merchant_id)
        .values(attention_count=menu_count(merchant_id))
        .execution_options(synchronize_session=False)
    )


def count(merchant: Merchant) -> int:
    """Everything that waits for a decision (`menu_count`): the figure in the menu of every
    page, as the last sync or decision counted it (`recount`), read with the signed-in session:
    no query of its own. The attention page itself always counts afresh."""
    state = merchant.mirror_state
    return state.attention_count if state is not None and state.last_sync_at else 0


def needs_attention(merchant_id: int) -> list[Group]:
    """Each reason with its newest `SHOWN` items and how many there are: the transactions'
    reasons in one query (after the ids of the late operations it shows, `_among_newest`), the
    operations' in another."""
    scope = _Scope.of(merchant_id)
    selections = _selections(scope)
    return _groups(
        list(selections),
        _newest(selections, OF_TRANSACTIONS, scope),
        _newest(selections, OF_OPERATIONS, scope),
    )


def waiting(merchant_id: int, reason: Reason) -> sa.Select:
    """The ids of `reason`'s items, newest first: its own list, read by pages (`group`)."""
    return _selections(_Scope.of(merchant_id))[reason]


def group(reason: Reason, ids: list[int], total: int) -> Group:
    """`reason` with the items of `ids` (a page of `waiting`), newest first, and `total`."""
    of_transactions = reason in OF_TRANSACTIONS
    model = MirroredTransaction if of_transactions else MirroredOperation
    shown = (
        sa.select(
            sa.literal(reason.value, sa.String).label("reason"),
            model.id,
            sa.literal(total).label("total"),
        )
        .where(model.id.in_(ids))
        .subquery()
    )
    (found,) = _groups([reason], *((shown, None) if of_transactions else (None, shown)))
    return Group(reason, total, found.items)


def _groups(
    reasons: list[Reason], transactions: sa.Subquery | None, operations: sa.Subquery | None
) -> list[Group]:
    """`reasons` with the rows of `transactions` and `operations` (subqueries of ids, each
    with its reason and count, as `_newest` makes them; None: none of that table)."""
    totals = dict.fromkeys(reasons, 0)
    items: dict[Reason, list] = {reason: [] for reason in reasons}
    if transactions is not None:
        found = db.session.execute(_transaction_rows(transactions))
        for transaction, currency, status, order_id, reason, total in found:
            totals[Reason(reason)] = total
            items[Reason(reason)].append(TransactionItem(transaction, currency, status, order_id))
    if operations is not None:
        for operation, record, reason, total in db.session.execute(_operation_rows(operations)):
            totals[Reason(reason)] = total
            items[Reason(reason)].append(_operation_item(operation, record))
    return [Group(reason, totals[reason], items[reason]) for reason in reasons]


def _operation_item(row: MirroredOperation, record: dict | None) -> OperationItem:
    """The operation with the state the mirror keeps, and its due (`amount_due`): its amount
    when paid in its own currency, else read from the API's `record`, which holds the rate."""
    state = State(row.state) if row.state else None
    if row.currency == row.currency_paid:
        return OperationItem(row, state, row.amount, row.difference)
    try:  # the due does not depend on the transactions: read without them (half the time)
        due = amount_due(parse_record(Operation, {**(record or {}), "transactions": []}))
    except MalformedAnswer:  # a record the portal cannot read: no due to show
        due = None
    return OperationItem(row, state, due, row.difference)


def settleable(merchant_id: int, operation_id: str) -> MirroredOperation | None:
    """The operation if it is on the list to be settled (`DIFFERENCE`), else None."""
    selection = _selections(_Scope.of(merchant_id))[Reason.DIFFERENCE]
    return db.session.scalars(
        sa.select(MirroredOperation).where(
            MirroredOperation.id.in_(
                selection.where(MirroredOperation.operation_id == operation_id)
            )
        )
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
