"""Two-factor sign-in in tests: codes computed from the secret, as an authenticator app does.

In-process tests freeze the portal's clock (`Clock`), so that "the code of the next step" is
exact and no test depends on when in a 30-second step it runs.
"""

from __future__ import annotations

import re
import time
from typing import NamedTuple

import pyotp

from tests.support.forms import PASSWORD, csrf_token

STEP = 30
SETUP_KEY = re.compile(r'id="setup-key">([A-Z2-7 ]+)<')
RECOVERY_CODE = re.compile(r"<li>([a-z2-9]{4}(?: [a-z2-9]{4}){3})</li>")


def code_at(secret: str, moment: float) -> str:
    """The code an authenticator app shows at `moment` (seconds since the epoch)."""
    return pyotp.TOTP(secret).at(moment)


def wrong_code(secret: str) -> str:
    """A 6-digit code that no step around now accepts (for a server whose clock is not frozen)."""
    near = {code_at(secret, time.time() + STEP * offset) for offset in range(-2, 3)}
    return next(code for n in range(1000) if (code := f"{n:06d}") not in near)


class Clock:
    """The portal's clock for two-factor codes, frozen at the start of a step until moved."""

    def __init__(self) -> None:
        self.now = (int(time.time()) // STEP) * STEP + 1.0

    def time(self) -> float:
        return self.now

    def code(self, secret: str, steps: int = 0) -> str:
        """The code of the current step, or of `steps` steps later (earlier when negative)."""
        return code_at(secret, self.now + steps * STEP)

    def advance(self, steps: int = 1) -> None:
        self.now += steps * STEP


def freeze(monkeypatch) -> Clock:
    """Freeze the clock that `portal.identity.rules.two_factor` reads codes against."""
    from portal.identity.rules import two_factor

    clock = Clock()
    monkeypatch.setattr(two_factor, "time", clock)
    return clock


def enable_for(app, email: str) -> str:
    """Turn two-factor on for `email` directly in the database; returns the secret."""
    from portal import crypto
    from portal.database import utcnow
    from portal.extensions import db
    from portal.identity.rules.accounts import find_user

    secret = pyotp.random_base32()
    with app.app_context():
        user = find_user(email)
        user.totp_secret_encrypted = crypto.encrypt(secret)
        user.totp_enabled_at = utcnow()
        db.session.commit()
    return secret


def enrol(client, code_for) -> tuple[str, list[str]]:
    """Set two-factor up through the pages as a person does; returns the secret and the codes.

    `code_for(secret)` makes the code to confirm with.
    """
    page = client.get("/account/two-factor").get_data(as_text=True)
    secret = SETUP_KEY.search(page).group(1).replace(" ", "")
    response = client.post(
        "/account/two-factor",
        data={
            "password": PASSWORD,
            "code": code_for(secret),
            "csrf_token": csrf_token(client, "/account/two-factor"),
        },
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    codes = RECOVERY_CODE.findall(response.get_data(as_text=True))
    assert len(codes) == 10
    return secret, codes


def submit_code(client, code: str):
    """The second step of signing in."""
    token = csrf_token(client, "/login/two-factor")
    return client.post("/login/two-factor", data={"code": code, "csrf_token": token})


def sign_in_with_code(client, email: str, code: str, password: str = PASSWORD):
    """Both steps of signing in; returns the response to the code."""
    token = csrf_token(client)
    response = client.post(
        "/login", data={"email": email, "password": password, "csrf_token": token}
    )
    assert response.location == "/login/two-factor", response.status_code
    return submit_code(client, code)


class TwoFactorOwner(NamedTuple):
    """A client signed in with two-factor on, the frozen clock and the secret to make codes."""

    client: object
    clock: Clock
    secret: str
    sign_in_code: str


def signed_in_with_two_factor(app, email: str, monkeypatch) -> TwoFactorOwner:
    """Turn two-factor on for `email`, freeze the clock, and sign in with a code."""
    clock = freeze(monkeypatch)
    secret = enable_for(app, email)
    client = app.test_client()
    sign_in_code = clock.code(secret)
    assert sign_in_with_code(client, email, sign_in_code).status_code == 302
    return TwoFactorOwner(client, clock, secret, sign_in_code)
