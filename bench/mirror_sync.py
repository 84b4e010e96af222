"""The mirror's cost: its first sync of a large account, and what an idle merchant costs the API.

(a) A sandbox seeded with `--operations` operations (100,000 by default; the seeding time is
    printed too), a portal connected to it, and the merchant's first sync: seconds (and the
    CPU seconds the portal's process spent, which a busy machine changes less), requests, and
    rows (operations + transactions) written per second. Side by side, the floor: a bare
    `requests` loop making the same requests at the same concurrency and doing nothing with
    the answers; the sync's wall and CPU time are given as multiples of it (the target: 1.5).
    Also the seconds the sync spent inside the database driver's calls (its statements, bulk
    inserts and commits: the database's own work and the driver's, none of the portal's), the
    part of the sync no change to the portal's code takes away.
(b) A real worker (`flask --app portal worker`) at the default interval keeps that merchant's
    mirror while nothing changes upstream: the API requests per minute it makes, counted in the
    sandbox's own request log over `--idle-seconds`.

    .venv/bin/python bench/mirror_sync.py [--operations 100000] [--idle-seconds 60]
        [--database-url postgresql+psycopg://...]
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import requests
from sqlalchemy import Engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figure
from portal.api.paging import REQUESTS_AT_ONCE
from tests.support.portal_app import connected_portal
from tests.support.sandbox_server import (
    APP_TOKEN,
    SandboxServer,
    _wait_until_listening,
    free_port,
)
from tests.support.worker import running_worker

API_PATH = "/sandbox/v1/"
DEFAULT_INTERVAL = 10  # PORTAL_SYNC_SECONDS' default


@contextlib.contextmanager
def logged_sandbox(folder: Path, operations: int) -> Iterator[tuple[SandboxServer, Path, float]]:
    """A seeded sandbox that logs every request (to count them); the seconds its start took."""
    port, log = free_port(), folder / "sandbox.log"
    command = [
        sys.executable, "-m", "sandbox", "--port", str(port), "--database",
        str(folder / "sandbox.db"), "--token", APP_TOKEN, "--seed", str(operations),
    ]  # fmt: skip
    started = time.perf_counter()
    with log.open("ab") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    server = SandboxServer(f"http://127.0.0.1:{port}", folder / "sandbox.db", process)
    try:
        _wait_until_listening(f"{server.base_url}/openapi.json", process, timeout=3600)
        yield server, log, time.perf_counter() - started
    finally:
        process.terminate()
        process.wait(timeout=30)


def bare_read(sandbox: SandboxServer) -> float:
    """Seconds to make the requests a first sync makes, the way it makes them, doing nothing
    with the answers: the rates, then each list (operations, vouchers) newest change first,
    its first page alone and the others REQUESTS_AT_ONCE at a time (`portal.api.paging`)."""
    sessions = threading.local()

    def get(path: str, page: int | None = None) -> requests.Response:
        if not hasattr(sessions, "session"):
            sessions.session = requests.Session()
        params = {"sort": "updated", "sort_type": "desc", "per_page": 100, "page": page}
        answer = sessions.session.get(
            f"{sandbox.api_url}{path}",
            params=params if page else None,
            headers=sandbox.headers(),  # the portal's token, the vouchers' too
            timeout=60,
        )
        answer.raise_for_status()
        return answer

    started = time.perf_counter()
    get("/rates")
    with ThreadPoolExecutor(REQUESTS_AT_ONCE) as workers:
        for path in ("/operations", "/vouchers"):
            last_page = get(path, 1).json()["meta"]["last_page"]
            list(workers.map(partial(get, path), range(2, last_page + 1)))
    return time.perf_counter() - started


@contextlib.contextmanager
def driver_seconds(engine: Engine) -> Iterator[list[float]]:
    """Seconds spent inside the database driver's execute, executemany and commit while in the
    block (the list's one item), timed around the dialect's calls to them."""
    dialect, spent = engine.dialect, [0.0]

    def timed(call: Callable[..., Any]) -> Callable[..., Any]:
        def timed_call(*arguments: Any, **keywords: Any) -> Any:
            started = time.perf_counter()
            try:
                return call(*arguments, **keywords)
            finally:
                spent[0] += time.perf_counter() - started

        return timed_call

    names = ("do_execute", "do_executemany", "do_commit")
    for name in names:
        setattr(dialect, name, timed(getattr(dialect, name)))
    try:
        yield spent
    finally:
        for name in names:
            delattr(dialect, name)  # the dialect's own methods again


def api_requests(log: Path) -> int:
    return sum(API_PATH in line for line in log.read_text(errors="replace").splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=100_000)
    parser.add_argument("--idle-seconds", type=int, default=60)
    parser.add_argument("--database-url", help="the portal's database (default: a SQLite file)")
    arguments = parser.parse_args()

    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.rules import mirror

    with tempfile.TemporaryDirectory(prefix="mirror-bench-") as name:
        folder = Path(name)
        with logged_sandbox(folder, arguments.operations) as (sandbox, log, seeding):
            print(f"sandbox seeded with {arguments.operations:,} operations in {seeding:.1f} s")
            bare = bare_read(sandbox)
            print(f"bare read of every page, {REQUESTS_AT_ONCE} requests at once: {bare:.1f} s")
            figure(f"bare read of {arguments.operations:,} operations' pages", f"{bare:.1f} s")
            config = {"SYNC_SECONDS": DEFAULT_INTERVAL}
            if arguments.database_url:
                config["DATABASE_URL"] = arguments.database_url
            with connected_portal(folder, sandbox, **config) as app:
                with app.app_context(), driver_seconds(db.engine) as in_driver:
                    merchant_id = accounts.merchant_named("Acme").id
                    cpu = time.process_time()
                    report = mirror.sync_merchant(merchant_id)
                    cpu = time.process_time() - cpu
                assert report is not None and report.error is None, report
                rows = report.operations + report.transactions
                first_sync = (
                    f"{report.seconds:.1f} s ({report.seconds / bare:.2f} x the bare read; "
                    f"{cpu:.1f} s of the portal's CPU, {cpu / bare:.2f} x), "
                    f"{report.requests:,} requests, "
                    f"{report.operations:,} operations + {report.transactions:,} transactions, "
                    f"{rows / report.seconds:,.0f} rows/s, {report.events:,} events"
                )
                print(f"(a) first sync: {first_sync}")
                figure(f"first sync of {arguments.operations:,} operations", first_sync)
                database = f"{in_driver[0]:.1f} s ({in_driver[0] / bare:.2f} x the bare read)"
                print(f"    of which in the database driver: {database}")
                figure("first sync, in the database driver", database)
                with running_worker(app, folder / "worker", sync_seconds=DEFAULT_INTERVAL):
                    before, started = api_requests(log), time.monotonic()
                    time.sleep(arguments.idle_seconds)
                    counted = api_requests(log) - before
                    elapsed = time.monotonic() - started
                idle = f"{counted * 60 / elapsed:.1f} ({counted} in {elapsed:.0f} s)"
                print(
                    f"(b) idle merchant, PORTAL_SYNC_SECONDS={DEFAULT_INTERVAL}: "
                    f"{idle} API requests per minute"
                )
                figure("idle merchant, API requests per minute", idle)


if __name__ == "__main__":
    main()
