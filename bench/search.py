"""Search latency at 100,000 mirrored operations, and the attention list.

Fills the mirror of one merchant with `--operations` operations and about 1.5 transactions
each (realistic records, statuses and ids), in a SQLite file and, when
PORTAL_TEST_DATABASE_URL is set, in a PostgreSQL schema of its own. For each database, the
portal (an application of this process served over real HTTP by werkzeug's threaded server,
connected to a bundled sandbox) answers signed-in `GET /search?q=...` for fragments of each
kind: an order number, an operation id, an address, a transaction hash and a transaction id
(every id-shaped text also asks the sandbox for a voucher with that id, as a real search does).
Prints the median and p95 of each kind, and of `/attention` (whose groups' sizes it prints
too); the target of each median is 50 ms. The mirror is marked synced once, with the menu's
count of what needs attention counted as a sync counts it.

    .venv/bin/python bench/search.py [--operations 100000] [--requests 40]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figure
from tests.support.databases import postgres_schema
from tests.support.forms import CSRF_FIELD, PASSWORD
from tests.support.mirror_rows import operation_columns, transaction_columns
from tests.support.portal_app import connected_portal
from tests.support.portal_server import serve_in_thread
from tests.support.sandbox_server import run_sandbox

TARGET_MS = 50
BATCH = 5_000
# Status of an operation -> its share; most are paid or abandoned.
STATUSES = {"confirmed": 60, "expired": 25, "new": 8, "failed": 5, "canceled": 2}


def _stamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def rows(count: int, randomness: random.Random, first: int) -> Iterator[tuple[dict, list[dict]]]:
    """Operations over the last 90 days, each with 0 to 3 transactions (1.5 on average); ids
    (of operations and of transactions) from `first` on."""
    now = datetime.now(UTC)
    transaction_id = first - 1
    for number in range(first, first + count):
        created = now - timedelta(seconds=randomness.randrange(90 * 86400))
        status = randomness.choices(list(STATUSES), list(STATUSES.values()))[0]
        currency = randomness.choice(["BTC", "ETH", "USDT", "LTC"])
        due = randomness.randrange(1, 10**6)
        amount = f"{due / 10**4:.4f}"
        # What the attention list shows beside late and undecided money: a quarter of the new
        # operations partly paid, 5 % of the confirmed ones paid 10 % more or less than due.
        paid = amount if status == "confirmed" else None
        if status == "new" and randomness.random() < 0.25:
            paid = f"{due / 2 / 10**4:.4f}"
        elif status == "confirmed" and randomness.random() < 0.05:
            paid = f"{due * randomness.choice([0.9, 1.1]) / 10**4:.4f}"
        operation = {
            "id": str(number),
            "application_id": "1",
            "application_name": "Shop",
            "category": "application",
            "order_id": f"ORD-{randomness.randrange(10**9):09d}-{uuid.uuid4().hex[:6]}",
            "amount": amount,
            "fee": "0.01",
            "amount_paid": paid,
            "rate": "1",
            "currency": currency,
            "currency_paid": currency,
            "status": status,
            "address": "tb1q" + uuid.uuid4().hex + uuid.uuid4().hex[:6],
            "created_at": _stamp(created),
            "updated_at": _stamp(created + timedelta(minutes=10)),
            "payment_url": f"https://pay.example/{number}",
            "redirect_url": None,
        }
        transactions = []
        # Paid operations have 1 to 4 transactions (1.5 per operation in all); 1 % of the
        # expired ones got a payment after all, too late.
        late = status == "expired" and randomness.random() < 0.01
        for _ in range(randomness.choice([1, 2, 3, 4]) if paid or late else 0):
            transaction_id += 1
            state = "undefined" if randomness.random() < 0.02 else "confirmed"
            transactions.append(
                {
                    "id": str(transaction_id),
                    "tx_id": uuid.uuid4().hex + uuid.uuid4().hex,
                    "amount": paid or amount,
                    "status": state,
                    "linked": False,
                    "reject_reason": None,
                    "created_at": _stamp(created + timedelta(minutes=5)),
                    "updated_at": _stamp(created + timedelta(minutes=5)),
                }
            )
        yield {**operation, "transactions": transactions}, transactions


def fill(app, count: int, first: int = 1) -> dict[str, list[str]]:
    """The merchant's mirror, filled in batches with ids from `first` on (beside what a sync
    mirrored, when it did), then synced once; returns the values fragments are cut from."""
    import sqlalchemy as sa

    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.live.models import MirrorState
    from portal.payments.models import MirroredOperation, MirroredTransaction
    from portal.payments.rules import attention

    randomness = random.Random(7)
    kept: dict[str, list[str]] = {
        "order number": [], "operation id": [], "address": [], "transaction hash": [],
        "transaction id": [],
    }  # fmt: skip
    with app.app_context():
        merchant_id = merchant_named("Acme").id
        operations: list[dict] = []
        transactions: list[dict] = []

        def flush() -> None:
            if operations:
                db.session.execute(sa.insert(MirroredOperation), operations)
            if transactions:
                db.session.execute(sa.insert(MirroredTransaction), transactions)
            db.session.commit()
            operations.clear()
            transactions.clear()

        for record, raw_transactions in rows(count, randomness, first):
            operations.append(operation_columns(merchant_id, record))
            if randomness.random() < 0.001:
                kept["order number"].append(record["order_id"])
                kept["operation id"].append(record["id"])
                kept["address"].append(record["address"])
            for raw in raw_transactions:
                transactions.append(transaction_columns(merchant_id, record["id"], raw))
                if randomness.random() < 0.001:
                    kept["transaction hash"].append(raw["tx_id"])
                    kept["transaction id"].append(raw["id"])
            if len(operations) >= BATCH:
                flush()
        flush()
        # Synced once: the menu's count of what needs attention is counted as a sync ends, then
        # read again until the next sync (in production every PORTAL_SYNC_SECONDS).
        if db.session.get(MirrorState, merchant_id) is None:
            db.session.add(MirrorState(merchant_id=merchant_id, last_sync_at=datetime.now(UTC)))
            db.session.flush()
        attention.recount(merchant_id)
        db.session.commit()
        groups = attention.counts(merchant_id)
        print("attention list: " + ", ".join(f"{r.value} {n:,}" for r, n in groups.items()))
        if db.engine.dialect.name == "postgresql":
            # What autovacuum does soon after a fill this size: the statistics, and the
            # visibility map that lets a count read an index without visiting the rows.
            with db.engine.connect() as connection:
                connection = connection.execution_options(isolation_level="AUTOCOMMIT")
                connection.execute(sa.text("VACUUM ANALYZE mirrored_operations"))
                connection.execute(sa.text("VACUUM ANALYZE mirrored_transactions"))
    return kept


def fragment(value: str, randomness: random.Random) -> str:
    """A part of `value` in the middle, in another case, as a person would type it: ids whole
    or 4 of their digits, the others 6 to 10 characters."""
    if value.isdigit():
        return value if len(value) <= 4 else value[1:5]
    size = randomness.randint(6, 10)
    start = randomness.randrange(0, max(1, len(value) - size))
    return value[start : start + size].upper()


def timed(call: Callable[[], requests.Response]) -> float:
    started = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed


def searches(
    session: requests.Session, url: str, texts: list[str], randomness: random.Random
) -> Callable[[], requests.Response]:
    """A search for one of `texts`, another each time."""
    return lambda: session.get(f"{url}/search", params={"q": randomness.choice(texts)}, timeout=60)


def signed_in(url: str) -> requests.Session:
    session = requests.Session()
    token = CSRF_FIELD.search(session.get(f"{url}/login", timeout=30).text).group(1)
    data = {"email": "owner@acme.test", "password": PASSWORD, "csrf_token": token}
    answer = session.post(f"{url}/login", data=data, allow_redirects=False, timeout=30)
    assert answer.status_code == 302, "sign-in failed"
    return session


def measure(name: str, database_url: str, sandbox, folder: Path, arguments) -> None:
    started = time.perf_counter()
    with connected_portal(folder, sandbox, DATABASE_URL=database_url) as app:
        kept = fill(app, arguments.operations)
        filled = time.perf_counter() - started
        with serve_in_thread(app) as url:
            session = signed_in(url)
            randomness = random.Random(11)
            print(f"\n{name}: {arguments.operations:,} operations filled in {filled:.0f} s")
            print(f"{'kind':<18} {'median':>8} {'p95':>8}  (ms, {arguments.requests} requests)")
            for kind, values in [*kept.items(), ("attention page", [])]:
                if kind == "attention page":
                    target = partial(session.get, f"{url}/attention", timeout=60)
                else:
                    texts = [fragment(randomness.choice(values), randomness) for _ in range(64)]
                    target = searches(session, url, texts, randomness)
                for _ in range(3):
                    timed(target)  # warm up
                times = sorted(timed(target) for _ in range(arguments.requests))
                p95 = times[int(len(times) * 0.95) - 1]
                median = statistics.median(times)
                verdict = "ok" if median < TARGET_MS else "SLOW"
                print(f"{kind:<18} {median:8.1f} {p95:8.1f}  {verdict}")
                figure(
                    f"{kind} at {arguments.operations:,} operations ({name})",
                    f"median {median:.1f} ms, p95 {p95:.1f} ms",
                )


def main() -> None:
    parser = database_parser(__doc__)
    parser.add_argument("--operations", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=40)
    arguments = parser.parse_args()
    on_each_database(arguments.databases.split(","), partial(measure, arguments=arguments))


def database_parser(doc: str | None) -> argparse.ArgumentParser:
    """The arguments of a bench that measures on `on_each_database`, with `--databases`."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument(
        "--databases", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql"
    )
    return parser


def on_each_database(databases: list[str], measure: Callable[[str, str, Any, Path], None]) -> None:
    """`measure(name, database URL, sandbox, folder)` on SQLite and PostgreSQL (those of
    `databases`: a SQLite file, a schema of its own in PORTAL_TEST_DATABASE_URL), beside one
    bundled sandbox."""
    with (
        tempfile.TemporaryDirectory() as folder,
        run_sandbox(Path(folder) / "sandbox.db") as sandbox,
    ):
        if "sqlite" in databases:
            sqlite_folder = Path(folder) / "sqlite"
            sqlite_folder.mkdir()
            url = f"sqlite:///{sqlite_folder / 'portal.sqlite3'}"
            measure("SQLite", url, sandbox, sqlite_folder)
        if "postgresql" in databases and not os.environ.get("PORTAL_TEST_DATABASE_URL"):
            print("\nPostgreSQL: skipped (PORTAL_TEST_DATABASE_URL is not set)")
        elif "postgresql" in databases:
            postgres_folder = Path(folder) / "postgresql"
            postgres_folder.mkdir()
            with postgres_schema() as url:
                measure("PostgreSQL", url, sandbox, postgres_folder)


if __name__ == "__main__":
    main()
