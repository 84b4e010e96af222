"""Passkeys without a browser: where they are off and why, the last second factor a required
two-factor keeps, the second factor that adding or removing one asks, and the owners' setting
that approvals take a passkey. A key in Python (`SoftKey`) answers the ceremonies here; the
browser's own run in Chromium (test_passkeys_browser.py)."""

from __future__ import annotations

import hashlib
import json
import re
import secrets

import cbor2
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from tests.support.forms import PASSWORD, signed_in
from tests.support.money import post, text
from tests.support.two_factor import signed_in_with_two_factor

ORIGIN = "http://portal.example.test"
MISSING_CODE = "Enter the 6-digit code your authenticator app shows."


def _b64(data: bytes) -> str:
    from webauthn.helpers import bytes_to_base64url

    return bytes_to_base64url(data)


class SoftKey:
    """A passkey as a platform authenticator makes and uses one (P-256, "none" attestation, the
    user verified), for the portal's JSON options; answers as static/js/passkeys.js sends them."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.id = secrets.token_bytes(16)
        self.count = 0

    @property
    def public_key(self) -> bytes:
        """The public key as COSE (CBOR): an ES256 point."""
        point = self.key.public_key().public_numbers()
        x, y = point.x.to_bytes(32, "big"), point.y.to_bytes(32, "big")
        return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: x, -3: y})

    def _authenticator_data(self, rp_id: str, flags: int, attested: bytes = b"") -> bytes:
        self.count += 1
        rp_hash = hashlib.sha256(rp_id.encode()).digest()
        return rp_hash + bytes([flags]) + self.count.to_bytes(4, "big") + attested

    def _answer(self, response: dict[str, str]) -> str:
        credential = {"id": _b64(self.id), "rawId": _b64(self.id), "type": "public-key"}
        return json.dumps({**credential, "response": response, "clientExtensionResults": {}})

    @staticmethod
    def _client_data(ceremony: str, challenge: str) -> bytes:
        data = {"type": ceremony, "challenge": challenge, "origin": ORIGIN, "crossOrigin": False}
        return json.dumps(data).encode()

    def create(self, options: dict) -> str:
        """The new passkey's registration, for `navigator.credentials.create` options."""
        attested = bytes(16) + len(self.id).to_bytes(2, "big") + self.id + self.public_key
        data = self._authenticator_data(options["rp"]["id"], 0x45, attested)  # UP, UV, AT
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": data})
        client_data = self._client_data("webauthn.create", options["challenge"])
        return self._answer(
            {"clientDataJSON": _b64(client_data), "attestationObject": _b64(attestation)}
        )

    def get(self, options: dict) -> str:
        """The passkey's answer to `navigator.credentials.get` options."""
        data = self._authenticator_data(options["rpId"], 0x05)  # UP, UV
        client_data = self._client_data("webauthn.get", options["challenge"])
        signed = data + hashlib.sha256(client_data).digest()
        signature = self.key.sign(signed, ec.ECDSA(hashes.SHA256()))
        return self._answer(
            {
                "clientDataJSON": _b64(client_data),
                "authenticatorData": _b64(data),
                "signature": _b64(signature),
            }
        )


@pytest.fixture
def passkey_app(portal_config, request):
    """The portal with `accounts`, at a domain name: passkeys on."""
    portal_config["PUBLIC_URL"] = ORIGIN
    return request.getfixturevalue("app")


def _second_factor(
    client, path: str, field: str, code: str | None, confirm_with: SoftKey | None
) -> dict[str, str]:
    """The step-up's fields of the form posted to `path`: the code in `field`, or the answer of
    the passkey `confirm_with` to a challenge for that change."""
    if confirm_with is not None:
        options = post(client, "/account/passkeys/challenge", {"action": path}).get_json()
        return {"passkey_assertion": confirm_with.get(options)}
    return {field: code} if code else {}


def _register(client, key: SoftKey, code: str | None = None, confirm_with: SoftKey | None = None):
    """Add `key` through the page, with the second factor given (a code, a passkey's answer)."""
    credential = key.create(post(client, "/account/passkeys/options").get_json())
    data = {"add-name": "Phone", "add-password": PASSWORD, "add-credential": credential}
    step_up = _second_factor(client, "/account/passkeys", "add-code", code, confirm_with)
    return post(client, "/account/passkeys", {**data, **step_up})


