"""Run the portal as a real server process (`flask run` or gunicorn) on a fresh database."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import requests
from cryptography.fernet import Fernet
from flask import Flask

from tests.support import factories
from tests.support.databases import TEST_PASSWORD_HASH_METHOD
from tests.support.forms import CSRF_FIELD, PASSWORD
from tests.support.money import connect
from tests.support.portal_app import MERCHANT, connected_portal
from tests.support.processes import PythonProcess, start_python
from tests.support.sandbox_server import ROOT, SandboxServer, free_port


@dataclass
class PortalServer:
    """A running portal: its URL and environment, and an application of this process on the
    same database and keys, which adds users and connections as the CLI would (without the
    second it takes to start it)."""

    url: str
    env: dict[str, str]
    sandbox: SandboxServer
    app: Flask = field(repr=False)
    process: PythonProcess | None = field(default=None, repr=False)

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


def _wait_until_up(url: str, process: PythonProcess, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the portal exited with code {process.returncode}")
        with contextlib.suppress(requests.ConnectionError, requests.Timeout):
            if requests.get(url, timeout=5).ok:
                return
        time.sleep(0.02)
    raise TimeoutError(f"the portal did not answer at {url}")


@contextlib.contextmanager
def serve_in_thread(app: Flask) -> Iterator[str]:
    """An application of this process served over HTTP from a thread; yields its URL."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", free_port(), app, threaded=True)
    # The loop sees a shutdown at its next poll: half a second by default, for each server.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


@contextlib.contextmanager
def run_portal(
    instance: Path,
    sandbox: SandboxServer,
    *,
    gunicorn: bool = False,
    workers: int | None = 1,
    env: dict[str, str] | None = None,
    public_host: str | None = None,
) -> Iterator[PortalServer]:
    """The portal on a fresh database in `instance`, one user per role of Acme, connected (set
    up in this process, as `connected_portal` does; `PortalServer.add_user` adds more).

    Served by `flask run`, or with `gunicorn=True` by `workers` gunicorn workers as in production
    (None: as many as gunicorn.conf.py starts);
    `env` adds `PORTAL_*` variables. With `public_host` (such as "localhost", which browsers
    let use passkeys where they refuse an IP address) the URL and PORTAL_PUBLIC_URL name it.
    """
    from portal.extensions import db

    port = free_port()
    url = f"http://{public_host or '127.0.0.1'}:{port}"
    token_keys = Fernet.generate_key().decode()
    env = {
        **os.environ,
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
        server = PortalServer(url, env, sandbox, app)
    if gunicorn:
        arguments = [
            "-m", "gunicorn", *(["--workers", str(workers)] if workers else []),
            "--bind", f"127.0.0.1:{port}", "--log-level", "warning", "wsgi:app",
        ]  # fmt: skip
    else:
        arguments = [
            "-m", "flask", "--app", "portal", "run",
            "--host", "127.0.0.1", "--port", str(port), "--no-reload", "--no-debugger",
        ]  # fmt: skip
    server.process = start_python(arguments, env=env, cwd=ROOT, output=instance / "portal.log")
    try:
        _wait_until_up(f"{server.url}/healthz", server.process)
        yield server
    finally:
        server.process.terminate()
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # gunicorn still waiting out a slow request
            server.process.kill()
            server.process.wait()
        with app.app_context():
            db.engine.dispose()
