"""Downloads of a list, an API list for its page's filters or a table of the portal's own, as
a streamed CSV (`/export.csv`) or a native workbook (`/export.xlsx`).

Filters go through the list page's own form (`portal.web.filters.read_filters`), so an export
means exactly what the list on screen means; invalid filters show that list page with its
messages and no file. Every export takes `tz=local` (the user's zone instead of UTC), and its
file name says it (docs/exports.md). A workbook is written to a temporary file and sent once
whole: a failure on the way is an error page, never half a file. The CSV variant "for Excel"
of old (`bom=1`) is now the workbook: its links are sent there.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import sqlalchemy as sa
from flask import current_app, redirect, request, send_file, stream_with_context, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import ApiRefusal, ErrorCode
from portal.extensions import db
from portal.reports.rules.csv_rows import UTC_ZONE, Column, TimeZone
from portal.reports.rules.csv_stream import Export, export_rows, local_text, start
from portal.reports.rules.workbook import MIME_TYPE, ROW_LIMIT, TooManyRows, Workbook
from portal.web.filters import read_filters
from portal.web.formatting import user_zone, user_zone_name
from portal.web.lists import ApiList, render_list
from portal.web.merchant import current_api
from portal.web.rendering import page

PAGING = ("page", "per_page")
SHEET = "Export"


def list_download(
    listing: ApiList,
    title: str,
    columns: tuple[Column, ...],
    rows_of: Callable[[list[Any]], Iterable[object]] | None = None,
) -> Response:
    """Every record of `listing` that the query string's filters select, as a streamed CSV or
    a workbook (by the path's extension); `rows_of` gives the rows of a page's records when a
    record is not one row."""
    if _old_excel_variant():
        return _to_workbook()
    query = read_filters(listing.filters, request.args)
    if query.filters is None:
        return render_list(listing)
    export = Export(
        fetch_page=listing.fetch(current_api()),
        filters={name: value for name, value in query.filters.items() if name not in PAGING},
        columns=columns,
        zone=_zone(),
        rows_of=rows_of,
    )
    try:
        first, text = start(export)
    except ApiRefusal as refusal:
        if refusal.code != ErrorCode.VALIDATION_ERRORS:
            raise
        return render_list(listing)  # the list page says what the API refused
    dates = (query.filters.get("created_from"), query.filters.get("created_to"))
    if _workbook_asked():
        rows = (row for rows in export_rows(export, first) for row in rows)
        return workbook_download(_one_sheet(columns, export.zone, rows), title, export.zone, dates)
    response = _download(_chunks_in_app_context(text), file_name(title, export.zone, dates))
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


def local_list_download(query: sa.Select, title: str, columns: tuple[Column, ...]) -> Response:
    """Every row of `query`, a list of the portal's own database, as a streamed CSV or a
    workbook (by the path's extension).

    Another list of the portal's tables is exported by a view that passes its rule's query and
    its columns (`portal.reports.rules.csv_rows`) here.
    """
    if _old_excel_variant():
        return _to_workbook()
    zone = _zone()
    if _workbook_asked():
        records = db.session.scalars(query.execution_options(yield_per=500))
        return workbook_download(_one_sheet(columns, zone, records), title, zone)
    total = db.session.scalar(sa.select(sa.func.count()).select_from(query.subquery()))
    response = rows_csv_download(
        lambda: db.session.scalars(query.execution_options(yield_per=500)),
        columns,
        zone,
        file_name(title, zone),
    )
    response.headers["X-Export-Total"] = str(total)
    return response


def rows_csv_download(
    rows: Callable[[], Iterable[object]], columns: tuple[Column, ...], zone: TimeZone, name: str
) -> Response:
    """The CSV of the records `rows` gives, read as the file streams (the view's database
    session ends when the view returns)."""

    def text() -> Iterator[str]:
        yield from local_text(rows(), columns, zone)

    return _download(stream_with_context(text()), name)


def _one_sheet(
    columns: tuple[Column, ...], zone: TimeZone, records: Iterable[object]
) -> Callable[[IO[bytes]], None]:
    def write(file: IO[bytes]) -> None:
        book = Workbook(file)
        book.sheet(SHEET, columns, zone).add_all(records)
        book.close()

    return write


def workbook_download(
    write: Callable[[IO[bytes]], None],
    title: str,
    zone: TimeZone,
    dates: tuple[object, object] = (None, None),
) -> Response:
    """The workbook written whole into a temporary file, then sent; more rows than a sheet
    holds is a page that points to the CSV; any other failure the usual error page."""
    file = tempfile.TemporaryFile()  # noqa: SIM115  (send_file closes it with the response)
    try:
        write(file)
    except TooManyRows:
        file.close()
        csv_url = request.path.removesuffix(".xlsx") + ".csv"
        query = request.query_string.decode()
        return page(
            "errors/error.html",
            422,
            code=422,
            title="Too many rows for a spreadsheet",
            message=(
                f"A sheet holds at most {ROW_LIMIT:,} rows, and this export has more. The CSV "
                "has them all."
            ),
            action=("Download the CSV", f"{csv_url}?{query}" if query else csv_url),
        )
    except BaseException:
        file.close()
        raise
    file.seek(0)
    response = send_file(
        file,
        mimetype=MIME_TYPE,
        as_attachment=True,
        download_name=file_name(title, zone, dates, "xlsx"),
        max_age=0,
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def _download(text: Iterable[str], file_name: str) -> Response:
    response = Response(text, mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{file_name}"'
    response.headers["Cache-Control"] = "no-store"
    return response


def _workbook_asked() -> bool:
    return request.path.endswith(".xlsx")


def _old_excel_variant() -> bool:
    """A link to the CSV "for Excel" of old (`bom=1`), which the workbook replaced."""
    return request.args.get("bom") == "1" and request.path.endswith(".csv")


def _to_workbook() -> Response:
    """The workbook of the same export (the list's `export_xlsx`), for a link to the CSV
    variant it replaced."""
    arguments: dict[str, Any] = request.args.to_dict(flat=False)
    del arguments["bom"]
    return redirect(url_for(f"{request.blueprint}.export_xlsx", **arguments), 301)


def _zone() -> TimeZone:
    """UTC, or with `tz=local` the user's own time zone (UTC for a zone this host lacks)."""
    if request.args.get("tz") == "local":
        return TimeZone(user_zone(), user_zone_name())
    return UTC_ZONE


def file_name(
    title: str, zone: TimeZone, dates: tuple[object, object] = (None, None), extension: str = "csv"
) -> str:
    """`<merchant>_<list>_<from>_to_<to>_<zone>.csv` (`all-dates` without dates), `.xlsx` for
    the workbook: each variant of an export has its own name."""
    merchant = re.sub(r"[^a-z0-9]+", "-", current_user.merchant.name.lower()).strip("-")
    start_day, end_day = dates
    if start_day or end_day:
        span = f"{start_day or 'start'}_to_{end_day or 'today'}"
    else:
        span = "all-dates"
    zone_name = re.sub(r"[^A-Za-z0-9_+-]+", "-", zone.name)
    return f"{merchant or 'merchant'}_{title}_{span}_{zone_name}.{extension}"
