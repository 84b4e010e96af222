"""Server-side records of signed-in sessions, so that a sign-out or an expiry really ends one."""

from __future__ import annotations

import secrets
from datetime import timedelta

from flask import current_app, flash, request, session, url_for
from flask_login import login_user, logout_user
from sqlalchemy.orm import joinedload
from werkzeug.wrappers import Response

from portal.extensions import db, login_manager
from portal.models import Merchant, User, UserSession, session_key_hash, utcnow
from portal.rules.accounts import revoke_sessions
from portal.web.access import redirect_to

LAST_SEEN_RESOLUTION = timedelta(minutes=1)
# Every signed-in page needs the user, the merchant and its API connection: one query, not four.
WITH_USER = (
    joinedload(UserSession.user).joinedload(User.merchant).joinedload(Merchant.api_connection)
)


def discard_session() -> None:
    """Forget the session this cookie carries, on the server and in the cookie.

    Signing in again on a browser that is signed in must not leave the old session alive for a
    copy of its cookie.
    """
    key = session.get("_user_id")
    if key:
        db.session.execute(
            db.delete(UserSession).where(UserSession.key_hash == session_key_hash(key))
        )
        db.session.commit()
    session.clear()


def start_session(user: User) -> None:
    """Sign `user` in with a brand-new session (nothing of the previous session survives)."""
    discard_session()
    key = secrets.token_urlsafe(32)
    db.session.add(UserSession(key_hash=session_key_hash(key), user=user))
    db.session.commit()
    user.session_key = key
    login_user(user)
    session.permanent = True


def end_session(user: User) -> None:
    """Sign out: forget the session on the server and in the cookie."""
    if user.session_key:
        db.session.execute(
            db.delete(UserSession).where(UserSession.key_hash == session_key_hash(user.session_key))
        )
        db.session.commit()
    logout_user()
    session.clear()


def end_other_sessions(user: User) -> None:
    """End every session of `user` but this one (the one `user` was loaded from).

    After a new password, two-factor sign-in turned on or off, or new recovery codes, a session
    started before (perhaps from a stolen password, or a lost phone's codes) must not live on.
    """
    revoke_sessions(user, keep=user.session_key)
    db.session.commit()


@login_manager.user_loader
def load_user(key: str) -> User | None:
    """The user of a live session; expired sessions are deleted and load nobody."""
    record = db.session.get(UserSession, session_key_hash(key), options=[WITH_USER])
    if record is None or record.user is None:
        return None
    now = utcnow()
    config = current_app.config
    lifetime = config["PERMANENT_SESSION_LIFETIME"]
    idle = timedelta(minutes=float(config["SESSION_IDLE_MINUTES"]))
    if now - record.created_at > lifetime or now - record.last_seen_at > idle:
        db.session.delete(record)
        db.session.commit()
        return None
    if now - record.last_seen_at > LAST_SEEN_RESOLUTION:
        record.last_seen_at = now
        db.session.commit()
    user = record.user
    user.session_key = key
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
