"""One's own password and two-factor sign-in, attacked from another session.

A new password (one's own on the account page, or an owner's for anyone) ends every other
session of that user, and the session that changed its own stays. A two-factor setup key
belongs to the session that was shown it: no other session can enrol it, so a key seen by
someone else (who had the password for a while) is never the one enrolled. Turning two-factor
on or off, and a new password, ask for the current password, counted like a failed sign-in.
Over real HTTP, each visitor with cookies of its own.
"""

from __future__ import annotations

import time

import pyotp
import pytest

from tests.support.forms import PASSWORD
from tests.support.portal_server import serve_in_thread
from tests.support.two_factor import SETUP_KEY, enable_for
from tests.support.visitor import Visitor

NEW_PASSWORD = "a brand new passphrase"
WRONG_PASSWORD = "That is not your current password."
LIMIT = 5  # PORTAL_SIGN_IN_LIMIT_PER_ACCOUNT: 5 per 15 minutes


@pytest.fixture
def url(app, accounts):
    with serve_in_thread(app) as served:
        yield served


def _signed_in(url: str, email: str) -> Visitor:
    visitor = Visitor(url)
    assert visitor.sign_in(email).status_code == 302
    return visitor


def _change_password(visitor: Visitor, current: str, new: str, again: str | None = None, **more):
    data = {
        "password-current_password": current,
        "password-new_password": new,
        "password-new_password_again": new if again is None else again,
        **{f"password-{name}": value for name, value in more.items()},
    }
    return visitor.post("/account/password", data, page="/account")


def _setup_key(visitor: Visitor) -> str:
    return SETUP_KEY.search(visitor.get("/account/two-factor").text).group(1).replace(" ", "")


def _user(app, email: str):
    from portal.identity.rules.accounts import find_user

    with app.app_context():
        return find_user(email)


def _stored_secret(app, email: str) -> str | None:
    from portal import crypto

    with app.app_context():
        stored = _user(app, email).totp_secret_encrypted
        return crypto.decrypt(stored) if stored else None


# --- Passwords -------------------------------------------------------------------------------


def test_changing_ones_own_password_ends_every_other_session(url, accounts):
    acting, thief, laptop = (_signed_in(url, accounts.operator) for _ in range(3))
    response = _change_password(acting, PASSWORD, NEW_PASSWORD)
    assert response.status_code == 302 and response.headers["Location"] == "/account"
    assert "every other session of yours is signed out" in acting.get("/account").text
    assert acting.is_signed_in(), "the session that changed it stays"
    assert not thief.is_signed_in() and not laptop.is_signed_in()
    assert Visitor(url).sign_in(accounts.operator).status_code == 401, "the old one is gone"
    assert Visitor(url).sign_in(accounts.operator, NEW_PASSWORD).status_code == 302


def test_an_owner_cannot_set_their_own_password_under_users_without_the_current_one(
    app, url, accounts
):
    """A stolen owner cookie would otherwise set a password and sign the owner out everywhere."""
    thief, owner = _signed_in(url, accounts.owner), _signed_in(url, accounts.owner)
    path = f"/settings/users/{_user(app, accounts.owner).id}"
    response = thief.post(path, {"role": "owner", "password": NEW_PASSWORD})
    assert response.status_code == 422
    assert "Change your own password on the Account page" in response.text
    assert owner.is_signed_in() and thief.is_signed_in()
    assert Visitor(url).sign_in(accounts.owner, NEW_PASSWORD).status_code != 302
    assert Visitor(url).sign_in(accounts.owner).status_code == 302


def test_a_wrong_current_password_changes_nothing_and_counts_as_a_failed_sign_in(url, accounts):
    acting, other = _signed_in(url, accounts.operator), _signed_in(url, accounts.operator)
    for _ in range(LIMIT):
        response = _change_password(acting, "a guess at it", NEW_PASSWORD)
        assert response.status_code == 422 and WRONG_PASSWORD in response.text
    response = _change_password(acting, PASSWORD, NEW_PASSWORD)
    assert response.status_code == 429 and "Too many failed sign-in attempts" in response.text
    assert Visitor(url).sign_in(accounts.operator).status_code == 429, "the sign-in limit"
    assert acting.is_signed_in() and other.is_signed_in(), "nothing changed"


