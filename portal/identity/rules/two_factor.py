"""Two-factor sign-in: TOTP codes (RFC 6238) from an authenticator app, and recovery codes.

Codes are SHA-1, 6 digits, 30-second steps; the step before and after the current one are
accepted too, for clocks that drift. A code is accepted once: the user's `totp_last_step` moves
forward with one conditional UPDATE, so the same code (or an older one) is refused afterwards,
across processes. The secret is stored encrypted with the API tokens' keys (`portal.crypto`),
and `flask rotate-keys` re-encrypts it with every other `*_encrypted` column.

Every check of a code goes through `check_code`, which counts each code before checking it
(`portal.identity.rules.attempts`: parallel guesses get no more checks than the limit) under limits
of their
own with the sign-in limits' values (per user and per client address), gives it back unless it
was a wrong guess, and writes every refusal to the audit log. A refusal is a `CodeRefused` whose
`reason` says why; what a person reads about it is the web kit's (`portal.web.step_up`), and so
is the setup key of an enrolment not confirmed yet (kept in the browser's session).
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import secrets
import time

import pyotp
import segno
import sqlalchemy as sa
from flask import current_app

from portal import crypto
from portal.database import utcnow
from portal.extensions import db, rows_changed
from portal.identity.models import RecoveryCode, User
from portal.identity.rules import attempts, audit

ISSUER = "Merchant Portal"
WINDOW = 1  # steps accepted either side of the current one
RECOVERY_CODE_COUNT = 10
# 16 characters from 31 (no 0, o, 1, l, i) make 79 random bits; shown in groups of four.
RECOVERY_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
RECOVERY_LENGTH = 16


class Reason(enum.Enum):
    """Why a code was not accepted; the value is how the audit log names it."""

    MISSING = "no code"
    THROTTLED = "too many wrong codes"
    WRONG = "wrong code"
    REUSED = "code already used"
    ALREADY_ON = "two-factor turned on meanwhile, from another session"


class CodeRefused(Exception):
    """A code that was not accepted, and why; `recovery` when a recovery code would have done."""

    def __init__(self, reason: Reason, *, recovery: bool = False) -> None:
        super().__init__(reason.value)
        self.reason = reason
        self.recovery = recovery


# --- The secret ------------------------------------------------------------------------------


def new_secret() -> str:
    """A fresh TOTP secret, for a setup attempt."""
    return pyotp.random_base32()


def provisioning_uri(user: User, secret: str) -> str:
    """The `otpauth://` URI an authenticator app reads from the QR code."""
    return pyotp.TOTP(secret).provisioning_uri(name=user.email, issuer_name=ISSUER)


def qr_code(uri: str) -> str:
    """The URI as a QR code: an SVG `data:` URI made on the server (the CSP allows no other)."""
    return segno.make(uri, error="m").svg_data_uri(scale=5, border=2)


def grouped(text: str) -> str:
    """A secret or a recovery code in groups of four, easier to read and type."""
    return " ".join(text[i : i + 4] for i in range(0, len(text), 4))


def accepted_step(secret: str, code: str, now: float) -> int | None:
    """The time step whose code `code` is, within the accepted window around `now`; or None."""
    totp = pyotp.TOTP(secret)
    current = int(now // totp.interval)
    for step in range(current - WINDOW, current + WINDOW + 1):
        if hmac.compare_digest(totp.generate_otp(step), code):
            return step
    return None


def _use_step(user: User, step: int) -> bool:
    """Record `step` as used; False when it (or a later one) was used already."""
    unused = sa.or_(User.totp_last_step.is_(None), User.totp_last_step < step)
    changed = rows_changed(
        sa.update(User)
        .where(User.id == user.id, unused)
        .values(totp_last_step=step)
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    db.session.refresh(user)
    return changed == 1


# --- Recovery codes --------------------------------------------------------------------------


def _normalised(code: str) -> str:
    return "".join(code.split()).replace("-", "").lower()


def _hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def new_recovery_codes(user: User) -> list[str]:
    """Replace the user's recovery codes with new ones; returns them, the only time in clear."""
    codes = [
        "".join(secrets.choice(RECOVERY_ALPHABET) for _ in range(RECOVERY_LENGTH))
        for _ in range(RECOVERY_CODE_COUNT)
    ]
    db.session.execute(sa.delete(RecoveryCode).where(RecoveryCode.user_id == user.id))
    db.session.add_all(RecoveryCode(user_id=user.id, code_hash=_hash(code)) for code in codes)
    db.session.commit()
    return [grouped(code) for code in codes]


def remaining_recovery_codes(user: User) -> int:
    return db.session.scalars(
        sa.select(sa.func.count()).select_from(RecoveryCode).where(RecoveryCode.user_id == user.id)
    ).one()


