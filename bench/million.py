"""A million operations: what a merchant's pages, sync, export and migrations cost at that size.

For each database (a SQLite file; PostgreSQL with `--database-url`, in a schema of its own that
is dropped at the end), a portal connected to a seeded sandbox makes its real first sync, then
a few live operations are paid and synced again (what each one adds to events, webhook
deliveries and the ledger, and the rates each sync records). Then `--operations` operations
(about 1.5 transactions each, over a year, the sandbox's mix: the bench prints it) are written
in bulk into the merchant's mirror with their ledger, events and rates, and as many for a
second merchant. Over real HTTP, signed in as the owner, it times: search by each kind of
fragment (median <= 50 ms, p95 <= 150 ms), the attention list, the dashboard for 30 days and a
year (<= 150 ms), /balances and last month's statement (<= 1 s); then an incremental sync with
nothing new (<= 100 ms of the portal's CPU: the sandbox answers from its own process), the
ledger's CSV export (rows/s and peak memory against a 1,000-row export), the database's size,
and the last migration down and up again on the filled database. Exits 1 when a target is
missed, 2 when PostgreSQL is named but unreachable.

    .venv/bin/python bench/million.py [--operations 1000000] [--requests 20]
        [--database-url postgresql+psycopg://postgres@127.0.0.1:5432/bench_million] [--keep-schema]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figure
from bench.mirror_fill import STATUSES, Filled, fill, latency, searches, signed_in
from tests.support.databases import postgres_schema
from tests.support.factories import webhook_endpoint
from tests.support.portal_app import connected_portal
from tests.support.portal_server import serve_in_thread
from tests.support.sandbox_server import SandboxServer, run_sandbox

SEARCH_MEDIAN_MS, SEARCH_P95_MS = 50, 150
DASHBOARD_MS, REPORT_MS, IDLE_SYNC_MS = 150, 1000, 100
SEEDED, LIVE = 300, 20  # the sandbox's operations, and the live ones paid after the first sync
FIRST_FILLED_ID = 10_000_001  # above the sandbox's ids
OTHER = "Other"
PAGE = 4096


class Results:
    """Figures printed as they are measured, and the targets missed."""

    def __init__(self, name: str, operations: int) -> None:
        self.where = f"{operations:,} operations, {name}"
        self.missed: list[str] = []

    def add(self, what: str, value: str, *, target: str | None = None, met: bool = True) -> None:
        verdict = "" if target is None else f"  (target {target}: {'ok' if met else 'MISSED'})"
        print(f"  {what}: {value}{verdict}", flush=True)
        figure(f"{what} ({self.where})", value)
        if not met:
            self.missed.append(f"{what} ({self.where})")

    def timed(self, what: str, call: Callable[[], requests.Response], count: int, most: int):
        median, p95 = latency(call, count)
        self.add(
            what, f"median {median:.1f} ms, p95 {p95:.1f} ms", target=f"{most} ms",
            met=median <= most,
        )  # fmt: skip


def rss() -> int:
    """This process's resident memory, in bytes."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * PAGE


@contextmanager
def peak_memory() -> Iterator[list[int]]:
    """The highest resident memory above the start's while the block runs, sampled every 5 ms
    (in bytes, in the list yielded once the block ends)."""
    start, peak, done = rss(), [0], threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            peak[0] = max(peak[0], rss() - start)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        done.set()
        sampler.join()


def table_rows(app) -> dict[str, int]:
    """The rows of each table that grows with a merchant's operations and syncs."""
    import sqlalchemy as sa

    from portal.extensions import db
    from portal.live.models import Event, WebhookDelivery
    from portal.money.models import LedgerEntry, RateRecord

    with app.app_context():
        return {
            model.__tablename__: db.session.scalar(sa.select(sa.func.count()).select_from(model))
            for model in (Event, WebhookDelivery, LedgerEntry, RateRecord)
        }


def live_growth(app, sandbox: SandboxServer, results: Results) -> None:
    """The real first sync, then `LIVE` operations paid and synced: what each adds."""
    from portal.identity.rules.accounts import merchant_named
    from portal.live.rules import mirror, webhooks

    with app.app_context():
        merchant_id = merchant_named("Acme").id
        first = mirror.sync_merchant(merchant_id, force=True)
    assert first is not None and first.error is None, first
    results.add(
        "first sync's history per operation",
        f"{first.events / first.operations:.2f} events ({first.operations:,} operations)",
    )
    before = table_rows(app)
    for number in range(LIVE):
        answer = requests.post(
            f"{sandbox.api_url}/operations",
            json={"amount": "25", "currency": "USDT", "order_id": f"live-{number}"},
            headers=sandbox.headers(),
            timeout=10,
        )
        answer.raise_for_status()
        sandbox.receive(answer.json()["data"]["id"], "25")
    syncs = 3
    for number in range(syncs):
        # A market that moves between two syncs, as a real one does in 10 seconds.
        sandbox.set_prices(BTC=str(60000 + number), ETH=str(3000 + number))
        with app.app_context():
            mirror.sync_merchant(merchant_id, force=True)
            webhooks.fan_out()
    sandbox.thaw_prices()
    after = table_rows(app)
    added = {table: after[table] - before[table] for table in after}
    results.add(
        "a live paid operation adds",
        f"{added['events'] / LIVE:.1f} events, {added['webhook_deliveries'] / LIVE:.1f} "
        f"deliveries (one endpoint taking every event), {added['ledger_entries'] / LIVE:.1f} "
        "ledger entries",
    )
    per_day = added["rate_records"] / syncs * 86400 / float(app.config["SYNC_SECONDS"])
    kept = per_day * float(app.config["RATE_HISTORY_DAYS"])
    results.add(
        "rates history",
        f"{added['rate_records']} rows in {syncs} syncs of a moving market: {per_day:,.0f} a "
        "day per "
        f"merchant, at most {kept:,.0f} kept (PORTAL_RATE_HISTORY_DAYS "
        f"{app.config['RATE_HISTORY_DAYS']})",
    )


