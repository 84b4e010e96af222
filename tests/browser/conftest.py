"""The browser harness: the sandbox and the portal as real processes, driven by real Chromium.

Chromium is Debian's (`/usr/bin/chromium`) unless PORTAL_TEST_CHROMIUM names another; the
machine has no network, so everything that would phone home is switched off.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.support.forms import PASSWORD
from tests.support.portal_server import PortalServer, run_portal
from tests.support.sandbox_server import ROOT, SandboxServer, run_sandbox

__all__ = ["PortalServer", "assert_accessible", "run_portal", "sign_in_as"]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_sandbox(tmp_path_factory) -> Iterator[SandboxServer]:
    with run_sandbox(tmp_path_factory.mktemp("browser-sandbox") / "sandbox.db") as server:
        yield server


@pytest.fixture(scope="session")
def portal(tmp_path_factory, browser_sandbox) -> Iterator[PortalServer]:
    """The portal on a fresh database, served by `flask run` on a free loopback port."""
    with run_portal(tmp_path_factory.mktemp("portal-instance"), browser_sandbox) as server:
        yield server


@pytest.fixture(scope="session")
def seeded_portal(tmp_path_factory, seeded_sandbox) -> Iterator[PortalServer]:
    """A portal on the session's seeded sandbox (300 operations): read only, change no data."""
    with run_portal(tmp_path_factory.mktemp("seeded-portal"), seeded_sandbox) as server:
        yield server


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
