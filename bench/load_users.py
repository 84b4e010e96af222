"""The load test's people and what they met: locust's users, run as a library, and the
figures of each phase (`bench/load_test.py` starts the servers and fills the mirror).

It is a module apart because importing locust patches the standard library (gevent's
`monkey.patch_all`), which must come before anything imports `ssl`. The script imports it
first, but only when run: the servers it starts are forked from a server process that imports
the script too (as `__mp_main__`, `tests/support/processes.py`), after `ssl`.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gevent
from locust import HttpUser, between, task
from locust.clients import HttpSession
from locust.env import Environment
from locust.runners import LocalRunner
from locust.stats import StatsEntry

from bench.figures import figure
from bench.mirror_fill import fragment
from tests.support.forms import CSRF_FIELD, PASSWORD
from tests.support.portal_app import ROLES
from tests.support.portal_server import PortalServer
from tests.support.static_urls import static_urls

SPAWN_RATE = 10  # users started per second
TARGET_P95_MS = 300
PRODUCTION_HASH = "scrypt"  # portal/config.py's default PASSWORD_HASH_METHOD
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SIGN_IN = "/login (sign in)"
# One user per role whose password has the production hash (the test users' hash is cheap).
EMAILS = {role: f"load-{role}@acme.test" for role in ROLES}
# Who may open `/balances` and `/reports` (the pages' features).
BOOKKEEPERS = {"owner", "accountant"}
STATEMENT_PERIODS = ("last-month", "this-month", "7-days", "yesterday")
OPERATION_LINK = re.compile(r'href="/operations/([A-Za-z0-9]+)"')
STATIC_FILES = "/static/ (stylesheet, scripts)"
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
    roles: Iterator[str] = iter(())  # replaced: the next user's role, the roles in turn
    searches: tuple[str, ...] = ()  # replaced: pieces of the mirror's values to search for
    started = 0  # users whose sign-in has been answered (or failed)

    def on_start(self) -> None:
        self.operation_ids: list[str] = []
        self.browser_cache = BrowserCache(self.client)
        self.role = next(self.roles)
        try:
            self.sign_in()
        finally:
            PortalUser.started += 1

    def sign_in(self) -> None:
        with self.client.get("/login", name="/login (form)", catch_response=True) as page:
            match = CSRF_FIELD.search(page.text or "")
            if not match:
                page.failure(f"no CSRF token on the sign-in form (HTTP {page.status_code})")
                return
            self.browser_cache.load(page.text)
        form = {"email": EMAILS[self.role], "password": PASSWORD, "csrf_token": match.group(1)}
        with self.client.post(
            "/login", data=form, name=SIGN_IN, allow_redirects=False, catch_response=True
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
            self.browser_cache.load(answer.text or "")
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

    @task(3)
    def attention(self) -> None:
        self.page("/attention", "/attention")

    @task(3)
    def search(self) -> None:
        self.page("/search", "/search", {"q": random.choice(self.searches)})

    @task(2)
    def balances(self) -> None:
        if self.role not in BOOKKEEPERS:
            self.attention()
            return
        self.page("/balances", "/balances")

    @task(2)
    def statement(self) -> None:
        if self.role not in BOOKKEEPERS:
            self.attention()
            return
        self.page("/reports", "/reports", {"period": random.choice(STATEMENT_PERIODS)})

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


class BrowserCache:
    """The stylesheet and scripts of each page, fetched as a browser's cache would: a file
    answered `immutable` is kept and not asked for again; any other is asked for again on each
    page that names it, with its ETag (a 304 when unchanged). They go over the user's own
    connection, as a browser's would, under one name (`STATIC_FILES`): the figures of pages
    leave them out, as a browser shows a page before its files arrive, and the portal's CPU a
    page counts them."""

    def __init__(self, client: HttpSession) -> None:
        self.client = client
        self.kept: set[str] = set()
        self.etags: dict[str, str] = {}

    def load(self, page: str) -> None:
        for url in static_urls(page):
            if url in self.kept:
                continue
            asked = {"If-None-Match": self.etags[url]} if url in self.etags else {}
            with self.client.get(
                url, headers=asked, name=STATIC_FILES, catch_response=True
            ) as answer:
                if answer.status_code not in (200, 304):
                    answer.failure(f"HTTP {answer.status_code}")
                elif "immutable" in answer.headers.get("Cache-Control", ""):
                    self.kept.add(url)
                elif "ETag" in answer.headers:
                    self.etags[url] = answer.headers["ETag"]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process and its waited-for children have used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / CLOCK_TICKS


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (gunicorn's workers)."""
    pids = [pid]
    for parent in pids:
        for thread in Path(f"/proc/{parent}/task").iterdir():
            pids += [int(child) for child in (thread / "children").read_text().split()]
    return pids


