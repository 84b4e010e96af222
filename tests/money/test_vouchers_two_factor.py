"""A voucher's code is bearer money: an owner with two-factor sign-in on creates
a voucher, and reveals a code, only with a fresh code; a missing, wrong or used one makes no
voucher in the sandbox and shows no code. Both are in the audit log, the code never in clear."""

from __future__ import annotations

import pytest
import requests

from tests.support.money import connect, intent_key, post, submit, text
from tests.support.two_factor import signed_in_with_two_factor

VOUCHER = {"amount": "0.01", "currency": "BTC"}


@pytest.fixture
def owner_with_code(app, accounts, module_sandbox, monkeypatch):
    """The owner, signed in with two-factor on; the clock and the secret to make codes."""
    connect(app, module_sandbox)
    return signed_in_with_two_factor(app, accounts.owner, monkeypatch)


def _events(app, action: str) -> list:
    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        query = db.select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)
        return list(db.session.scalars(query))


def _refused_codes(sign_in_code: str) -> list[tuple[str, str]]:
    wrong = f"{(int(sign_in_code) + 1) % 1_000_000:06d}"
    return [
        ("", "Enter the 6-digit code your authenticator app shows."),
        (sign_in_code, "That code was already used."),
        (wrong, "That code is not right."),
    ]


def test_creating_a_voucher_needs_a_fresh_code(app, owner_with_code, module_sandbox):
    owner, clock, secret, sign_in_code = owner_with_code
    key = intent_key(owner, "/vouchers/new")
    assert "Authenticator code" not in text(owner.get("/vouchers/new"))
    review = owner.get(f"/vouchers/review?amount=0.01&currency=BTC&intent={key}")
    assert "Authenticator code" in text(review), "the review asks for the code"
    before = module_sandbox.count("vouchers")
    for code, message in _refused_codes(sign_in_code):
        response = submit(owner, "/vouchers/new", {**VOUCHER, "code": code})
        assert response.status_code == 422 and message in text(response)
        assert module_sandbox.count("vouchers") == before

    data = {**VOUCHER, "code": clock.code(secret, 1), "intent": intent_key(owner, "/vouchers/new")}
    made = post(owner, "/vouchers/new", data)
    assert made.status_code == 302 and module_sandbox.count("vouchers") == before + 1
    again = post(owner, "/vouchers/new", data)  # a reload: shown where it stands, no new code
    assert (again.status_code, again.location) == (302, made.location)
    assert module_sandbox.count("vouchers") == before + 1
    assert [e.outcome for e in _events(app, "voucher.create")] == ["success"]


def test_revealing_a_code_needs_a_fresh_code_and_is_audited(app, owner_with_code, module_sandbox):
    owner, clock, secret, _sign_in_code = owner_with_code
    made = submit(owner, "/vouchers/new", {**VOUCHER, "code": clock.code(secret, 1)})
    voucher_id = made.location.rsplit("/", 1)[1]
    code = requests.get(
        f"{module_sandbox.api_url}/vouchers/{voucher_id}",
        headers=module_sandbox.headers(),
        timeout=5,
    ).json()["data"]["code"]
    reveal = f"/vouchers/{voucher_id}/code"

    asking = owner.get(reveal)
    assert "Authenticator code" in text(asking) and code not in asking.get_data(as_text=True)
    for typed, message in _refused_codes(clock.code(secret, 1)):
        response = post(owner, reveal, {"code": typed})
        assert response.status_code == 422 and message in text(response)
        assert code not in response.get_data(as_text=True)
    assert _events(app, "voucher.reveal_code") == []

    clock.advance()
    revealed = post(owner, reveal, {"code": clock.code(secret, 1)})
    assert revealed.status_code == 200 and code in revealed.get_data(as_text=True)
    (event,) = _events(app, "voucher.reveal_code")
    assert event.parameters == {"voucher_id": voucher_id} and event.outcome == "success"
    assert code not in str(event.parameters) and code not in (event.error_message or "")
