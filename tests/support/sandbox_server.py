"""Start the bundled sandbox API on a free loopback port: from a thread of this process, or as a
process of its own (`python -m sandbox`)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import requests

from sandbox import create_app
from sandbox.db import DEFAULT_FLAGS, connections
from sandbox.faults import ResettingRequestHandler
from tests.support.served import Served, ServedProcess, ServedThread, free_port

APP_TOKEN = "sandbox-app-token-0123456789"
COMPANY_TOKEN = "sandbox-company-token-9876543210"
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class SandboxServer:
    """A running sandbox: where it listens and the tokens it accepts."""

    base_url: str
    database: Path
    served: Served = field(repr=False)
    token: str = APP_TOKEN
    company_token: str = COMPANY_TOKEN

    @property
    def api_url(self) -> str:
        """The sandbox environment's prefix, as the portal would use it."""
        return f"{self.base_url}/sandbox/v1"

    def serving(self) -> bool:
        """Whether it still serves (a test may stop it, or leave it stopped)."""
        return self.served.serving()

    def stop(self) -> None:
        self.served.stop()

    def headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}", "Accept": "application/json"}

    def control(self, method: str, path: str, json: dict | None = None) -> requests.Response:
        """Call the sandbox's control surface (`/_control/...`)."""
        response = requests.request(
            method,
            f"{self.base_url}/_control/{path.lstrip('/')}",
            json=json,
            headers=self.headers(),
            timeout=10,
        )
        response.raise_for_status()
        return response

    def receive(self, operation_id: str, amount: str, status: str = "confirmed") -> str:
        """A blockchain transaction of `amount` reaches the operation's address (a new hash);
        the transaction's id."""
        body = {"amount": amount, "tx_id": uuid.uuid4().hex, "status": status}
        answer = self.control("POST", f"operations/{operation_id}/transactions", body)
        return answer.json()["data"]["id"]

    def set_prices(self, **prices: str) -> None:
        """Freeze the market: these USD prices (`BTC="60000"`), every other currency's price now."""
        self.control("POST", "rates", {"prices": prices})

    def thaw_prices(self) -> None:
        """Let market prices drift again."""
        self.control("DELETE", "rates")

    def operations_to(self, address: str) -> int:
        """How many operations (withdrawals) the sandbox holds for `address`, read from its API."""
        response = requests.get(
            f"{self.api_url}/operations",
            params={"address": address},
            headers=self.headers(),
            timeout=10,
        )
        response.raise_for_status()
        return response.json()["meta"]["total"]

    def requests_received(self, method: str, path_end: str) -> int:
        """How many API requests of `method` to a path ending in `path_end` reached the sandbox."""
        log = self.control("GET", "requests").json()["data"]
        return sum(1 for r in log if r["method"] == method and r["path"].endswith(path_end))

    def count(self, table: str) -> int:
        """How many rows the sandbox's own database holds in `table` (for records no API lists)."""
        with contextlib.closing(sqlite3.connect(self.database)) as connection:
            return connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # noqa: S608

    def reset(self) -> None:
        """Put flags and faults back to their defaults."""
        self.control("POST", "faults", {"mode": "none"})
        self.control("POST", "flags", DEFAULT_FLAGS)


@contextlib.contextmanager
def run_sandbox(
    database: Path,
    *,
    seed: int = 0,
    random_seed: int = 1,
    operation_ttl_minutes: int = 60,
    port: int = 0,
    own_process: bool = False,
) -> Iterator[SandboxServer]:
    """The sandbox on `database` until the block ends; the file survives it. On `port`, or on a
    free one.

    Served from a thread of this process by what `python -m sandbox` serves with (werkzeug's
    threaded server, `ResettingRequestHandler` for the `reset` fault); with `own_process`,
    `python -m sandbox` itself, for tests of what a process does (a restart on the same file,
    memory and CPU of its own).
    """
    options = {
        "seed": seed,
        "random_seed": random_seed,
        "operation_ttl_minutes": operation_ttl_minutes,
    }
    serve = _in_process if own_process else _in_thread
    with serve(database, port, options) as served:
        yield SandboxServer(served.url, database, served)


@contextlib.contextmanager
def _in_thread(database: Path, port: int, options: dict) -> Iterator[ServedThread]:
    app = create_app(str(database), APP_TOKEN, COMPANY_TOKEN, **options)
    served = ServedThread(app, ResettingRequestHandler, port)
    try:
        yield served
    finally:
        served.stop()
        connections(app).close()


@contextlib.contextmanager
def _in_process(database: Path, port: int, options: dict) -> Iterator[ServedProcess]:
    port = port or free_port()
    arguments = [f"--{name.replace('_', '-')}={value}" for name, value in options.items()]
    command = [
        sys.executable, "-m", "sandbox", "--host", "127.0.0.1", "--port", str(port),
        "--database", str(database), "--token", APP_TOKEN, "--company-token", COMPANY_TOKEN,
        "--quiet", *arguments,
    ]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.DEVNULL
    )  # its errors still reach stderr
    served = ServedProcess(process, f"http://127.0.0.1:{port}", "the sandbox")
    try:
        served.wait_until_answering("/openapi.json")
        yield served
    finally:
        served.stop()


class ReusedSandbox:
    """One sandbox per worker, handed to each test as if just started: its records put back to
    those it started with (ids count from 1 again), faults off.

    A sandbox that stopped, or that a test left with a fault on (a `slow` request may still be
    held up and change records later), is replaced by a new one on a new file instead.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.server: SandboxServer | None = None
        self._running = contextlib.ExitStack()
        self._started = 0

    def fresh(self) -> SandboxServer:
        if self.server is not None and self._reusable(self.server):
            self._restore(self.server)
        else:
            self.close()
            self._start()
        return self.server

    def close(self) -> None:
        self._running.close()
        self.server = None

    @staticmethod
    def _reusable(server: SandboxServer) -> bool:
        if not server.serving():
            return False
        try:
            fault = server.control("GET", "faults").json()["data"]
        except requests.RequestException:
            return False
        return fault["mode"] == "none"

    def _start(self) -> None:
        self._started += 1
        database = self.folder / f"sandbox-{self._started}.db"
        self.server = self._running.enter_context(run_sandbox(database))
        _copy_database(database, self._pristine)

    def _restore(self, server: SandboxServer) -> None:
        _copy_database(self._pristine, server.database)
        server.control("DELETE", "requests")  # ids count from 1 again: so does the log

    @property
    def _pristine(self) -> Path:
        return self.folder / f"sandbox-{self._started}-at-start.db"


def _copy_database(source: Path, target: Path) -> None:
    """Every page of `source` into `target`, safely while a server uses either (SQLite backup)."""
    with (
        contextlib.closing(sqlite3.connect(source)) as reading,
        contextlib.closing(sqlite3.connect(target, timeout=30)) as writing,
    ):
        reading.backup(writing)
