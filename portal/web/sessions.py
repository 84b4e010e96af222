"""Signed-in sessions in the browser: the cookie, Flask-Login, and the sign-in page for the
signed-out. Their server-side records, which make a sign-out or an expiry really end a session,
are `portal.identity.rules.accounts`'.

The session also says who acts in the audit log (`audit.Actor`): the user it loads, signs in or
signs out, from the request's client address.
"""

from __future__ import annotations

from collections.abc import Mapping

from flask import Flask, flash, g, request, session, url_for
from flask_login import login_user, logout_user
from werkzeug.wrappers import Response

from portal.extensions import login_manager
from portal.identity.models import User
from portal.identity.rules import accounts, audit
from portal.web.access import redirect_to


def init_app(app: Flask) -> None:
    app.before_request(_name_actor)


def _name_actor() -> None:
    """Until a user is loaded, events of this request come from nobody at its address; a hook
    that loaded the user already named them, and stays."""
    if audit.ACTOR not in g:
        _act_as(None)


def _act_as(user: User | None) -> None:
    audit.act_as(audit.Actor(user, request.remote_addr))


def discard_session() -> None:
    """Forget the session this cookie carries, on the server and in the cookie.

    Signing in again on a browser that is signed in must not leave the old session alive for a
    copy of its cookie.
    """
    key = session.get("_user_id")
    if key:
        accounts.close_session(key)
    session.clear()


# The session's mark that its user, who never chose a time zone, is asked for one.
ASK_TIME_ZONE = "ask_time_zone"


def start_session(user: User, parameters: Mapping[str, object]) -> None:
    """Sign `user` in with a brand-new session (nothing of the previous session survives), and
    its "sign_in" event with `parameters` in the audit log, in the same transaction."""
    discard_session()
    _act_as(user)
    sign_in = audit.new_event("sign_in", parameters=parameters)
    user.session_key = accounts.open_session(user, sign_in)
    login_user(user)
    session.permanent = True
    if not user.time_zone_asked:
        session[ASK_TIME_ZONE] = True  # on the next whole page (the account pages' question)


def end_session(user: User) -> None:
    """Sign out: forget the session on the server and in the cookie."""
    if user.session_key:
        accounts.close_session(user.session_key)
    logout_user()
    session.clear()
    _act_as(None)


def end_other_sessions(user: User) -> None:
    """End every session of `user` but this one (the one `user` was loaded from).

    After a new password, two-factor sign-in turned on or off, or new recovery codes, a session
    started before (perhaps from a stolen password, or a lost phone's codes) must not live on.
    """
    accounts.revoke_sessions(user, keep=user.session_key)


@login_manager.user_loader
def load_user(key: str) -> User | None:
    """The user of a live session (`accounts.session_user`), who then acts in this request."""
    user = accounts.session_user(key)
    if user is not None:
        user.session_key = key
        _act_as(user)
    return user


@login_manager.unauthorized_handler
def unauthorized() -> Response:
    """Send the visitor to the sign-in page, saying why, and come back afterwards."""
    expired = "_user_id" in session
    session.clear()
    if expired:
        flash("Your session has expired. Please sign in again.", "info")
    else:
        flash("Please sign in to continue.", "info")
    target = request.full_path.rstrip("?") if request.method == "GET" else None
    return redirect_to(url_for("auth.login", next=target), htmx_status=401)
