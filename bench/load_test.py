"""Load: 50 simulated users browsing the portal under gunicorn, with locust, on loopback only.

Starts the seeded sandbox (2,000 operations) and the portal under gunicorn with several
workers as real processes on 127.0.0.1, then runs locust (as a library, headless) against the
portal. Each simulated user signs in as the owner, operator or accountant (with the CSRF token
of the sign-in form), then, with a pause between pages, browses `/operations` with various
filters, sorts and pages, opens operations taken from those lists, looks at `/transactions`,
`/rates` and the dashboard, and now and then downloads `/operations/export.csv?status=1`.
Users are spawned first; the run then lasts `--duration` seconds with all of them signed in.

Prints the total requests, the failures (target of issue #8: none; each is listed), the
throughput and the p50/p95 time of each kind of page (locust's percentiles: whole milliseconds
below 100 ms, two significant digits above). Exits with 1 when any request failed.

    .venv/bin/python bench/load_test.py [--users 50] [--duration 60] [--workers 4]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from pathlib import Path

import gevent
from locust import HttpUser, between, task
from locust.env import Environment

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import CSRF_FIELD, PASSWORD
from tests.support.portal_app import ROLES, email
from tests.support.portal_server import run_portal
from tests.support.sandbox_server import run_sandbox

OPERATIONS = 2000
SPAWN_RATE = 10  # users started per second
EMAILS = tuple(email(role) for role in ROLES)
OPERATION_LINK = re.compile(r'href="/operations/([A-Za-z0-9]+)"')
NOT_OPERATIONS = {"new", "export"}
# Filters of the operations list, as the filter form sends them (status is repeated).
FILTERS = (
    {},
    {"status": "1"},
    {"status": ["1", "3"]},
    {"currency": "BTC"},
    {"currency": "USDT,BTC", "sort": "amount", "sort_type": "desc"},
    {"sort": "created", "sort_type": "asc"},
    {"category": "application", "status": ["0", "1", "5"]},
    {"amount_from": "0.01", "sort": "amount"},
)
PER_PAGE = ("10", "25", "50", "100")


class PortalUser(HttpUser):
    """Someone of Acme reading the portal: lists, records, rates and an export now and then."""

    wait_time = between(1, 3)  # replaced from the command line
    emails = iter(())  # replaced: the next user's email, taking the roles in turn

    def on_start(self) -> None:
        self.operation_ids: list[str] = []
        with self.client.get("/login", name="/login (form)", catch_response=True) as page:
            match = CSRF_FIELD.search(page.text or "")
            if not match:
                page.failure(f"no CSRF token on the sign-in form (HTTP {page.status_code})")
                return
        form = {"email": next(self.emails), "password": PASSWORD, "csrf_token": match.group(1)}
        with self.client.post(
            "/login", data=form, name="/login (sign in)", allow_redirects=False, catch_response=True
        ) as answer:
            if answer.status_code != 302:
                answer.failure(f"sign-in answered HTTP {answer.status_code}, not 302")

    def page(self, path: str, name: str, params: dict | None = None) -> str:
        """GET a page; anything but a 200 reached without a redirect (to sign-in) fails."""
        with self.client.get(path, params=params, name=name, catch_response=True) as answer:
            if answer.status_code != 200:
                answer.failure(f"HTTP {answer.status_code}")
            elif answer.history:
                answer.failure(f"redirected to {answer.url}")
            return answer.text or ""

    @task(10)
    def operations(self) -> None:
        params = dict(random.choice(FILTERS))
        params["per_page"] = random.choice(PER_PAGE)
        if random.random() < 0.5:
            params["page"] = str(random.randint(2, 5))
        html = self.page("/operations", "/operations", params)
        ids = [found for found in OPERATION_LINK.findall(html) if found not in NOT_OPERATIONS]
        if ids:
            self.operation_ids = ids

    @task(8)
    def operation(self) -> None:
        if not self.operation_ids:
            self.operations()
            return
        operation_id = random.choice(self.operation_ids)
        self.page(f"/operations/{operation_id}", "/operations/<id>")

    @task(3)
    def transactions(self) -> None:
        params = {"per_page": random.choice(PER_PAGE)}
        if random.random() < 0.3:
            params["page"] = "2"
        self.page("/transactions", "/transactions", params)

    @task(2)
    def rates(self) -> None:
        self.page("/rates", "/rates")

    @task(2)
    def dashboard(self) -> None:
        self.page("/", "/")

    @task(1)
    def export(self) -> None:
        """The whole CSV is read: its time is the time of the full download."""
        with self.client.get(
            "/operations/export.csv",
            params={"status": "1"},
            name="/operations/export.csv?status=1",
            catch_response=True,
        ) as answer:
            if answer.status_code != 200:
                answer.failure(f"HTTP {answer.status_code}")
            elif not answer.headers.get("Content-Type", "").startswith("text/csv"):
                answer.failure(f"not a CSV: {answer.headers.get('Content-Type')}")
            elif b"EXPORT INCOMPLETE" in answer.content:
                answer.failure("the export ended with EXPORT INCOMPLETE")


def run(
    url: str, users: int, duration: float, think: tuple[float, float]
) -> tuple[Environment, float]:
    """Spawn `users`, keep them all busy for `duration` seconds, stop.

    Returns locust's environment (its stats) and the requests per second at full load.
    """
    PortalUser.wait_time = between(*think)
    PortalUser.emails = (EMAILS[n % len(EMAILS)] for n in range(users))
    environment = Environment(user_classes=[PortalUser], host=url)
    runner = environment.create_local_runner()
    runner.start(users, spawn_rate=SPAWN_RATE)
    runner.spawning_greenlet.join()
    started = time.perf_counter()
    before = environment.stats.total.num_requests
    gevent.sleep(duration)
    throughput = (environment.stats.total.num_requests - before) / (time.perf_counter() - started)
    runner.quit()
    runner.greenlet.join()
    return environment, throughput


def report(environment: Environment, throughput: float, arguments: argparse.Namespace) -> int:
    """Print the figures; 1 when any request failed."""
    users, duration, workers = arguments.users, arguments.duration, arguments.workers
    stats = environment.stats
    total = stats.total
    print(
        f"{users} users, {duration:.0f} s after spawning ({SPAWN_RATE}/s), portal under gunicorn "
        f"with {workers} workers (threads per gunicorn.conf.py), sandbox with {OPERATIONS:,} "
        "operations, all on 127.0.0.1"
    )
    print(f"requests   {total.num_requests}")
    print(f"failures   {total.num_failures}")
    print(f"throughput {throughput:.1f} requests/s with all {users} users")
    print(f"{'page':<34} {'requests':>8} {'failures':>8} {'p50 ms':>7} {'p95 ms':>7}")
    for entry in [*sorted(stats.entries.values(), key=lambda e: -e.num_requests), total]:
        print(
            f"{entry.name:<34} {entry.num_requests:>8} {entry.num_failures:>8} "
            f"{entry.get_response_time_percentile(0.5):>7} "
            f"{entry.get_response_time_percentile(0.95):>7}"
        )
    for error in stats.errors.values():
        print(f"FAILED {error.occurrences}x {error.method} {error.name}: {error.error}")
    return 1 if total.num_failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds at full load")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    parser.add_argument(
        "--think", default="1,3", help="pause between pages, seconds: MIN,MAX (default 1,3)"
    )
    arguments = parser.parse_args()
    low, high = (float(value) for value in arguments.think.split(","))
    with (
        tempfile.TemporaryDirectory() as folder,
        run_sandbox(Path(folder) / "sandbox.db", seed=OPERATIONS, random_seed=7) as sandbox,
        run_portal(Path(folder), sandbox, gunicorn=True, workers=arguments.workers) as server,
    ):
        environment, throughput = run(server.url, arguments.users, arguments.duration, (low, high))
        status = report(environment, throughput, arguments)
        if status:
            log = (Path(folder) / "portal.log").read_text().splitlines()
            print("last lines of the portal's log:", *log[-20:], sep="\n")
    sys.exit(status)


if __name__ == "__main__":
    main()
