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
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Cookie, Page, expect, sync_playwright

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


def sign_out_and_in(page: Page, email: str, password: str = PASSWORD) -> None:
    """Sign out with the menu's button, then sign in as `email` on the sign-in page it leads to.

    That page is swapped in by htmx, not loaded. Chromium may put the cursor in Email as soon as
    it is drawn, and htmx does again when it settles the page, 20 ms after the swap: a field
    filled in between would see the cursor leave it after focusing and before typing, and its
    text land in Email (as it would for a person that quick)."""
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("Email")).to_be_focused()
    expect(page.locator("body")).not_to_have_class(re.compile(r"\bhtmx-settling\b"))
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()


# The cookies of the sessions `signed_in_as` started in this worker, by portal, user and password.
_SESSIONS: dict[tuple[str, str, str], list[Cookie]] = {}


def signed_in_as(page: Page, email: str, path: str = "/", password: str = PASSWORD) -> None:
    """Open `path` signed in as `email`, for a test that is not about signing in.

    The first time in this worker for a portal and user, through the sign-in page; after that
    with the cookies of the session it started, which the portal keeps until it is signed out,
    expires or is ended (then through the sign-in page again). The sign-in page, its answer and
    the landing page cost a fresh context 0.42 CPU-s of Chromium; the cookies and the landing
    page 0.28. A test whose sign-in must be its own (signing out, a password or two-factor
    change, what a first sign-in shows once) calls `sign_in_as`.
    """
    # The context's base URL, where Playwright's own `to_have_url` reads it.
    key = (page.context._impl_obj._options["baseURL"], email, password)
    if key in _SESSIONS:
        page.context.add_cookies(_SESSIONS[key])
        page.goto(path)
        if urlsplit(page.url).path != "/login":
            return
    page.context.clear_cookies()  # a sign-in on a signed-in browser would end the other session
    sign_in_as(page, email, password)
    expect(page.get_by_role("button", name="Sign out", include_hidden=True)).to_be_attached()
    _SESSIONS[key] = page.context.cookies()
    if path != "/":
        page.goto(path)


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


def load_axe_in_every_page(context: BrowserContext) -> None:
    """axe-core in every document of `context` as it starts, for a context whose every page is
    checked (the walks): Chromium reuses its compilation of the script, 30 ms of CPU less a page
    than `assert_accessible` loading it into each page afterwards."""
    context.add_init_script(_axe_source())


# The assertion fails on serious and critical violations only. An axe rule's violations all have
# the rule's own impact, so the rules whose impact is minor or moderate (28 of axe's 94, e.g.
# `region`, which visits every node) are left out: they could not fail it.
_RUN_AXE = """() => axe.run(document, {
  resultTypes: ['violations'],
  rules: Object.fromEntries(axe._audit.rules
    .filter(rule => rule.impact === 'minor' || rule.impact === 'moderate')
    .map(rule => [rule.id, {enabled: false}])),
})"""


# Resolves once every CSS transition and animation of the page that ends has finished.
_STILL = """() => Promise.all(document.getAnimations()
  .filter(animation => animation.effect?.getTiming().iterations !== Infinity)
  .map(animation => animation.finished))"""


def assert_accessible(page: Page) -> None:
    """axe-core finds no serious or critical violation on the current page (loaded into the
    page once: checking it again, at another width, runs the loaded one), as a person sees it
    once it is still: no htmx request under way, no transition running (a list's "Updating…"
    fades in over 200 ms, and half faded its text has half its contrast)."""
    expect(page.locator(".htmx-request")).to_have_count(0)
    page.evaluate(_STILL)
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.evaluate(_axe_source())
    result = page.evaluate(_RUN_AXE)
    serious = [
        f"{violation['id']} ({violation['impact']}): {violation['help']} "
        f"at {[node['target'] for node in violation['nodes']]}"
        for violation in result["violations"]
        if violation["impact"] in ("serious", "critical")
    ]
    assert serious == [], f"accessibility violations on {page.url}"
