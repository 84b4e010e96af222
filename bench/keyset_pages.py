"""A deep page of the portal's own lists: read by key against read by offset.

Fills two lists of one merchant with `--rows` rows each over a year (100,000 by default): its
audit log, and its BTC movements in the ledger (beside as many movements of other currencies),
in a SQLite file and, when PORTAL_TEST_DATABASE_URL is set, in a PostgreSQL schema of its own.
For each database and list it times, in this process (so that SQLite's work is in the CPU time):

- the list's read as the portal pages it (`portal.web.lists.local_page`, with its count up to
  1,001): the first page, and the last page by key (`?after=` the cursor of the row before it);
- the same last page read by offset (`LIMIT 50 OFFSET rows - 50`, with a count of every row),
  as the lists were paged before;
- a count of every row, which each page made before;
- the whole signed-in page (`/audit`, `/balances/BTC`) at the first page and at the last.

Prints the median wall time and CPU time (of this process: SQLite's whole work, PostgreSQL's
server work shows in the wall time only) of each, and the deep read's query plan.

    .venv/bin/python bench/keyset_pages.py [--rows 100000] [--repeat 30]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figure
from bench.search import database_parser, on_each_database
from tests.support.forms import signed_in
from tests.support.portal_app import connected_portal

BATCH = 5_000
PER_PAGE = 50


def _insert(app, model: type, rows: Callable[[int, int], dict], count: int) -> None:
    """`count` rows of `model` for the merchant Acme (`rows(merchant id, number)`), in batches."""
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named

    with app.app_context():
        merchant_id = merchant_named("Acme").id
        for start in range(0, count, BATCH):
            batch = range(start, min(start + BATCH, count))
            db.session.execute(sa.insert(model), [rows(merchant_id, n) for n in batch])
            db.session.commit()
        if db.engine.dialect.name == "postgresql":
            with db.engine.connect() as connection:
                connection = connection.execution_options(isolation_level="AUTOCOMMIT")
                connection.execute(sa.text(f"VACUUM ANALYZE {model.__tablename__}"))


def _moment(number: int, count: int) -> datetime:
    """The `number`th of `count` moments a few minutes apart over the last year."""
    return datetime.now(UTC) - timedelta(days=365) + timedelta(days=365) / count * number


def fill_audit_log(app, count: int) -> None:
    """`count` audit events, all in the list."""
    from portal.identity.models import AuditEvent

    def row(merchant_id: int, number: int) -> dict:
        return {
            "merchant_id": merchant_id,
            "user_email": "owner@acme.test",
            "action": "user.change",
            "parameters": {"email": f"person{number}@acme.test", "role": "operator"},
            "outcome": "ok",
            "remote_address": "203.0.113.7",
            "created_at": _moment(number, count),
        }

    _insert(app, AuditEvent, row, count)


def fill_ledger(app, count: int) -> None:
    """`count` BTC movements of operations in the ledger, and as many of three other currencies
    beside them."""
    from portal.identity.rules.accounts import merchant_named
    from portal.money.models import LedgerEntry

    with app.app_context():
        connection = merchant_named("Acme").api_connection
        assert connection is not None
        generation = connection.generation

    def row(merchant_id: int, number: int) -> dict:
        return {
            "merchant_id": merchant_id,
            "connection_generation": generation,
            "key": f"received:{number}",
            "kind": "received",
            "currency": "BTC" if number % 2 else ("ETH", "USDT", "LTC")[number // 2 % 3],
            "amount": Decimal("0.00125"),
            "operation_id": str(number),
            "occurred_at": _moment(number, count * 2),
        }

    _insert(app, LedgerEntry, row, count * 2)


@dataclass(frozen=True)
class Listed:
    """A list of the portal's own measured here: how it is filled, its rule's query for the
    merchant, and its page."""

    name: str
    fill: Callable[[Any, int], None]
    query: Callable[[Any], sa.Select]
    url: str


def lists() -> list[Listed]:
    from portal.identity.pages.audit_log.queries import events
    from portal.money.rules.balances import movements

    return [
        Listed("audit log", fill_audit_log, events, "/audit"),
        Listed("BTC movements", fill_ledger, partial(movements, currency="BTC"), "/balances/BTC"),
    ]


def timed(call: Callable[[], object], repeat: int) -> tuple[float, float]:
    """The median wall and CPU milliseconds of `call`, after two calls to warm up."""
    call(), call()
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def measure(name: str, database_url: str, sandbox, folder: Path, arguments) -> None:
    with connected_portal(folder, sandbox, DATABASE_URL=database_url) as app:
        for listed in lists():
            started = time.perf_counter()
            listed.fill(app, arguments.rows)
            filled = time.perf_counter() - started
            title = f"{listed.name} at {arguments.rows:,} rows ({name})"
            print(f"\n{title}: filled in {filled:.0f} s")
            measure_list(app, listed, title, arguments)


def measure_list(app, listed: Listed, title: str, arguments) -> None:
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.web.lists import local_page

    owner = signed_in(app, "owner@acme.test")

    def query() -> sa.Select:
        return listed.query(merchant_named("Acme"))

    with app.test_request_context():
        total = db.session.scalar(sa.select(sa.func.count()).select_from(query().subquery()))
        # The cursor of the row before the last page: the Next link of a page that long.
        deep = local_page(query(), per_page=total - PER_PAGE).after
        assert deep is not None
        last_page = -(-total // PER_PAGE)

    def read(arguments: dict[str, str]) -> Callable[[], object]:
        def call() -> object:
            with app.test_request_context(query_string=arguments):
                page = local_page(query())
                assert len(page.items) == PER_PAGE
                return page

        return call

    def by_offset() -> object:
        with app.test_request_context():
            page = db.paginate(query(), page=last_page, per_page=PER_PAGE)
            assert len(page.items) == total - (last_page - 1) * PER_PAGE
            return page

    def count() -> object:
        with app.test_request_context():
            every = query().order_by(None).subquery()
            return db.session.scalar(sa.select(sa.func.count()).select_from(every))

    def page(url: str) -> Callable[[], object]:
        return lambda: owner.get(url).status_code == 200 or sys.exit(f"{url} failed")

    print(f"{'median of ' + str(arguments.repeat):<40} {'wall ms':>8} {'CPU ms':>8}")
    for label, call in [
        ("first page, by key", read({})),
        ("last page, by key", read({"after": deep})),
        ("last page, by offset", by_offset),
        ("count of every row", count),
        (f"{listed.url}, first page", page(listed.url)),
        (f"{listed.url}, last page by key", page(f"{listed.url}?after={deep}")),
    ]:
        wall, cpu = timed(call, arguments.repeat)
        print(f"{label:<40} {wall:8.1f} {cpu:8.1f}")
        figure(f"{label}, {title}", f"median {wall:.1f} ms wall, {cpu:.1f} ms CPU")
    with app.test_request_context(query_string={"after": deep}):
        statements: list[tuple[str, object]] = []
        listen = lambda *args: statements.append(args[2:4])  # noqa: E731
        sa.event.listen(db.engine, "before_cursor_execute", listen)
        local_page(query())
        sa.event.remove(db.engine, "before_cursor_execute", listen)
        sql, parameters = statements[-1]
        explain = "EXPLAIN QUERY PLAN " if db.engine.dialect.name == "sqlite" else "EXPLAIN "
        with db.engine.connect() as connection:
            plan = connection.exec_driver_sql(explain + sql, parameters).all()
    print("the last page's read by key:", " ".join(sql.split()))
    print("its plan:\n  " + "\n  ".join(str(row[-1]) for row in plan))


def main() -> None:
    parser = database_parser(__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=30)
    arguments = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    on_each_database(arguments.databases.split(","), partial(measure, arguments=arguments))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
