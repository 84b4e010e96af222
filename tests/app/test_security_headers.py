"""CSP with frame-ancestors, nosniff and a Referrer-Policy on every kind of error and special
answer. Every answer of every route to every visitor has them too (test_every_answer.py). The
429 of the sign-in limits is checked in test_throttling.py, on an app with low limits.
"""

from __future__ import annotations

import pytest

from tests.support.attack import header_problems
from tests.support.htmx import HTMX


@pytest.mark.parametrize(
    ("path", "method", "status"),
    [
        ("/no-such-page", "GET", 404),
        ("/operations/new/nothing", "GET", 404),
        ("/static/no-such-file.css", "GET", 404),
        ("/logout", "GET", 405),
        ("/healthz", "POST", 405),
        ("/settings/users", "POST", 400),  # no CSRF token
        ("/withdrawals/no-such-key", "GET", 404),
        ("/settings/users/999999", "GET", 404),
        ("/operations?order_id=A%00B", "GET", 422),  # a control character
        ("/login?next=%01", "POST", 422),
    ],
)
@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
def test_error_pages(hostile, path, method, status, htmx):
    response = hostile.client("owner").open(path, method=method, headers=HTMX if htmx else {})
    assert response.status_code == status
    assert header_problems(response) == []


def test_too_large_page(hostile):
    response = hostile.client("owner").post("/login", data={"padding": "x" * 1_100_000})
    assert response.status_code == 413
    assert header_problems(response) == []


def test_forbidden_page(hostile):
    response = hostile.client("accountant").get("/settings/api")
    assert response.status_code == 403
    assert header_problems(response) == []


@pytest.mark.parametrize("mode", ["error500", "malformed"])
@pytest.mark.parametrize(
    ("path", "status"), [("/operations", 200), ("/operations/export.csv", 502), ("/rates", 200)]
)
def test_upstream_fault_pages(hostile, mode, status, path):
    """The error page, or the lists read from the mirror (read-only), with the headers."""
    hostile.sandbox.control("POST", "faults", {"mode": mode})
    try:
        for headers in ({}, HTMX):
            response = hostile.client("owner").get(path, headers=headers)
            assert response.status_code == status
            assert header_problems(response) == []
    finally:
        hostile.sandbox.reset()


def test_upstream_timeout_page(hostile, monkeypatch):
    monkeypatch.setitem(hostile.app.config, "API_TIMEOUT_READ", 0.2)
    hostile.sandbox.control("POST", "faults", {"mode": "slow", "delay_ms": 600})
    try:
        response = hostile.client("owner").get("/vouchers")
    finally:
        hostile.sandbox.reset()
    assert response.status_code == 504, response.status_code
    assert header_problems(response) == []


def test_internal_error_page(hostile, monkeypatch):
    """A 500: the stored token cannot be decrypted (a key removed before rotate-keys)."""
    from cryptography.fernet import Fernet

    monkeypatch.setitem(hostile.app.config, "TOKEN_KEYS", [Fernet.generate_key().decode()])
    for headers in ({}, HTMX):
        response = hostile.client("owner").get("/operations", headers=headers)
        assert response.status_code == 500
        assert header_problems(response) == []


def test_unexpected_exception_page(hostile, monkeypatch):
    """A bug in a view: Flask's own 500 path."""

    def broken(*_args, **_kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setitem(hostile.app.config, "PROPAGATE_EXCEPTIONS", False)  # as in production
    monkeypatch.setitem(hostile.app.view_functions, "rates.index", broken)
    monkeypatch.setattr(broken, "portal_access", "public", raising=False)
    response = hostile.client("owner").get("/rates")
    assert response.status_code == 500
    assert header_problems(response) == []


def test_throttled_checkout_page(hostile, monkeypatch):
    monkeypatch.setitem(hostile.app.config, "CHECKOUT_LIMIT_PER_ADDRESS", "2 per minute")
    client = hostile.app.test_client()
    address = {"REMOTE_ADDR": "198.51.100.29"}
    url = f"/checkout/{hostile.ids['token']}"
    responses = [client.get(url, environ_base=address) for _ in range(3)]
    responses.append(client.get(url, headers=HTMX, environ_base=address))
    assert [r.status_code for r in responses] == [200, 200, 429, 429]
    assert all(header_problems(r) == [] for r in responses)


@pytest.mark.parametrize(
    "path",
    [
        "/operations/export.csv",
        "/transactions/export.csv",
        "/audit/export.csv",
        "/static/portal.css",
        "/healthz",
        "/checkout/{token}",
        "/checkout/{token}/pay",
        "/checkout/no-such-link",
    ],
)
def test_special_responses(hostile, path):
    response = hostile.client("owner").get(path.format(**hostile.ids))
    assert response.status_code in (200, 303, 404)
    assert header_problems(response) == []
    response.close()
