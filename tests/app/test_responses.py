"""Headers every response carries, error pages as pages and as htmx fragments, /healthz."""

from __future__ import annotations

import pytest

from portal.api import ApiRefusal, ApiUnavailable
from portal.web.access import public
from tests.support.forms import sign_in
from tests.support.htmx import HTMX


@pytest.fixture
def portal_config(portal_config):
    portal_config["PROPAGATE_EXCEPTIONS"] = False  # the 500 page, as in production
    return portal_config


@pytest.fixture
def app(app):
    """The portal plus views that fail in the ways the error pages are for."""
    failures = {
        "boom": RuntimeError("a bug"),
        "unreachable": ApiUnavailable("refused"),
        "slow": ApiUnavailable("timed out", timeout=True),
        "rejected": ApiRefusal(2, http_status=401),
    }
    for name, error in failures.items():

        def fail(error=error):
            raise error

        fail.__name__ = name
        app.add_url_rule(f"/test/{name}", name, public(fail))
    return app


def test_security_headers(client):
    response = client.get("/login")
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    assert "unsafe-eval" not in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"


def test_pages_for_signed_in_users_are_not_cached(client, accounts):
    sign_in(client, accounts.owner)
    assert client.get("/").headers["Cache-Control"] == "no-store"


def test_healthz_needs_no_login(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json == {"status": "ok", "limit_store": "ok"}


def test_no_asset_comes_from_another_host(client, accounts):
    sign_in(client, accounts.owner)
    page = client.get("/").get_data(as_text=True)
    assert 'src="/static/vendor/htmx.min.js?v=' in page
    assert "http://" not in page.replace("http://localhost", "")
    assert "https://" not in page


@pytest.mark.parametrize(
    ("path", "status", "title"),
    [
        ("/no-such-page", 404, "Page not found"),
        ("/test/boom", 500, "Something went wrong"),
        ("/test/unreachable", 502, "The payment service is unavailable"),
        ("/test/slow", 504, "The payment service is unavailable"),
        ("/test/rejected", 502, "The payment service refused the request"),
    ],
)
def test_error_pages_and_fragments(client, accounts, path, status, title):
    sign_in(client, accounts.owner)
    page = client.get(path)
    assert page.status_code == status
    assert title in page.get_data(as_text=True)
    assert "<html" in page.get_data(as_text=True)
    fragment = client.get(path, headers=HTMX)
    assert fragment.status_code == status
    assert title in fragment.get_data(as_text=True)
    assert "<html" not in fragment.get_data(as_text=True)
    assert "HX-Request" in fragment.headers["Vary"]
    boosted = client.get(path, headers={**HTMX, "HX-Boosted": "true"})
    assert "<html" in boosted.get_data(as_text=True), "boosted navigation gets the whole page"


def test_forbidden_page(client, accounts):
    sign_in(client, accounts.accountant)
    response = client.get("/settings/api")
    assert response.status_code == 403
    assert "You do not have access to this page" in response.get_data(as_text=True)


def test_a_500_shows_no_traceback(client, accounts):
    body = client.get("/test/boom").get_data(as_text=True)
    assert "Traceback" not in body
    assert "a bug" not in body


def test_htmx_request_after_the_session_ended_redirects_the_page(client):
    response = client.get("/settings/users", headers=HTMX)
    assert response.status_code == 401
    assert response.headers["HX-Redirect"] == "/login?next=/settings/users"


def test_navigation_shows_what_the_role_may_use(client, accounts):
    sign_in(client, accounts.owner)
    assert ">Settings</a>" in client.get("/").get_data(as_text=True)
    client.post("/logout", data={"csrf_token": ""})
    other = client.application.test_client()
    sign_in(other, accounts.operator)
    assert ">Settings</a>" not in other.get("/").get_data(as_text=True)


def test_not_connected_tells_owners_where_to_connect(app, client, accounts):
    from portal.web.merchant import current_api

    app.add_url_rule("/test/api", "api_user", public(lambda: str(current_api())))
    sign_in(client, accounts.owner)
    response = client.get("/test/api")
    assert response.status_code == 409
    assert 'href="/settings/api"' in response.get_data(as_text=True)
    operator = app.test_client()
    sign_in(operator, accounts.operator)
    assert "Ask an owner" in operator.get("/test/api").get_data(as_text=True)
