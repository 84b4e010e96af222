"""`/account`: any signed-in user's own settings: the time zone and two-factor sign-in."""

from __future__ import annotations

from flask import flash, redirect, render_template, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal import audit
from portal.access import ALL_ROLES, open_before_enrolment, roles
from portal.account import bp
from portal.account.forms import (
    DisableTwoFactorForm,
    EnableTwoFactorForm,
    RecoveryCodesForm,
    TimeZoneForm,
)
from portal.auth import two_factor as second_factor
from portal.auth.sessions import end_other_sessions
from portal.extensions import db
from portal.layout import PageAnswer, render_page


@bp.route("/account", methods=["GET", "POST"])
@roles(*ALL_ROLES)
def index() -> Response:
    form = TimeZoneForm(time_zone=current_user.time_zone)
    if form.validate_on_submit():
        current_user.time_zone = form.time_zone.data
        db.session.commit()
        flash(f"Times are now shown in {form.time_zone.data}.", "success")
        return redirect(url_for("account.index"))
    status = 422 if form.is_submitted() else 200
    return render_page("account/index.html", "account/index.html", status, form=form)


@bp.route("/account/two-factor", methods=["GET", "POST"])
@roles(*ALL_ROLES)
@open_before_enrolment
def two_factor() -> PageAnswer:
    """Set two-factor sign-in up (scan, then confirm with a code), or manage it once it is on.

    Turning it on, new recovery codes and turning it off each end the user's other sessions.
    """
    user = current_user._get_current_object()
    if user.two_factor_enabled:
        return _manage(200)
    form = EnableTwoFactorForm()
    status = 200
    if form.validate_on_submit():
        try:
            codes = second_factor.enable(user, form.code.data)
        except second_factor.CodeRefused as refusal:
            form.code.errors.append(str(refusal))
            status = refusal.status
        else:
            end_other_sessions(user)
            return _recovery_codes(codes, "Two-factor sign-in is on.")
    elif form.is_submitted():
        status = 422
    secret = second_factor.pending_secret(user)
    page = render_template(
        "account/two_factor_setup.html",
        form=form,
        secret=second_factor.grouped(secret),
        qr_code=second_factor.qr_code(second_factor.provisioning_uri(user, secret)),
    )
    return page, status


@bp.route("/account/two-factor/recovery-codes", methods=["POST"])
@roles(*ALL_ROLES)
def recovery_codes() -> PageAnswer:
    """Replace the recovery codes (after a fresh code), and show the new ones this once."""
    user = current_user._get_current_object()
    if not user.two_factor_enabled:
        return redirect(url_for("account.two_factor"))
    form = RecoveryCodesForm()
    if not form.validate_on_submit():
        return _manage(422, recovery_form=form)
    status = second_factor.refusal_on(form.code, user, purpose="recovery_codes")
    if status:
        return _manage(status, recovery_form=form)
    codes = second_factor.new_recovery_codes(user)
    end_other_sessions(user)
    audit.record("two_factor.recovery_codes", user=user)
    return _recovery_codes(codes, "New recovery codes are made; the old ones no longer work.")


@bp.route("/account/two-factor/disable", methods=["POST"])
@roles(*ALL_ROLES)
def disable_two_factor() -> PageAnswer:
    """Turn two-factor sign-in off; a current code (or a recovery code) proves it is the owner."""
    user = current_user._get_current_object()
    if not user.two_factor_enabled:
        return redirect(url_for("account.two_factor"))
    form = DisableTwoFactorForm(prefix="disable")
    if not form.validate_on_submit():
        return _manage(422, disable_form=form)
    status = second_factor.refusal_on(form.code, user, purpose="disable", recovery=True)
    if status:
        return _manage(status, disable_form=form)
    second_factor.disable(user)
    end_other_sessions(user)
    flash("Two-factor sign-in is off.", "success")
    return redirect(url_for("account.two_factor"))


def _manage(
    status: int,
    *,
    recovery_form: RecoveryCodesForm | None = None,
    disable_form: DisableTwoFactorForm | None = None,
) -> tuple[str, int]:
    """The page of a user with two-factor on: recovery codes left, new ones, turning it off."""
    page = render_template(
        "account/two_factor.html",
        recovery_form=recovery_form or RecoveryCodesForm(),
        disable_form=disable_form or DisableTwoFactorForm(prefix="disable"),
        remaining=second_factor.remaining_recovery_codes(current_user),
    )
    return page, status


def _recovery_codes(codes: list[str], message: str) -> str:
    """The recovery codes, in the answer to the POST only: no page shows them again."""
    return render_template("account/recovery_codes.html", codes=codes, message=message)
