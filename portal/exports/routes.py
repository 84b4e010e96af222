"""`/operations/export.csv` and `/transactions/export.csv`: the list page's filters, every page.

Filters go through the list pages' own form (`portal.listing.read_filters`), so an export means
exactly what the list on screen means; invalid filters show that list page with its messages
and no file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from flask import Response, request
from flask_login import current_user

from portal.access import ALL_ROLES, roles
from portal.api import VALIDATION_ERROR, ApiError, ApiUnavailable, MerchantApiClient
from portal.exports import bp
from portal.exports.csv_rows import (
    OPERATION_COLUMNS,
    TRANSACTION_COLUMNS,
    UTC_ZONE,
    Column,
    TimeZone,
    operation_transactions,
)
from portal.exports.stream import Export, start
from portal.formatting import user_zone
from portal.layout import PageAnswer
from portal.listing import ListFilters, read_filters, render_list
from portal.operations.forms import OperationFilters
from portal.services.api import current_api
from portal.transactions.forms import TransactionFilters

PAGING = ("page", "per_page")


@dataclass(frozen=True)
class ListExport:
    """A list page and what its export is made of."""

    name: str
    filters: type[ListFilters]
    list_method: Callable[[MerchantApiClient], Callable]
    template: str
    fragment: str


OPERATIONS = ListExport(
    "operations",
    OperationFilters,
    lambda api: api.list_operations,
    "operations/index.html",
    "operations/_results.html",
)
TRANSACTIONS = ListExport(
    "transactions",
    TransactionFilters,
    lambda api: api.list_transactions,
    "transactions/index.html",
    "transactions/_results.html",
)


@bp.get("/operations/export.csv")
@roles(*ALL_ROLES)
def operations_csv() -> PageAnswer:
    """Operations, or with `detail=transactions` one row per transaction of those operations."""
    if request.args.get("detail") == "transactions":
        return _export(
            OPERATIONS, TRANSACTION_COLUMNS, operation_transactions, "transactions-of-operations"
        )
    return _export(OPERATIONS, OPERATION_COLUMNS)


@bp.get("/transactions/export.csv")
@roles(*ALL_ROLES)
def transactions_csv() -> PageAnswer:
    return _export(TRANSACTIONS, TRANSACTION_COLUMNS)


def _export(
    listing: ListExport,
    columns: tuple[Column, ...],
    rows_of: Callable[[Any], Iterable[object]] | None = None,
    title: str | None = None,
) -> PageAnswer:
    query = read_filters(listing.filters, request.args)
    if query.filters is None:
        return _list_page(listing)
    api = current_api()
    export = Export(
        list_page=listing.list_method(api),
        filters={name: value for name, value in query.filters.items() if name not in PAGING},
        columns=columns,
        zone=_zone(),
        rows_of=rows_of,
        byte_order_mark=request.args.get("bom") == "1",
    )
    try:
        first, text = start(export)
    except ApiError as error:
        if isinstance(error, ApiUnavailable) or error.code != VALIDATION_ERROR:
            raise
        return _list_page(listing)
    response = Response(text, mimetype="text/csv")
    response.headers["Content-Disposition"] = (
        f'attachment; filename="{_file_name(title or listing.name, query.filters)}"'
    )
    if rows_of is None:  # one row per record: the total is the number of rows to come
        response.headers["X-Export-Total"] = str(first.total)
    response.headers["Cache-Control"] = "no-store"
    return response


def _list_page(listing: ListExport) -> PageAnswer:
    """The list page itself, which shows why the filters (or the API) refused them."""
    return render_list(
        listing.filters,
        listing.list_method(current_api()),
        listing.template,
        listing.fragment,
    )


def _zone() -> TimeZone:
    """UTC, or with `tz=local` the user's own time zone."""
    zone = user_zone()  # UTC for a zone name this host does not know
    if request.args.get("tz") == "local" and zone is not UTC:
        return TimeZone(zone, current_user.time_zone)
    return UTC_ZONE


def _file_name(title: str, filters: dict) -> str:
    """`<merchant>_<list>_<from>_to_<to>.csv`, or `..._all-dates.csv` without a date filter."""
    merchant = re.sub(r"[^a-z0-9]+", "-", current_user.merchant.name.lower()).strip("-")
    start_day, end_day = filters.get("created_from"), filters.get("created_to")
    if start_day or end_day:
        dates = f"{start_day or 'start'}_to_{end_day or 'today'}"
    else:
        dates = "all-dates"
    return f"{merchant or 'merchant'}_{title}_{dates}.csv"
