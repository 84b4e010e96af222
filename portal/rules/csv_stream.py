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
from dataclasses import dataclass
from typing import Any

from portal.api import ApiFailure, ApiUnavailable
from portal.api.paging import read_pages
from portal.api.records import Page
from portal.rules.csv_rows import Column, TimeZone, header, row

PER_PAGE = 100
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
    rows_of: Callable[[Any], Iterable[object]] | None = None  # default: the record itself
    byte_order_mark: bool = False

    def fetch(self, page: int) -> Page:
        """One page of the export, at the export's page size."""
        return self.list_page(page=page, per_page=PER_PAGE, **self.filters)


def start(export: Export) -> tuple[Page, Iterator[str]]:
    """Fetch the first page (errors raise here, before any byte is sent) and the CSV stream."""
    first = export.fetch(page=1)
    return first, _csv_text(export, first)


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
        for page in read_pages(export.fetch, first):
            for record in page.items:
                if record.id in seen:  # moved to a later page while we read
                    continue
                seen.add(record.id)
                for item in export.rows_of(record) if export.rows_of else (record,):
                    writer.writerow(row(export.columns, item, export.zone))
                    written += 1
            yield flush()
    except ApiFailure as failure:
        why = "no answer" if isinstance(failure, ApiUnavailable) else failure.message
        writer.writerow(
            [
                INCOMPLETE_MARK,
                f"The payment service failed after {written} rows of {first.total} records "
                f"({why}). This file is not complete: export again.",
            ]
        )
        yield flush()
