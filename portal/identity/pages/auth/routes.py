"""Sign in (wrong passwords limited per account and per address) and sign out (POST only).

Each password is counted before it is checked and given back when right (`passwords`), so
parallel guesses get no more checks than the limit and a right password never uses one up.

A user with two-factor sign-in on signs in in two steps: the right password only marks the
(anonymous) session as waiting for a code, for a few minutes; the code then starts the real
session, with a new key. Until then the session opens nothing but the code page.
"""

from __future__ import annotations

import functools
import time

from flask import abort, current_app, flash, redirect, request, session, url_for
from flask_login import current_user
from werkzeug.security import check_password_hash, generate_password_hash
from werkzeug.wrappers import Response

from portal.identity.models import User
from portal.identity.pages.auth import bp
from portal.identity.pages.auth.forms import SignInForm, TwoFactorSignInForm
from portal.identity.rules import attempts, audit, passkeys, passwords
from portal.identity.rules import two_factor as second_factor
from portal.identity.rules.accounts import find_user, user_with_id
from portal.identity.rules.passkeys import relying_party
from portal.web.access import public
from portal.web.rendering import page
from portal.web.security import safe_next
from portal.web.sessions import discard_session, end_session, start_session
from portal.web.step_up import (
    PASSKEY_FIELD,
    PASSWORD_SENTENCES,
    confirmed_action,
    json_answer,
    put_refusal,
)

INCORRECT = "The email or password is incorrect."
THROTTLED = PASSWORD_SENTENCES[passwords.Reason.THROTTLED]
# The session key of a sign-in waiting for its code, and how long it waits.
PENDING = "two_factor_pending"
PENDING_SECONDS = 300


@bp.route("/login", methods=["GET", "POST"])
@public
def login() -> Response:
    """Sign in, then go to `next` when it is a page of this site."""
    form = SignInForm()
    if request.method == "GET":
        if current_user.is_authenticated:
            return redirect(safe_next(request.args.get("next")) or url_for("dashboard.index"))
        form.next.data = request.args.get("next", "")
        return page("auth/login.html", form=form)
    if not form.validate_on_submit():
        return page("auth/login.html", 422, form=form)
    attempt = attempts.attempt(passwords.sign_in_limits(form.email.data, request.remote_addr))
    if attempt is None:
        return page("auth/login.html", 429, form=form, error=THROTTLED)
    user = find_user(form.email.data)
    if user is None:
        check_password_hash(
            _unknown_user_hash(current_app.config["PASSWORD_HASH_METHOD"]), form.password.data
        )
    elif user.check_password(form.password.data):
        attempt.give_back()
        next_url = safe_next(form.next.data) or url_for("dashboard.index")
        if user.has_second_factor:
            discard_session()
            session[PENDING] = {"user_id": user.id, "since": time.time(), "next": next_url}
            return redirect(url_for("auth.two_factor"))
        return _signed_in(user, next_url, {"email": user.email})
    audit.record("sign_in", parameters={"email": form.email.data}, error=INCORRECT, user=user)
    current_app.logger.info("Failed sign-in from %s", request.remote_addr)
    return page("auth/login.html", 401, form=form, error=INCORRECT)


@functools.cache
def _unknown_user_hash(method: str) -> str:
    """Checked when the email is unknown, so that both answers take as long."""
    return generate_password_hash("not a password of anyone", method=method)


def _signed_in(user: User, next_url: str, parameters: dict[str, str]) -> Response:
    start_session(user, parameters)
    return redirect(next_url)


def _waiting_user() -> User | None:
    """The user whose password was right in this session, while the code may still come."""
    pending = session.get(PENDING)
    if not pending or time.time() - pending["since"] > PENDING_SECONDS:
        return None
    user = user_with_id(pending["user_id"])
    return user if user is not None and user.has_second_factor else None


@bp.route("/login/two-factor", methods=["GET", "POST"])
@public
def two_factor() -> Response:
    """The second step of signing in: a passkey, a code from the authenticator app or a recovery
    code."""
    if current_user.is_authenticated:
        return redirect(url_for("dashboard.index"))
    user = _waiting_user()
    if user is None:
        session.pop(PENDING, None)
        flash("Sign in with your email and password, then enter your code.", "info")
        return redirect(url_for("auth.login"))
    form = TwoFactorSignInForm()
    if request.method == "GET":
        return page("auth/two_factor.html", form=form, user=user)
    if not form.validate_on_submit():
        return page("auth/two_factor.html", 422, form=form, user=user)
    try:
        used = _second_factor(user, form.code.data)
    except (second_factor.CodeRefused, passkeys.PasskeyRefused) as refusal:
        return page("auth/two_factor.html", put_refusal(form.code, refusal), form=form, user=user)
    next_url = session[PENDING]["next"]
    response = _signed_in(user, next_url, {"email": user.email, "second_factor": used})
    if used == "recovery code":
        left = second_factor.remaining_recovery_codes(user)
        flash(
            f"You signed in with a recovery code; {left} of them are left. If you lost your "
            "authenticator, turn two-factor sign-in off and on again under Account.",
            "info",
        )
    return response


def _second_factor(user: User, code: str | None) -> str:
    """What answered the second step: a passkey's answer to this sign-in's challenge when the
    form brings one, else a code (`check_code`)."""
    assertion = request.form.get(PASSKEY_FIELD)
    if assertion:
        passkeys.check_assertion(user, assertion, action=confirmed_action(), purpose="sign_in")
        return "passkey"
    return second_factor.check_code(
        user, code, purpose="sign_in", address=request.remote_addr, recovery=True
    )


@bp.post("/login/two-factor/challenge")
@public
def passkey_challenge() -> Response:
    """The options of a passkey's sign-in, with a challenge for the waiting user: JSON for
    static/js/passkeys.js; 404 without a sign-in waiting for its second step."""
    user = _waiting_user()
    if current_user.is_authenticated or user is None or relying_party() is None:
        abort(404)
    return json_answer(passkeys.assertion_options(user, url_for("auth.two_factor")))


@bp.route("/logout", methods=["POST"])
@public
def logout() -> Response:
    """Sign out, revoking the session on the server too."""
    if current_user.is_authenticated:
        audit.record("sign_out")
        end_session(current_user._get_current_object())
        flash("You have signed out.", "success")
    return redirect(url_for("auth.login"))
