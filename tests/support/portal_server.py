"""Serve the portal on a fresh database: from a thread of this process, or as a real server
process (`flask run` or gunicorn)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import unittest.mock
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import requests
from cryptography.fernet import Fernet
from flask import Flask

from tests.support import factories
from tests.support.databases import TEST_PASSWORD_HASH_METHOD
from tests.support.forms import CSRF_FIELD, PASSWORD
from tests.support.money import connect
from tests.support.portal_app import MERCHANT, connected_portal
from tests.support.sandbox_server import ROOT, SandboxServer
from tests.support.served import ServedProcess, ServedThread, free_port


@dataclass
class PortalServer:
    """A running portal: its URL and environment, and an application of this process on the
    same database and keys, which adds users and connections as the CLI would (without the
    second it takes to start it)."""

    url: str
    env: dict[str, str]
    sandbox: SandboxServer
    app: Flask = field(repr=False)
    # The process serving it, unless served from a thread of this one.
    process: subprocess.Popen | None = field(default=None, repr=False)

    def add_user(self, email: str, role: str, merchant: str = MERCHANT) -> str:
        return factories.user(self.app, email, role, merchant=merchant).email

    def connect(self, merchant: str = MERCHANT) -> None:
        connect(self.app, self.sandbox, merchant)

    def signed_in_session(self, email: str) -> requests.Session:
        """An HTTP session signed in as `email`, the way a browser signs in."""
        session = requests.Session()
        page = session.get(f"{self.url}/login", timeout=10).text
        token = CSRF_FIELD.search(page).group(1)
        answer = session.post(
            f"{self.url}/login",
            data={"email": email, "password": PASSWORD, "csrf_token": token},
            allow_redirects=False,
            timeout=10,
        )
        assert answer.status_code == 302, "sign-in failed"
        return session

    def peak_memory_kib(self) -> int:
        """The peak resident memory (VmHWM) of the process that serves, in KiB.

        Under gunicorn that is the worker, a child of the process we started.
        """
        pids = [self.process.pid]
        for pid in pids:
            for task in Path(f"/proc/{pid}/task").iterdir():
                pids += [int(child) for child in (task / "children").read_text().split()]
        return max(_peak_kib(pid) for pid in pids)


def _peak_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1))


@contextlib.contextmanager
def serve_in_thread(app: Flask) -> Iterator[str]:
    """An application of this process served over HTTP from a thread; yields its URL."""
    served = ServedThread(app)
    try:
        yield served.url
    finally:
        served.stop()


@contextlib.contextmanager
def run_portal(
    instance: Path,
    sandbox: SandboxServer,
    *,
    served_by: Literal["thread", "flask", "gunicorn"] = "thread",
    workers: int = 1,
    env: dict[str, str] | None = None,
    public_host: str | None = None,
) -> Iterator[PortalServer]:
    """The portal on a fresh database in `instance`, one user per role of Acme, connected (set
    up in this process, as `connected_portal` does; `PortalServer.add_user` adds more), served
    as in production: configured by `PORTAL_*` variables alone (no TESTING: production's error
    pages).

    Served by `served_by`: "thread", the application `flask run` makes (`create_app()` reading
    those variables) on the server `flask run` serves with (werkzeug's threaded one), from a
    thread of this process; "flask", `flask run` itself; "gunicorn", `workers` gunicorn workers
    as in production. `env` adds `PORTAL_*` variables. With `public_host` (such as "localhost",
    which browsers let use passkeys where they refuse an IP address) the URL and
    PORTAL_PUBLIC_URL name it.
    """
    from portal.extensions import db

    port = free_port()
    url = f"http://{public_host or '127.0.0.1'}:{port}"
    token_keys = Fernet.generate_key().decode()
    settings = {
        **({"PORTAL_PUBLIC_URL": url} if public_host else {}),
        **(env or {}),
        "PORTAL_INSTANCE_PATH": str(instance),
        "PORTAL_DATABASE_URL": f"sqlite:///{instance / 'portal.sqlite3'}",
        "PORTAL_SECRET_KEY": "test-server-secret",
        "PORTAL_TOKEN_KEYS": token_keys,
        "PORTAL_PASSWORD_HASH_METHOD": TEST_PASSWORD_HASH_METHOD,
        "PORTAL_ADDRESS_COOLING_OFF_HOURS": "0",
    }
    with connected_portal(instance, sandbox, TOKEN_KEYS=token_keys) as app:
        server = PortalServer(url, {**os.environ, **settings}, sandbox, app)
    try:
        if served_by == "thread":
            with _served_in_thread(settings, port):
                yield server
        else:
            served = _server_process(served_by, port, workers, server)
            server.process = served.process
            try:
                served.wait_until_answering("/healthz")
                yield server
            finally:
                served.stop()
    finally:
        with app.app_context():
            db.engine.dispose()


@contextlib.contextmanager
def _served_in_thread(settings: dict[str, str], port: int) -> Iterator[None]:
    """`create_app()` with `settings` in the environment, served from a thread on `port`.

    `create_app` points the process's task queue at the application it makes
    (`portal.live.worker.queue`): it is put back, so that the tests' tasks keep running in the
    tests' applications; no worker consumes a served portal's queue.
    """
    from portal import create_app
    from portal.extensions import db
    from portal.live.worker import queue

    storage, applications = queue.huey.storage, list(queue._application)
    try:
        with unittest.mock.patch.dict(os.environ, settings):
            app = create_app()
    finally:
        queue.huey.storage, queue._application[:] = storage, applications
    served = ServedThread(app, port=port)
    try:
        yield
    finally:
        served.stop()
        with app.app_context():
            db.engine.dispose()


def _server_process(served_by: str, port: int, workers: int, server: PortalServer) -> ServedProcess:
    if served_by == "gunicorn":
        command = [
            sys.executable, "-m", "gunicorn", "--workers", str(workers),
            "--bind", f"127.0.0.1:{port}", "--log-level", "warning", "wsgi:app",
        ]  # fmt: skip
    else:
        command = [
            sys.executable, "-m", "flask", "--app", "portal", "run",
            "--host", "127.0.0.1", "--port", str(port), "--no-reload", "--no-debugger",
        ]  # fmt: skip
    env = {**server.env, "PYTHONUNBUFFERED": "1"}
    with (Path(server.env["PORTAL_INSTANCE_PATH"]) / "portal.log").open("w") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    return ServedProcess(process, server.url, f"the portal ({served_by})")
