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
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figure
from bench.mirror_fill import fill, latency, searches, signed_in
from tests.support.databases import postgres_schema
from tests.support.portal_app import connected_portal
from tests.support.portal_server import serve_in_thread
from tests.support.sandbox_server import run_sandbox

TARGET_MS = 50


def measure(name: str, database_url: str, sandbox, folder: Path, arguments) -> None:
    started = time.perf_counter()
    with connected_portal(folder, sandbox, DATABASE_URL=database_url) as app:
        kept = fill(app, arguments.operations).kept
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
                    target = searches(session, url, values, randomness)
                median, p95 = latency(target, arguments.requests)
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
