"""The attacker's view of the sign-in limits, on the in-memory store and on Redis.

Guessing one account's password, spraying one password over many accounts, spoofing
X-Forwarded-For or changing the email's case: each hits a clear 429 page, even with the right
password, until the window passes; someone who signs in correctly before that is never held up.
"""

from __future__ import annotations

import time

import pytest

from tests.support.attack import header_problems
from tests.support.forms import PASSWORD, csrf_token

ACCOUNT_LIMIT = 3
ADDRESS_LIMIT = 5
LIMITED = "Too many failed sign-in attempts"
# Long enough for the attempts before the lock to fit in it on a busy machine.
SHORT_WINDOW = 2


@pytest.fixture(params=["memory", "redis"])
def portal_config(request, portal_config, monkeypatch):
    short = request.node.get_closest_marker("short_window")
    window = f"{SHORT_WINDOW} seconds" if short else "15 minutes"
    portal_config["SIGN_IN_LIMIT_PER_ACCOUNT"] = f"{ACCOUNT_LIMIT} per {window}"
    portal_config["SIGN_IN_LIMIT_PER_ADDRESS"] = f"{ADDRESS_LIMIT} per {window}"
    if request.param == "redis":
        store = request.getfixturevalue("redis_store")
        portal_config["RATELIMIT_STORAGE_URI"] = store.url
        portal_config["RATELIMIT_KEY_PREFIX"] = store.prefix
        from portal.extensions import limiter

        monkeypatch.setattr(limiter, "_key_prefix", "")  # the limiter keeps its first prefix
    return portal_config


def attempt(client, email: str, password: str, **headers: str):
    data = {"email": email, "password": password, "csrf_token": csrf_token(client)}
    return client.post("/login", data=data, headers=headers)


def assert_throttled(client, response) -> None:
    """A clear page: 429, says why and what to do, shows the form, and nobody is signed in."""
    html = response.get_data(as_text=True)
    assert response.status_code == 429, html[:300]
    assert LIMITED in html and "Wait a few minutes" in html
    assert 'name="password"' in html and "Traceback" not in html
    assert header_problems(response) == []
    assert client.get("/").status_code == 302, "not signed in"


def test_guessing_one_password_locks_the_account(client, accounts):
    """Changing the email's spelling or sending through htmx buys no extra guesses."""
    spellings = [
        (accounts.owner.upper(), {}),
        (f"  {accounts.owner} ", {"HX-Request": "true", "HX-Boosted": "true"}),
        (accounts.owner.title(), {}),
    ]
    assert len(spellings) == ACCOUNT_LIMIT
    for email, headers in spellings:
        assert attempt(client, email, "guess", **headers).status_code == 401
    assert_throttled(client, attempt(client, accounts.owner, PASSWORD))
    other = attempt(client, accounts.operator, PASSWORD)
    assert other.status_code == 302, "the other accounts of the address still sign in"


def test_spraying_accounts_from_one_address_is_limited(client, accounts):
    """One guess per account, many accounts: the address limit stops it, right password too."""
    for number in range(ADDRESS_LIMIT):
        assert attempt(client, f"user{number}@acme.test", "guess").status_code == 401
    assert_throttled(client, attempt(client, accounts.other_owner, PASSWORD))


def test_forwarded_for_headers_do_not_buy_new_addresses(client, accounts):
    """No proxy is trusted by default: X-Forwarded-For is the attacker's own words."""
    for number in range(ADDRESS_LIMIT):
        spoofed = {"X-Forwarded-For": f"203.0.113.{number}", "X-Real-IP": f"203.0.113.{number}"}
        assert attempt(client, f"user{number}@acme.test", "guess", **spoofed).status_code == 401
    response = attempt(client, accounts.owner, PASSWORD, **{"X-Forwarded-For": "203.0.113.99"})
    assert_throttled(client, response)


def test_the_right_password_before_the_limit_is_not_throttled(app, accounts):
    client = app.test_client()
    for _ in range(ACCOUNT_LIMIT - 1):
        assert attempt(client, accounts.owner, "typo").status_code == 401
    assert attempt(client, accounts.owner, PASSWORD).status_code == 302
    assert client.get("/").status_code == 200


@pytest.mark.slow  # waits for the window to pass
@pytest.mark.short_window
def test_the_lock_lifts_when_the_window_passes(client, accounts):
    for _ in range(ACCOUNT_LIMIT):
        assert attempt(client, accounts.owner, "guess").status_code == 401
    assert attempt(client, accounts.owner, PASSWORD).status_code == 429
    time.sleep(SHORT_WINDOW + 0.1)
    assert attempt(client, accounts.owner, PASSWORD).status_code == 302
