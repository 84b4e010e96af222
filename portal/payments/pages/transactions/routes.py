"""`/transactions` and `/transactions/<id>`: read-only, each linked to its operation."""

from __future__ import annotations

from functools import partial

from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import ErrorCode
from portal.payments.pages.transactions import bp
from portal.payments.pages.transactions.forms import TransactionFilters
from portal.payments.rules.paid_transactions import (
    MIRROR_FILTERS,
    MIRROR_SORTS,
    fetch_paid,
    mirror_paid,
    mirrored_by_id,
    mirrored_currency,
)
from portal.reports.rules.csv_rows import TRANSACTION_COLUMNS
from portal.web.access import ALL_ROLES, roles
from portal.web.api_errors import mirrored_or_404, read_or_mirror, record_or_404
from portal.web.exports import list_download
from portal.web.lists import ApiList, Mirrored, render_list
from portal.web.merchant import current_api
from portal.web.rendering import render_page

TRANSACTIONS = ApiList(
    TransactionFilters,
    lambda api: partial(fetch_paid, api),  # each with its currency, on the page and in exports
    "transactions/index.html",
    "transactions/_results.html",
    lambda: Mirrored(
        partial(mirror_paid, current_user.merchant_id), MIRROR_FILTERS, frozenset(MIRROR_SORTS)
    ),
)


@bp.route("")
@roles(*ALL_ROLES)
def index() -> Response:
    """The transactions matching the filters of the query string."""
    return render_list(TRANSACTIONS)


@bp.get("/export.csv")
@bp.get("/export.xlsx", endpoint="export_xlsx")
@roles(*ALL_ROLES)
def export_csv() -> Response:
    """The transactions of the list's filters, each with its currency."""
    return list_download(TRANSACTIONS, "transactions", TRANSACTION_COLUMNS)


@bp.route("/<transaction_id>")
@roles(*ALL_ROLES)
def detail(transaction_id: str) -> Response:
    """Every field of the transaction, with a link to its operation."""
    title = "Transaction not found"
    transaction = read_or_mirror(
        lambda: record_or_404(
            partial(current_api().get_transaction, transaction_id),
            ErrorCode.TRANSACTION_NOT_FOUND,
            title,
        ),
        lambda: mirrored_or_404(mirrored_by_id(current_user.merchant_id, transaction_id), title),
    )
    currency = mirrored_currency(current_user.merchant_id, transaction.operation_id)
    return render_page(
        "transactions/detail.html",
        "transactions/detail.html",
        transaction=transaction,
        currency=currency,
    )
