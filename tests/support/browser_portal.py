"""The portal and its sandbox as real processes for the tests that drive Chromium, as a pytest
plugin (see tests/conftest.py): `portal` and `page` for tests that change data, `seeded_portal`
for tests that read the session's seeded sandbox."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from tests.support.portal_server import PortalServer, run_portal
from tests.support.sandbox_server import SandboxServer, run_sandbox


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


@pytest.fixture
def page(browser, portal) -> Iterator[Page]:
    """A fresh browser context (no cookies) whose relative URLs go to the portal."""
    yield from watched_page(browser, portal.url)


def watched_page(browser: Browser, url: str) -> Iterator[Page]:
    """A page in a fresh browser context whose relative URLs go to `url`; any
    Content-Security-Policy violation or script error fails the test."""
    context = browser.new_context(base_url=url)
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: m.type == "error" and problems.append(m.text))
    page.on("pageerror", lambda error: problems.append(str(error)))
    yield page
    context.close()
    unexpected = [p for p in problems if "status of 4" not in p and "status of 5" not in p]
    assert unexpected == [], "errors in the browser console"
