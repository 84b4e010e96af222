"""Sign in (rate-limited on failures, per account and per address) and sign out (POST only)."""

from __future__ import annotations

from flask import current_app, flash, g, redirect, render_template, request, url_for
from flask_login import current_user
from werkzeug.security import check_password_hash, generate_password_hash
from werkzeug.wrappers import Response

from portal import audit
from portal.access import public
from portal.auth import bp
from portal.auth.forms import SignInForm
from portal.auth.sessions import end_session, start_session
from portal.extensions import limiter
from portal.security import safe_next
from portal.services.accounts import find_user, normalise_email

# Checked when the email is unknown, so that both answers take as long.
_UNKNOWN_USER_HASH = generate_password_hash("not a password of anyone")
INCORRECT = "The email or password is incorrect."


def _account_key() -> str:
    return "sign-in:" + normalise_email(request.form.get("email", ""))


def _sign_in_failed(_response: Response) -> bool:
    """Only failed sign-ins count against the limits."""
    return g.get("sign_in_failed", False)


@bp.route("/login", methods=["GET", "POST"])
@public
@limiter.limit(
    lambda: current_app.config["SIGN_IN_LIMIT_PER_ACCOUNT"],
    key_func=_account_key,
    methods=["POST"],
    deduct_when=_sign_in_failed,
)
@limiter.limit(
    lambda: current_app.config["SIGN_IN_LIMIT_PER_ADDRESS"],
    methods=["POST"],
    deduct_when=_sign_in_failed,
)
def login() -> Response | tuple[str, int] | str:
    """Sign in, then go to `next` when it is a page of this site."""
    form = SignInForm()
    if request.method == "GET":
        if current_user.is_authenticated:
            return redirect(safe_next(request.args.get("next")) or url_for("dashboard.index"))
        form.next.data = request.args.get("next", "")
        return render_template("auth/login.html", form=form)
    if not form.validate_on_submit():
        return render_template("auth/login.html", form=form), 422
    user = find_user(form.email.data)
    if user is None:
        check_password_hash(_UNKNOWN_USER_HASH, form.password.data)
    elif user.check_password(form.password.data):
        start_session(user)
        audit.record("sign_in", parameters={"email": user.email}, user=user)
        return redirect(safe_next(form.next.data) or url_for("dashboard.index"))
    g.sign_in_failed = True
    audit.record("sign_in", parameters={"email": form.email.data}, error=INCORRECT, user=user)
    current_app.logger.info("Failed sign-in from %s", request.remote_addr)
    return render_template("auth/login.html", form=form, error=INCORRECT), 401


@bp.errorhandler(429)
def too_many_attempts(_error: Exception) -> tuple[str, int]:
    """The sign-in limits were reached: say so on the sign-in page itself."""
    form = SignInForm(formdata=None, next=request.form.get("next", ""))
    message = "Too many failed sign-in attempts. Wait a few minutes, then try again."
    return render_template("auth/login.html", form=form, error=message), 429


@bp.route("/logout", methods=["POST"])
@public
def logout() -> Response:
    """Sign out, revoking the session on the server too."""
    if current_user.is_authenticated:
        audit.record("sign_out")
        end_session(current_user._get_current_object())
        flash("You have signed out.", "success")
    return redirect(url_for("auth.login"))
