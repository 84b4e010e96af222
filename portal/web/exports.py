"""CSV downloads of an API list: the list page's filters, every page (docs/exports.md).

Filters go through the list page's own form (`portal.web.filters.read_filters`), so an export
means exactly what the list on screen means; invalid filters show that list page with its
messages and no file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import UTC
from typing import Any

from flask import request
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import ApiRefusal, ErrorCode
from portal.rules.csv_rows import UTC_ZONE, Column, TimeZone
from portal.rules.csv_stream import Export, start
from portal.web.filters import read_filters
from portal.web.formatting import user_zone
from portal.web.lists import ApiList, render_list
from portal.web.merchant import current_api

PAGING = ("page", "per_page")


def csv_download(
    listing: ApiList,
    title: str,
    columns: tuple[Column, ...],
    rows_of: Callable[[Any], Iterable[object]] | None = None,
) -> Response:
    """The CSV of every record of `listing` that the query string's filters select, streamed;
    `rows_of` gives the rows of one record when a record is not one row."""
    query = read_filters(listing.filters, request.args)
    if query.filters is None:
        return render_list(listing)
    export = Export(
        list_page=listing.read(current_api()),
        filters={name: value for name, value in query.filters.items() if name not in PAGING},
        columns=columns,
        zone=_zone(),
        rows_of=rows_of,
        byte_order_mark=request.args.get("bom") == "1",
    )
    try:
        first, text = start(export)
    except ApiRefusal as refusal:
        if refusal.code != ErrorCode.VALIDATION_ERRORS:
            raise
        return render_list(listing)  # the list page says what the API refused
    response = Response(text, mimetype="text/csv")
    response.headers["Content-Disposition"] = (
        f'attachment; filename="{_file_name(title, query.filters)}"'
    )
    if rows_of is None:  # one row per record: the total is the number of rows to come
        response.headers["X-Export-Total"] = str(first.total)
    response.headers["Cache-Control"] = "no-store"
    return response


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
