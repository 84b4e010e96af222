"""Parallel guesses get no more checks than the limit.

40 wrong passwords, or 40 wrong two-factor codes, sent at the same moment at one account: each
is counted before it is checked, so exactly the limit's number are checked (401 or 422, and in
the audit log) and the others are refused unchecked (429). On a threaded test server with the
in-memory store, and on gunicorn (two workers) with Redis.
"""

from __future__ import annotations

import sqlite3

import pyotp
import pytest

from tests.support.forms import PASSWORD
from tests.support.portal_app import email
from tests.support.portal_server import run_portal, serve_in_thread
from tests.support.two_factor import SETUP_KEY, enable_for, wrong_code
from tests.support.visitor import Visitor

GUESSES = 40
LIMIT = 5  # PORTAL_SIGN_IN_LIMIT_PER_ACCOUNT: 5 per 15 minutes
CHECKED_AND_REFUSED = {"checked": LIMIT, "refused unchecked": GUESSES - LIMIT}


def _guess_passwords(url: str, address: str) -> dict[str, int]:
    answers = Visitor(url).all_at_once(
        "/login",
        [{"email": address, "password": f"guess {n}"} for n in range(GUESSES)],
        page="/login",
    )
    assert set(answers) <= {401, 429}, answers
    return {"checked": answers[401], "refused unchecked": answers[429]}


def _guess_codes(url: str, address: str, secret: str) -> dict[str, int]:
    """The right password, then 40 wrong codes at once in the second step."""
    visitor = Visitor(url)
    assert visitor.sign_in(address).headers["Location"] == "/login/two-factor"
    forms = [{"code": wrong_code(secret)}] * GUESSES
    answers = visitor.all_at_once("/login/two-factor", forms, page="/login/two-factor")
    assert set(answers) <= {422, 429}, answers
    return {"checked": answers[422], "refused unchecked": answers[429]}


def _refusals(database, action: str) -> int:
    """How many refused `action`s the audit log holds: one per password or code checked."""
    with sqlite3.connect(database) as connection:
        query = "SELECT count(*) FROM audit_events WHERE action = ? AND outcome = 'refused'"
        return connection.execute(query, (action,)).fetchone()[0]


def test_parallel_wrong_passwords_and_codes_on_the_test_server(app, accounts, tmp_path):
    secret = enable_for(app, accounts.operator)
    with serve_in_thread(app) as url:
        assert _guess_passwords(url, accounts.owner) == CHECKED_AND_REFUSED
        assert Visitor(url).sign_in(accounts.owner).status_code == 429, "even the right one"
        assert _guess_codes(url, accounts.operator, secret) == CHECKED_AND_REFUSED
    database = tmp_path / "portal.sqlite3"
    assert _refusals(database, "sign_in") == LIMIT
    assert _refusals(database, "two_factor.code") == LIMIT


@pytest.mark.slow  # gunicorn workers
def test_parallel_wrong_passwords_and_codes_on_gunicorn_with_redis(tmp_path, sandbox, redis_store):
    redis = {
        "PORTAL_RATELIMIT_STORAGE_URI": redis_store.url,
        "PORTAL_RATELIMIT_KEY_PREFIX": redis_store.prefix,
    }
    with run_portal(tmp_path, sandbox, gunicorn=True, workers=2, env=redis) as server:
        owner = Visitor(server.url)
        assert owner.sign_in(email("owner")).status_code == 302
        secret = SETUP_KEY.search(owner.get("/account/two-factor").text).group(1).replace(" ", "")
        code = pyotp.TOTP(secret).now()
        enrolled = owner.post("/account/two-factor", {"password": PASSWORD, "code": code})
        assert enrolled.status_code == 200, enrolled.text[:500]

        assert _guess_passwords(server.url, email("operator")) == CHECKED_AND_REFUSED
        assert _guess_codes(server.url, email("owner"), secret) == CHECKED_AND_REFUSED
    database = tmp_path / "portal.sqlite3"
    assert _refusals(database, "sign_in") == LIMIT
    assert _refusals(database, "two_factor.code") == LIMIT
