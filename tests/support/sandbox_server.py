"""Start the bundled sandbox API as a real process on a free loopback port."""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import requests

from sandbox.db import DEFAULT_FLAGS
from tests.support.processes import PythonProcess, start_python

APP_TOKEN = "sandbox-app-token-0123456789"
COMPANY_TOKEN = "sandbox-company-token-9876543210"
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """Ask the kernel for a loopback port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class SandboxServer:
    """A running sandbox: where it listens and the tokens it accepts."""

    base_url: str
    database: Path
    process: PythonProcess
    token: str = APP_TOKEN
    company_token: str = COMPANY_TOKEN

    @property
    def api_url(self) -> str:
        """The sandbox environment's prefix, as the portal would use it."""
        return f"{self.base_url}/sandbox/v1"

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


def _wait_until_listening(url: str, process: PythonProcess, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sandbox exited with code {process.returncode}")
        with contextlib.suppress(requests.ConnectionError):
            requests.get(url, timeout=1)
            return
        time.sleep(0.02)  # it starts in about a tenth of a second
    raise TimeoutError(f"sandbox did not answer at {url} within {timeout} s")


@contextlib.contextmanager
def run_sandbox(
    database: Path, *, seed: int = 0, random_seed: int = 1, extra_args: tuple[str, ...] = ()
) -> Iterator[SandboxServer]:
    """Run `python -m sandbox` until the block ends; the database file survives it. Its errors
    reach the test's output."""
    port = free_port()
    arguments = [
        "-m",
        "sandbox",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--database",
        str(database),
        "--token",
        APP_TOKEN,
        "--company-token",
        COMPANY_TOKEN,
        "--seed",
        str(seed),
        "--random-seed",
        str(random_seed),
        "--quiet",
        *extra_args,
    ]
    process = start_python(arguments, env=os.environ, cwd=ROOT, quiet=True)
    server = SandboxServer(f"http://127.0.0.1:{port}", database, process)
    try:
        _wait_until_listening(f"{server.base_url}/openapi.json", process)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class ReusedSandbox:
    """One sandbox process per worker, handed to each test as if just started: its records put
    back to those it started with (ids count from 1 again), faults off.

    A process that stopped, or that a test left with a fault on (a `slow` request may still be
    held up and change records later), is replaced by a new one instead.
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
        if server.process.poll() is not None:
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
    """Every page of `source` into `target`, safely while a process uses either (SQLite backup)."""
    with (
        contextlib.closing(sqlite3.connect(source)) as reading,
        contextlib.closing(sqlite3.connect(target, timeout=30)) as writing,
    ):
        reading.backup(writing)
