"""Every page of a list as one streamed CSV: rows leave as pages arrive, never the whole result.

The first page is fetched before the response starts, so a bad filter or an unreachable API is
an ordinary error page, not a file. Later pages are asked for ahead on worker threads while the
current one is written (`portal.api.paging`). A failure after the first page cannot change the
status any more: the file then ends with an `EXPORT INCOMPLETE` row that says how far it got, so
it can never pass for a complete export (docs/exports.md).

The portal's own tables (`local_text`) are read from the database as they are written, in the
same format.
"""

from __future__ import annotations

import csv
import io
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from portal.api import ApiFailure, ApiUnavailable, Page, PageReader
from portal.api.paging import read_pages
from portal.reports.rules.csv_rows import Column, TimeZone, header, neutralise, row_writer

PER_PAGE = 100
INCOMPLETE_MARK = "EXPORT INCOMPLETE"
# The pages whose records an export keeps in mind, to write a record pushed on to the next
# page once (a shift of a page is a hundred records arriving while one page is read).
RECENT_PAGES = 3

FetchPage = Callable[..., PageReader[Any]]


@dataclass(frozen=True)
class Export:
    """What to export: a list endpoint with its filters, and how records become rows."""

    fetch_page: FetchPage
    filters: dict
    columns: tuple[Column, ...]
    zone: TimeZone
    # The rows of a page's records, for records that are not one row each (all at once: the
    # rows may need a query, one a page then); by default each record is its row.
    rows_of: Callable[[list[Any]], Iterable[object]] | None = None

    def fetch(self, page: int) -> PageReader[Any]:
        """Ask for one page of the export, at the export's page size."""
        return self.fetch_page(page=page, per_page=PER_PAGE, **self.filters)


def start(export: Export) -> tuple[Page, Iterator[str]]:
    """Fetch the first page (errors raise here, before any byte is sent) and the CSV stream."""
    first = export.fetch(page=1)()
    return first, _csv_text(export, first)


class _Lines:
    """CSV rows (RFC 4180: quoted as needed, CRLF line ends) handed out as text chunks."""

    def __init__(self, columns: tuple[Column, ...], zone: TimeZone) -> None:
        self.columns, self.zone = columns, zone
        self.row = row_writer(columns, zone)
        self.buffer = io.StringIO()
        self.writer = csv.writer(self.buffer)

    def header(self) -> str:
        # A header may name the reporting currency, the API's text: neutralised like any cell.
        return self.text_row(*header(self.columns, self.zone))

    def text_row(self, *cells: str) -> str:
        """A row of the portal's own words around the API's (an error's message): every cell
        neutralised as a data cell is."""
        self.writer.writerow(map(neutralise, cells))
        return self.flush()

    def add(self, records: Iterable[object]) -> None:
        self.writer.writerows(map(self.row, records))

    def flush(self) -> str:
        text = self.buffer.getvalue()
        self.buffer.seek(0)
        self.buffer.truncate()
        return text


def local_text(
    records: Iterable[object], columns: tuple[Column, ...], zone: TimeZone
) -> Iterator[str]:
    """The CSV of records of the portal's own database, a chunk per PER_PAGE rows."""
    lines = _Lines(columns, zone)
    yield lines.header()
    remaining = iter(records)
    while chunk := list(islice(remaining, PER_PAGE)):
        lines.add(chunk)
        yield lines.flush()


def export_rows(export: Export, first: Page) -> Iterator[list[object]]:
    """The rows of each page of the export, from `first` on; a record that moved to a later
    page while the pages were read comes once. Records arriving meanwhile push the others by
    a few places, so only the ids of the last `RECENT_PAGES` pages are kept: all of them took
    90 MB for a million rows."""
    recent: deque[set[str]] = deque(maxlen=RECENT_PAGES)
    for page in read_pages(export.fetch, first):
        records = [r for r in page.items if not any(r.id in ids for ids in recent)]
        recent.append({record.id for record in page.items})
        yield records if export.rows_of is None else list(export.rows_of(records))


def _csv_text(export: Export, first: Page) -> Iterator[str]:
    lines = _Lines(export.columns, export.zone)
    yield lines.header()
    written = 0
    try:
        for rows in export_rows(export, first):
            lines.add(rows)
            written += len(rows)
            yield lines.flush()
    except ApiFailure as failure:
        why = "no answer" if isinstance(failure, ApiUnavailable) else failure.message
        yield lines.text_row(
            INCOMPLETE_MARK,
            f"The payment service failed after {written} rows of {first.total} records "
            f"({why}). This file is not complete: export again.",
        )
