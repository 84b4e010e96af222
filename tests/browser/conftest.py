"""The browser harness: the sandbox and the portal as real processes, driven by real Chromium.

Chromium is Debian's (`/usr/bin/chromium`) unless PORTAL_TEST_CHROMIUM names another; the
machine has no network, so everything that would phone home is switched off.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
from cryptography.fernet import Fernet
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.conftest import PASSWORD
from tests.support.sandbox_server import ROOT, SandboxServer, free_port, run_sandbox

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
MERCHANT = "Acme"


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@dataclass
class PortalServer:
    """A running portal: its URL, and the CLI with the same environment."""

    url: str
    env: dict[str, str]
    sandbox: SandboxServer
    process: subprocess.Popen | None = field(default=None, repr=False)

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "flask", "--app", "portal", *args]
        result = subprocess.run(
            command, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr
        return result

    def add_user(self, email: str, role: str, merchant: str = MERCHANT) -> str:
        self.cli(
            "create-user", email, "--merchant", merchant, "--role", role, "--password", PASSWORD
        )
        return email

    def connect(self, merchant: str = MERCHANT) -> None:
        self.cli(
            "connect-api", "--merchant", merchant, "--base-url", self.sandbox.base_url,
            "--environment", "sandbox", "--token", self.sandbox.token,
        )  # fmt: skip


def _wait_until_up(url: str, process: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the portal exited with code {process.returncode}")
        with contextlib.suppress(requests.ConnectionError):
            if requests.get(url, timeout=1).ok:
                return
        time.sleep(0.1)
    raise TimeoutError(f"the portal did not answer at {url}")


@pytest.fixture(scope="session")
def browser_sandbox(tmp_path_factory) -> Iterator[SandboxServer]:
    with run_sandbox(tmp_path_factory.mktemp("browser-sandbox") / "sandbox.db") as server:
        yield server


@pytest.fixture(scope="session")
def portal(tmp_path_factory, browser_sandbox) -> Iterator[PortalServer]:
    """The portal on a fresh database, served by `flask run` on a free loopback port."""
    instance = tmp_path_factory.mktemp("portal-instance")
    port = free_port()
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "PORTAL_INSTANCE_PATH": str(instance),
        "PORTAL_DATABASE_URL": f"sqlite:///{instance / 'portal.sqlite3'}",
        "PORTAL_SECRET_KEY": "browser-test-secret",
        "PORTAL_TOKEN_KEYS": Fernet.generate_key().decode(),
    }
    server = PortalServer(f"http://127.0.0.1:{port}", env, browser_sandbox)
    server.cli("db", "upgrade")
    for role in ("owner", "operator", "accountant"):
        server.add_user(f"{role}@acme.test", role)
    server.connect()
    command = [
        sys.executable, "-m", "flask", "--app", "portal", "run",
        "--host", "127.0.0.1", "--port", str(port), "--no-reload", "--no-debugger",
    ]  # fmt: skip
    log = (instance / "portal.log").open("w")
    server.process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        _wait_until_up(f"{server.url}/healthz", server.process)
        yield server
    finally:
        server.process.terminate()
        server.process.wait(timeout=10)
        log.close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    executable = os.environ.get("PORTAL_TEST_CHROMIUM") or "/usr/bin/chromium"
    if not Path(executable).exists():
        pytest.fail(
            f"Chromium not found at {executable}: run `make test`, or set PORTAL_TEST_CHROMIUM"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, portal) -> Iterator[Page]:
    """A fresh browser context (no cookies) whose relative URLs go to the portal.

    Any Content-Security-Policy violation or script error fails the test.
    """
    context = browser.new_context(base_url=portal.url)
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: m.type == "error" and problems.append(m.text))
    page.on("pageerror", lambda error: problems.append(str(error)))
    yield page
    context.close()
    unexpected = [p for p in problems if "status of 4" not in p and "status of 5" not in p]
    assert unexpected == [], "errors in the browser console"


def sign_in_as(page: Page, email: str, password: str = PASSWORD) -> None:
    page.goto("/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    signed_in = page.get_by_role("button", name="Sign out")
    expect(signed_in.or_(page.get_by_role("alert"))).to_be_visible()


def assert_accessible(page: Page) -> None:
    """axe-core finds no serious or critical violation on the current page."""
    page.evaluate(AXE.read_text())
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    serious = [
        f"{violation['id']} ({violation['impact']}): {violation['help']} "
        f"at {[node['target'] for node in violation['nodes']]}"
        for violation in result["violations"]
        if violation["impact"] in ("serious", "critical")
    ]
    assert serious == [], f"accessibility violations on {page.url}"
