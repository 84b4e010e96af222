"""The setup key of a two-factor enrolment not confirmed yet: this browser session's own."""

from __future__ import annotations

import contextlib

from flask import session

from portal import crypto
from portal.identity.rules import two_factor

# The session key of the secret of a setup not confirmed yet (encrypted).
SETUP = "two_factor_setup"


def setup_secret() -> str:
    """The secret of this setup attempt: made for this browser session, kept in its cookie
    encrypted (the browser cannot read it) until confirmed, then stored on the user.

    A reload shows the same QR code as the one the person may have scanned; another session
    (another browser, or someone else with the password) gets a secret of its own, so no key
    shown before can be the one enrolled later.
    """
    stored = session.get(SETUP)
    if stored:
        with contextlib.suppress(crypto.TokenKeyError):  # made before a key was removed
            return crypto.decrypt(stored)
    secret = two_factor.new_secret()
    session[SETUP] = crypto.encrypt(secret)
    return secret


def forget_setup() -> None:
    """The setup is confirmed: its secret is the user's now, and no longer this session's."""
    session.pop(SETUP, None)
