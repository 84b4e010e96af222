"""Passkeys without a browser: where they are off and why, the last second factor a required
two-factor keeps, and the owners' setting that approvals take a passkey. The ceremonies
themselves run in Chromium (test_passkeys_browser.py)."""

from __future__ import annotations

import re

from tests.support.forms import PASSWORD, signed_in
from tests.support.money import post, text


def _add_passkey(app, email: str) -> int:
    """A passkey row for `email`, as a registration stores it (its key is never checked here)."""
    from portal.extensions import db
    from portal.identity.models import Passkey
    from portal.identity.rules.accounts import find_user

    with app.app_context():
        passkey = Passkey(
            user_id=find_user(email).id, credential_id="a-credential", public_key=b"k", name="Key"
        )
        db.session.add(passkey)
        db.session.commit()
        return passkey.id


def _passkeys_of(app, email: str) -> int:
    from portal.identity.rules.accounts import find_user

    with app.app_context():
        return len(find_user(email).passkeys)


def test_a_portal_at_an_ip_address_says_why_passkeys_are_off(portal_config, request) -> None:
    portal_config["PUBLIC_URL"] = "http://192.0.2.10:5000"
    app = request.getfixturevalue("app")
    accounts = request.getfixturevalue("accounts")
    owner = signed_in(app, accounts.owner)

    page = owner.get("/account/passkeys").get_data(as_text=True)
    assert "Passkeys are off: this portal is reached at an IP address" in page
    assert 'data-passkey="create"' not in page
    assert post(owner, "/account/passkeys/options").status_code == 404


def test_a_portal_with_a_domain_name_offers_passkeys(portal_config, request) -> None:
    portal_config["PUBLIC_URL"] = "http://portal.example.test"
    app = request.getfixturevalue("app")
    owner = signed_in(app, request.getfixturevalue("accounts").owner)

    assert "Passkeys are off" not in text(owner.get("/account/passkeys"))
    options = post(owner, "/account/passkeys/options").get_json()
    assert options["rp"]["id"] == "portal.example.test"
    assert options["authenticatorSelection"]["userVerification"] == "required"


def test_the_last_second_factor_stays_while_two_factor_is_required(app, accounts) -> None:
    from portal.extensions import db
    from portal.identity.models import Merchant

    operator = signed_in(app, accounts.operator)
    passkey = _add_passkey(app, accounts.operator)
    with app.app_context():
        db.session.execute(db.update(Merchant).values(require_two_factor=True))
        db.session.commit()
    remove = f"/account/passkeys/{passkey}/remove"

    answer = post(operator, remove, {f"remove-{passkey}-password": PASSWORD})
    assert answer.status_code == 422
    assert "this is your last second factor" in text(answer)
    assert _passkeys_of(app, accounts.operator) == 1

    with app.app_context():
        db.session.execute(db.update(Merchant).values(require_two_factor=False))
        db.session.commit()
    answer = post(operator, remove, {f"remove-{passkey}-password": PASSWORD})
    assert answer.status_code == 302
    assert _passkeys_of(app, accounts.operator) == 0


def test_owners_require_a_passkey_for_approvals_audited(app, accounts) -> None:
    from portal.extensions import db
    from portal.identity.models import AuditEvent, Merchant

    owner = signed_in(app, accounts.owner)
    assert (
        post(owner, "/settings/users/two-factor", {"passkey_for_approvals": "y"}).status_code == 302
    )
    shown = owner.get("/settings/users").get_data(as_text=True)
    assert re.search(r'<input[^>]* checked id="passkey_for_approvals"', shown)
    with app.app_context():
        required = db.session.scalars(db.select(Merchant.require_passkey_for_approvals)).all()
        actions = db.session.scalars(db.select(AuditEvent.action)).all()
    assert True in required
    assert "passkey.approvals_on" in actions