def drop_recovery_codes(user: User) -> None:
    """Forget the user's recovery codes: no second factor is left to recover."""
    db.session.execute(sa.delete(RecoveryCode).where(RecoveryCode.user_id == user.id))
    db.session.commit()


def _use_recovery_code(user: User, code: str) -> bool:
    """Consume the code; True only for the one request whose DELETE removed it."""
    changed = rows_changed(
        sa.delete(RecoveryCode).where(
            RecoveryCode.user_id == user.id, RecoveryCode.code_hash == _hash(code)
        )
    )
    db.session.commit()
    return changed == 1


# --- Checking a code -------------------------------------------------------------------------


def _limits(user: User, address: str | None) -> list[attempts.Limit]:
    """The sign-in limits, counted apart for codes: per user and per client address."""
    config = current_app.config
    return [
        attempts.limit(config["SIGN_IN_LIMIT_PER_ACCOUNT"], "two-factor-user", str(user.id)),
        attempts.limit(config["SIGN_IN_LIMIT_PER_ADDRESS"], "two-factor-address", address or ""),
    ]


def _refused(
    user: User, purpose: str, reason: Reason, *, recovery: bool, address: str | None
) -> CodeRefused:
    """Record a refused code in the audit log; returns the refusal."""
    audit.record("two_factor.code", parameters={"purpose": purpose}, error=reason.value, user=user)
    current_app.logger.info("Wrong two-factor code (%s) from %s", purpose, address)
    return CodeRefused(reason, recovery=recovery)


def check_code(
    user: User,
    code: str | None,
    *,
    purpose: str,
    address: str | None,
    recovery: bool = False,
    secret: str | None = None,
) -> str:
    """Accept a fresh authenticator code (or, with `recovery`, an unused recovery code).

    Returns what was accepted, "authenticator" or "recovery code"; raises `CodeRefused`
    otherwise. `purpose` names the check in the audit log ("sign_in", "withdrawal", ...);
    `address` is the client's, counted under its own limit. `secret` is the one being enrolled;
    otherwise the user's own.

    The code is counted before it is checked and given back unless it was a wrong guess: an
    already used code was right once, so the person who resubmits it (a double click, a code
    typed twice) must not lock themselves out.
    """
    code = _normalised(code or "")
    if not code:
        raise CodeRefused(Reason.MISSING, recovery=recovery)
    attempt = attempts.attempt(_limits(user, address))
    if attempt is None:
        raise CodeRefused(Reason.THROTTLED, recovery=recovery)
    if secret is None and user.totp_secret_encrypted:
        secret = crypto.decrypt(user.totp_secret_encrypted)
    if secret and len(code) == 6 and code.isdigit():
        step = accepted_step(secret, code, time.time())
        if step is not None:
            attempt.give_back()
            if _use_step(user, step):
                return "authenticator"
            raise _refused(user, purpose, Reason.REUSED, recovery=recovery, address=address)
    elif recovery and len(code) == RECOVERY_LENGTH and _use_recovery_code(user, code):
        attempt.give_back()
        audit.record("two_factor.recovery_code_used", parameters={"purpose": purpose}, user=user)
        return "recovery code"
    raise _refused(user, purpose, Reason.WRONG, recovery=recovery, address=address)


# --- Turning it on and off -------------------------------------------------------------------


def enable(user: User, secret: str, code: str | None, *, address: str | None) -> list[str]:
    """Turn two-factor on with this setup's `secret` after a code from it (typed from
    `address`); returns the recovery codes. Only now is the secret stored on the user, and only
    if it is still off (a setup in another session may have won meanwhile: ALREADY_ON)."""
    check_code(user, code, purpose="enrolment", address=address, secret=secret)
    turned_on = rows_changed(
        sa.update(User)
        .where(User.id == user.id, User.totp_enabled_at.is_(None))
        .values(totp_secret_encrypted=crypto.encrypt(secret), totp_enabled_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    db.session.refresh(user)
    if turned_on != 1:
        raise CodeRefused(Reason.ALREADY_ON)
    codes = new_recovery_codes(user)
    audit.record("two_factor.enable", user=user)
    return codes


def disable(user: User, *, by: User | None = None) -> None:
    """Turn the authenticator app off: forget the secret, the last step and, unless passkeys
    remain to recover, the recovery codes."""
    user.totp_secret_encrypted = None
    user.totp_enabled_at = None
    user.totp_last_step = None
    db.session.commit()
    if not user.passkeys:
        drop_recovery_codes(user)
    audit.record("two_factor.disable", parameters={"email": user.email}, user=by or user)
