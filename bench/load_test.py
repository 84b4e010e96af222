"""Load: simulated people browsing the portal under gunicorn, with locust, on loopback only.

Starts the seeded sandbox (2,000 operations), the portal under gunicorn and its background
worker (mirroring the merchant every 10 s, as in production) as real processes on 127.0.0.1.
The mirror first holds `--mirrored` operations more (100,000 by default, filled as
`bench/mirror_fill.py` fills it, with every group of the attention list), then the worker's first
sync adds the sandbox's. Then locust runs (as a library, headless) against the portal. Each
simulated user signs in as the owner, operator or accountant (with the CSRF token of the
sign-in form; their passwords are hashed with the production default, scrypt, so a sign-in
costs what it costs in production), then, with a pause between pages, browses `/operations`
with various filters, sorts and pages, opens operations taken from those lists, looks at
`/transactions`, `/rates`, the dashboard and `/attention`, searches the mirror for a piece of
an order number, an id, an address or a hash, opens `/balances` and the statement (`/reports`;
an operator, who may open neither, opens `/attention` instead), and now and then downloads
`/operations/export.csv?status=1`. Each page's stylesheet and scripts are fetched as a browser's
cache would (`load_users.BrowserCache`): their requests are not among the pages' figures, but
the portal's CPU a page counts them.

Two phases are measured apart, each with its own figures:
- signing in: the users are spawned (10 per second), each signing in as it starts;
- browsing: `--duration` seconds with all of them signed in. The target is for
  this phase at 200 users: no failure and p95 under 300 ms.
Then (unless `--no-saturation`) the run adds `--step` users at a time (or takes them away, when
p95 is already past 300 ms), measuring each level for `--step-duration` seconds, until p95
crosses 300 ms (or a request fails): the saturation point lies between the last two levels.

For each phase: requests, failures (each listed), throughput, p50/p95 of each kind of page
(locust's percentiles: whole milliseconds below 100 ms, two significant digits above), and the
CPU seconds that the portal's web processes, its worker, the sandbox and the load generator
used (on two cores in all), and the machine's load average as the phase ends.
Exits with 1 when any request failed or the target p95 was passed at `--users`.

    .venv/bin/python bench/load_test.py [--users 200] [--duration 60] [--workers N]
        [--mirrored 100000] [--no-saturation | --step 50 --step-duration 30 --max-users 600]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

if __name__ == "__main__":  # not where the servers' fork server imports this script
    from bench import load_users  # first: it imports locust (its docstring says why)

import sqlalchemy as sa

from bench.mirror_fill import fill
from tests.support.polling import wait_for
from tests.support.portal_server import PortalServer, run_portal
from tests.support.sandbox_server import run_sandbox
from tests.support.worker import running_worker

OPERATIONS = 2000
# The ids of the operations and transactions filled into the mirror begin here, far from the
# sandbox's own (which the worker mirrors beside them).
FILLED_FROM = 10**7
SYNC_SECONDS = 10  # the worker's production default (PORTAL_SYNC_SECONDS)


def first_sync_done(server: PortalServer) -> bool:
    """Whether the worker has mirrored the merchant's operations once (the dashboard's data)."""
    from portal.extensions import db
    from portal.live.models import MirrorState

    with server.app.app_context():
        return bool(
            db.session.scalar(
                sa.select(sa.func.count()).where(MirrorState.last_full_sync_at.is_not(None))
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds browsing")
    parser.add_argument(
        "--workers", type=int, help="gunicorn workers (default: gunicorn.conf.py's, one per CPU)"
    )
    parser.add_argument(
        "--think", default="1,3", help="pause between pages, seconds: MIN,MAX (default 1,3)"
    )
    parser.add_argument(
        "--saturation",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="then find the saturation point (default)",
    )
    parser.add_argument(
        "--mirrored", type=int, default=100_000, help="operations filled into the mirror"
    )
    parser.add_argument("--step", type=int, default=50, help="users added per level")
    parser.add_argument("--step-duration", type=float, default=30.0, help="seconds per level")
    parser.add_argument("--max-users", type=int, default=600)
    arguments = parser.parse_args()
    low, high = (float(value) for value in arguments.think.split(","))
    workers = f"{arguments.workers} workers" if arguments.workers else "a worker per CPU"
    print(
        f"portal under gunicorn with {workers} (as many threads as gunicorn.conf.py says), "
        f"sandbox with {OPERATIONS:,} operations, {arguments.mirrored:,} more in the mirror, "
        f"all on 127.0.0.1; pause {low:g}-{high:g} s between pages; {os.cpu_count()} CPUs"
    )
    with (
        tempfile.TemporaryDirectory() as folder,
        run_sandbox(Path(folder) / "sandbox.db", seed=OPERATIONS, random_seed=7) as sandbox,
        run_portal(Path(folder), sandbox, gunicorn=True, workers=arguments.workers) as server,
    ):
        started = time.perf_counter()
        filled = fill(server.app, arguments.mirrored, first_id=FILLED_FROM)
        print(f"mirror filled in {time.perf_counter() - started:.0f} s")
        with running_worker(server.app, Path(folder) / "worker", sync_seconds=SYNC_SECONDS) as (
            worker
        ):
            wait_for(lambda: first_sync_done(server), timeout=120)
            load_users.add_load_users(server)
            load_users.PortalUser.searches = load_users.search_texts(filled.kept)
            status = load_users.run(server, worker.process.pid, arguments, (low, high))
        if status:
            log = (Path(folder) / "portal.log").read_text().splitlines()
            print("last lines of the portal's log:", *log[-20:], sep="\n")
    sys.exit(status)


if __name__ == "__main__":
    main()
