"""Pages opened from a mail, signed out: asking for a reset link, and setting a password from
a reset or invitation link (`portal.identity.rules.one_time_links`).

The answer to "forgot password" is the same page, status and wording whether the address has an
account or not. A link's token is in the path only: it is never logged by the portal, and the
pages it opens send no Referer elsewhere (`Referrer-Policy: same-origin`).
"""

from __future__ import annotations

from flask import flash, redirect, request, url_for
from werkzeug.wrappers import Response

from portal.identity.models import LinkPurpose
from portal.identity.pages.auth import bp
from portal.identity.pages.auth.forms import ForgotPasswordForm, NewPasswordForm
from portal.identity.rules import accounts, one_time_links
from portal.live.rules import outbox
from portal.web.access import public
from portal.web.rendering import page
from portal.web.sessions import start_session
from portal.web.users import refusal_sentence

SENT = "If an account exists for that address, we sent it a link to reset the password."
THROTTLED = "Too many requests for a reset link. Wait an hour, then try again."
DEAD_LINK = "This link has expired or was already used."
DONE = {
    LinkPurpose.RESET: "Your password is set and every session of yours is signed out. Sign in.",
    LinkPurpose.INVITE: "Your password is set and you are signed in. Next time, sign in with "
    "your email and that password.",
}


@bp.route("/password/forgot", methods=["GET", "POST"])
@public
def forgot_password() -> Response:
    """Ask for a reset link; the answer never says whether the address has an account."""
    form = ForgotPasswordForm()
    mail_on = outbox.enabled()
    if not mail_on or not form.validate_on_submit():
        status = 422 if form.is_submitted() else 200
        return page("auth/forgot.html", status, form=form, mail_on=mail_on)
    if not one_time_links.request_reset(form.email.data, request.remote_addr):
        return page("auth/forgot.html", 429, form=form, mail_on=mail_on, error=THROTTLED)
    flash(SENT, "info")
    return redirect(url_for("auth.forgot_password"))


@bp.route("/password/reset/<token>", methods=["GET", "POST"])
@public
def reset_password(token: str) -> Response:
    """A new password from a reset link, which ends every session of the user."""
    return _set_password(token, LinkPurpose.RESET)


@bp.route("/invite/<token>", methods=["GET", "POST"])
@public
def accept_invitation(token: str) -> Response:
    """The invited person's first password."""
    return _set_password(token, LinkPurpose.INVITE)


def _set_password(token: str, purpose: LinkPurpose) -> Response:
    form = NewPasswordForm()
    try:
        user = one_time_links.link_user(token, purpose)
        if not form.validate_on_submit():
            status = 422 if form.is_submitted() else 200
            return page("auth/set_password.html", status, form=form, user=user, purpose=purpose)
        user = one_time_links.set_password(token, purpose, form.new_password.data)
    except one_time_links.LinkRefused:
        return page("auth/dead_link.html", 410, error=DEAD_LINK, purpose=purpose)
    except accounts.AccountError as refusal:
        form.new_password.errors.append(refusal_sentence(refusal, user.merchant))
        return page("auth/set_password.html", 422, form=form, user=user, purpose=purpose)
    if purpose is LinkPurpose.INVITE:  # after a reset one signs in, with a second factor if on
        start_session(user, {"email": user.email, "by": "invitation link"})
    flash(DONE[purpose], "success")
    return redirect(url_for("dashboard.index" if purpose is LinkPurpose.INVITE else "auth.login"))
