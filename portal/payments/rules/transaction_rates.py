"""The transactions of operations, each with its order number and the rate its money is valued
at in the merchant's reporting currency (the per-transaction export).

A payment is valued as the ledger values money (`portal.money.rules.ledger.valuation`): paid to
an operation priced in the reporting currency, at one over the operation's own rate, fixed when
the operation was created; otherwise at the market rate the portal recorded at or before the
transaction's time as the API gives it (`created_at`), no older than `FRESH_FOR`. The rates in
force at the times of all the transactions of a chunk of operations are read at once, and those
alone: a chunk sorted by amount spans the whole history.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from portal.api import Operation
from portal.identity.models import Merchant
from portal.live.rules.events import current_generation
from portal.money.rules.ledger import NO_RATE, Valuation, valuation
from portal.money.rules.rate_history import RateBook
from portal.payments.rules.paid_transactions import PaidTransaction, operation_transactions


@dataclass(frozen=True)
class RatedTransaction(PaidTransaction):
    """A transaction of an operation, the operation's order number, and the rate of its money
    in the reporting currency (`rating.rate` None: no rate)."""

    order_id: str | None = None
    rating: Valuation = NO_RATE


def rated_transactions(
    merchant: Merchant,
) -> Callable[[Sequence[Operation]], list[RatedTransaction]]:
    """How a chunk of the merchant's operations becomes its transactions with their rates, in
    the reporting currency of now (one query for the rates of the whole chunk)."""
    merchant_id, reporting = merchant.id, merchant.reporting_currency
    generation = current_generation(merchant_id)

    def rated(operations: Sequence[Operation]) -> list[RatedTransaction]:
        paid = [(o, tx) for o in operations for tx in operation_transactions(o)]
        moments = (tx.transaction.created_at for _, tx in paid)
        rates = RateBook.in_force_at(merchant_id, generation, moments)
        return [
            RatedTransaction(
                tx.transaction,
                tx.currency,
                order_id=operation.order_id,
                rating=valuation(
                    tx.transaction.amount,
                    operation.currency_paid,
                    reporting,
                    tx.transaction.created_at,
                    rates,
                    priced_in=operation.currency,
                    operation_rate=operation.rate,
                    operation_at=operation.created_at,
                ),
            )
            for operation, tx in paid
        ]

    return rated