def fill_both(app, operations: int, results: Results) -> Filled:
    """The merchant's rows and as many of another merchant; the mix printed."""
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named

    with app.app_context():
        merchant_named(OTHER, create=True)
        db.session.commit()
    cpu, started = time.process_time(), time.perf_counter()
    filled = fill(app, operations, days=365, first_id=FIRST_FILLED_ID, history=True)
    fill(app, operations, merchant=OTHER, days=365, first_id=3 * FIRST_FILLED_ID, history=True)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = ", ".join(f"{n:,} {table}" for table, n in filled.tables.items())
    results.add(
        "fill of both merchants", f"{wall:.0f} s ({cpu:.0f} s CPU), peak memory {peak:.0f} MiB"
    )
    print(f"  each merchant: {rows}")
    share = {reason: n / operations for reason, n in filled.attention.items()}
    several = filled.several_transactions / operations
    mix = ", ".join(f"{s} {p} %" for s, p in STATUSES.items())
    print(f"  statuses: {mix}; several transactions: {several:.1%}")
    results.add(
        "attention groups' shares of operations",
        ", ".join(f"{reason} {part:.2%}" for reason, part in share.items()),
        target="each >= 1 %, several transactions >= 5 %",
        met=min(share.values()) >= 0.01 and several >= 0.05,
    )
    return filled


