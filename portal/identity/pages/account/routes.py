"""`/account`: any signed-in user's own settings: the password, the time zone, two-factor
sign-in and which events mail them. Each change to its security asks for the current password
again."""

from __future__ import annotations

from flask import flash, redirect, request, session, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.identity.models import Role
from portal.identity.pages.account import bp
from portal.identity.pages.account.enrolment import forget_setup, setup_secret
from portal.identity.pages.account.forms import (
    ChangePasswordForm,
    DisableTwoFactorForm,
    EnableTwoFactorForm,
    MailChoicesForm,
    RecoveryCodesForm,
    StatementMailForm,
    TimeZoneForm,
    TimeZoneQuestionForm,
)
from portal.identity.rules import accounts, audit
from portal.identity.rules import two_factor as second_factor
from portal.live.models import StatementFrequency
from portal.live.rules import mail, outbox
from portal.reports.rules import statement_mail
from portal.web.access import (
    ALL_ROLES,
    open_before_enrolment,
    open_before_password_choice,
    roles,
)
from portal.web.rendering import page, render_page
from portal.web.security import safe_next
from portal.web.sessions import ASK_TIME_ZONE, end_other_sessions
from portal.web.step_up import form_refused, put_refusal


@bp.route("/account", methods=["GET", "POST"])
@roles(*ALL_ROLES)
def index() -> Response:
    form = TimeZoneForm(time_zone=current_user.time_zone)
    if form.validate_on_submit():
        accounts.set_time_zone(current_user, form.time_zone.data)
        flash(f"Times are now shown in {form.time_zone.data}.", "success")
        return redirect(url_for("account.index"))
    return _account_page(422 if form.is_submitted() else 200, time_zone_form=form)


@bp.post("/account/time-zone")
@roles(*ALL_ROLES)
@open_before_enrolment
@open_before_password_choice
def time_zone_answer() -> Response:
    """The answer to the question of `time_zone_question`: a zone, or "Not now" (the zone stays;
    /account changes it any time). Back to the page it was asked on."""
    form = TimeZoneQuestionForm(prefix="zone")
    back = safe_next(form.next.data) or url_for("dashboard.index")
    if form.dismiss.data:
        accounts.set_time_zone(current_user, None)
        return redirect(back)
    if not form.validate_on_submit():
        return _account_page(422, time_zone_form=TimeZoneForm(time_zone=current_user.time_zone))
    accounts.set_time_zone(current_user, form.time_zone.data)
    flash(f"Times are now shown in {form.time_zone.data}.", "success")
    return redirect(back)


@bp.app_context_processor
def time_zone_question() -> dict[str, object]:
    """Every page may ask, once: `base.html` calls it on a whole page."""
    return {"time_zone_question": _time_zone_question}


def _time_zone_question() -> TimeZoneQuestionForm | None:
    """The question, on the first whole page after a sign-in of a user who never chose a zone
    (`ASK_TIME_ZONE`); asking counts as asked, whatever the answer."""
    if not current_user.is_authenticated or not session.pop(ASK_TIME_ZONE, False):
        return None
    accounts.set_time_zone(current_user, None)
    return TimeZoneQuestionForm(
        prefix="zone", formdata=None, time_zone=current_user.time_zone, next=request.full_path
    )


@bp.route("/account/password", methods=["POST"])
@roles(*ALL_ROLES)
def change_password() -> Response:
    """A new password, after the current one (and a fresh code, with two-factor on).

    Every other session of the user ends; this one stays signed in.
    """
    user = current_user._get_current_object()
    form = ChangePasswordForm(prefix="password")
    refused = form_refused(form, user, purpose="password", password_field=form.current_password)
    if refused:
        return _account_page(refused, password_form=form)
    accounts.change_password(user, form.new_password.data, keep_session=user.session_key)
    audit.record("password.change", user=user)
    flash("Your password is changed; every other session of yours is signed out.", "success")
    return redirect(url_for("account.index"))


@bp.route("/account/choose-password", methods=["GET", "POST"])
@roles(*ALL_ROLES)
@open_before_enrolment
@open_before_password_choice
def choose_password() -> Response:
    """The first page of a user whose password someone else typed: they choose their own.

    Every other page sends them here until they have (`access.enforce`); the checks are those
    of a change on the account page, so a stolen session cannot lock them out either.
    """
    user = current_user._get_current_object()
    if not user.must_choose_password:
        return redirect(url_for("account.index"))
    form = ChangePasswordForm(prefix="password")
    refused = form_refused(form, user, purpose="password", password_field=form.current_password)
    if refused:
        return page("account/choose_password.html", refused, password_form=form)
    accounts.change_password(user, form.new_password.data, keep_session=user.session_key)
    audit.record("password.change", user=user)
    flash("Your password is set: only you know it now.", "success")
    return redirect(url_for("dashboard.index"))


@bp.route("/account/email", methods=["POST"])
@roles(*ALL_ROLES)
def mail_choices() -> Response:
    """Save which events mail the user (nothing to choose while e-mail is off); audited, as
    what a user is told about is part of who notices a payment."""
    form = MailChoicesForm(prefix="mail")
    if not outbox.enabled() or not form.validate_on_submit():
        error = " ".join(form.event_types.errors) or "E-mail is off."
        audit.record("mail.choices", error=error)
        return _account_page(422, mail_form=form)
    mail.choose(current_user, form.event_types.data)
    audit.record("mail.choices", parameters={"event_types": ", ".join(form.event_types.data)})
    flash("Your e-mail choices are saved.", "success")
    return redirect(url_for("account.index"))


