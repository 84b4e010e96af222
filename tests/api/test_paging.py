"""Reading every page of a list: the next pages asked for ahead on worker threads, each read
where it is used (exports, the mirror's first sync, the client's iterators)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from operator import attrgetter
from types import SimpleNamespace

import pytest

from portal.api import ApiUnavailable, Page
from portal.api.paging import PAGES_HELD, REQUESTS_AT_ONCE, read_pages
from portal.reports.rules import csv_stream
from portal.reports.rules.csv_rows import UTC_ZONE, Column


class FakeList:
    """A list of `pages` pages of 2 items; each request takes `delay` seconds. It notes the
    pages asked for, the most requests under way at once and the threads that read answers."""

    def __init__(
        self,
        pages: int,
        delay: float = 0.0,
        failing: int | None = None,
        malformed: int | None = None,
    ) -> None:
        self.pages, self.delay, self.failing, self.malformed = pages, delay, failing, malformed
        self.requested: list[int] = []
        self.reading_threads: set[str] = set()
        self.running = self.most_at_once = 0
        self._lock = threading.Lock()

    def __call__(self, page: int):
        with self._lock:
            self.requested.append(page)
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            time.sleep(self.delay)
            if page == self.failing:
                raise ApiUnavailable("no answer", request_sent=True)
            pages = self.pages
        finally:
            with self._lock:
                self.running -= 1
        return lambda: self._read(page, pages)

    def _read(self, page: int, pages: int) -> Page[str]:
        self.reading_threads.add(threading.current_thread().name)
        if page == self.malformed:
            raise ApiUnavailable("not a page", request_sent=True)
        items = (f"{page}a", f"{page}b") if page <= pages else ()
        return Page(items, 2 * pages, page, pages, 2)


def test_every_page_in_order():
    pages = list(read_pages(FakeList(pages=7)))
    assert [page.current_page for page in pages] == [1, 2, 3, 4, 5, 6, 7]


def test_later_pages_are_asked_for_while_one_is_used_a_few_at_once():
    listing = FakeList(pages=30, delay=0.02)
    pages = read_pages(listing)
    next(pages), next(pages)
    deadline = time.monotonic() + 5
    while max(listing.requested) < 2 + PAGES_HELD and time.monotonic() < deadline:
        time.sleep(0.01)  # the workers ask on while page 2 is in use, until enough are held
    time.sleep(0.05)
    assert 2 <= listing.most_at_once <= REQUESTS_AT_ONCE
    assert max(listing.requested) == 2 + PAGES_HELD  # never more held than that
    assert len(list(pages)) == 28


def test_pages_are_read_where_they_are_used_not_on_the_workers():
    listing = FakeList(pages=5, delay=0.01)
    assert [page.current_page for page in read_pages(listing)] == [1, 2, 3, 4, 5]
    assert listing.reading_threads == {threading.current_thread().name}


def test_a_list_that_grows_while_read_is_read_to_its_new_end():
    listing = FakeList(pages=2)
    pages = read_pages(listing)
    next(pages)
    listing.pages = 4  # records arrived: the answers now say 4 pages
    assert [page.current_page for page in pages] == [2, 3, 4]


@pytest.mark.parametrize("where", ["failing", "malformed"])
def test_a_failure_is_raised_at_its_page(where):
    pages = read_pages(FakeList(pages=6, **{where: 3}))
    assert [page.current_page for page in (next(pages), next(pages))] == [1, 2]
    with pytest.raises(ApiUnavailable):
        next(pages)


def test_a_worker_stopped_by_any_exception_still_answers_for_its_page():
    def fetch_page(page: int):
        if page == 3:
            raise SystemExit("the process is told to stop")
        return FakeList(pages=6)(page)

    pages = read_pages(fetch_page)
    assert [page.current_page for page in (next(pages), next(pages))] == [1, 2]
    with pytest.raises(SystemExit):
        next(pages)


def test_the_workers_end_once_the_pages_are_no_longer_used():
    listing = FakeList(pages=1000, delay=0.01)
    pages = read_pages(listing)
    next(pages), next(pages)
    pages.close()  # a person cancelled the export: the requests under way end, no other starts
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("pages-")]
    assert len(listing.requested) <= 2 + PAGES_HELD


def test_an_export_writes_every_record_asking_a_few_pages_at_once():
    listing = FakeList(pages=20, delay=0.02)

    def fetch_page(page: int, per_page: int):
        read = listing(page)

        def with_ids() -> Page:
            answer = read()
            return replace(answer, items=tuple(SimpleNamespace(id=i) for i in answer.items))

        return with_ids

    export = csv_stream.Export(fetch_page, {}, (Column("id", "text", attrgetter("id")),), UTC_ZONE)
    _, text = csv_stream.start(export)
    assert len("".join(text).splitlines()) == 1 + 2 * 20  # the header, then every record
    assert 2 <= listing.most_at_once <= REQUESTS_AT_ONCE
