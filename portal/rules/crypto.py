"""Encryption of stored secrets under `PORTAL_TOKEN_KEYS` (the first key encrypts).

The secrets are the merchants' API tokens and the users' two-factor (TOTP) secrets.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from flask import current_app


class TokenKeyError(RuntimeError):
    """A stored token cannot be decrypted with any configured key."""


def cipher() -> MultiFernet:
    """A MultiFernet over the configured keys, newest first."""
    return MultiFernet([Fernet(key) for key in current_app.config["TOKEN_KEYS"]])


def encrypt(plaintext: str) -> str:
    return cipher().encrypt(plaintext.encode()).decode()


def decrypt(ciphertext: str) -> str:
    try:
        return cipher().decrypt(ciphertext.encode()).decode()
    except InvalidToken as error:
        raise TokenKeyError(
            "A stored API token or two-factor secret cannot be decrypted with PORTAL_TOKEN_KEYS; "
            "was a key removed before `rotate-keys` ran?"
        ) from error


def rotate(ciphertext: str) -> str:
    """Re-encrypt under the newest key."""
    try:
        return cipher().rotate(ciphertext.encode()).decode()
    except InvalidToken as error:
        raise TokenKeyError(
            "A stored API token or two-factor secret cannot be decrypted with PORTAL_TOKEN_KEYS."
        ) from error