@dataclass
class CpuMeter:
    """CPU seconds used by the portal (gunicorn and its workers), its background worker, the
    sandbox and this process."""

    portal: int
    worker: int
    sandbox: int

    def read(self) -> dict[str, float]:
        return {
            "portal": sum(cpu_seconds(pid) for pid in process_tree(self.portal)),
            "worker": sum(cpu_seconds(pid) for pid in process_tree(self.worker)),
            "sandbox": cpu_seconds(self.sandbox),
            "load generator": cpu_seconds(os.getpid()),
        }


@dataclass
class Phase:
    """The figures of one measured stretch of the run."""

    title: str
    users: int
    seconds: float
    requests: int
    failures: int
    p95_ms: float
    sign_in_p95_ms: float
    table: list[str]
    errors: list[str]
    cpu: dict[str, float]
    load_average: float  # of the last minute, as the phase ended

    @property
    def portal_cpu_ms(self) -> float:
        """The portal's CPU time a page request (with its static files' requests)."""
        return self.cpu["portal"] / max(self.requests, 1) * 1000

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds

    def print(self) -> None:
        print(f"\n== {self.title}: {self.users} users, {self.seconds:.0f} s")
        print(f"requests   {self.requests}")
        print(f"failures   {self.failures}")
        print(f"throughput {self.throughput:.1f} requests/s")
        print(
            "CPU used   "
            + ", ".join(
                f"{name} {seconds:.1f} s ({seconds / self.seconds:.2f} cores)"
                for name, seconds in self.cpu.items()
            )
        )
        print(
            f"portal CPU {self.portal_cpu_ms:.1f} ms a page; "
            f"load average {self.load_average:.2f} (1 min)"
        )
        print(*self.table, sep="\n")
        for error in self.errors:
            print(error)


def measure(environment: Environment, meter: CpuMeter, title: str, users: int, wait) -> Phase:
    """Reset the figures, let `wait()` run, and return what happened meanwhile."""
    environment.stats.reset_all()
    cpu_before, started = meter.read(), time.perf_counter()
    wait()
    seconds = time.perf_counter() - started
    cpu_after = meter.read()
    stats = environment.stats
    pages = [
        entry
        for entry in stats.entries.values()
        if entry.num_requests and entry.name != STATIC_FILES
    ]
    static_files = [entry for entry in stats.entries.values() if entry.name == STATIC_FILES]
    total = StatsEntry(stats, "Aggregated (pages)", "")
    for entry in pages:
        total.extend(entry)
    entries = [*sorted(pages, key=lambda e: -e.num_requests), total, *static_files]
    table = [f"{'page':<34} {'requests':>8} {'failures':>8} {'p50 ms':>7} {'p95 ms':>7}"]
    table += [
        f"{entry.name:<34} {entry.num_requests:>8} {entry.num_failures:>8} "
        f"{entry.get_response_time_percentile(0.5):>7} "
        f"{entry.get_response_time_percentile(0.95):>7}"
        for entry in entries
    ]
    return Phase(
        title=title,
        users=users,
        seconds=seconds,
        requests=total.num_requests,
        failures=stats.total.num_failures,
        p95_ms=total.get_response_time_percentile(0.95) or 0,
        sign_in_p95_ms=stats.get(SIGN_IN, "POST").get_response_time_percentile(0.95) or 0,
        table=table,
        errors=[
            f"FAILED {error.occurrences}x {error.method} {error.name}: {error.error}"
            for error in stats.errors.values()
        ],
        cpu={name: cpu_after[name] - cpu_before[name] for name in cpu_after},
        load_average=os.getloadavg()[0],
    )


def spawn(runner: LocalRunner, users: int) -> None:
    """Bring the number of users to `users` at the spawn rate; wait until all have signed in."""
    runner.start(users, spawn_rate=SPAWN_RATE)
    runner.spawning_greenlet.join()
    while PortalUser.started < users:
        gevent.sleep(0.05)


