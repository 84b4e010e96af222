"""`/transactions` and `/transactions/<id>`: read-only, each linked to its operation."""

from __future__ import annotations

from flask import abort
from werkzeug.wrappers import Response

from portal.access import ALL_ROLES, roles
from portal.api import ApiError, ApiUnavailable
from portal.errors import error_page
from portal.layout import render_page
from portal.listing import render_list
from portal.services.api import current_api
from portal.transactions import bp
from portal.transactions.forms import TransactionFilters

TRANSACTION_NOT_FOUND = 6


@bp.route("")
@roles(*ALL_ROLES)
def index() -> Response:
    """The transactions matching the filters of the query string."""
    return render_list(
        TransactionFilters,
        current_api().list_transactions,
        "transactions/index.html",
        "transactions/_results.html",
    )


@bp.route("/<transaction_id>")
@roles(*ALL_ROLES)
def detail(transaction_id: str) -> Response:
    """Every field of the transaction, with a link to its operation."""
    try:
        transaction = current_api().get_transaction(transaction_id)
    except ApiError as error:
        if isinstance(error, ApiUnavailable) or error.code != TRANSACTION_NOT_FOUND:
            raise
        abort(
            error_page(
                404,
                "Transaction not found",
                "The payment service has no transaction with this id for your merchant.",
            )
        )
    return render_page(
        "transactions/detail.html", "transactions/detail.html", transaction=transaction
    )
