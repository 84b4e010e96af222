"""Transactions with the currency they were paid in.

The API writes a transaction's amount without its currency: it is the currency its operation was
paid in (`currency_paid`). The operations of one page of transactions are read with
one more request, by their ids, so a list or an export asks once per page, never per row.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import sqlalchemy as sa

from portal.api import OPERATION_LIST, MerchantApiClient, Operation, Page, PageReader, Transaction
from portal.extensions import db
from portal.payments.models import MirroredOperation


@dataclass(frozen=True)
class PaidTransaction:
    """A transaction and its currency (None when its operation could not be read)."""

    transaction: Transaction
    currency: str | None

    @property
    def id(self) -> str:
        return self.transaction.id


def fetch_paid(api: MerchantApiClient, **filters: Any) -> PageReader[PaidTransaction]:
    """Ask for one page of the transactions list; the function returned reads it,
    each transaction with its currency.

    The transactions are read at once: their operations' ids make the second request. The
    operations are read with the page, where it is used (`portal.api.paging`).
    """
    transactions = api.list_transactions(**filters)
    operation_ids = sorted({tx.operation_id for tx in transactions.items if tx.operation_id})
    operations = None
    if operation_ids:
        operations = api.fetch_page(OPERATION_LIST, id=operation_ids, per_page=len(operation_ids))
    return partial(_paid, transactions, operations)


def _paid(
    transactions: Page[Transaction], operations: PageReader[Operation] | None
) -> Page[PaidTransaction]:
    currencies: dict[str, str] = {}
    if operations is not None:
        currencies = {operation.id: operation.currency_paid for operation in operations().items}
    paid = tuple(
        PaidTransaction(tx, currencies.get(tx.operation_id or "")) for tx in transactions.items
    )
    return Page(
        paid,
        transactions.total,
        transactions.current_page,
        transactions.last_page,
        transactions.per_page,
        transactions.from_,
        transactions.to,
    )


def operation_transactions(operation: Operation) -> list[PaidTransaction]:
    """The operation's embedded transactions, each carrying the operation's id and currency."""
    return [
        PaidTransaction(replace(tx, operation_id=operation.id), operation.currency_paid)
        for tx in operation.transactions
    ]


def mirrored_currency(merchant_id: int, operation_id: str | None) -> str | None:
    """The currency a transaction's operation was paid in, as the mirror has it (None when it
    has not seen it): one transaction's page learns it without another request to the API."""
    if not operation_id:
        return None
    return db.session.scalar(
        sa.select(MirroredOperation.currency_paid).where(
            MirroredOperation.merchant_id == merchant_id,
            MirroredOperation.operation_id == operation_id,
        )
    )