@bp.route("/account/statement-mail", methods=["POST"])
@roles(Role.OWNER, Role.ACCOUNTANT)
def statement_mail_choice() -> Response:
    """Save how often the statement comes by mail; audited like the other mail choices."""
    form = StatementMailForm(prefix="statement")
    if not outbox.enabled() or not form.validate_on_submit():
        error = " ".join(form.frequency.errors) or "E-mail is off."
        audit.record("statement_mail.choice", error=error)
        return _account_page(422, statement_form=form)
    statement_mail.choose(current_user, StatementFrequency(form.frequency.data))
    audit.record("statement_mail.choice", parameters={"frequency": form.frequency.data})
    flash("Your statement choice is saved.", "success")
    return redirect(url_for("account.index"))


def _account_page(
    status: int,
    *,
    time_zone_form: TimeZoneForm | None = None,
    password_form: ChangePasswordForm | None = None,
    mail_form: MailChoicesForm | None = None,
    statement_form: StatementMailForm | None = None,
) -> Response:
    """The account page, with the form that was sent and its errors; the statement's choice
    for the users who read money only."""
    chosen = [type_.value for type_ in mail.choices_of(current_user)]
    reads_money = current_user.role in statement_mail.READERS
    if reads_money and statement_form is None:
        frequency = statement_mail.choice_of(current_user).value
        statement_form = StatementMailForm(prefix="statement", formdata=None, frequency=frequency)
    return render_page(
        "account/index.html",
        "account/index.html",
        status,
        form=time_zone_form or TimeZoneForm(time_zone=current_user.time_zone),
        password_form=password_form or ChangePasswordForm(prefix="password"),
        mail_form=mail_form or MailChoicesForm(prefix="mail", formdata=None, event_types=chosen),
        statement_form=statement_form,
        mail_on=outbox.enabled(),
    )


@bp.route("/account/two-factor", methods=["GET", "POST"])
@roles(*ALL_ROLES)
@open_before_enrolment
def two_factor() -> Response:
    """Set two-factor sign-in up (scan, then confirm with the password and a code), or manage it
    once it is on. The setup key is this session's own (`setup_secret`).

    Turning it on, new recovery codes and turning it off each end the user's other sessions.
    """
    user = current_user._get_current_object()
    if user.two_factor_enabled:
        return _manage(200)
    form = EnableTwoFactorForm()
    secret = setup_secret()
    # The code is the new secret's, checked by `enable`: no step-up, two-factor is still off.
    status = form_refused(form, user, purpose="enrolment", password_field=form.password)
    if status is None:
        try:
            codes = second_factor.enable(user, secret, form.code.data, address=request.remote_addr)
        except second_factor.CodeRefused as refusal:
            status = put_refusal(form.code, refusal)
        else:
            forget_setup()
            end_other_sessions(user)
            return _recovery_codes(codes, "Two-factor sign-in is on.")
    return page(
        "account/two_factor_setup.html",
        status,
        form=form,
        secret=second_factor.grouped(secret),
        qr_code=second_factor.qr_code(second_factor.provisioning_uri(user, secret)),
    )


@bp.route("/account/two-factor/recovery-codes", methods=["POST"])
@roles(*ALL_ROLES)
def recovery_codes() -> Response:
    """Replace the recovery codes (after the password and a fresh code), and show the new ones
    this once."""
    user = current_user._get_current_object()
    if not user.two_factor_enabled:
        return redirect(url_for("account.two_factor"))
    form = RecoveryCodesForm()
    status = form_refused(form, user, purpose="recovery_codes", password_field=form.password)
    if status:
        return _manage(status, recovery_form=form)
    codes = second_factor.new_recovery_codes(user)
    end_other_sessions(user)
    audit.record("two_factor.recovery_codes", user=user)
    return _recovery_codes(codes, "New recovery codes are made; the old ones no longer work.")


@bp.route("/account/two-factor/disable", methods=["POST"])
@roles(*ALL_ROLES)
def disable_two_factor() -> Response:
    """Turn two-factor sign-in off; the password and a current code (or a recovery code) prove it
    is the account's owner."""
    user = current_user._get_current_object()
    if not user.two_factor_enabled:
        return redirect(url_for("account.two_factor"))
    form = DisableTwoFactorForm(prefix="disable")
    status = form_refused(
        form, user, purpose="disable", password_field=form.password, recovery=True
    )
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
) -> Response:
    """The page of a user with two-factor on: recovery codes left, new ones, turning it off."""
    return page(
        "account/two_factor.html",
        status,
        recovery_form=recovery_form or RecoveryCodesForm(),
        disable_form=disable_form or DisableTwoFactorForm(prefix="disable"),
        remaining=second_factor.remaining_recovery_codes(current_user),
    )


def _recovery_codes(codes: list[str], message: str) -> Response:
    """The recovery codes, in the answer to the POST only: no page shows them again."""
    return page("account/recovery_codes.html", codes=codes, message=message)
