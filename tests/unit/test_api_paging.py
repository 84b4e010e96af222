"""Reading every page of a list with the next pages requested in advance (dashboard, exports)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from operator import attrgetter
from types import SimpleNamespace

import pytest

from portal.api import ApiUnavailable, Page
from portal.api.paging import PAGES_AHEAD, read_pages
from portal.rules import csv_stream
from portal.rules.csv_rows import UTC_ZONE, Column


class FakeList:
    """A list of `pages` pages of 2 items; each request takes `delay` seconds."""

    def __init__(self, pages: int, delay: float = 0.0, failing: int | None = None) -> None:
        self.pages, self.delay, self.failing = pages, delay, failing
        self.requested: list[int] = []
        self.running = self.most_at_once = 0
        self._lock = threading.Lock()

    def __call__(self, page: int) -> Page[str]:
        with self._lock:
            self.requested.append(page)
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            time.sleep(self.delay)
            if page == self.failing:
                raise ApiUnavailable("no answer", request_sent=True)
            items = (f"{page}a", f"{page}b") if page <= self.pages else ()
            return Page(items, 2 * self.pages, page, self.pages, 2)
        finally:
            with self._lock:
                self.running -= 1


def test_every_page_in_order():
    pages = list(read_pages(FakeList(pages=7)))
    assert [page.current_page for page in pages] == [1, 2, 3, 4, 5, 6, 7]


def test_later_pages_are_requested_while_one_is_used():
    listing = FakeList(pages=8, delay=0.05)
    pages = read_pages(listing, ahead=3)
    next(pages), next(pages)
    assert listing.most_at_once >= 2
    assert set(listing.requested) >= {1, 2, 3, 4}
    assert 8 not in listing.requested  # never more than `ahead` in advance
    assert len(list(pages)) == 6


def test_a_list_that_grows_while_read_is_read_to_its_new_end():
    listing = FakeList(pages=2)
    pages = read_pages(listing)
    next(pages)
    listing.pages = 4  # records arrived: the answers now say 4 pages
    assert [page.current_page for page in pages] == [2, 3, 4]


def test_a_failure_is_raised_at_its_page():
    pages = read_pages(FakeList(pages=6, failing=3))
    assert [page.current_page for page in (next(pages), next(pages))] == [1, 2]
    with pytest.raises(ApiUnavailable):
        next(pages)


def test_an_export_asks_for_more_pages_at_once_than_a_background_read_and_never_too_many():
    listing = FakeList(pages=20, delay=0.02)

    def list_page(page: int, per_page: int) -> Page:
        answer = listing(page)
        return replace(answer, items=tuple(SimpleNamespace(id=item) for item in answer.items))

    export = csv_stream.Export(list_page, {}, (Column("id", "text", attrgetter("id")),), UTC_ZONE)
    _, text = csv_stream.start(export)
    assert len("".join(text).splitlines()) == 1 + 2 * 20  # the header, then every record
    assert PAGES_AHEAD < listing.most_at_once <= csv_stream.PAGES_AHEAD
