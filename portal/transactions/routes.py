"""`/transactions` and `/transactions/<id>`: read-only, each linked to its operation."""

from __future__ import annotations

from functools import partial

from werkzeug.wrappers import Response

from portal.api import ErrorCode
from portal.rules.csv_rows import TRANSACTION_COLUMNS
from portal.rules.paid_transactions import fetch_paid
from portal.transactions import bp
from portal.transactions.forms import TransactionFilters
from portal.web.access import ALL_ROLES, roles
from portal.web.exports import csv_download
from portal.web.lists import ApiList, render_list
from portal.web.merchant import current_api
from portal.web.pages import render_page
from portal.web.refusals import record_or_404

TRANSACTIONS = ApiList(
    TransactionFilters,
    lambda api: partial(fetch_paid, api),  # each with its currency, on the page and in exports
    "transactions/index.html",
    "transactions/_results.html",
)


@bp.route("")
@roles(*ALL_ROLES)
def index() -> Response:
    """The transactions matching the filters of the query string."""
    return render_list(TRANSACTIONS)


@bp.get("/export.csv")
@roles(*ALL_ROLES)
def export_csv() -> Response:
    """The transactions of the list's filters, each with its currency."""
    return csv_download(TRANSACTIONS, "transactions", TRANSACTION_COLUMNS)


@bp.route("/<transaction_id>")
@roles(*ALL_ROLES)
def detail(transaction_id: str) -> Response:
    """Every field of the transaction, with a link to its operation."""
    transaction = record_or_404(
        partial(current_api().get_transaction, transaction_id),
        ErrorCode.TRANSACTION_NOT_FOUND,
        "Transaction not found",
    )
    return render_page(
        "transactions/detail.html", "transactions/detail.html", transaction=transaction
    )
