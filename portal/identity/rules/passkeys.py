"""Passkeys (WebAuthn, through py_webauthn): a second factor a phishing page cannot relay.

The relying party is the host of PORTAL_PUBLIC_URL, and the only origin accepted is that URL's:
an assertion made for another site (a look-alike domain) names its own origin and is refused.
Browsers refuse WebAuthn on an IP address, so a portal without a public URL, or reached at an
IP address, has passkeys off (`relying_party` is None; `off_reason` says which).

Every ceremony answers a challenge the portal made for it and stored with its `action`: the
registration, the sign-in, or the one change a step-up confirms (the path its form posts to
and the form's idempotency key). Using a challenge deletes it with one conditional DELETE, so
of two requests with the same assertion one at most goes on, and a challenge made for one
withdrawal does not confirm another. User verification (a PIN or a fingerprint on the
authenticator) is required in the options and checked in every answer.
"""

from __future__ import annotations

import enum
import ipaddress
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import sqlalchemy as sa
from flask import current_app

from portal.database import utcnow
from portal.extensions import db, rows_changed
from portal.identity.models import Passkey, PasskeyChallenge, User
from portal.identity.rules import audit, two_factor

# py_webauthn is imported by the functions of a ceremony, not here: importing it costs a sixth
# of a CPU-second at every start of a process, whose requests seldom hold a ceremony.
if TYPE_CHECKING:
    from webauthn.helpers.structs import PublicKeyCredentialDescriptor

RP_NAME = "Merchant Portal"
CHALLENGE_SECONDS = 300
REGISTER = "register"
NAME_LENGTH = 64


class Off(enum.Enum):
    """Why passkeys are off on this portal."""

    NO_PUBLIC_URL = "no public URL"
    IP_ADDRESS = "public URL is an IP address"


class Reason(enum.Enum):
    """Why a passkey's answer was not accepted; the value is how the audit log names it."""

    MISSING = "no passkey answer"
    EXPIRED = "challenge unknown, used or expired"
    UNKNOWN = "passkey not registered to this user"
    INVALID = "passkey answer invalid"
    LAST_FACTOR = "last second factor while two-factor is required"


class PasskeyRefused(Exception):
    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.value)
        self.reason = reason


@dataclass(frozen=True)
class RelyingParty:
    id: str
    origin: str


def off_reason() -> Off | None:
    """None when passkeys can be used on this portal."""
    host = urlsplit(current_app.config.get("PUBLIC_URL") or "").hostname
    if not host:
        return Off.NO_PUBLIC_URL
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return None
    return Off.IP_ADDRESS


def relying_party() -> RelyingParty | None:
    if off_reason() is not None:
        return None
    parts = urlsplit(current_app.config["PUBLIC_URL"])
    return RelyingParty(parts.hostname or "", f"{parts.scheme}://{parts.netloc}")


def _party() -> RelyingParty:
    party = relying_party()
    if party is None:
        raise PasskeyRefused(Reason.INVALID)
    return party


def _new_challenge(user: User, action: str) -> bytes:
    """A random challenge stored for `user` and `action`; the user's expired ones go."""
    from webauthn.helpers import bytes_to_base64url  # a ceremony's import (see the top)

    now = utcnow()
    db.session.execute(
        sa.delete(PasskeyChallenge).where(
            PasskeyChallenge.user_id == user.id, PasskeyChallenge.expires_at <= now
        )
    )
    challenge = secrets.token_bytes(32)
    db.session.add(
        PasskeyChallenge(
            user_id=user.id,
            challenge=bytes_to_base64url(challenge),
            action=action[:300],
            expires_at=now + timedelta(seconds=CHALLENGE_SECONDS),
        )
    )
    db.session.commit()
    return challenge


def _use_challenge(user: User, client_data_json: bytes, action: str, purpose: str) -> bytes:
    """The challenge the browser signed, once: deleted if it was made for `user` and `action`
    and has not expired; else EXPIRED (audited under `purpose`)."""
    from webauthn.helpers import bytes_to_base64url, parse_client_data_json  # see the top
    from webauthn.helpers.exceptions import WebAuthnException

    try:
        challenge = parse_client_data_json(client_data_json).challenge
    except (WebAuthnException, ValueError):
        raise _refused(user, purpose, Reason.INVALID) from None
    used = rows_changed(
        sa.delete(PasskeyChallenge).where(
            PasskeyChallenge.user_id == user.id,
            PasskeyChallenge.challenge == bytes_to_base64url(challenge),
            PasskeyChallenge.action == action[:300],
            PasskeyChallenge.expires_at > utcnow(),
        )
    )
    db.session.commit()
    if used != 1:
        raise _refused(user, purpose, Reason.EXPIRED)
    return challenge


# --- Registering -----------------------------------------------------------------------------


def registration_options(user: User) -> str:
    """The options for `navigator.credentials.create`, as JSON; the user's passkeys excluded."""
    import webauthn  # a ceremony's imports (see the top)
    from webauthn.helpers.structs import (
        AuthenticatorSelectionCriteria,
        ResidentKeyRequirement,
        UserVerificationRequirement,
    )

    party = _party()
    options = webauthn.generate_registration_options(
        rp_id=party.id,
        rp_name=RP_NAME,
        user_name=user.email,
        user_id=str(user.id).encode(),
        challenge=_new_challenge(user, REGISTER),
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED,
            user_verification=UserVerificationRequirement.REQUIRED,
        ),
        exclude_credentials=_descriptors(user),
    )
    return webauthn.options_to_json(options)


