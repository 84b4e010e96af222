"""Passwords checked under the sign-in limits: at sign-in, and the current password asked again
before a change to one's own security (a new password, two-factor sign-in on or off), so that a
stolen session cookie alone cannot make it.

Every check is counted first (`portal.identity.rules.attempts`), per account and per client address,
and given back when the password was right: a wrong current password counts as a failed sign-in.
A refusal is a `PasswordRefused` whose `reason` says why; the web kit words it.
"""

from __future__ import annotations

import enum

from flask import current_app

from portal.identity.models import User
from portal.identity.rules import attempts, audit
from portal.identity.rules.accounts import normalise_email


class Reason(enum.Enum):
    """Why a current password was not accepted; the value is how the audit log names it."""

    THROTTLED = "too many failed sign-in attempts"
    WRONG = "wrong current password"


class PasswordRefused(Exception):
    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.value)
        self.reason = reason


def sign_in_limits(email: str, address: str | None) -> list[attempts.Limit]:
    """The limits of a password typed for `email` from the client `address`: per account and
    per address."""
    config = current_app.config
    return [
        attempts.limit(config["SIGN_IN_LIMIT_PER_ACCOUNT"], "sign-in", normalise_email(email)),
        attempts.limit(config["SIGN_IN_LIMIT_PER_ADDRESS"], "sign-in-address", address or ""),
    ]


def check_current(user: User, password: str | None, *, purpose: str, address: str | None) -> None:
    """Accept `user`'s current password, typed from `address`; `PasswordRefused` otherwise.

    `purpose` names a wrong one in the audit log.
    """
    attempt = attempts.attempt(sign_in_limits(user.email, address))
    if attempt is None:
        raise PasswordRefused(Reason.THROTTLED)
    if user.check_password(password or ""):
        attempt.give_back()
        return
    audit.record(
        "password.check", parameters={"purpose": purpose}, error=Reason.WRONG.value, user=user
    )
    raise PasswordRefused(Reason.WRONG)
