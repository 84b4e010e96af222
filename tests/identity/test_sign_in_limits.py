"""Failed sign-ins are limited per account and per address; nothing else is ever throttled.

The same tests run on the in-memory store and, when PORTAL_TEST_REDIS_URL is set, on Redis.
"""

from __future__ import annotations

import pytest

from tests.support.forms import PASSWORD, csrf_token, sign_in

LIMITED = "Too many failed sign-in attempts"


@pytest.fixture(params=["memory", "redis"])
def portal_config(request, portal_config, monkeypatch):
    portal_config["SIGN_IN_LIMIT_PER_ACCOUNT"] = "3 per 15 minutes"
    portal_config["SIGN_IN_LIMIT_PER_ADDRESS"] = "5 per 15 minutes"
    if request.param == "redis":
        store = request.getfixturevalue("redis_store")
        portal_config["RATELIMIT_STORAGE_URI"] = store.url
        portal_config["RATELIMIT_KEY_PREFIX"] = store.prefix
        # The limiter object outlives one app and keeps the first prefix it saw: forget it.
        from portal.extensions import limiter

        monkeypatch.setattr(limiter, "_key_prefix", "")
    return portal_config


def _fail(client, email: str):
    return sign_in(client, email, "wrong password")


def test_failed_sign_ins_are_limited_per_account(client, accounts):
    for _ in range(3):
        assert _fail(client, accounts.owner).status_code == 401
    response = sign_in(client, accounts.owner)  # even the right password waits now
    assert response.status_code == 429
    assert LIMITED in response.get_data(as_text=True)
    assert sign_in(client, accounts.operator).status_code == 302, "other accounts still sign in"


def test_failed_sign_ins_are_limited_per_address(client, accounts):
    emails = [accounts.operator, accounts.accountant, accounts.other_owner, "x@acme.test"]
    for email in [*emails, "y@acme.test"]:
        assert _fail(client, email).status_code == 401
    assert sign_in(client, accounts.owner).status_code == 429
    other_address = {"REMOTE_ADDR": "192.0.2.7"}
    response = client.post(
        "/login",
        data={"email": accounts.owner, "password": PASSWORD, "csrf_token": csrf_token(client)},
        environ_base=other_address,
    )
    assert response.status_code == 302


def test_successful_sign_ins_and_browsing_are_never_limited(app, accounts):
    for _ in range(8):
        client = app.test_client()
        assert sign_in(client, accounts.owner).status_code == 302
        for path in ("/", "/settings/users", "/static/portal.css", "/healthz", "/login"):
            assert client.get(path, headers={"HX-Request": "true"}).status_code in (200, 302)
