"""Session fixation and replay. A cookie from before sign-in is never the one after,
and a cookie replayed after sign-out (or after the session ended on the server) signs nobody in,
whatever the kind of request.
"""

from __future__ import annotations

import pytest

from tests.support.forms import csrf_token, sign_in
from tests.support.htmx import HTMX

COOKIE = "portal_session"


def _cookie(client) -> str | None:
    cookie = client.get_cookie(COOKIE)
    return cookie.value if cookie else None


def _session_rows(app) -> set[tuple[str, int]]:
    from portal.extensions import db
    from portal.identity.models import UserSession

    with app.app_context():
        return {(r.key_hash, r.user_id) for r in db.session.scalars(db.select(UserSession))}


def _assert_signed_out(client) -> None:
    """The attacker's view of a dead cookie: no page, fragment, export or action."""
    page = client.get("/settings/users")
    assert page.status_code == 302 and page.location.startswith("/login")
    fragment = client.get("/settings/users", headers=HTMX)
    assert fragment.status_code == 401 and fragment.headers["HX-Redirect"].startswith("/login")
    assert client.get("/audit/export.csv").status_code == 302
    action = client.post("/settings/users", data={"email": "x@acme.test", "role": "owner"})
    assert action.status_code == 302 and action.location.startswith("/login")
    assert "owner@acme.test" not in client.get("/login").get_data(as_text=True)


def test_the_cookie_from_before_sign_in_is_not_the_one_after(app, accounts):
    """Fixation: an attacker plants a pre-sign-in cookie; the victim signs in with it."""
    victim = app.test_client()
    victim.get("/login")
    planted = _cookie(victim)
    assert planted, "the sign-in page sets a session cookie (its CSRF token)"
    assert sign_in(victim, accounts.owner).status_code == 302
    assert _cookie(victim) != planted
    assert victim.get("/settings/users").status_code == 200

    attacker = app.test_client()
    attacker.set_cookie(COOKIE, planted)
    _assert_signed_out(attacker)


def test_each_sign_in_gets_a_new_server_side_session(app, accounts):
    before = _session_rows(app)
    first, second = app.test_client(), app.test_client()
    sign_in(first, accounts.owner)
    sign_in(second, accounts.owner)
    new = _session_rows(app) - before
    assert len(new) == 2, "one server-side record per sign-in"
    assert _cookie(first) != _cookie(second)


@pytest.mark.parametrize("how", ["form", "htmx"])
def test_sign_out_kills_the_cookie_on_the_server(app, accounts, how):
    client = app.test_client()
    sign_in(client, accounts.owner)
    stolen = _cookie(client)
    rows = _session_rows(app)
    token = csrf_token(client, "/account")
    if how == "form":
        response = client.post("/logout", data={"csrf_token": token})
    else:
        response = client.post("/logout", headers={**HTMX, "X-CSRFToken": token})
    assert response.status_code == 302
    assert len(rows - _session_rows(app)) == 1, "the server-side record is gone"

    attacker = app.test_client()
    attacker.set_cookie(COOKIE, stolen)
    _assert_signed_out(attacker)


def test_a_session_deleted_on_the_server_is_dead_even_with_its_cookie(app, accounts):
    """The cookie is signed, but the server decides: no record, no session."""
    from portal.extensions import db
    from portal.identity.models import UserSession

    client = app.test_client()
    sign_in(client, accounts.owner)
    with app.app_context():
        db.session.execute(db.delete(UserSession))
        db.session.commit()
    _assert_signed_out(client)


def test_a_tampered_cookie_signs_nobody_in(app, accounts):
    client = app.test_client()
    sign_in(client, accounts.owner)
    value = _cookie(client)
    payload, _, rest = value.partition(".")
    attacker = app.test_client()
    forged = payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB")
    attacker.set_cookie(COOKIE, f"{forged}.{rest}")
    _assert_signed_out(attacker)


def test_a_new_password_ends_the_victims_sessions(app, accounts):
    """An owner who resets a stolen account's password throws the thief out."""
    from portal.identity.rules import accounts as service

    thief = app.test_client()
    sign_in(thief, accounts.operator)
    owner = app.test_client()
    sign_in(owner, accounts.owner)
    with app.app_context():
        user_id = service.find_user(accounts.operator).id
    response = owner.post(
        f"/settings/users/{user_id}",
        data={
            "role": "operator",
            "password": "a brand new password",
            "csrf_token": csrf_token(owner, f"/settings/users/{user_id}"),
        },
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    _assert_signed_out(thief)


def test_signing_in_again_ends_the_previous_session(app, accounts):
    """Signing in on a browser that was signed in replaces its session: the old cookie dies.

    Otherwise a cookie copied before the second sign-in stays valid until it expires, although
    the browser it came from shows someone else (or the same person afresh).
    """
    client = app.test_client()
    sign_in(client, accounts.owner)
    copied = _cookie(client)
    rows = _session_rows(app)
    response = client.post(
        "/login",
        data={
            "email": accounts.operator,
            "password": "correct horse battery staple",
            "csrf_token": csrf_token(client, "/account"),
        },
    )
    assert response.status_code == 302
    assert len(_session_rows(app)) == len(rows), "the old record replaced, not kept"
    attacker = app.test_client()
    attacker.set_cookie(COOKIE, copied)
    _assert_signed_out(attacker)
