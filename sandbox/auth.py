"""Bearer credentials of the sandbox's API and control surface."""

from __future__ import annotations

import hmac

from flask import request


def bearer_token() -> str:
    """The token of the `Authorization: Bearer ...` header, or an empty string."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def same_secret(given: str, expected: str | None) -> bool:
    """Constant-time comparison; an unset credential matches nothing."""
    if not expected:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())
