"""How far a `new` operation has been paid: nothing yet, in part, in full, or beyond.

The API has one status, `new`, for an operation that no payment reached and for one that
already received money; a person must tell them apart (a partly paid operation is not to be
canceled lightly). The amount due is in the payment currency: the amount times the rate,
rounded up to the 8 decimals of the API's amounts, as the payment page asks for it.
"""

from __future__ import annotations

import enum
from decimal import ROUND_CEILING, Decimal

from portal.api import Operation
from portal.money.rules.currencies import SMALLEST_AMOUNT

# Statuses in which an operation can still change by itself (a payment, an expiry).
OPEN_STATUSES = frozenset({"new"})


class Progress(enum.StrEnum):
    """Money received on a `new` operation, compared with the amount due."""

    PARTLY_PAID = "partly-paid"
    PAID = "paid"  # the whole amount arrived; the API has not confirmed the operation yet
    OVERPAID = "overpaid"


def amount_due(operation: Operation) -> Decimal | None:
    """What the customer owes in the payment currency: the amount itself, or the amount at the
    operation's rate; None when the API gave no rate to convert with (unknown, not zero)."""
    if operation.currency == operation.currency_paid:
        return operation.amount
    if operation.rate <= 0:
        return None
    return (operation.amount * operation.rate).quantize(SMALLEST_AMOUNT, ROUND_CEILING)


def progress(operation: Operation) -> Progress | None:
    """The payment state of a `new` operation that received money; None otherwise."""
    paid = operation.amount_paid
    if operation.status != "new" or paid is None or paid <= 0:
        return None
    due = amount_due(operation)
    if due is None or paid < due:  # without a rate, money arrived but the whole is unknown
        return Progress.PARTLY_PAID
    return Progress.OVERPAID if paid > due else Progress.PAID


def can_change(status: str) -> bool:
    """Whether an operation in `status` may still change without anyone acting on it."""
    return status in OPEN_STATUSES
