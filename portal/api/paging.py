"""Reading every page of a list: a few requests under way at all times, each answer read into
records where its page is used.

Worker threads only wait for answers; the thread that uses the pages turns each into records
when it comes to it. Reading (JSON and records) is most of a page's CPU: done on the workers,
it took the interpreter from the thread using the pages and from the workers waiting to send the
next request, and the API sat idle between pages. Three requests at once keep the API busy; more
make it slower per page, not faster (docs/exports.md, "Streaming").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from portal.api.records import Page

T = TypeVar("T")
PageReader = Callable[[], Page[T]]
"""A page's answer, received: calling it reads the page (`MerchantApiClient.fetch_page`)."""

REQUESTS_AT_ONCE = 3
# Pages answered and not used yet, at most: memory stays flat however long the list.
PAGES_HELD = 8


def read_pages(
    fetch_page: Callable[..., PageReader[T]], first: Page[T] | None = None
) -> Iterator[Page[T]]:
    """Page 1 (or `first`, already read), then the next ones in order.

    `fetch_page(page=N)` asks for page N and returns its reader. The last page is re-read from
    every page, so records that arrive meanwhile and push others to a later page are still
    reached; an empty page ends the list. A failure is raised where its page would have been
    yielded. When the pages stop being used, no request is started any more.
    """
    first = first if first is not None else fetch_page(page=1)()
    yield first
    if first.last_page < 2:
        return
    ahead = _Ahead(fetch_page, first.last_page)
    # Daemon threads: a reader that is never closed must not keep the process from exiting.
    workers = [
        threading.Thread(target=ahead.fetch_until_stopped, name="pages-ahead", daemon=True)
        for _ in range(REQUESTS_AT_ONCE)
    ]
    for worker in workers:
        worker.start()
    try:
        number = 2
        while number <= ahead.last_page:
            page = ahead.take(number)()
            yield page
            if not page.items:
                return
            ahead.reach(page.last_page)
            number += 1
    finally:
        ahead.stop()
        # The requests under way end; no other starts. (A reader left to the garbage collector
        # may be closed on one of its own workers, which cannot wait for itself.)
        if threading.current_thread() not in workers:
            for worker in workers:
                worker.join()


class _Ahead(Generic[T]):
    """The pages after the first: each worker asks for the next page nobody asked for yet, as
    long as that page is within the list and PAGES_HELD of the one in use."""

    def __init__(self, fetch_page: Callable[..., PageReader[T]], last_page: int) -> None:
        self._fetch_page = fetch_page
        self.last_page = last_page
        self._next = 2  # the next page nobody asked for
        self._in_use = 1
        self._answers: dict[int, PageReader[T] | BaseException] = {}
        self._stopped = False
        self._changed = threading.Condition()

    def fetch_until_stopped(self) -> None:
        while (number := self._claim()) is not None:
            answer: PageReader[T] | BaseException
            try:
                answer = self._fetch_page(page=number)
            except BaseException as failure:  # raised to the reader, where the page is used
                answer = failure
            with self._changed:
                self._answers[number] = answer
                self._changed.notify_all()

    def _claim(self) -> int | None:
        with self._changed:
            while not self._stopped and (
                self._next > self.last_page or self._next - self._in_use > PAGES_HELD
            ):
                self._changed.wait()
            if self._stopped:
                return None
            self._next += 1
            return self._next - 1

    def take(self, number: int) -> PageReader[T]:
        """Page `number`'s reader, once its answer came; its failure is raised here."""
        with self._changed:
            while number not in self._answers:
                self._changed.wait()
            answer = self._answers.pop(number)
            self._in_use = number
            self._changed.notify_all()
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def reach(self, last_page: int) -> None:
        """The list has (at least) `last_page` pages now."""
        with self._changed:
            if last_page > self.last_page:
                self.last_page = last_page
                self._changed.notify_all()

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
