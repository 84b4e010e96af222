"""The money of one operation, read one way everywhere (the money model, design §5a).

Due against received, what awaits a person's decision, what a link left out, the fee, and the
one state that badges, timelines, mails, webhooks, exports and the customer's page all say.
The API knows a status (`new`, `confirmed`, ...); a person needs to know whether the money is
right: an operation the API calls `confirmed` may be a quarter paid after a manual link.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

import sqlalchemy as sa

from portal.api import Operation
from portal.extensions import db
from portal.identity.models import Merchant
from portal.money.models import IntentState, Refund
from portal.money.rules.currencies import SMALLEST_AMOUNT
from portal.payments.models import MirroredOperation

# Statuses in which an operation can still change by itself (a payment, an expiry).
OPEN_STATUSES = frozenset({"new"})
# Statuses after which no payment is expected: money that still arrives came late.
ENDED_STATUSES = frozenset({"expired", "canceled", "failed"})
WITHDRAWAL_CATEGORIES = frozenset({"transfer", "internal_transfer"})
ZERO = Decimal(0)
HUNDRED = Decimal(100)


class State(enum.StrEnum):
    """What the money of an operation amounts to; the value is the webhook's `portal.state`."""

    PAID_LATE = "paid_late"
    UNDERPAID = "underpaid"
    OVERPAID = "overpaid"
    PAID = "paid"
    PAID_UNCONFIRMED = "paid_unconfirmed"
    PARTLY_PAID = "partly_paid"
    AWAITING_DECISION = "awaiting_decision"
    AWAITING_PAYMENT = "awaiting_payment"
    EXPIRED = "expired"
    CANCELED = "canceled"
    FAILED = "failed"
    SENT = "sent"
    REFUNDED = "refunded"  # all the money counted went back to the customer
    PARTLY_REFUNDED = "partly_refunded"  # some of it did (a surplus, say)

    @property
    def needs_attention(self) -> bool:
        """Money that arrived wrong: someone must settle it (refund, top-up, accept)."""
        return self in (State.PAID_LATE, State.UNDERPAID, State.OVERPAID)

    @property
    def refundable(self) -> bool:
        """Money arrived and nothing else is pending on it: it may go back (`refunds`)."""
        return self in (
            State.PAID_LATE,
            State.UNDERPAID,
            State.OVERPAID,
            State.PAID,
            State.PARTLY_REFUNDED,
        )


@dataclass(frozen=True)
class OperationMoney:
    """The figures of one operation, all in its payment currency (`currency`).

    `due` is None when the API gave no rate to convert with: unknown, not zero, and then
    neither is the difference known.
    """

    currency: str
    due: Decimal | None
    received: Decimal
    awaiting: Decimal  # arrived, neither linked nor rejected: a person must decide
    not_counted: Decimal  # confirmed transactions that a link left out
    fee: Decimal | None
    difference: Decimal | None  # received - due; zero within the merchant's tolerance
    state: State | None  # None: a status this portal does not know (shown as the API wrote it)
    status: str
    refunded: Decimal = ZERO  # sent back to the customer by refunds through the portal

    @property
    def net(self) -> Decimal:
        return self.received - (self.fee or ZERO)

    @property
    def shortfall(self) -> Decimal:
        return -self.difference if self.difference is not None and self.difference < 0 else ZERO

    @property
    def surplus(self) -> Decimal:
        return self.difference if self.difference is not None and self.difference > 0 else ZERO


def amount_due(operation: Operation) -> Decimal | None:
    """What the customer owes in the payment currency: the amount itself, or the amount at the
    operation's rate rounded up to 8 decimals; None when the API gave no rate to convert with."""
    if operation.currency == operation.currency_paid:
        return operation.amount
    if operation.rate <= 0:
        return None
    return (operation.amount * operation.rate).quantize(SMALLEST_AMOUNT, ROUND_CEILING)


def fee_paid_in(operation: Operation) -> Decimal | None:
    """The fee (charged in `currency`) in the payment currency, rounded down; None without a
    rate to convert with."""
    if operation.currency == operation.currency_paid:
        return operation.fee
    if operation.rate <= 0:
        return None
    return (operation.fee * operation.rate).quantize(SMALLEST_AMOUNT, ROUND_FLOOR)


