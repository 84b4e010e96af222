"""Transactions with the currency they were paid in.

The API writes a transaction's amount without its currency: it is the currency its operation was
paid in (`currency_paid`, section 2.1). The operations of one page of transactions are read with
one more request, by their ids, so a list or an export asks once per page, never per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from portal.api import MerchantApiClient, Page, Transaction


@dataclass(frozen=True)
class PaidTransaction:
    """A transaction and its currency (None when its operation could not be read)."""

    transaction: Transaction
    currency: str | None

    @property
    def id(self) -> str:
        return self.transaction.id


def list_paid(api: MerchantApiClient, **filters: Any) -> Page[PaidTransaction]:
    """One page of the transactions list (section 4.7), each with its currency."""
    page = api.list_transactions(**filters)
    operation_ids = sorted({tx.operation_id for tx in page.items if tx.operation_id})
    currencies: dict[str, str] = {}
    if operation_ids:
        operations = api.list_operations(id=operation_ids, per_page=len(operation_ids))
        currencies = {operation.id: operation.currency_paid for operation in operations.items}
    paid = tuple(PaidTransaction(tx, currencies.get(tx.operation_id or "")) for tx in page.items)
    return Page(
        paid, page.total, page.current_page, page.last_page, page.per_page, page.from_, page.to
    )
