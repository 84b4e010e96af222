"""A withdrawal confirmed by an owner with two-factor sign-in on needs a fresh code: a missing,
wrong, too long or already used one (the sign-in code included) sends nothing to the sandbox."""

from __future__ import annotations

from tests.support.money import connect, post, review_withdrawal, text
from tests.support.two_factor import signed_in_with_two_factor


def _state(app, key: str) -> str:
    from portal.extensions import db
    from portal.money.models import WithdrawalIntent

    with app.app_context():
        query = db.select(WithdrawalIntent.state).where(WithdrawalIntent.key == key)
        return db.session.scalar(query).value


def test_confirming_needs_a_fresh_code(app, accounts, module_sandbox, monkeypatch):
    connect(app, module_sandbox)
    owner, clock, secret, sign_in_code = signed_in_with_two_factor(app, accounts.owner, monkeypatch)

    address, review = review_withdrawal(owner)
    key = review.rsplit("/", 1)[1]
    page = owner.get(review).get_data(as_text=True)
    assert "Authenticator code" in page

    confirm = review + "/confirm"
    wrong = f"{(int(sign_in_code) + 1) % 1_000_000:06d}"
    for code, message in (
        ("", "Enter the 6-digit code your authenticator app shows."),
        (sign_in_code, "That code was already used."),
        (wrong, "That code is not right."),
        ("7" * 65, "That is longer than any code."),
    ):
        response = post(owner, confirm, {"code": code})
        assert response.status_code == 422
        assert message in text(response)
        assert not code or code not in response.get_data(as_text=True), "typed codes stay out"
        assert 'value="Confirm withdrawal"' in response.get_data(as_text=True), "may try again"
        assert _state(app, key) == "pending"
    assert module_sandbox.operations_to(address) == 0

    response = post(owner, confirm, {"code": clock.code(secret, 1)})
    assert response.status_code == 302
    assert _state(app, key) == "sent"
    assert module_sandbox.operations_to(address) == 1

    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        refused = db.session.scalars(
            db.select(AuditEvent).where(AuditEvent.action == "two_factor.code")
        ).all()
    assert [event.parameters["purpose"] for event in refused] == ["withdrawal", "withdrawal"]


def test_without_two_factor_confirming_is_as_before(app, accounts, module_sandbox):
    """The merchant does not require two-factor and the owner has it off: no code is asked."""
    from tests.support.forms import signed_in

    connect(app, module_sandbox)
    owner = signed_in(app, accounts.owner)
    address, review = review_withdrawal(owner)
    assert "Authenticator code" not in owner.get(review).get_data(as_text=True)
    assert post(owner, review + "/confirm").status_code == 302
    assert module_sandbox.operations_to(address) == 1
