"""Asking again before a sensitive change: the current password, and a fresh second factor: a
code from the authenticator app, or a passkey's answer to a challenge made for this one change.

The rules decide (`portal.identity.rules.passwords`, `portal.identity.rules.two_factor`: counted
attempts, the
audit log); this module says what a refusal means to the person, next to the form's field, and
answers with its status: 422, 429 past the limits, 409 for a setup another session finished.

The passkey's answer comes in the form's `passkey_assertion` field (filled by static/js/
passkeys.js); the change it confirms is the path the form posts to with the form's idempotency
key (`intent`), the same the script asked a challenge for (`confirmed_action`).

A view with a form that changes something sensitive asks `form_refused` once::

    status = form_refused(form, user, purpose="withdrawal")
    if status:
        return page("withdrawals/confirm.html", status, form=form)
"""

from __future__ import annotations

from flask import Response, request
from flask_wtf import FlaskForm
from wtforms import Field

from portal.identity.models import User
from portal.identity.rules import audit, passkeys, passwords, two_factor

PASSKEY_FIELD = "passkey_assertion"

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
PASSKEY_SENTENCES = {
    passkeys.Reason.MISSING: "Confirm with your passkey.",
    passkeys.Reason.EXPIRED: "That passkey confirmation was for another change, was used "
    "already or is too old. Confirm with your passkey again.",
    passkeys.Reason.UNKNOWN: "That passkey is not one of yours. Use a passkey you added under "
    "Account.",
    passkeys.Reason.INVALID: "Your passkey's answer was not accepted (it must check your PIN, "
    "fingerprint or face). Try again.",
    passkeys.Reason.LAST_FACTOR: "Two-factor sign-in is required, and this is your last second "
    "factor: add another passkey or an authenticator app first.",
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


def put_refusal(
    field: Field,
    refusal: two_factor.CodeRefused | passwords.PasswordRefused | passkeys.PasskeyRefused,
) -> int:
    """Say why next to `field`; returns the status to answer with."""
    if isinstance(refusal, two_factor.CodeRefused):
        message = code_sentence(refusal)
    elif isinstance(refusal, passkeys.PasskeyRefused):
        message = PASSKEY_SENTENCES[refusal.reason]
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


def json_answer(options: str) -> Response:
    """A passkey ceremony's options for the browser's script; never cached (a challenge)."""
    return Response(options, mimetype="application/json", headers={"Cache-Control": "no-store"})


def confirmed_action() -> str:
    """The change this request makes, as a passkey challenge names it: the path posted to and
    the form's idempotency key, if it has one."""
    path = request.script_root + request.path  # as the page's form names it
    intent = request.form.get("intent")
    return f"{path}#{intent}" if intent else path


def code_refused(
    field: Field,
    user: User,
    *,
    purpose: str,
    recovery: bool = False,
    passkey_only: bool = False,
) -> int | None:
    """Check the second factor: a passkey's answer when the form brings one (or the user has
    no authenticator app and no recovery code will do, or `passkey_only`: the owners require a
    passkey), else the code typed in `field` (with `recovery`, a recovery code will do). None
    when accepted, else the status (the reason is on the field)."""
    assertion = request.form.get(PASSKEY_FIELD)
    try:
        if assertion or passkey_only or not (user.two_factor_enabled or recovery):
            passkeys.check_assertion(user, assertion, action=confirmed_action(), purpose=purpose)
        else:
            two_factor.check_code(
                user, field.data, purpose=purpose, address=request.remote_addr, recovery=recovery
            )
    except (passkeys.PasskeyRefused, two_factor.CodeRefused) as refusal:
        return put_refusal(field, refusal)
    return None


def step_up_refused(field: Field, user: User, *, purpose: str) -> int | None:
    """Before a sensitive change (a withdrawal, a change to users): a fresh second factor from
    `user` when they have one, as `code_refused` checks it; None for anyone without one.
    """
    if not user.has_second_factor:
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
    passkey_only: bool = False,
) -> int | None:
    """The status to show the form's page with, or None when the change may go on.

    200 when the form was not sent (a GET); 422 when it is not valid; then, in this order, the
    current password in `password_field` (when given) and, for a user with a second factor, a
    passkey's answer or a fresh code in `code_field` (the form's `code` unless given; with
    `recovery`, a recovery code will do): 422, or 429 past the limits. `purpose` names the
    checks in the audit log.
    """
    if not form.validate_on_submit():
        return 422 if form.is_submitted() else 200
    if password_field is not None:
        refused = password_refused(password_field, user, purpose=purpose)
        if refused:
            return refused
    if not user.has_second_factor:
        return None
    field = code_field if code_field is not None else form["code"]
    return code_refused(field, user, purpose=purpose, recovery=recovery, passkey_only=passkey_only)


def audit_refused(
    action: str, form: FlaskForm, status: int, parameters: dict | None = None
) -> None:
    """A change the page refused (a bad value, a wrong code or password) goes to the audit log
    with its reasons; a GET, which shows the form, is no attempt."""
    if form.is_submitted():
        reasons = " ".join(error for field in form for error in field.errors)
        audit.record(action, parameters=parameters, error=reasons or f"Refused ({status}).")
