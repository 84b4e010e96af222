"""Every page of a list as one streamed CSV: rows leave as pages arrive, never the whole result.

The first page is fetched before the response starts, so a bad filter or an unreachable API is
an ordinary error page, not a file. Later pages are requested a few ahead on worker threads
while the current one is written. A failure after the first page cannot change the status any
more: the file then ends with an `EXPORT INCOMPLETE` row that says how far it got, so it can
never pass for a complete export (docs/exports.md).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from portal.api import ApiError
from portal.api.records import Page
from portal.exports.csv_rows import Column, TimeZone, header, row

PER_PAGE = 100
PAGES_AHEAD = 3
BYTE_ORDER_MARK = "\ufeff"
INCOMPLETE_MARK = "EXPORT INCOMPLETE"

ListPage = Callable[..., Page]


@dataclass(frozen=True)
class Export:
    """What to export: a list endpoint with its filters, and how records become rows."""

    list_page: ListPage
    filters: dict
    columns: tuple[Column, ...]
    zone: TimeZone
    rows_of: Callable[[object], Iterable[object]] | None = None  # default: the record itself
    byte_order_mark: bool = False


def start(export: Export) -> tuple[Page, Iterator[str]]:
    """Fetch the first page (errors raise here, before any byte is sent) and the CSV stream."""
    first = export.list_page(page=1, per_page=PER_PAGE, **export.filters)
    return first, _csv_text(export, first)


def _pages(export: Export, first: Page) -> Iterator[Page]:
    """The first page, then the next ones in order, up to PAGES_AHEAD requested in advance.

    The last page is re-read from every answer, so records that arrive during the export and
    push others to a later page are still reached.
    """
    yield first
    last_page = first.last_page
    pending: dict[int, Future[Page]] = {}
    with ThreadPoolExecutor(max_workers=PAGES_AHEAD, thread_name_prefix="export") as pool:
        try:
            number = 2
            while number <= last_page:
                for ahead in range(number, min(number + PAGES_AHEAD, last_page + 1)):
                    if ahead not in pending:
                        pending[ahead] = pool.submit(
                            export.list_page, page=ahead, per_page=PER_PAGE, **export.filters
                        )
                page = pending.pop(number).result()
                yield page
                if not page.items:
                    return
                last_page = max(last_page, page.last_page)
                number += 1
        finally:
            for future in pending.values():
                future.cancel()


def _csv_text(export: Export, first: Page) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)  # RFC 4180: quoted as needed, CRLF line ends

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(header(export.columns, export.zone))
    yield (BYTE_ORDER_MARK if export.byte_order_mark else "") + flush()
    seen: set[str] = set()
    written = 0
    try:
        for page in _pages(export, first):
            for record in page.items:
                if record.id in seen:  # moved to a later page while we read
                    continue
                seen.add(record.id)
                for item in export.rows_of(record) if export.rows_of else (record,):
                    writer.writerow(row(export.columns, item, export.zone))
                    written += 1
            yield flush()
    except ApiError as error:  # ApiUnavailable included
        writer.writerow(
            [
                INCOMPLETE_MARK,
                f"The payment service failed after {written} rows of {first.total} records "
                f"({error.describe()}). This file is not complete: export again.",
            ]
        )
        yield flush()
