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

from portal.api import (
    OPERATION_LIST,
    TRANSACTION_STATUSES,
    MerchantApiClient,
    Operation,
    Page,
    PageReader,
    Transaction,
)
from portal.extensions import db
from portal.payments.models import MirroredOperation, MirroredTransaction
from portal.payments.rules.mirror_money import mirrored_transaction
from portal.payments.rules.operation_list import (
    MirrorPage,
    mirror_descending,
    mirror_page_of,
    mirror_rows,
)


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


# The transactions list's sorts and filters the mirror's columns answer (amounts are kept as
# exact text, which a database does not compare as numbers).
MIRROR_SORTS: dict[str, Any] = {
    "id": MirroredTransaction.transaction_id,
    "operation": MirroredTransaction.operation_id,
    "linked": MirroredTransaction.linked,
    "reject_reason": MirroredTransaction.reject_reason,
    "created_at": MirroredTransaction.created_at,
    "updated_at": MirroredTransaction.updated_at,
}
MIRROR_FILTERS = frozenset(
    {"id", "operation_id", "tx_id", "status", "linked", "reject_reason", "sort", "sort_type"}
    | {"page", "per_page"}
)


def mirror_paid(
    merchant_id: int,
    *,
    page: int = 1,
    per_page: int = 50,
    sort: str | None = None,
    sort_type: str | None = None,
    **filters: Any,
) -> MirrorPage:
    """A page of the merchant's mirrored transactions that match `filters` (those of
    `MIRROR_FILTERS`), each with its operation's payment currency: while the API does not
    answer."""
    query = sa.select(MirroredTransaction).where(
        MirroredTransaction.merchant_id == merchant_id, *_conditions(**filters)
    )
    column = MIRROR_SORTS[sort] if sort else MirroredTransaction.created_at
    descending = mirror_descending(sort, sort_type)
    rows, total = mirror_rows(MirroredTransaction, query, column, descending, page, per_page)
    paid_in = db.session.execute(
        sa.select(MirroredOperation.operation_id, MirroredOperation.currency_paid).where(
            MirroredOperation.merchant_id == merchant_id,
            MirroredOperation.operation_id.in_({row.operation_id for row in rows}),
        )
    )
    currencies: dict[str, str | None] = {operation: paid for operation, paid in paid_in}
    items = tuple(
        PaidTransaction(mirrored_transaction(row), currencies.get(row.operation_id or ""))
        for row in rows
    )
    return mirror_page_of(merchant_id, items, total, page, per_page)


def _conditions(
    *,
    id: list[str] | None = None,
    operation_id: list[str] | None = None,
    tx_id: str | None = None,
    status: list[int] | None = None,
    linked: bool | None = None,
    reject_reason: str | None = None,
) -> list[sa.ColumnElement[bool]]:
    """The filters as the API reads them: lists match any of their values, the others
    exactly."""
    conditions: list[sa.ColumnElement[bool]] = []
    for column, values in (
        (MirroredTransaction.transaction_id, id),
        (MirroredTransaction.operation_id, operation_id),
        (MirroredTransaction.status, [TRANSACTION_STATUSES[code] for code in status or ()]),
    ):
        if values:
            conditions.append(column.in_(values))
    if tx_id:
        conditions.append(MirroredTransaction.tx_id == tx_id)
    if linked is not None:
        conditions.append(MirroredTransaction.linked == linked)
    if reject_reason:
        conditions.append(MirroredTransaction.reject_reason == reject_reason)
    return conditions


def mirrored_by_id(merchant_id: int, transaction_id: str) -> Transaction | None:
    """The transaction as the mirror last saw it; None when it has none."""
    row = db.session.scalars(
        sa.select(MirroredTransaction).where(
            MirroredTransaction.merchant_id == merchant_id,
            MirroredTransaction.transaction_id == transaction_id,
        )
    ).first()
    return mirrored_transaction(row) if row else None
