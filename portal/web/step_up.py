"""Asking again before a sensitive change: the current password, and a fresh two-factor code.

The rules decide (`portal.identity.rules.passwords`, `portal.identity.rules.two_factor`: counted
attempts, the
audit log); this module says what a refusal means to the person, next to the form's field, and
answers with its status: 422, 429 past the limits, 409 for a setup another session finished.

A view with a form that changes something sensitive asks `form_refused` once::

    status = form_refused(form, user, purpose="withdrawal")
    if status:
        return page("withdrawals/confirm.html", status, form=form)
"""

from __future__ import annotations

from flask import request
from flask_wtf import FlaskForm
from wtforms import Field

from portal.identity.models import User
from portal.identity.rules import audit, passwords, two_factor

CODE_SENTENCES = {
    two_factor.Reason.MISSING: "Enter the 6-digit code your authenticator app shows.",
    two_factor.Reason.THROTTLED: "Too many wrong codes. Wait a few minutes, then try again.",
    two_factor.Reason.WRONG: "That code is not right. Enter the 6-digit code your "
    "authenticator app shows now.",
    two_factor.Reason.REUSED: "That code was already used. Wait for the next code in your "
    "authenticator app.",
    two_factor.Reason.ALREADY_ON: "Two-factor sign-in was turned on meanwhile, from another "
    "session.",
}
WRONG_OR_RECOVERY = (
    "That code is not right. Enter the 6-digit code your authenticator app shows now, "
    "or one of your recovery codes."
)
PASSWORD_SENTENCES = {
    passwords.Reason.THROTTLED: "Too many failed sign-in attempts. Wait a few minutes, then try "
    "again.",
    passwords.Reason.WRONG: "That is not your current password.",
}
STATUSES = {
    two_factor.Reason.THROTTLED: 429,
    two_factor.Reason.ALREADY_ON: 409,
    passwords.Reason.THROTTLED: 429,
}


def code_sentence(refusal: two_factor.CodeRefused) -> str:
    """What a person reads about a refused code."""
    if refusal.reason is two_factor.Reason.WRONG and refusal.recovery:
        return WRONG_OR_RECOVERY
    return CODE_SENTENCES[refusal.reason]


def put_refusal(field: Field, refusal: two_factor.CodeRefused | passwords.PasswordRefused) -> int:
    """Say why next to `field`; returns the status to answer with."""
    if isinstance(refusal, two_factor.CodeRefused):
        message = code_sentence(refusal)
    else:
        message = PASSWORD_SENTENCES[refusal.reason]
    field.errors = [*field.errors, message]  # a tuple until the form was validated
    return STATUSES.get(refusal.reason, 422)


def password_refused(field: Field, user: User, *, purpose: str) -> int | None:
    """Check the current password typed in `field`: None when right, else the status (the
    reason is on the field). `purpose` names a wrong one in the audit log."""
    try:
        passwords.check_current(user, field.data, purpose=purpose, address=request.remote_addr)
    except passwords.PasswordRefused as refusal:
        return put_refusal(field, refusal)
    return None


def code_refused(field: Field, user: User, *, purpose: str, recovery: bool = False) -> int | None:
    """Check the code typed in `field` (with `recovery`, a recovery code will do): None when
    accepted, else the status (the reason is on the field)."""
    try:
        two_factor.check_code(
            user, field.data, purpose=purpose, address=request.remote_addr, recovery=recovery
        )
    except two_factor.CodeRefused as refusal:
        return put_refusal(field, refusal)
    return None


def step_up_refused(field: Field, user: User, *, purpose: str) -> int | None:
    """Before a sensitive change (a withdrawal, a change to users): a fresh code from `user`
    when they have two-factor on, as `code_refused` checks it; None for anyone without it.
    """
    if not user.two_factor_enabled:
        return None
    return code_refused(field, user, purpose=purpose)


def form_refused(
    form: FlaskForm,
    user: User,
    *,
    purpose: str,
    password_field: Field | None = None,
    code_field: Field | None = None,
    recovery: bool = False,
) -> int | None:
    """The status to show the form's page with, or None when the change may go on.

    200 when the form was not sent (a GET); 422 when it is not valid; then, in this order, the
    current password in `password_field` (when given) and, for a user with two-factor on, a
    fresh code in `code_field` (the form's `code` unless given; with `recovery`, a recovery code
    will do): 422, or 429 past the limits. `purpose` names the checks in the audit log.
    """
    if not form.validate_on_submit():
        return 422 if form.is_submitted() else 200
    if password_field is not None:
        refused = password_refused(password_field, user, purpose=purpose)
        if refused:
            return refused
    if not user.two_factor_enabled:
        return None
    field = code_field if code_field is not None else form["code"]
    return code_refused(field, user, purpose=purpose, recovery=recovery)


def audit_refused(
    action: str, form: FlaskForm, status: int, parameters: dict | None = None
) -> None:
    """A change the page refused (a bad value, a wrong code or password) goes to the audit log
    with its reasons; a GET, which shows the form, is no attempt."""
    if form.is_submitted():
        reasons = " ".join(error for field in form for error in field.errors)
        audit.record(action, parameters=parameters, error=reasons or f"Refused ({status}).")
