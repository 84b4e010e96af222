"""A deep page of the portal's own lists: read by key against read by offset.

Fills the audit log of one merchant with `--events` events over a year (100,000 by default),
in a SQLite file and, when PORTAL_TEST_DATABASE_URL is set, in a PostgreSQL schema of its own.
For each database it times, in this process (so that SQLite's work is in the CPU time):

- the list's read as the portal pages it (`portal.web.lists.local_page`, with the list's
  count): the first page, and the last page by key (`?after=` the cursor of the row before it);
- the same last page read by offset (`LIMIT 50 OFFSET events - 50`, with a count of every
  row), as the lists were paged before;
- a count of every row, which each page made before and now stops at 1,001 (its heading says
  "More than 1,000 events");
- the people of the log's filter form (`users_of`, a DISTINCT over the merchant's log), which
  `/audit` reads on each page;
- the whole signed-in page `/audit` at the first page and at the last page by key.

Prints the median wall time and CPU time (of this process: SQLite's whole work, PostgreSQL's
server work shows in the wall time only) of each, and the deep read's query plan.

    .venv/bin/python bench/keyset_pages.py [--events 100000] [--repeat 30]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figure
from bench.search import database_parser, on_each_database
from tests.support.forms import signed_in
from tests.support.portal_app import connected_portal

BATCH = 5_000
PER_PAGE = 50


def fill(app, count: int) -> None:
    """`count` audit events of the merchant Acme, one a few minutes apart over the last year."""
    from portal.extensions import db
    from portal.identity.models import AuditEvent
    from portal.identity.rules.accounts import merchant_named

    now = datetime.now(UTC)
    step = timedelta(days=365) / count
    with app.app_context():
        merchant_id = merchant_named("Acme").id
        for start in range(0, count, BATCH):
            rows = [
                {
                    "merchant_id": merchant_id,
                    "user_email": "owner@acme.test",
                    "action": "user.change",
                    "parameters": {"email": f"person{number}@acme.test", "role": "operator"},
                    "outcome": "ok",
                    "remote_address": "203.0.113.7",
                    "created_at": now - timedelta(days=365) + step * number,
                }
                for number in range(start, min(start + BATCH, count))
            ]
            db.session.execute(sa.insert(AuditEvent), rows)
            db.session.commit()
        if db.engine.dialect.name == "postgresql":
            with db.engine.connect() as connection:
                connection = connection.execution_options(isolation_level="AUTOCOMMIT")
                connection.execute(sa.text("VACUUM ANALYZE audit_events"))


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
    from portal.extensions import db
    from portal.identity.pages.audit_log.queries import events, users_of
    from portal.identity.rules.accounts import merchant_named
    from portal.web.lists import local_page

    with connected_portal(folder, sandbox, DATABASE_URL=database_url) as app:
        started = time.perf_counter()
        fill(app, arguments.events)
        filled = time.perf_counter() - started
        print(f"\n{name}: {arguments.events:,} audit events filled in {filled:.0f} s")
        owner = signed_in(app, "owner@acme.test")
        with app.test_request_context():
            query = events(merchant_named("Acme"))
            total = db.session.scalar(sa.select(sa.func.count()).select_from(query.subquery()))
            depth = total - PER_PAGE
            # The cursor of the row before the last page: the Next link of a page that long.
            deep = local_page(query, per_page=depth).after
            assert deep is not None
            last_page = -(-total // PER_PAGE)

        def read(arguments: dict[str, str]) -> Callable[[], object]:
            def call() -> object:
                with app.test_request_context(query_string=arguments):
                    page = local_page(events(merchant_named("Acme")))
                    assert len(page.items) == PER_PAGE
                    return page

            return call

        def by_offset() -> object:
            with app.test_request_context():
                page = db.paginate(
                    events(merchant_named("Acme")), page=last_page, per_page=PER_PAGE
                )
                assert len(page.items) == total - (last_page - 1) * PER_PAGE
                return page

        def count() -> object:
            with app.test_request_context():
                every = events(merchant_named("Acme")).order_by(None).subquery()
                return db.session.scalar(sa.select(sa.func.count()).select_from(every))

        def people() -> object:
            with app.test_request_context():
                return users_of(merchant_named("Acme"))

        def page(url: str) -> Callable[[], object]:
            return lambda: owner.get(url).status_code == 200 or sys.exit(f"{url} failed")

        print(
            f"{'read (median of ' + str(arguments.repeat) + ')':<40} {'wall ms':>8} {'CPU ms':>8}"
        )
        for label, call in [
            ("first page, by key", read({})),
            ("last page, by key", read({"after": deep})),
            ("last page, by offset", by_offset),
            ("count of every row", count),
            ("the filter's people (DISTINCT)", people),
            ("/audit, first page", page("/audit")),
            ("/audit, last page by key", page(f"/audit?after={deep}")),
        ]:
            wall, cpu = timed(call, arguments.repeat)
            print(f"{label:<40} {wall:8.1f} {cpu:8.1f}")
            figure(
                f"audit log {label} at {arguments.events:,} events ({name})",
                f"median {wall:.1f} ms wall, {cpu:.1f} ms CPU",
            )
        with app.test_request_context(query_string={"after": deep}):
            statements: list[tuple[str, object]] = []
            listen = lambda *args: statements.append(args[2:4])  # noqa: E731
            sa.event.listen(db.engine, "before_cursor_execute", listen)
            local_page(events(merchant_named("Acme")))
            sa.event.remove(db.engine, "before_cursor_execute", listen)
            sql, parameters = statements[-1]
            explain = "EXPLAIN QUERY PLAN " if db.engine.dialect.name == "sqlite" else "EXPLAIN "
            with db.engine.connect() as connection:
                plan = connection.exec_driver_sql(explain + sql, parameters).all()
        print("the last page's read by key:", " ".join(sql.split()))
        print("its plan:\n  " + "\n  ".join(str(row[-1]) for row in plan))


def main() -> None:
    parser = database_parser(__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=30)
    arguments = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    on_each_database(arguments.databases.split(","), partial(measure, arguments=arguments))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