def _remove(client, passkey: int, code: str | None = None, confirm_with: SoftKey | None = None):
    """Remove `passkey` through its form, with the second factor given."""
    path, prefix = f"/account/passkeys/{passkey}/remove", f"remove-{passkey}-"
    step_up = _second_factor(client, path, f"{prefix}code", code, confirm_with)
    return post(client, path, {f"{prefix}password": PASSWORD, **step_up})


def _add_passkey(app, email: str, key: SoftKey | None = None) -> int:
    """A passkey row for `email`, as a registration stores it: `key`'s, else one whose answers
    are never checked."""
    from portal.extensions import db
    from portal.identity.models import Passkey
    from portal.identity.rules.accounts import find_user

    with app.app_context():
        passkey = Passkey(
            user_id=find_user(email).id,
            credential_id=_b64(key.id) if key else "a-credential",
            public_key=key.public_key if key else b"k",
            name="Key",
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


def test_the_last_second_factor_stays_while_two_factor_is_required(passkey_app, accounts):
    from portal.extensions import db
    from portal.identity.models import Merchant

    app, key = passkey_app, SoftKey()
    operator = signed_in(app, accounts.operator)
    passkey = _add_passkey(app, accounts.operator, key)
    with app.app_context():
        db.session.execute(db.update(Merchant).values(require_two_factor=True))
        db.session.commit()

    answer = _remove(operator, passkey, confirm_with=key)
    assert answer.status_code == 422
    assert "this is your last second factor" in text(answer)
    assert _passkeys_of(app, accounts.operator) == 1

    with app.app_context():
        db.session.execute(db.update(Merchant).values(require_two_factor=False))
        db.session.commit()
    assert _remove(operator, passkey, confirm_with=key).status_code == 302
    assert _passkeys_of(app, accounts.operator) == 0


# --- Adding or removing one asks for the second factor the user has -------------------------


def test_with_the_app_on_a_new_passkey_needs_a_code(passkey_app, accounts, monkeypatch):
    """A stolen session and password add no passkey: the thief's would confirm anything."""
    app = passkey_app
    operator, clock, secret, _ = signed_in_with_two_factor(app, accounts.operator, monkeypatch)
    clock.advance()

    refused = _register(operator, SoftKey())
    assert refused.status_code == 422
    assert MISSING_CODE in text(refused)
    assert _passkeys_of(app, accounts.operator) == 0

    assert _register(operator, SoftKey(), code=clock.code(secret)).status_code == 302
    assert _passkeys_of(app, accounts.operator) == 1
    assert text(operator.get("/account/passkeys")).count("Authenticator code") == 2  # add, remove


def test_with_a_passkey_a_new_one_needs_its_answer(passkey_app, accounts) -> None:
    app, key = passkey_app, SoftKey()
    operator = signed_in(app, accounts.operator)
    _add_passkey(app, accounts.operator, key)

    refused = _register(operator, SoftKey())
    assert refused.status_code == 422
    assert "Confirm with your passkey." in text(refused)
    assert _passkeys_of(app, accounts.operator) == 1

    added = _register(operator, SoftKey(), confirm_with=key)
    assert "The passkey Phone is added." in text(added)
    assert _passkeys_of(app, accounts.operator) == 2


def test_with_the_app_on_removing_a_passkey_needs_a_code(passkey_app, accounts, monkeypatch):
    app = passkey_app
    operator, clock, secret, _ = signed_in_with_two_factor(app, accounts.operator, monkeypatch)
    clock.advance()
    passkey = _add_passkey(app, accounts.operator)

    refused = _remove(operator, passkey)
    assert refused.status_code == 422
    assert MISSING_CODE in text(refused)
    assert _passkeys_of(app, accounts.operator) == 1

    assert _remove(operator, passkey, code=clock.code(secret)).status_code == 302
    assert _passkeys_of(app, accounts.operator) == 0


def test_removing_the_last_second_factor_ends_the_other_sessions(passkey_app, accounts) -> None:
    """As turning two-factor off does: a session started before does not live on."""
    app, key = passkey_app, SoftKey()
    acting, other = signed_in(app, accounts.operator), signed_in(app, accounts.operator)
    passkey = _add_passkey(app, accounts.operator, key)

    assert _remove(acting, passkey, confirm_with=key).status_code == 302
    assert _passkeys_of(app, accounts.operator) == 0
    assert acting.get("/account").status_code == 200
    assert other.get("/account").status_code == 302


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


def _passkey_required(app) -> bool:
    from portal.extensions import db
    from portal.identity.models import Merchant

    with app.app_context():
        query = db.select(Merchant.require_passkey_for_approvals).where(Merchant.name == "Acme")
        return db.session.scalar(query)


def test_a_code_alone_does_not_stop_requiring_a_passkey_for_approvals(
    passkey_app, accounts, monkeypatch
) -> None:
    """A phishing page relays an owner's codes but never a passkey's answer: with two codes it
    switched the requirement off, then approved with a code."""
    from portal.extensions import db
    from portal.identity.models import AuditEvent, Merchant

    app, key, path = passkey_app, SoftKey(), "/settings/users/two-factor"
    owner, clock, secret, _ = signed_in_with_two_factor(app, accounts.owner, monkeypatch)
    _add_passkey(app, accounts.owner, key)
    clock.advance()
    on = {"passkey_for_approvals": "y", "requirement_code": clock.code(secret)}
    assert post(owner, path, on).status_code == 302
    assert _passkey_required(app), "turning it on takes a code, as before"

    clock.advance()
    refused = post(owner, path, {"requirement_code": clock.code(secret)})
    assert refused.status_code == 422
    assert "to stop requiring it, confirm with your passkey. A code will not do." in text(refused)
    assert _passkey_required(app)
    with app.app_context():
        audited = db.session.scalars(
            db.select(AuditEvent).where(AuditEvent.action == "passkey.approvals_off")
        ).all()
    assert len(audited) == 1 and "A code will not do." in (audited[0].error_message or "")

    clock.advance()
    both_on = {
        "required": "y",
        "passkey_for_approvals": "y",
        "requirement_code": clock.code(secret),
    }
    assert post(owner, path, both_on).status_code == 302, "the two-factor part alone: a code"
    with app.app_context():
        query = db.select(Merchant.require_two_factor).where(Merchant.name == "Acme")
        assert db.session.scalar(query)

    confirmed = post(owner, path, _second_factor(owner, path, "requirement_code", None, key))
    assert confirmed.status_code == 302
    assert not _passkey_required(app)


def test_an_owner_without_a_passkey_cannot_stop_requiring_one(app, accounts) -> None:
    from portal.extensions import db
    from portal.identity.models import Merchant

    owner = signed_in(app, accounts.owner)
    with app.app_context():
        db.session.execute(db.update(Merchant).values(require_passkey_for_approvals=True))
        db.session.commit()
    refused = post(owner, "/settings/users/two-factor", {})
    assert refused.status_code == 422
    assert "only an owner with a passkey may stop requiring it" in text(refused)
    assert _passkey_required(app)


def test_where_a_passkey_approves_a_new_one_needs_a_passkeys_answer_not_a_code(
    passkey_app, accounts, monkeypatch
) -> None:
    """A phishing page that relays the password and a code would add its own passkey, which
    then approves: while the owners require a passkey for approvals, an owner who has one adds
    another with its answer only. An owner with none adds their first with a code: without
    it, they could never approve."""
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named

    app, key = passkey_app, SoftKey()
    owner, clock, secret, _ = signed_in_with_two_factor(app, accounts.owner, monkeypatch)
    with app.app_context():
        merchant_named("Acme").require_passkey_for_approvals = True
        db.session.commit()

    clock.advance()
    assert _register(owner, key, code=clock.code(secret)).status_code in (200, 302)
    assert _passkeys_of(app, accounts.owner) == 1
    clock.advance()
    refused = _register(owner, SoftKey(), code=clock.code(secret))
    assert refused.status_code == 422
    assert _passkeys_of(app, accounts.owner) == 1
    assert _register(owner, SoftKey(), confirm_with=key).status_code in (200, 302)
    assert _passkeys_of(app, accounts.owner) == 2


def test_where_a_passkey_approves_removing_one_needs_a_passkeys_answer_not_a_code(
    passkey_app, accounts, monkeypatch
) -> None:
    """Removing the owner's last passkey with a relayed code would switch the rule off for the
    next step: adding the phisher's with another code."""
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named

    app, key = passkey_app, SoftKey()
    owner, clock, secret, _ = signed_in_with_two_factor(app, accounts.owner, monkeypatch)
    passkey = _add_passkey(app, accounts.owner, key)
    with app.app_context():
        merchant_named("Acme").require_passkey_for_approvals = True
        db.session.commit()

    clock.advance()
    refused = _remove(owner, passkey, code=clock.code(secret))
    assert refused.status_code == 422
    assert _passkeys_of(app, accounts.owner) == 1
    assert _remove(owner, passkey, confirm_with=key).status_code in (200, 302)
    assert _passkeys_of(app, accounts.owner) == 0
