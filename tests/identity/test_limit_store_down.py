"""Redis, where sign-in attempts and checkout requests are counted, is down.

Signing in and the customer's checkout page keep working, the limits hold in memory, a warning
says so in the log, and `/healthz` answers 200 saying the limit store is degraded.
"""

from __future__ import annotations

import logging
import socket
import time
from urllib.parse import urlsplit

import pytest

from tests.support.checkout import new_checkout
from tests.support.forms import sign_in
from tests.support.portal_app import connected_portal, email
from tests.support.sandbox_server import free_port

LIMIT = 5  # PORTAL_SIGN_IN_LIMIT_PER_ACCOUNT: 5 per 15 minutes


@pytest.fixture
def portal_down_store(tmp_path, sandbox, monkeypatch):
    """A connected portal whose limit store is a Redis URL nobody listens on."""
    from portal.extensions import limiter

    monkeypatch.setattr(limiter, "_storage_dead", False)  # the limiter outlives one app
    nobody = f"redis://127.0.0.1:{free_port()}/0"
    with connected_portal(tmp_path, sandbox, RATELIMIT_STORAGE_URI=nobody) as app:
        yield app


def _warnings(caplog, text: str) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.levelno == logging.WARNING and text in record.getMessage()
    ]


def test_signing_in_works_and_is_still_limited(portal_down_store, caplog):
    app = portal_down_store
    client = app.test_client()
    assert sign_in(client, email("owner")).status_code == 302
    assert client.get("/").status_code == 200
    for _ in range(LIMIT):
        assert sign_in(app.test_client(), email("operator"), "a guess").status_code == 401
    assert sign_in(app.test_client(), email("operator")).status_code == 429, "in memory"
    assert _warnings(caplog, "Limit store unreachable"), "the log says why"


def test_the_checkout_page_answers(portal_down_store, caplog):
    checkout = new_checkout(portal_down_store, "Acme")
    page = portal_down_store.test_client().get(urlsplit(checkout.url).path)
    assert page.status_code == 200, page.get_data(as_text=True)[:500]
    assert "25.5" in page.get_data(as_text=True)
    assert _warnings(caplog, "unreachable"), "the log says why"


def test_healthz_reports_the_degraded_store_without_failing(portal_down_store):
    response = portal_down_store.test_client().get("/healthz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok", "limit_store": "degraded"}


@pytest.mark.slow  # waits out a hanging store
def test_healthz_stays_fast_while_the_store_hangs(tmp_path, sandbox, monkeypatch):
    """A Redis that takes connections and never answers costs its 2 s timeout once, not on
    every probe of a load balancer (whose own timeout is often 1 s)."""
    from portal.extensions import limiter

    monkeypatch.setattr(limiter, "_storage_dead", False)
    with socket.create_server(("127.0.0.1", 0)) as silent:  # listens, never answers
        hanging = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
        with connected_portal(tmp_path, sandbox, RATELIMIT_STORAGE_URI=hanging) as app:
            client = app.test_client()
            assert client.get("/healthz").get_json()["limit_store"] == "degraded"
            started = time.monotonic()
            for _ in range(5):
                response = client.get("/healthz")
                assert response.get_json() == {"status": "ok", "limit_store": "degraded"}
            assert time.monotonic() - started < 2.0, "each probe waited for the store"
