"""The rows of the operations and transactions tables, each worked out in one Python call.

A list page shows up to 100 rows of a dozen values each; written with template calls
(`when(...)`, `| money`, badges) a row cost Jinja some ten calls of its own. Here a row's cells
are made at once with the same functions, so the pages read exactly as any other page, and the
templates (the lists, the dashboard's latest operations) loop over `operation_rows(...)` or
`transaction_rows(...)` and place the cells. Texts of the API stay plain strings:
the template escapes them as it escapes any value; the cells that are markup already (`when`,
badges) are `Markup`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from flask import Flask
from flask_login import current_user
from markupsafe import Markup

from portal.api import TRANSACTION_STATUSES, Operation
from portal.payments.pages.state_badges import state_badge
from portal.payments.rules.operation_money import moneys_of
from portal.payments.rules.paid_transactions import PaidTransaction
from portal.web.formatting import badge, category_name, money, when
from portal.web.lists import record_url

# What a cell shows for a value the API left empty.
NONE = "—"


class OperationRow(NamedTuple):
    """An operation as the operations list shows it."""

    url: str
    id: str
    created: Markup
    order_id: str
    category: str
    amount: str
    amount_paid: str
    fee: str
    status: Markup


class TransactionRow(NamedTuple):
    """A transaction of the transactions list, with its operation's link (None without one)."""

    url: str
    id: str
    operation_url: str | None
    operation_id: str | None
    created: Markup
    updated: Markup
    amount: str
    currency: str
    status: Markup
    linked: str
    reject_reason: str


def operation_rows(operations: Iterable[Operation]) -> list[OperationRow]:
    """The rows of the signed-in merchant's `operations`, each with its state's badge, their
    links built from one address (`record_url`)."""
    url = record_url("operations.detail", "operation_id")
    operations = list(operations)
    merchant = current_user.merchant
    moneys = moneys_of(merchant.id, merchant.payment_tolerance_percent, operations)
    return [
        OperationRow(
            url(operation.id),
            operation.id,
            when(operation.created_at),
            operation.order_id or NONE,
            category_name(operation.category),
            money(operation.amount, operation.currency),
            money(operation.amount_paid, operation.currency_paid),
            money(operation.fee, operation.currency),
            state_badge(moneys[operation.id].state, operation.status),
        )
        for operation in operations
    ]


def transaction_rows(paid: Iterable[PaidTransaction]) -> list[TransactionRow]:
    """The rows of transactions with their currency (in a column of its own, so the amount is
    written without it)."""
    url = record_url("transactions.detail", "transaction_id")
    operation_url = record_url("operations.detail", "operation_id")
    rows = []
    for each in paid:
        transaction = each.transaction
        operation_id = transaction.operation_id
        rows.append(
            TransactionRow(
                url(transaction.id),
                transaction.id,
                operation_url(operation_id) if operation_id else None,
                operation_id,
                when(transaction.created_at),
                when(transaction.updated_at),
                money(transaction.amount),
                each.currency or NONE,
                badge(transaction.status, TRANSACTION_STATUSES),
                "Yes" if transaction.linked else "No",
                transaction.reject_reason or NONE,
            )
        )
    return rows


def init_app(app: Flask) -> None:
    app.add_template_global(operation_rows)
    app.add_template_global(transaction_rows)