def pages(app, filled: Filled, arguments, results: Results) -> None:
    """Search per kind, the attention list, the dashboard, balances and the statement."""
    from flask import url_for

    with app.test_request_context():
        dashboard, balances = url_for("dashboard.index"), url_for("balances.index")
        statement, ledger = url_for("statement.index"), url_for("balances.ledger_csv")
    today = datetime.now(UTC).date()
    year = {"from": str(today - timedelta(days=364)), "to": str(today)}
    with serve_in_thread(app) as url:
        session = signed_in(url)
        get = partial(session.get, timeout=120)
        randomness = random.Random(11)
        for kind, values in filled.kept.items():
            median, p95 = latency(searches(session, url, values, randomness), arguments.requests)
            results.add(
                f"search by {kind}",
                f"median {median:.1f} ms, p95 {p95:.1f} ms",
                target=f"{SEARCH_MEDIAN_MS}/{SEARCH_P95_MS} ms",
                met=median <= SEARCH_MEDIAN_MS and p95 <= SEARCH_P95_MS,
            )
        count = max(5, arguments.requests // 2)
        results.timed("attention list", partial(get, f"{url}/attention"), count, 100)
        dashboard_30 = partial(get, f"{url}{dashboard}", params={"period": "30-days"})
        results.timed("dashboard, 30 days", dashboard_30, count, DASHBOARD_MS)
        dashboard_year = partial(get, f"{url}{dashboard}", params=year)
        results.timed("dashboard, a year", dashboard_year, count, DASHBOARD_MS)
        results.timed("balances", partial(get, f"{url}{balances}"), count, REPORT_MS)
        last_month = partial(get, f"{url}{statement}", params={"period": "last-month"})
        results.timed("last month's statement", last_month, count, REPORT_MS)
        export(session, f"{url}{ledger}", filled, results)


def export(session: requests.Session, url: str, filled: Filled, results: Results) -> None:
    """The ledger of the whole year as CSV, against about 1,000 rows of it (its last days)."""
    entries = filled.tables["ledger_entries"]
    today = datetime.now(UTC).date()
    small_days = max(1, round(1000 * 365 / entries))
    periods = {
        "small": {"from": str(today - timedelta(days=small_days - 1)), "to": str(today)},
        "whole": {"from": str(today - timedelta(days=366)), "to": str(today)},
    }
    measured = {}
    for size, period in periods.items():
        with peak_memory() as peak:
            started = time.perf_counter()
            with session.get(url, params=period, stream=True, timeout=3600) as answer:
                answer.raise_for_status()
                lines = sum(chunk.count(b"\n") for chunk in answer.iter_content(64 * 1024))
            seconds = time.perf_counter() - started
        measured[size] = (lines - 1, seconds, peak[0] / 2**20)
    (rows, seconds, memory), (small_rows, _, small_memory) = measured["whole"], measured["small"]
    results.add(
        "ledger export",
        f"{rows:,} rows in {seconds:.1f} s ({rows / seconds:,.0f} rows/s), peak memory "
        f"+{memory:.1f} MiB against +{small_memory:.1f} MiB for {small_rows:,} rows",
    )


def incremental_sync(app, results: Results) -> None:
    """Syncs that find nothing new: the portal's CPU (the sandbox answers in its own process,
    and no page is served meanwhile), the median of five."""
    from portal.identity.rules.accounts import merchant_named
    from portal.live.rules import mirror

    cpu, wall, kinds = [], [], set()
    with app.app_context():
        merchant_id = merchant_named("Acme").id
        for _ in range(6):
            started, clock = time.process_time(), time.perf_counter()
            report = mirror.sync_merchant(merchant_id, force=True)
            cpu.append((time.process_time() - started) * 1000)
            wall.append((time.perf_counter() - clock) * 1000)
            assert report is not None and report.error is None, report
            kinds.add(report.kind.value)
    median = statistics.median(cpu[1:])
    results.add(
        "incremental sync, nothing new",
        f"{median:.1f} ms of the portal's CPU ({statistics.median(wall[1:]):.1f} ms in all, "
        f"{report.requests} requests; {', '.join(sorted(kinds))})",
        target=f"{IDLE_SYNC_MS} ms",
        met=median <= IDLE_SYNC_MS,
    )


def database_size(app, results: Results) -> None:
    import sqlalchemy as sa

    from portal.extensions import db

    with app.app_context():
        if db.engine.dialect.name == "postgresql":
            size = db.session.scalar(
                sa.text(
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
                )
            )
        else:
            path = Path(db.engine.url.database or "")
            size = sum(p.stat().st_size for p in path.parent.glob(f"{path.name}*"))
    results.add("database size", f"{size / 2**30:.2f} GiB")


def migrations(app, results: Results) -> None:
    """The last migration down and up again on the filled database."""
    import flask_migrate

    from portal.extensions import db

    with app.app_context():
        db.session.remove()
        started = time.perf_counter()
        flask_migrate.downgrade(revision="-1")
        down = time.perf_counter() - started
        flask_migrate.upgrade()
        up = time.perf_counter() - started - down
    results.add("last migration on the filled database", f"down {down:.1f} s, up {up:.1f} s")


def measure(name: str, database_url: str, sandbox, folder: Path, arguments) -> list[str]:
    results = Results(name, arguments.operations)
    print(f"\n{name}", flush=True)
    config = {"DATABASE_URL": database_url, "SYNC_SECONDS": 10}
    with connected_portal(folder, sandbox, **config) as app:
        from portal.live.rules.events import EventType

        webhook_endpoint(app, "http://127.0.0.1:9/hook", event_types=tuple(EventType))
        live_growth(app, sandbox, results)
        filled = fill_both(app, arguments.operations, results)
        pages(app, filled, arguments, results)
        incremental_sync(app, results)
        database_size(app, results)
        migrations(app, results)
    return results.missed


def reachable(url: str) -> bool:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.connect():
            return True
    except sa.exc.OperationalError as error:
        print(f"PostgreSQL at {engine.url.render_as_string()} is unreachable: {error.orig}")
        return False
    finally:
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--database-url", help="PostgreSQL to measure too (a schema of its own)")
    parser.add_argument(
        "--databases", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql"
    )
    parser.add_argument(
        "--keep-schema",
        action="store_true",
        help="leave the PostgreSQL schema and its rows (its URL printed) to read plans on",
    )
    arguments = parser.parse_args()
    databases = arguments.databases.split(",")
    if (
        "postgresql" in databases
        and arguments.database_url
        and not reachable(arguments.database_url)
    ):
        sys.exit(2)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    print(f"load average at the start: {', '.join(f'{n:.2f}' for n in os.getloadavg())}")
    missed: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="million-") as folder,
        run_sandbox(Path(folder) / "sandbox.db", seed=SEEDED) as sandbox,
    ):
        if "sqlite" in databases:
            sqlite_folder = Path(folder) / "sqlite"
            sqlite_folder.mkdir()
            url = f"sqlite:///{sqlite_folder / 'portal.sqlite3'}"
            missed += measure("SQLite", url, sandbox, sqlite_folder, arguments)
        if "postgresql" in databases and not arguments.database_url:
            print("\nPostgreSQL: not measured (no --database-url)")
        elif "postgresql" in databases:
            postgres_folder = Path(folder) / "postgresql"
            postgres_folder.mkdir()
            with postgres_schema(arguments.database_url, keep=arguments.keep_schema) as url:
                missed += measure("PostgreSQL", url, sandbox, postgres_folder, arguments)
                if arguments.keep_schema:
                    print(f"PostgreSQL schema kept: {url} (DROP SCHEMA … CASCADE when done)")
    print(f"load average at the end: {', '.join(f'{n:.2f}' for n in os.getloadavg())}")
    if missed:
        print("targets missed: " + "; ".join(missed))
        sys.exit(1)


if __name__ == "__main__":
    main()
