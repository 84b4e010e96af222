"""What a page costs beyond what it must ask for: the operations list and
the transactions list with 50 rows, and the dashboard over a realistic mirror.

Starts the seeded sandbox (by default 300 operations, as `make run` seeds it) and, one after
the other, the portal under gunicorn (the project's gunicorn.conf.py) and under `flask run`, as
real processes on a fresh SQLite database whose mirror holds `--mirrored` operations (100,000
by default, spread over 90 days, filled as bench/search.py fills it). For each server and page
it alternates, round after round:

- the API call(s) the page makes, made directly with `requests` and the same parameters: the
  transactions list's two, one after the other as the page makes them (a page of
  transactions, then their operations by id for the currency each was paid in), the
  dashboard's two at once (the latest operations and the rates);
- for the dashboard also its SQL: the statements the page runs over the mirror, captured from
  the portal and replayed on the same database file with `sqlite3` alone (the database's own
  work: reading some 33,000 operations of 30 days, summing their amounts exactly);
- the signed-in no-op: `GET /healthz` with the signed-in session's cookie. Its answer says
  that the session was read: `Cache-Control: no-store` is sent to a signed-in user only, so the
  cookie was decoded and its session, user, merchant and API connection loaded (one query),
  past every before- and after-request hook, as every signed-in request does; the bench checks
  that header. It renders nothing: the layout of a page (menu, CSRF token) is page cost;
- the page itself, signed in.

The floor is the no-op plus the direct calls (and the dashboard's SQL): what a page costs that
does nothing but ask. Prints the medians, the floor and the ratio page / floor against the
target (at most 1.2), and for reference the same API call through the portal's own client
(HTTP plus reading the records) and a bare WSGI app answering "hello" under the same gunicorn
settings (the least any request through gunicorn costs). Exits 1 when a ratio is above target.

    .venv/bin/python bench/page_cost.py [--requests 40] [--operations 300] [--mirrored 100000]
                                        [--servers gunicorn,flask]
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import requests
import sqlalchemy as sa
from flask_login import login_user
from werkzeug.datastructures import MultiDict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figure
from bench.mirror_fill import fill, timed
from portal.api import MerchantApiClient
from portal.api.client import OPERATION_FILTERS, TRANSACTION_FILTERS
from portal.api.wire import encode_query
from portal.payments.pages.operations.forms import OperationFilters
from portal.payments.pages.transactions.forms import TransactionFilters
from tests.support.portal_server import PortalServer, run_portal
from tests.support.sandbox_server import free_port, run_sandbox

ROOT = Path(__file__).resolve().parents[1]

TARGET_RATIO = 1.2
LIST_PAGE = {"per_page": "50"}
Timer = Callable[[], float]


def hello(_environ: dict, start_response: Callable) -> list[bytes]:
    """The bare WSGI app: what a request through gunicorn costs with no framework at all."""
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
    return [b"hello"]


def timed_together(calls: list[Callable[[], requests.Response]], pool: ThreadPoolExecutor) -> float:
    """Milliseconds until every one of `calls`, started at once, has answered."""
    started = time.perf_counter()
    for response in [future.result() for future in [pool.submit(call) for call in calls]]:
        response.raise_for_status()
    return (time.perf_counter() - started) * 1000


@dataclass
class Measured:
    """The medians of one page on one server."""

    name: str
    timers: dict[str, Timer]
    times: dict[str, list[float]] = field(default_factory=dict)

    def run_once(self) -> None:
        for kind, timer in self.timers.items():
            self.times.setdefault(kind, []).append(timer())

    def median(self, kind: str) -> float:
        return statistics.median(self.times[kind]) if kind in self.times else 0.0

    @property
    def floor(self) -> float:
        return self.median("api") + self.median("sql") + self.median("no-op")

    @property
    def ratio(self) -> float:
        return self.median("page") / self.floor


def api_filters(server: PortalServer, filters: type, allowed: tuple[str, ...]) -> dict:
    """The query the portal sends the API for a list page of 50 rows (its form's defaults)."""
    from portal.web.filters import read_filters

    with server.app.test_request_context():
        query = read_filters(filters, MultiDict(LIST_PAGE))
    assert query.filters is not None
    return encode_query(query.filters, allowed)


def dashboard_statements(server: PortalServer) -> list[tuple[str, tuple]]:
    """The SQL the dashboard runs for its figures (30 days), with their parameters."""
    from portal.extensions import db
    from portal.identity.models import User
    from portal.payments.pages.dashboard.routes import DEFAULT_PRESET, PRESETS, _figures
    from portal.web.periods import PeriodForm

    statements: list[tuple[str, tuple]] = []

    def record(_conn, _cursor, statement, parameters, *_args) -> None:
        statements.append((statement, tuple(parameters)))

    with server.app.test_request_context():
        owner = db.session.scalar(sa.select(User).where(User.email == "owner@acme.test"))
        login_user(owner)
        merchant = owner.merchant
        assert merchant.mirror_state is not None  # loaded with the session, as the page has it
        sa.event.listen(db.engine, "before_cursor_execute", record)
        try:
            _figures(merchant, PeriodForm(MultiDict(), PRESETS, DEFAULT_PRESET))
        finally:
            sa.event.remove(db.engine, "before_cursor_execute", record)
    return statements


def sql_replay(database: Path, statements: list[tuple[str, tuple]]) -> Timer:
    """The captured statements run on the database file by sqlite3 alone."""
    from portal.extensions import DecimalSum

    connection = sqlite3.connect(database, check_same_thread=False)
    connection.create_aggregate("decimal_sum", 1, DecimalSum)  # type: ignore[arg-type]

    def run() -> float:
        started = time.perf_counter()
        for statement, parameters in statements:
            connection.execute(statement, parameters).fetchall()
        return (time.perf_counter() - started) * 1000

    return run


def pages(server: PortalServer, instance: Path, pool: ThreadPoolExecutor) -> list[Measured]:
    """Each page with its timers: its direct API call(s), its SQL, the no-op and itself."""
    sandbox = server.sandbox
    portal = server.signed_in_session("owner@acme.test")
    noop = f"{server.url}/healthz"
    answer = portal.get(noop, timeout=30)
    assert answer.headers.get("Cache-Control") == "no-store", "the no-op is not signed in"
    api = requests.Session()
    api.headers.update(sandbox.headers())
    other = requests.Session()  # the dashboard's second call goes out at once, on its own
    other.headers.update(sandbox.headers())

    def get(session: requests.Session, url: str, params: dict | None = None) -> Callable:
        return lambda: session.get(url, params=params, timeout=60)

    operations = api_filters(server, OperationFilters, OPERATION_FILTERS)
    transactions = api_filters(server, TransactionFilters, TRANSACTION_FILTERS)
    latest = encode_query({"per_page": 5}, OPERATION_FILTERS)
    no_op = lambda: timed(get(portal, noop))  # noqa: E731
    return [
        Measured(
            "operations list, 50 rows",
            {
                "api": lambda: timed(get(api, f"{sandbox.api_url}/operations", operations)),
                "no-op": no_op,
                "page": lambda: timed(get(portal, f"{server.url}/operations", LIST_PAGE)),
            },
        ),
        Measured(
            "transactions list, 50 rows",
            {
                "api": lambda: paid_transactions(api, sandbox.api_url, transactions),
                "no-op": no_op,
                "page": lambda: timed(get(portal, f"{server.url}/transactions", LIST_PAGE)),
            },
        ),
        Measured(
            "dashboard, 30 days",
            {
                "api": lambda: timed_together(
                    [
                        get(api, f"{sandbox.api_url}/operations", latest),
                        get(other, f"{sandbox.api_url}/rates"),
                    ],
                    pool,
                ),
                "sql": sql_replay(instance / "portal.sqlite3", dashboard_statements(server)),
                "no-op": no_op,
                "page": lambda: timed(get(portal, f"{server.url}/")),
            },
        ),
    ]


def paid_transactions(api: requests.Session, api_url: str, query: dict) -> float:
    """The transactions list's two calls: a page of transactions, then (as
    portal/payments/rules/paid_transactions.py asks) their operations by id, for the currency each
    was
    paid in."""
    started = time.perf_counter()
    page = api.get(f"{api_url}/transactions", params=query, timeout=60)
    page.raise_for_status()
    ids = sorted({row["operation_id"] for row in page.json()["data"] if row["operation_id"]})
    by_id = encode_query({"id": ids, "per_page": len(ids)}, OPERATION_FILTERS)
    api.get(f"{api_url}/operations", params=by_id, timeout=60).raise_for_status()
    return (time.perf_counter() - started) * 1000


def client_call(server: PortalServer) -> Timer:
    """The operations list's call through the portal's client: HTTP and reading the records."""
    client = MerchantApiClient(server.sandbox.base_url, token=server.sandbox.token)

    def call() -> float:
        started = time.perf_counter()
        client.list_operations(per_page=50)
        return (time.perf_counter() - started) * 1000

    return call


@contextlib.contextmanager
def bare_gunicorn() -> Iterator[str]:
    """The `hello` app under gunicorn with the portal's settings (gunicorn.conf.py)."""
    port = free_port()
    command = [
        sys.executable, "-m", "gunicorn", "--workers", "1", "--bind", f"127.0.0.1:{port}",
        "--log-level", "warning", "--pythonpath", str(ROOT / "bench"), "page_cost:hello",
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT)
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(500):
            with contextlib.suppress(requests.ConnectionError):
                if requests.get(url, timeout=5).ok:
                    break
            time.sleep(0.02)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def measure(kind: str, sandbox, arguments, pool: ThreadPoolExecutor) -> tuple[list, float]:
    """Every page on one kind of server; also the API call through the portal's client."""
    with (
        tempfile.TemporaryDirectory() as folder,
        run_portal(Path(folder), sandbox, gunicorn=kind == "gunicorn") as server,
    ):
        started = time.perf_counter()
        fill(server.app, arguments.mirrored)
        filled = time.perf_counter() - started
        print(f"{kind}: {arguments.mirrored:,} operations mirrored in {filled:.0f} s")
        measured = pages(server, Path(folder), pool)
        client = Measured("client", {"api": client_call(server)})
        for _ in range(5):  # warm up connections, caches and templates
            for each in [*measured, client]:
                each.run_once()
        for each in [*measured, client]:
            each.times.clear()
        for _ in range(arguments.requests):
            for each in [*measured, client]:
                each.run_once()
        return measured, client.median("api")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40, help="rounds of requests")
    parser.add_argument("--operations", type=int, default=300, help="operations in the sandbox")
    parser.add_argument("--mirrored", type=int, default=100_000, help="operations mirrored")
    parser.add_argument("--servers", default="gunicorn,flask", help="gunicorn, flask or both")
    arguments = parser.parse_args()
    results = {}
    with (
        tempfile.TemporaryDirectory() as folder,
        run_sandbox(
            Path(folder) / "sandbox.db", seed=arguments.operations, random_seed=7
        ) as sandbox,
        ThreadPoolExecutor(max_workers=2) as pool,
    ):
        for kind in arguments.servers.split(","):
            results[kind] = measure(kind, sandbox, arguments, pool)
        with bare_gunicorn() as url:
            bare = requests.Session()
            for _ in range(5):
                timed(lambda: bare.get(url, timeout=30))
            hello_ms = statistics.median(
                timed(lambda: bare.get(url, timeout=30)) for _ in range(arguments.requests)
            )
    print(
        f"\n{arguments.requests} rounds, alternating; sandbox of {arguments.operations:,} "
        f"operations, {arguments.mirrored:,} mirrored; medians in ms"
    )
    columns = "".join(f"{name:>7}" for name in ("API", "SQL", "no-op", "floor", "page", "ratio"))
    print(f"{'server':<9} {'page':<27}{columns}")
    worst = 0.0
    for kind, (measured, client_ms) in results.items():
        for each in measured:
            worst = max(worst, each.ratio)
            print(
                f"{kind:<9} {each.name:<27} {each.median('api'):6.2f} {each.median('sql'):6.2f} "
                f"{each.median('no-op'):6.2f} {each.floor:6.2f} {each.median('page'):6.2f} "
                f"{each.ratio:6.2f}"
            )
            figure(
                f"{each.name} ({kind})",
                f"page {each.median('page'):.2f} ms, floor {each.floor:.2f} ms (no-op "
                f"{each.median('no-op'):.2f}), ratio {each.ratio:.2f} (target <= {TARGET_RATIO})",
            )
        print(f"{kind:<9} {'(operations API call through the portal client)':<54} {client_ms:6.2f}")
    print(f"bare WSGI 'hello' under gunicorn (the least a request costs): {hello_ms:.2f} ms")
    figure("bare WSGI 'hello' under gunicorn", f"{hello_ms:.2f} ms")
    print(f"target: page / floor at most {TARGET_RATIO}; worst {worst:.2f}")
    sys.exit(0 if worst <= TARGET_RATIO else 1)


if __name__ == "__main__":
    main()
