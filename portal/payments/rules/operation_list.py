"""The operations list: the API's, or by state the mirror's, and each operation with its money,
its state and the value of what it received in the reporting currency for the exports.

The API cannot filter operations by their state (what the money amounts to is this portal's
reading, `operation_money`). The mirror keeps each operation's state as of its last sync
(`MirroredOperation.state`, under the merchant's current connection: connecting elsewhere
empties the mirror), so a list by state reads the mirror's rows, with those of the list's
other filters and sorts its columns can answer (`MIRROR_FILTERS`, `MIRROR_SORTS`), and says
when that sync was (`MirrorPage.as_of`). The refund states are the portal's own (its sent
refunds against the money counted): an operation with a sent refund is in one of them, never in
the state the mirror keeps, and which of the two is read from its money, row by row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from functools import partial
from typing import Any

import sqlalchemy as sa

from portal.api import OPERATION_LIST, OPERATION_STATUSES, MerchantApiClient, Operation, Page
from portal.api.paging import PageReader
from portal.extensions import db
from portal.identity.models import Merchant
from portal.live.rules.events import current_generation
from portal.money.models import IntentState, Refund
from portal.money.rules.ledger import received_values
from portal.payments.models import MirroredOperation
from portal.payments.rules.mirror_money import mirrored_operations
from portal.payments.rules.operation_money import OperationMoney, State, moneys_of
from portal.payments.rules.state_words import state_words

# The list's sorts the mirror's columns answer; amounts are kept as exact text, which a
# database does not sort as numbers, and ids are the API's strings.
MIRROR_SORTS: dict[str, Any] = {
    "created": MirroredOperation.created_at,
    "updated": MirroredOperation.updated_at,
    "category": MirroredOperation.category,
    "order_id": MirroredOperation.order_id,
    "currency": MirroredOperation.currency,
    "currency_paid": MirroredOperation.currency_paid,
}
# The states of an operation's money that its sent refunds give it.
REFUND_STATES = (State.REFUNDED, State.PARTLY_REFUNDED)
# The list's filters the mirror answers besides the state (the others are about amounts).
MIRROR_FILTERS = frozenset(
    {
        "state",
        "id",
        "order_id",
        "category",
        "status",
        "currency",
        "currency_paid",
        "address",
        "created_from",
        "created_to",
        "sort",
        "sort_type",
        "page",
        "per_page",
    }
)


@dataclass(frozen=True)
class MirrorPage(Page[Operation]):
    """A page of operations read from the mirror, `as_of` its last sync (None: none yet)."""

    as_of: datetime | None = None


@dataclass(frozen=True)
class StatedOperation(Operation):
    """An operation for the exports: its money (`operation_money`), its state in words as the
    list's badge says it, and what the money it received is worth in the reporting currency
    (`portal.money.rules.ledger.received_values`; None when not known)."""

    money: OperationMoney | None = None
    state: str = ""
    value: Decimal | None = None


def operation_pages(
    api: MerchantApiClient, merchant: Merchant, **filters: Any
) -> PageReader[Operation]:
    """Ask for a page of the merchant's operations: by `state` from the mirror, otherwise from
    the API. The mirror is read when the page is (on the thread that uses it)."""
    state = filters.pop("state", None)
    if not state:
        return api.fetch_page(OPERATION_LIST, **filters)
    return partial(mirror_page, merchant.id, State(state), **filters)


def stated_operation_pages(
    api: MerchantApiClient, merchant: Merchant
) -> Callable[..., PageReader[StatedOperation]]:
    """How the exports ask for a page of `operation_pages`: each operation with its money, its
    state and the value of what it received in the merchant's reporting currency of now (one
    query to the mirror and one to the ledger a page).

    The merchant's payment tolerance, reporting currency and connection are read here, in the
    request, once for the whole export: pages are asked for on worker threads, and read while
    the download streams, each in a session of its own."""
    merchant_id, reporting = merchant.id, merchant.reporting_currency
    tolerance = merchant.payment_tolerance_percent
    generation = current_generation(merchant_id)

    def fetch(**filters: Any) -> PageReader[StatedOperation]:
        read = operation_pages(api, merchant, **filters)

        def stated() -> Page[StatedOperation]:
            page = read()
            moneys = moneys_of(merchant_id, tolerance, page.items)
            received = {operation.id: moneys[operation.id].received for operation in page.items}
            values = received_values(merchant_id, generation, reporting, received)
            items = tuple(
                StatedOperation(
                    **vars(operation),
                    money=moneys[operation.id],
                    state=state_words(moneys[operation.id].state, operation.status),
                    value=values[operation.id],
                )
                for operation in page.items
            )
            return Page(
                items,
                page.total,
                page.current_page,
                page.last_page,
                page.per_page,
                page.from_,
                page.to,
            )

        return stated

    return fetch


def mirror_page(
    merchant_id: int,
    state: State | None,
    *,
    page: int = 1,
    per_page: int = 50,
    sort: str | None = None,
    sort_type: str | None = None,
    **filters: Any,
) -> MirrorPage:
    """A page of the merchant's mirrored operations in `state` (any when None) that match
    `filters` (those of `MIRROR_FILTERS`), sorted as the API sorts (newest first unless asked
    otherwise, ties by the order the mirror first saw them)."""
    query = sa.select(MirroredOperation).where(
        MirroredOperation.merchant_id == merchant_id, *_conditions(**filters)
    )
    column = MIRROR_SORTS[sort] if sort else MirroredOperation.created_at
    descending = mirror_descending(sort, sort_type)
    refunded = sa.select(Refund.operation_id).where(
        Refund.merchant_id == merchant_id, Refund.state == IntentState.SENT
    )
    if state in REFUND_STATES:
        query = query.where(MirroredOperation.operation_id.in_(refunded))
        return _refund_page(merchant_id, state, query, column, descending, page, per_page)
    if state is not None:
        query = query.where(
            MirroredOperation.state == state.value,
            MirroredOperation.operation_id.not_in(refunded),
        )
    rows, total = mirror_rows(MirroredOperation, query, column, descending, page, per_page)
    operations = mirrored_operations(merchant_id, rows)
    items = tuple(operations[row.operation_id] for row in rows if row.operation_id in operations)
    return mirror_page_of(merchant_id, items, total, page, per_page)


def _refund_page(
    merchant_id: int,
    state: State,
    query: sa.Select,
    column: Any,
    descending: bool,
    page: int,
    per_page: int,
) -> MirrorPage:
    """A page of the operations of `query` (those with a sent refund) whose money is in
    `state`: each one's money is read, as few as the portal's refunds made."""
    rows = list(db.session.scalars(query.order_by(*_order(MirroredOperation, column, descending))))
    operations = mirrored_operations(merchant_id, rows)
    tolerance = db.session.get_one(Merchant, merchant_id).payment_tolerance_percent
    moneys = moneys_of(merchant_id, tolerance, operations.values())
    matching = [o for o in operations.values() if moneys[o.id].state is state]
    offset = (page - 1) * per_page
    items = tuple(matching[offset : offset + per_page])
    return mirror_page_of(merchant_id, items, len(matching), page, per_page)


def mirror_list(merchant_id: int, state: str | None = None, **filters: Any) -> MirrorPage:
    """The operations list read from the mirror, by any of `MIRROR_FILTERS` (the list's
    filters as they reach `operation_pages`): while the API does not answer."""
    return mirror_page(merchant_id, State(state) if state else None, **filters)


def mirror_descending(sort: str | None, sort_type: str | None) -> bool:
    """The API's order: newest first unless asked otherwise; a named sort ascending unless
    asked `desc`."""
    return sort_type == "desc" if sort else sort_type != "asc"


def mirror_rows(
    model: Any, query: sa.Select, column: Any, descending: bool, page: int, per_page: int
) -> tuple[list[Any], int]:
    """The rows of `query`'s page sorted by `column` (ties by the order the mirror first saw
    them), and how many rows it has in all."""
    total = db.session.scalar(sa.select(sa.func.count()).select_from(query.subquery())) or 0
    order = _order(model, column, descending)
    offset = (page - 1) * per_page
    return list(db.session.scalars(query.order_by(*order).offset(offset).limit(per_page))), total


def _order(model: Any, column: Any, descending: bool) -> tuple[Any, Any]:
    """By `column`, ties by the order the mirror first saw the rows."""
    return (column.desc(), model.id.desc()) if descending else (column, model.id)


def mirror_page_of(
    merchant_id: int, items: tuple[Any, ...], total: int, page: int, per_page: int
) -> MirrorPage:
    """A page of `items` read from the mirror, as of its last sync."""
    offset = (page - 1) * per_page
    return MirrorPage(
        items,
        total,
        page,
        max(1, -(-total // per_page)),
        per_page,
        offset + 1 if items else None,
        offset + len(items) if items else None,
        as_of=db.session.get_one(Merchant, merchant_id).last_synced_at,
    )


def _conditions(
    *,
    id: list[str] | None = None,
    order_id: list[str] | None = None,
    category: str | None = None,
    status: list[int] | None = None,
    currency: list[str] | None = None,
    currency_paid: list[str] | None = None,
    address: str | None = None,
    created_from: date | None = None,
    created_to: date | None = None,
) -> list[sa.ColumnElement[bool]]:
    """The filters as the API reads them: lists match any of their values, an address and a
    category exactly, dates are whole days in UTC."""
    conditions: list[sa.ColumnElement[bool]] = []
    for column, values in (
        (MirroredOperation.operation_id, id),
        (MirroredOperation.order_id, order_id),
        (MirroredOperation.currency, currency),
        (MirroredOperation.currency_paid, currency_paid),
        (MirroredOperation.status, [OPERATION_STATUSES[code] for code in status or ()]),
    ):
        if values:
            conditions.append(column.in_(values))
    if category:
        conditions.append(MirroredOperation.category == category)
    if address:
        conditions.append(MirroredOperation.address == address)
    if created_from:
        conditions.append(MirroredOperation.created_at >= _midnight(created_from))
    if created_to and created_to < date.max:
        conditions.append(MirroredOperation.created_at < _midnight(created_to + timedelta(days=1)))
    return conditions


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, UTC)


def mirrored_operation(merchant_id: int, operation_id: str) -> Operation | None:
    """The operation as the mirror last saw it, with its transactions; None when it has none."""
    row = db.session.scalars(
        sa.select(MirroredOperation).where(
            MirroredOperation.merchant_id == merchant_id,
            MirroredOperation.operation_id == operation_id,
        )
    ).first()
    return mirrored_operations(merchant_id, [row]).get(operation_id) if row else None
