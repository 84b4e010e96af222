"""`/transactions` and `/transactions/<id>`: read-only, each linked to its operation."""

from __future__ import annotations

from functools import partial

from werkzeug.wrappers import Response

from portal.access import ALL_ROLES, roles
from portal.api import NOT_FOUND_TRANSACTION
from portal.explain import record_or_404
from portal.layout import render_page
from portal.listing import render_list
from portal.services.api import current_api
from portal.transactions import bp
from portal.transactions.forms import TransactionFilters


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
    transaction = record_or_404(
        partial(current_api().get_transaction, transaction_id),
        NOT_FOUND_TRANSACTION,
        "Transaction not found",
    )
    return render_page(
        "transactions/detail.html", "transactions/detail.html", transaction=transaction
    )
