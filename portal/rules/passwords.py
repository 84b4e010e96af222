"""Passwords checked under the sign-in limits: at sign-in, and the current password asked again
before a change to one's own security (a new password, two-factor sign-in on or off), so that a
stolen session cookie alone cannot make it.

Every check is counted first (`portal.rules.attempts`), per account and per client address,
and given back when the password was right: a wrong current password counts as a failed sign-in.
"""

from __future__ import annotations

from flask import current_app, request
from wtforms import Field

from portal.models import User
from portal.rules import attempts, audit
from portal.rules.accounts import normalise_email

THROTTLED = "Too many failed sign-in attempts. Wait a few minutes, then try again."
WRONG = "That is not your current password."


def sign_in_limits(email: str) -> list[attempts.Limit]:
    """The limits of a password typed for `email`: per account and per client address."""
    config = current_app.config
    return [
        attempts.limit(config["SIGN_IN_LIMIT_PER_ACCOUNT"], "sign-in", normalise_email(email)),
        attempts.limit(
            config["SIGN_IN_LIMIT_PER_ADDRESS"], "sign-in-address", request.remote_addr or ""
        ),
    ]


def refusal_on(field: Field, user: User, *, purpose: str) -> int | None:
    """Check the current password typed in a form's `field`.

    None when it is right; otherwise the reason is added to the field's errors and the status to
    answer with (422, or 429 past the limits) is returned. `purpose` names it in the audit log.
    """
    attempt = attempts.attempt(sign_in_limits(user.email))
    if attempt is None:
        message, status = THROTTLED, 429
    elif user.check_password(field.data or ""):
        attempt.give_back()
        return None
    else:
        message, status = WRONG, 422
        audit.record("password.check", parameters={"purpose": purpose}, error=WRONG, user=user)
    field.errors = [*field.errors, message]  # a tuple until the form was validated
    return status