def add_load_users(server: PortalServer) -> None:
    """One user per role with a production-hashed password."""
    server.app.config["PASSWORD_HASH_METHOD"] = PRODUCTION_HASH
    for role, address in EMAILS.items():
        server.add_user(address, role)


def search_texts(kept: dict[str, list[str]]) -> tuple[str, ...]:
    """Pieces of the mirror's values, as people type them: 64 of each kind
    (`bench/mirror_fill.py`)."""
    randomness = random.Random(11)
    return tuple(
        fragment(randomness.choice(values), randomness)
        for values in kept.values()
        if values
        for _ in range(64)
    )


def run(
    server: PortalServer, worker: int, arguments: argparse.Namespace, think: tuple[float, float]
) -> int:
    """The signing-in phase, the browsing phase, then the saturation steps if asked for."""
    PortalUser.wait_time = between(*think)
    PortalUser.roles = (ROLES[n % len(ROLES)] for n in range(10**6))
    environment = Environment(user_classes=[PortalUser], host=server.url)
    runner = environment.create_local_runner()
    meter = CpuMeter(server.process.pid, worker, server.sandbox.process.pid)
    users = arguments.users
    phases = [
        measure(environment, meter, "signing in", users, lambda: spawn(runner, users)),
        measure(environment, meter, "browsing", users, lambda: gevent.sleep(arguments.duration)),
    ]
    for phase in phases:
        phase.print()
    signing_in, browsing = phases
    figure(
        f"{users} users browsing, {arguments.mirrored:,} operations mirrored",
        f"{browsing.requests} requests, {browsing.failures} failures, "
        f"{browsing.throughput:.1f} requests/s, p95 {browsing.p95_ms:.0f} ms, "
        f"portal CPU {browsing.portal_cpu_ms:.1f} ms a page, "
        f"load average {browsing.load_average:.2f}",
    )
    figure(
        f"{users} users signing in",
        f"{signing_in.failures} failures, sign-in p95 {signing_in.sign_in_p95_ms:.0f} ms",
    )
    target_met = phases[-1].failures == 0 and phases[-1].p95_ms < TARGET_P95_MS
    failed = any(phase.failures for phase in phases)
    if arguments.saturation:
        print_saturation(environment, runner, meter, arguments, phases[-1])
    runner.quit()
    runner.greenlet.join()
    return 0 if target_met and not failed else 1


def saturated(level: Phase) -> bool:
    return level.p95_ms >= TARGET_P95_MS or level.failures > 0


def print_saturation(
    environment: Environment,
    runner: LocalRunner,
    meter: CpuMeter,
    arguments: argparse.Namespace,
    first: Phase,
) -> None:
    """From the first level, add users (or, when it is already past the target, take some
    away) `--step` at a time until p95 crosses the target; print each level's figures."""
    levels = [first]
    step = -arguments.step if saturated(first) else arguments.step
    users = first.users
    while saturated(levels[-1]) == saturated(first):
        users += step
        if not arguments.step <= users <= arguments.max_users:
            break
        spawn(runner, users)
        levels.append(
            measure(
                environment, meter, "level", users, lambda: gevent.sleep(arguments.step_duration)
            )
        )
    print(f"\n== saturation: p95 of every request at each level (target {TARGET_P95_MS} ms)")
    print(f"{'users':>6} {'requests/s':>10} {'failures':>8} {'p95 ms':>7} {'portal CPU':>10}")
    for level in sorted(levels, key=lambda level: level.users):
        print(
            f"{level.users:>6} {level.throughput:>10.1f} {level.failures:>8} "
            f"{level.p95_ms:>7.0f} {level.cpu['portal'] / level.seconds:>9.2f}c"
        )
    over = [level for level in levels if saturated(level)]
    under = [level for level in levels if not saturated(level)]
    if over and under:
        below = max(under, key=lambda level: level.users)
        above = min(over, key=lambda level: level.users)
        found = (
            f"between {below.users} users (p95 {below.p95_ms:.0f} ms, "
            f"{below.throughput:.1f} requests/s) and {above.users} "
            f"(p95 {above.p95_ms:.0f} ms, {above.throughput:.1f} requests/s)"
        )
    elif over:
        found = f"at or below {min(level.users for level in levels)} users"
    else:
        found = f"not reached at {max(level.users for level in levels)} users (--max-users)"
    print(f"saturation point: {found}")
    figure("saturation point (p95 passes 300 ms)", found)
