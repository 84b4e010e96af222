"""Deep list pages are exactly what a plain `LIMIT ? OFFSET ?` query answers, totals a COUNT.

The sandbox reads a deep page from a boundary it remembered while answering an earlier page,
and a total from a count made for the same version of the table (sandbox/seek.py). Each answer
here is compared with the OFFSET and COUNT queries run on the sandbox's own database file at
that moment: for several sorts (ties in the sort key, NULLs), filters, pages read in order,
skipped to, read again, and after inserts and updates between requests.
"""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from tests.sandbox.contract import Api, add_transaction, control, list_of
from tests.support.sandbox_server import SandboxServer, run_sandbox

PER_PAGE = 40

# (API parameters, the same list as SQL: WHERE and ORDER BY), one row a sort or filter.
OPERATION_LISTS = [
    ({}, "", "created_at DESC, id DESC"),
    ({"sort": "amount", "sort_type": "desc"}, "", "amount DESC, id DESC"),
    ({"sort": "currency"}, "", "currency ASC, id ASC"),  # few values: long runs of ties
    ({"sort": "currency", "sort_type": "desc"}, "", "currency DESC, id DESC"),
    ({"sort": "amount_paid"}, "", "amount_paid ASC, id ASC"),  # NULLs first
    ({"sort": "amount_paid", "sort_type": "desc"}, "", "amount_paid DESC, id DESC"),  # last
    ({"sort": "order_id", "sort_type": "desc"}, "", "order_id DESC, id DESC"),
    ({"sort": "id", "sort_type": "desc"}, "", "id DESC"),
    ({"sort": "updated"}, "", "updated_at ASC, id ASC"),
    (
        {"status": "1,3", "currency": "BTC,USDT", "sort": "amount", "sort_type": "desc"},
        "status IN (1, 3) AND currency IN ('BTC', 'USDT')",
        "amount DESC, id DESC",
    ),
    (
        {"created_from": "2000-01-01", "sort": "category"},
        "created_at >= '2000-01-01'",
        "category ASC, id ASC",
    ),
]
TRANSACTION_LISTS = [
    ({}, "", "created_at DESC, id DESC"),
    ({"sort": "reject_reason"}, "", "reject_reason ASC, id ASC"),
    ({"sort": "reject_reason", "sort_type": "desc"}, "", "reject_reason DESC, id DESC"),
    (
        {"linked": "1", "sort": "operation", "sort_type": "desc"},
        "linked = 1",
        "operation_id DESC, id DESC",
    ),
]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> SandboxServer:
    """A sandbox of its own with 1,500 seeded operations; the tests here add and change some."""
    database = tmp_path_factory.mktemp("deep-pages") / "sandbox.db"
    with run_sandbox(database, seed=1_500, random_seed=3) as server:
        yield server


def offset_page(server: SandboxServer, table: str, where: str, order: str, page: int) -> tuple:
    """The ids a plain OFFSET query answers for `page`, and the COUNT of the list, both read
    from the database file now."""
    where = f"WHERE {where}" if where else ""
    sql = f"SELECT id FROM {table} {where} ORDER BY {order} LIMIT ? OFFSET ?"  # noqa: S608
    with contextlib.closing(sqlite3.connect(server.database)) as connection:
        found = connection.execute(sql, (PER_PAGE, (page - 1) * PER_PAGE))
        total = connection.execute(f"SELECT COUNT(*) FROM {table} {where}").fetchone()[0]  # noqa: S608
        return [row[0] for row in found], total


def api_page(api: Api, path: str, params: dict, page: int) -> tuple:
    answer = list_of(api.get(path, {**params, "page": page, "per_page": PER_PAGE}))
    return [int(record["id"]) for record in answer["data"]], answer["meta"]["total"]


def assert_pages_match(api: Api, path: str, lists, pages) -> None:
    for params, where, order in lists:
        for page in pages:
            got = api_page(api, path, params, page)
            assert got == offset_page(api.server, path.strip("/"), where, order, page), (
                params,
                page,
            )


def test_pages_read_in_order_skipped_to_and_read_again_match_offset(seeded):
    api = Api(seeded)
    # In order (each page seeks from the one before), then back, past the end, forward again.
    pages = [*range(1, 8), 3, 30, 30, 12, 37, 38, 39, 40, 1]
    assert_pages_match(api, "/operations", OPERATION_LISTS, pages)
    assert_pages_match(api, "/transactions", TRANSACTION_LISTS, [1, 2, 3, 9, 9, 2])


def test_pages_after_inserts_and_updates_match_offset(seeded):
    api = Api(seeded)
    pages = [1, 2, 3, 20, 21]
    assert_pages_match(api, "/operations", OPERATION_LISTS, pages)
    assert_pages_match(api, "/transactions", TRANSACTION_LISTS, pages)

    # Inserted rows come first in the default order and anywhere in the others.
    created = [
        api.create_operation(amount=amount, currency=currency)
        for amount, currency in (("0.00001", "BTC"), ("1234.5", "USDT"), ("0.5", "BTC"))
    ]
    assert_pages_match(api, "/operations", OPERATION_LISTS, pages)

    # An update moves a row in the sorts of what changed (status, amount_paid, updated_at).
    add_transaction(seeded, created[1]["id"], "1234.5")
    control(seeded, "POST", f"operations/{created[2]['id']}/expire").raise_for_status()
    assert_pages_match(api, "/operations", OPERATION_LISTS, pages)
    assert_pages_match(api, "/transactions", TRANSACTION_LISTS, pages)


def test_a_page_read_again_after_a_change_between_is_not_the_remembered_one(seeded):
    """The same deep page, read, then read again after an insert: it moves by one row."""
    api = Api(seeded)
    default_order = ("operations", "", "created_at DESC, id DESC", 20)
    before, total = api_page(api, "/operations", {}, 20)
    assert (before, total) == offset_page(seeded, *default_order)
    api.create_operation()
    after, total_after = api_page(api, "/operations", {}, 20)
    assert (after, total_after) == offset_page(seeded, *default_order)
    assert after[1:] == before[:-1]
    assert total_after == total + 1