def operation_money(
    operation: Operation, tolerance_percent: Decimal = ZERO, *, ended_before: bool = False
) -> OperationMoney:
    """The money of `operation`. `tolerance_percent` of the due treats a smaller difference as
    none (the merchant's payment tolerance); `ended_before` says the operation had expired, been
    canceled or failed before a link confirmed it (the mirror remembers it), which makes the
    money late however the API words the status now."""
    due = amount_due(operation)
    received = operation.amount_paid or ZERO
    transactions = operation.transactions
    undecided = sum(
        (t.amount for t in transactions if t.status == "undefined" and not t.linked), ZERO
    )
    any_linked = any(t.linked for t in transactions)
    unlinked_confirmed = sum(
        (t.amount for t in transactions if t.status == "confirmed" and not t.linked), ZERO
    )
    not_counted = unlinked_confirmed if any_linked else ZERO
    awaiting = undecided
    if operation.status in ENDED_STATUSES and not any_linked:
        # Confirmed money that reached an ended operation: the API no longer counts it.
        awaiting += max(unlinked_confirmed - received, ZERO)
    difference = None
    if due is not None:
        difference = received - due
        if abs(difference) <= due * tolerance_percent / HUNDRED:
            difference = ZERO
    return OperationMoney(
        currency=operation.currency_paid,
        due=due,
        received=received,
        awaiting=awaiting,
        not_counted=not_counted,
        fee=fee_paid_in(operation) if operation.status == "confirmed" else None,
        difference=difference,
        state=_state(operation, received, awaiting, difference, ended_before),
        status=operation.status,
    )


def _state(
    operation: Operation,
    received: Decimal,
    awaiting: Decimal,
    difference: Decimal | None,
    ended_before: bool,
) -> State | None:
    """The first state that matches, in the money model's order."""
    status = operation.status
    if operation.category in WITHDRAWAL_CATEGORIES:
        return State.FAILED if status == "failed" else State.SENT
    ended = status in ENDED_STATUSES
    if (ended and (received > 0 or awaiting > 0)) or (status == "confirmed" and ended_before):
        return State.PAID_LATE
    if status == "confirmed" and difference is not None and difference < 0:
        return State.UNDERPAID
    if difference is not None and difference > 0 and received > 0:
        return State.OVERPAID
    if status == "confirmed":
        return State.PAID
    if status == "new":
        if received > 0:
            return State.PAID_UNCONFIRMED if difference == 0 else State.PARTLY_PAID
        return State.AWAITING_DECISION if awaiting > 0 else State.AWAITING_PAYMENT
    if ended:
        return State(status)
    return None


def can_change(status: str) -> bool:
    """Whether an operation in `status` may still change without anyone acting on it."""
    return status in OPEN_STATUSES


def moneys_of(
    merchant_id: int, tolerance_percent: Decimal, operations: Iterable[Operation]
) -> dict[str, OperationMoney]:
    """The money of each of the merchant's `operations` by id, read as the mirror would: with
    the merchant's payment tolerance, and late when the mirror saw the operation end (one
    query). The merchant's id and tolerance rather than the merchant: an export reads them once
    in its request, not again for each page it streams in a session of its own."""
    operations = list(operations)
    ended = set(
        db.session.scalars(
            sa.select(MirroredOperation.operation_id).where(
                MirroredOperation.merchant_id == merchant_id,
                MirroredOperation.operation_id.in_([o.id for o in operations]),
                MirroredOperation.ended_status.is_not(None),
            )
        )
    )
    refunded = _refunded(merchant_id, [o.id for o in operations])
    return {
        o.id: _with_refunds(
            operation_money(o, tolerance_percent, ended_before=o.id in ended), refunded.get(o.id)
        )
        for o in operations
    }


def _refunded(merchant_id: int, operation_ids: list[str]) -> dict[str, Decimal]:
    """What sent refunds gave back of each of these operations, by id (one query)."""
    rows = db.session.execute(
        sa.select(Refund.operation_id, Refund.amount).where(
            Refund.merchant_id == merchant_id,
            Refund.operation_id.in_(operation_ids),
            Refund.state == IntentState.SENT,
        )
    )
    totals: dict[str, Decimal] = {}
    for operation_id, amount in rows:
        totals[operation_id] = totals.get(operation_id, ZERO) + amount
    return totals


def _with_refunds(money: OperationMoney, refunded: Decimal | None) -> OperationMoney:
    """The money with what refunds sent back: *refunded* when all that was counted went back,
    else *partly refunded*."""
    if not refunded:
        return money
    state = State.REFUNDED if refunded >= money.received else State.PARTLY_REFUNDED
    return replace(money, refunded=refunded, state=state)


def money_of(merchant: Merchant, operation: Operation) -> OperationMoney:
    """The money of one of the merchant's operations (`moneys_of`)."""
    return moneys_of(merchant.id, merchant.payment_tolerance_percent, [operation])[operation.id]
