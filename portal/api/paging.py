"""Reading every page of a list, with the next few pages requested while one is being used."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from portal.api.records import Page

T = TypeVar("T")
PAGES_AHEAD = 3


def read_pages(
    list_page: Callable[..., Page[T]], first: Page[T] | None = None, ahead: int = PAGES_AHEAD
) -> Iterator[Page[T]]:
    """Page 1 (or `first`, already fetched), then the next ones in order, `ahead` in advance.

    `list_page(page=N)` fetches page N. The last page is re-read from every answer, so records
    that arrive meanwhile and push others to a later page are still reached. A failure is
    raised where its page would have been yielded; pages requested past it are canceled.
    """
    first = first if first is not None else list_page(page=1)
    yield first
    last_page = first.last_page
    pending: dict[int, Future[Page[T]]] = {}
    with ThreadPoolExecutor(max_workers=ahead, thread_name_prefix="pages-ahead") as pool:
        try:
            number = 2
            while number <= last_page:
                for later in range(number, min(number + ahead, last_page + 1)):
                    if later not in pending:
                        pending[later] = pool.submit(list_page, page=later)
                page = pending.pop(number).result()
                yield page
                if not page.items:
                    return
                last_page = max(last_page, page.last_page)
                number += 1
        finally:
            for future in pending.values():
                future.cancel()