@pytest.mark.parametrize(
    ("new", "again", "message"),
    [
        (NEW_PASSWORD, NEW_PASSWORD + "!", "Type the same new password twice."),
        ("too short", "too short", "Use at least 10 characters."),
        ("", "", "Enter a new password."),
    ],
)
def test_the_new_password_is_typed_twice_and_long_enough(url, accounts, new, again, message):
    acting, other = _signed_in(url, accounts.operator), _signed_in(url, accounts.operator)
    response = _change_password(acting, PASSWORD, new, again)
    assert response.status_code == 422 and message in response.text
    assert other.is_signed_in()
    assert Visitor(url).sign_in(accounts.operator).status_code == 302, "the password is the same"


def test_with_two_factor_on_a_new_password_needs_a_code_too(app, url, accounts):
    totp = pyotp.TOTP(enable_for(app, accounts.operator))
    acting = Visitor(url)
    acting.sign_in(accounts.operator)
    assert acting.post("/login/two-factor", {"code": totp.now()}).status_code == 302
    response = _change_password(acting, PASSWORD, NEW_PASSWORD)
    assert response.status_code == 422 and "Enter the 6-digit code" in response.text
    next_code = totp.at(time.time() + 30)
    assert _change_password(acting, PASSWORD, NEW_PASSWORD, code=next_code).status_code == 302


# --- Two-factor enrolment --------------------------------------------------------------------


def test_a_setup_key_belongs_to_the_session_that_was_shown_it(app, url, accounts):
    first, second = _signed_in(url, accounts.operator), _signed_in(url, accounts.operator)
    key_first, key_second = _setup_key(first), _setup_key(second)
    assert key_first != key_second, "each setup makes its own key"
    assert _setup_key(first) == key_first, "a reload shows the key the person may have scanned"
    assert _stored_secret(app, accounts.operator) is None, "nothing is stored before it is on"

    for visitor, key in ((second, key_first), (first, key_second)):
        code = pyotp.TOTP(key).now()
        response = visitor.post("/account/two-factor", {"password": PASSWORD, "code": code})
        assert response.status_code == 422, "another session's key is refused"
        assert not _user(app, accounts.operator).two_factor_enabled

    code = pyotp.TOTP(key_first).now()
    response = first.post("/account/two-factor", {"password": PASSWORD, "code": code})
    assert response.status_code == 200 and "Two-factor sign-in is on." in response.text
    assert _stored_secret(app, accounts.operator) == key_first


def test_turning_two_factor_on_and_off_asks_for_the_password(app, url, accounts):
    visitor = _signed_in(url, accounts.operator)
    totp = pyotp.TOTP(_setup_key(visitor))
    for password, message in (("not my password", WRONG_PASSWORD), ("", "Enter your current")):
        response = visitor.post("/account/two-factor", {"password": password, "code": totp.now()})
        assert response.status_code == 422 and message in response.text
        assert not _user(app, accounts.operator).two_factor_enabled
    response = visitor.post("/account/two-factor", {"password": PASSWORD, "code": totp.now()})
    assert response.status_code == 200, "the refused tries did not use the code up"

    code = totp.at(time.time() + 30)
    off = "/account/two-factor/disable"
    for password in ("not my password", ""):
        data = {"disable-password": password, "disable-code": code}
        assert visitor.post(off, data, page="/account/two-factor").status_code == 422
        assert _user(app, accounts.operator).two_factor_enabled
    data = {"disable-password": PASSWORD, "disable-code": code}
    assert visitor.post(off, data, page="/account/two-factor").status_code == 302
    assert not _user(app, accounts.operator).two_factor_enabled
