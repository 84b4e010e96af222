"""CSV downloads of a list: an API list for its page's filters, or a table of the portal's own.

Filters go through the list page's own form (`portal.web.filters.read_filters`), so an export
means exactly what the list on screen means; invalid filters show that list page with its
messages and no file. Every export takes `tz=local` (the user's zone instead of UTC) and
`bom=1` (the Excel variant), and its file name says both (docs/exports.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import sqlalchemy as sa
from flask import current_app, request, stream_with_context
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import ApiRefusal, ErrorCode
from portal.extensions import db
from portal.reports.rules.csv_rows import UTC_ZONE, Column, TimeZone
from portal.reports.rules.csv_stream import Export, local_text, start
from portal.web.filters import read_filters
from portal.web.formatting import user_zone, user_zone_name
from portal.web.lists import ApiList, render_list
from portal.web.merchant import current_api

PAGING = ("page", "per_page")


def csv_download(
    listing: ApiList,
    title: str,
    columns: tuple[Column, ...],
    rows_of: Callable[[list[Any]], Iterable[object]] | None = None,
) -> Response:
    """The CSV of every record of `listing` that the query string's filters select, streamed;
    `rows_of` gives the rows of a page's records when a record is not one row."""
    query = read_filters(listing.filters, request.args)
    if query.filters is None:
        return render_list(listing)
    export = Export(
        fetch_page=listing.fetch(current_api()),
        filters={name: value for name, value in query.filters.items() if name not in PAGING},
        columns=columns,
        zone=_zone(),
        rows_of=rows_of,
        excel=_excel(),
    )
    try:
        first, text = start(export)
    except ApiRefusal as refusal:
        if refusal.code != ErrorCode.VALIDATION_ERRORS:
            raise
        return render_list(listing)  # the list page says what the API refused
    response = _download(
        _chunks_in_app_context(text), _file_name(title, export.zone, query.filters)
    )
    if rows_of is None:  # one row per record: the total is the number of rows to come
        response.headers["X-Export-Total"] = str(first.total)
    return response


def _chunks_in_app_context(chunks: Iterator[str]) -> Iterator[str]:
    """Each chunk made inside the application's context, entered and left around that chunk
    alone: a list may read the portal's database page by page while the download streams (the
    operations by state, from the mirror), and a download never read to its end leaves no
    context pushed behind it."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]  # the view's app

    def each() -> Iterator[str]:
        while True:
            with app.app_context():
                chunk = next(chunks, None)
            if chunk is None:
                return
            yield chunk

    return each()


def local_csv_download(query: sa.Select, title: str, columns: tuple[Column, ...]) -> Response:
    """Every row of `query`, a list of the portal's own database, streamed as CSV.

    Another list of the portal's tables is exported by a view that passes its rule's query and
    its columns (`portal.reports.rules.csv_rows`) here.
    """
    zone, excel = _zone(), _excel()
    total = db.session.scalar(sa.select(sa.func.count()).select_from(query.subquery()))

    def text() -> Iterator[str]:
        # Read inside the stream: the view's database session ends when the view returns.
        records = db.session.scalars(query.execution_options(yield_per=500))
        yield from local_text(records, columns, zone, excel)

    response = _download(stream_with_context(text()), _file_name(title, zone, {}))
    response.headers["X-Export-Total"] = str(total)
    return response


def _download(text: Iterable[str], file_name: str) -> Response:
    response = Response(text, mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{file_name}"'
    response.headers["Cache-Control"] = "no-store"
    return response


def _excel() -> bool:
    """The Excel variant: a byte-order mark, dates a spreadsheet reads, text kept text."""
    return request.args.get("bom") == "1"


def _zone() -> TimeZone:
    """UTC, or with `tz=local` the user's own time zone (UTC for a zone this host lacks)."""
    if request.args.get("tz") == "local":
        return TimeZone(user_zone(), user_zone_name())
    return UTC_ZONE


def _file_name(title: str, zone: TimeZone, filters: dict) -> str:
    """`<merchant>_<list>_<from>_to_<to>_<zone>.csv` (`all-dates` without a date filter), and
    `..._excel.csv` for the Excel variant: each variant of an export has its own name."""
    merchant = re.sub(r"[^a-z0-9]+", "-", current_user.merchant.name.lower()).strip("-")
    start_day, end_day = filters.get("created_from"), filters.get("created_to")
    if start_day or end_day:
        dates = f"{start_day or 'start'}_to_{end_day or 'today'}"
    else:
        dates = "all-dates"
    zone_name = re.sub(r"[^A-Za-z0-9_+-]+", "-", zone.name)
    variant = "_excel" if _excel() else ""
    return f"{merchant or 'merchant'}_{title}_{dates}_{zone_name}{variant}.csv"