def register(user: User, credential: str, name: str) -> list[str] | None:
    """Store the passkey the browser made for the registration challenge; returns new recovery
    codes for a user who had no other way back in (no authenticator app, no codes), else None."""
    import webauthn  # a ceremony's imports (see the top)
    from webauthn.helpers import bytes_to_base64url, parse_registration_credential_json
    from webauthn.helpers.exceptions import WebAuthnException

    try:
        parsed = parse_registration_credential_json(credential)
    except (WebAuthnException, ValueError):
        raise _refused(user, REGISTER, Reason.INVALID) from None
    challenge = _use_challenge(user, parsed.response.client_data_json, REGISTER, REGISTER)
    party = _party()
    try:
        verified = webauthn.verify_registration_response(
            credential=parsed,
            expected_challenge=challenge,
            expected_rp_id=party.id,
            expected_origin=party.origin,
            require_user_verification=True,
        )
    except WebAuthnException:
        raise _refused(user, REGISTER, Reason.INVALID) from None
    db.session.add(
        Passkey(
            user_id=user.id,
            credential_id=bytes_to_base64url(verified.credential_id),
            public_key=verified.credential_public_key,
            sign_count=verified.sign_count,
            name=name.strip()[:NAME_LENGTH] or "Passkey",
        )
    )
    db.session.commit()
    db.session.refresh(user)
    audit.record("passkey.add", parameters={"name": name})
    no_way_back = not user.two_factor_enabled and not two_factor.remaining_recovery_codes(user)
    return two_factor.new_recovery_codes(user) if no_way_back else None


def remove(user: User, passkey_id: int) -> None:
    """Remove one of the user's passkeys; never the last second factor while the merchant
    requires two-factor (LAST_FACTOR). Recovery codes go with the last one when no
    authenticator app remains to recover."""
    passkey = db.session.get(Passkey, passkey_id)
    if passkey is None or passkey.user_id != user.id:
        raise PasskeyRefused(Reason.UNKNOWN)
    last = len(user.passkeys) == 1 and not user.two_factor_enabled
    if last and user.merchant.require_two_factor:
        raise _refused(user, "remove", Reason.LAST_FACTOR)
    db.session.delete(passkey)
    db.session.commit()
    db.session.refresh(user)
    if last:
        two_factor.drop_recovery_codes(user)
    audit.record("passkey.remove", parameters={"name": passkey.name})


def forget_all(user: User, *, by: User) -> None:
    """Remove every passkey of `user` (an owner's reset, for a lost device)."""
    db.session.execute(sa.delete(Passkey).where(Passkey.user_id == user.id))
    db.session.commit()
    db.session.refresh(user)
    audit.record("passkey.remove_all", parameters={"email": user.email}, user=by)


# --- Using one -------------------------------------------------------------------------------


def _descriptors(user: User) -> list[PublicKeyCredentialDescriptor]:
    import webauthn  # a ceremony's imports (see the top)
    from webauthn.helpers.structs import PublicKeyCredentialDescriptor

    return [
        PublicKeyCredentialDescriptor(id=webauthn.base64url_to_bytes(key.credential_id))
        for key in user.passkeys
    ]


def assertion_options(user: User, action: str) -> str:
    """The options for `navigator.credentials.get`, as JSON, with a challenge for `action`."""
    import webauthn  # a ceremony's imports (see the top)
    from webauthn.helpers.structs import UserVerificationRequirement

    party = _party()
    options = webauthn.generate_authentication_options(
        rp_id=party.id,
        challenge=_new_challenge(user, action),
        allow_credentials=_descriptors(user),
        user_verification=UserVerificationRequirement.REQUIRED,
    )
    return webauthn.options_to_json(options)


def check_assertion(user: User, credential: str | None, *, action: str, purpose: str) -> Passkey:
    """Accept the browser's answer to a challenge made for `user` and `action` (once), signed
    by one of the user's passkeys with user verification; raises `PasskeyRefused` otherwise.
    `purpose` names the check in the audit log, as for codes."""
    import webauthn  # a ceremony's imports (see the top)
    from webauthn.helpers import parse_authentication_credential_json
    from webauthn.helpers.exceptions import WebAuthnException

    if not credential:
        raise PasskeyRefused(Reason.MISSING)
    try:
        parsed = parse_authentication_credential_json(credential)
    except (WebAuthnException, ValueError):
        raise _refused(user, purpose, Reason.INVALID) from None
    challenge = _use_challenge(user, parsed.response.client_data_json, action, purpose)
    passkey = db.session.scalars(
        sa.select(Passkey).where(Passkey.user_id == user.id, Passkey.credential_id == parsed.id)
    ).one_or_none()
    if passkey is None:
        raise _refused(user, purpose, Reason.UNKNOWN)
    party = _party()
    try:
        verified = webauthn.verify_authentication_response(
            credential=parsed,
            expected_challenge=challenge,
            expected_rp_id=party.id,
            expected_origin=party.origin,
            credential_public_key=passkey.public_key,
            credential_current_sign_count=passkey.sign_count,
            require_user_verification=True,
        )
    except WebAuthnException:
        raise _refused(user, purpose, Reason.INVALID) from None
    passkey.sign_count = verified.new_sign_count
    passkey.last_used_at = utcnow()
    db.session.commit()
    return passkey


def _refused(user: User, purpose: str, reason: Reason) -> PasskeyRefused:
    """Record a refused passkey answer in the audit log; returns the refusal."""
    audit.record("passkey.check", parameters={"purpose": purpose}, error=reason.value, user=user)
    return PasskeyRefused(reason)
