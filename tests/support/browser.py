"""Chromium for every suite that drives a browser, as a pytest plugin (see tests/conftest.py):
one per worker, however many folders ask for it.

Chromium is Debian's headless shell (`/usr/bin/chromium-headless-shell`) unless
PORTAL_TEST_CHROMIUM names another. The shell is Chromium's page engine without the browser
around it, as Playwright's own headless Chromium: full Chromium took five times its CPU for each
test's fresh context (a blank page 0.43 s against 0.06 s, a sign-in 1.14 s against 0.25 s). The
machine has no network, so everything that would phone home is switched off.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.support.forms import PASSWORD
from tests.support.sandbox_server import ROOT

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that drives Chromium is marked `browser`, wherever it lives: `make test-fast`
    leaves them out with `-m "not browser"`."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    executable = os.environ.get("PORTAL_TEST_CHROMIUM") or "/usr/bin/chromium-headless-shell"
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


def sign_in_as(page: Page, email: str, password: str = PASSWORD) -> None:
    page.goto("/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    # On a phone the button is in the folded menu: there, not necessarily in sight.
    signed_in = page.get_by_role("button", name="Sign out", include_hidden=True)
    expect(signed_in.or_(page.get_by_role("alert"))).to_be_attached()


def next_poll(page: Page, every_seconds: float) -> None:
    """Let a page that polls every `every_seconds` send its next poll now, and wait for the answer.

    The page must have run under `page.clock.install()` since it loaded: the clock then runs past
    the interval at once, so the real request goes out without the test sleeping through it.
    """
    with page.expect_response(lambda answer: answer.request.headers.get("hx-request") == "true"):
        page.clock.run_for(int(every_seconds * 1000) + 1000)


@functools.cache
def _axe_source() -> str:
    return AXE.read_text()


def assert_accessible(page: Page) -> None:
    """axe-core finds no serious or critical violation on the current page (loaded into the
    page once: checking it again, at another width, runs the loaded one)."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.evaluate(_axe_source())
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    serious = [
        f"{violation['id']} ({violation['impact']}): {violation['help']} "
        f"at {[node['target'] for node in violation['nodes']]}"
        for violation in result["violations"]
        if violation["impact"] in ("serious", "critical")
    ]
    assert serious == [], f"accessibility violations on {page.url}"
