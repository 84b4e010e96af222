"""Every state-changing route of url_map refuses a request without a valid CSRF token
(none, a forged one, another session's), as a plain form and as htmx, and nothing changes:
not the portal's database (audit log included) nor the sandbox.

Each route has a valid request in `VALID`, which the positive control proves valid (with the
session's own token it does change something); a new state-changing route fails
`test_every_state_changing_route_is_covered` until it has one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal

import pyotp
import pytest

from tests.support.attack import STATE_CHANGING, snapshot
from tests.support.forms import PASSWORD, session_csrf_token
from tests.support.forms import signed_in as signed_in_client
from tests.support.hostile_portal import held_approval
from tests.support.money import BTC_ADDRESS, CROSS_EXCHANGE, ETH_ADDRESS, in_book, intent_key
from tests.support.sandbox_server import free_port
from tests.support.two_factor import SETUP_KEY

# Every state-changing route of url_map, three ways, as a form and as htmx.
pytestmark = pytest.mark.slow

# Routes exempt from CSRF, with the reason.
EXEMPT: dict[str, str] = {
    "statement_mail.confirm_stop": "RFC 8058: a mail program's one-click unsubscribe POSTs "
    "without a session; the signed token in the path is the secret, and it only stops mail",
}


@dataclass
class Case:
    """A valid state-changing request: who sends it (a client with a token) and what."""

    client: object
    url: str
    data: dict = field(default_factory=dict)
    anonymous: bool = False
    accepted: tuple[int, ...] = (200, 302)  # the statuses of the valid request
    home: str = "/account"  # a page the visitor may open while signed in


def _throwaway(hostile, role: str = "operator", *, two_factor: bool = False, signed_in=True):
    """A new user of Acme (optionally with two-factor on) and a client signed in as them."""
    from portal import crypto
    from portal.database import utcnow
    from portal.extensions import db
    from portal.identity.models import Role
    from portal.identity.rules import accounts

    address = f"csrf-{uuid.uuid4().hex[:8]}@acme.test"
    with hostile.app.app_context():
        accounts.add_user(accounts.merchant_named("Acme"), address, Role(role), PASSWORD)
    client = signed_in_client(hostile.app, address) if signed_in else hostile.app.test_client()
    secret = pyotp.random_base32()
    with hostile.app.app_context():
        user = accounts.find_user(address)
        user_id = user.id
        if two_factor:
            from portal.identity.rules import two_factor as second_factor

            user.totp_secret_encrypted = crypto.encrypt(secret)
            user.totp_enabled_at = utcnow()
            db.session.commit()
            second_factor.new_recovery_codes(user)
    return client, address, user_id, pyotp.TOTP(secret)


def _choose_password(hostile) -> Case:
    """A user whose password an owner typed, choosing their own."""
    from portal.extensions import db
    from portal.identity.rules import accounts

    client, address, _, _ = _throwaway(hostile)
    with hostile.app.app_context():
        accounts.find_user(address).must_choose_password = True
        db.session.commit()
    data = {
        "password-current_password": PASSWORD,
        "password-new_password": "a forged new password",
        "password-new_password_again": "a forged new password",
    }
    return Case(client, "/account/choose-password", data, home="/account/choose-password")


def _as(hostile, visitor: str, url: str, data: dict | None = None) -> Case:
    if visitor == "anonymous":
        return Case(hostile.app.test_client(), url, data or {}, anonymous=True)
    return Case(hostile.fresh_client(visitor), url, data or {})


def _spare_endpoint(hostile) -> int:
    """A webhook endpoint of its own to switch off: the merchant's first stays on, for the
    cases that send it a test event whichever case ran before."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.rules import webhooks

    with hostile.app.app_context():
        url = f"http://127.0.0.1:{free_port()}/spare"
        spare = webhooks.add_endpoint(accounts.merchant_named("Acme"), url, ["operation.confirmed"])
        db.session.commit()
        return spare.id


def _form(hostile, visitor: str, url: str, data: dict) -> Case:
    """A form that moves money, with the idempotency key its page gave the visitor."""
    case = _as(hostile, visitor, url, dict(data))
    case.data["intent"] = intent_key(case.client, url)
    return case


def _operation_with_transaction(hostile) -> tuple[str, str]:
    operation = hostile.api.create_operation("0.5", "BTC", "csrf-order")
    body = {"amount": "0.5", "status": "undefined"}  # the whole due: a link needs no more
    answer = hostile.sandbox.control("POST", f"operations/{operation.id}/transactions", body)
    return operation.id, answer.json()["data"]["id"]


def _transactions(hostile, action: str) -> Case:
    operation, transaction = _operation_with_transaction(hostile)
    data = {"transaction_id": transaction, "reason": "refund", "confirm": "1"}
    return _as(hostile, "operator", f"/operations/{operation}/{action}-transactions", data)


def _confirm_withdrawal(hostile) -> Case:
    from portal.identity.rules import accounts
    from portal.money.rules import withdrawals as intents

    with hostile.app.app_context():
        owner = accounts.find_user(hostile.email("owner"))
        key = intents.create(owner.merchant, owner, Decimal("0.001"), "BTC", BTC_ADDRESS)
    return _as(hostile, "owner", f"/withdrawals/{key}/confirm")


def _cancel_cross_exchange(hostile) -> Case:
    created = hostile.api.create_cross_exchange(
        "BTC", "ETH", BTC_ADDRESS, ETH_ADDRESS, sell_amount="0.01"
    )
    return _as(hostile, "operator", f"/cross-exchanges/{created.id}/cancel")


def _edit_user(hostile, suffix: str = "", data: dict | None = None) -> Case:
    _client, _address, user_id, _totp = _throwaway(hostile, "accountant", signed_in=False)
    return _as(hostile, "owner", f"/settings/users/{user_id}{suffix}", data)


def _invited(hostile, suffix: str) -> Case:
    """An invitation of a new user, taken back or sent again by the owner (409 for sending
    again: e-mail is off on this portal)."""
    from portal.identity.models import Role
    from portal.identity.rules import accounts, one_time_links

    with hostile.app.app_context():
        owner = accounts.find_user(hostile.email("owner"))
        address = f"csrf-{uuid.uuid4().hex[:8]}@acme.test"
        user = one_time_links.invite(owner.merchant, address, Role.OPERATOR, by=owner)
        url = f"/settings/users/{user.id}{suffix}"
    return replace(_as(hostile, "owner", url), accepted=(302, 409))


def _enable_two_factor(hostile) -> Case:
    client, _address, _user_id, _totp = _throwaway(hostile)
    page = client.get("/account/two-factor").get_data(as_text=True)  # this session's key
    secret = SETUP_KEY.search(page).group(1).replace(" ", "")
    data = {"password": PASSWORD, "code": pyotp.TOTP(secret).now()}
    return Case(client, "/account/two-factor", data)


def _manage_two_factor(hostile, url: str, prefix: str = "") -> Case:
    client, _address, _user_id, totp = _throwaway(hostile, two_factor=True)
    return Case(client, url, {f"{prefix}code": totp.now(), f"{prefix}password": PASSWORD})


def _second_step(hostile) -> Case:
    client, address, _user_id, totp = _throwaway(hostile, two_factor=True, signed_in=False)
    first = client.post(
        "/login",
        data={"email": address, "password": PASSWORD, "csrf_token": session_csrf_token(client)},
    )
    assert first.status_code == 302 and "two-factor" in first.location
    return Case(client, "/login/two-factor", {"code": totp.now()}, anonymous=True)


def _with_passkey(hostile, *, signed_in: bool = True) -> tuple[object, str, int]:
    """A new user of Acme with a passkey."""
    client, address, user_id, _totp = _throwaway(hostile, signed_in=signed_in)
    return client, address, _passkey_row(hostile, user_id)


def _passkey_row(hostile, user_id: int) -> int:
    """A passkey of the user (its row only: no ceremony is checked here)."""
    from portal.extensions import db
    from portal.identity.models import Passkey

    with hostile.app.app_context():
        passkey = Passkey(
            user_id=user_id, credential_id=uuid.uuid4().hex, public_key=b"k", name="Key"
        )
        db.session.add(passkey)
        db.session.commit()
        return passkey.id


def _remove_passkey(hostile) -> Case:
    """A user with the authenticator app on removes a passkey: the password and a fresh code."""
    client, _address, user_id, totp = _throwaway(hostile, two_factor=True)
    passkey = _passkey_row(hostile, user_id)
    data = {f"remove-{passkey}-password": PASSWORD, f"remove-{passkey}-code": totp.now()}
    return Case(client, f"/account/passkeys/{passkey}/remove", data)


def _passkey_second_step(hostile) -> Case:
    """The challenge of a sign-in waiting for its passkey."""
    client, address, _passkey = _with_passkey(hostile, signed_in=False)
    data = {"email": address, "password": PASSWORD, "csrf_token": session_csrf_token(client)}
    assert "two-factor" in client.post("/login", data=data).location
    return Case(client, "/login/two-factor/challenge", anonymous=True)


def _require_two_factor(hostile) -> Case:
    """The Other merchant's owner (two-factor off): the refusal is recorded in the audit log."""
    case = _as(hostile, "other", "/settings/users/two-factor", {"required": "y"})
    case.accepted = (422,)
    return case


def _mailed_link(hostile, purpose: str) -> Case:
    """A new user's one-time link (an invitation, or a reset they asked for), its path read
    from the queued mail, and a new password for it."""
    import re
    from urllib.parse import urlsplit

    from portal.extensions import db
    from portal.identity.models import Role
    from portal.identity.rules import accounts, one_time_links
    from portal.live.models import MailMessage

    _client, address, _user_id, _totp = _throwaway(hostile, signed_in=False)
    with hostile.app.app_context():
        if purpose == "invite":
            address = f"invited-{uuid.uuid4().hex[:8]}@acme.test"
            owner = accounts.find_user(hostile.email("owner"))
            one_time_links.invite(owner.merchant, address, Role.OPERATOR, by=owner)
        else:
            one_time_links.request_reset(address, None)
            one_time_links.answer_reset_requests()  # the worker's tick
        body = db.session.scalar(
            db.select(MailMessage.body).where(MailMessage.to_address == address)
        )
    path = urlsplit(re.search(r"https?://\S+", body).group(0)).path
    data = {"new_password": "a forged new password", "new_password_again": "a forged new password"}
    return Case(hostile.app.test_client(), path, data, anonymous=True)


def _settle(hostile) -> Case:
    """An overpaid operation on Acme's attention list, marked as settled by an operator."""
    from tests.support.mirror_rows import mirror, operation_record, transaction_record

    paid = transaction_record("1.5", linked=True)
    record = operation_record("1", status="confirmed", amount_paid="1.5", transactions=[paid])
    mirror(hostile.app, record)
    return _as(hostile, "operator", f"/attention/{record['id']}/settle", {"note": "Refunded"})


def _overpaid(hostile) -> str:
    """An operation of 0.5 BTC that received 0.7: its surplus may be refunded."""
    operation = hostile.api.create_operation("0.5", "BTC", "csrf-refund")
    hostile.sandbox.receive(operation.id, "0.7")
    return operation.id


def _refund(hostile, role: str = "owner", data: dict | None = None, client=None) -> str:
    """A refund of an overpaid operation's surplus, asked for by `role` (on `client`, when
    given): its page's path."""
    client = client or hostile.fresh_client(role)
    asked = client.post(
        f"/refunds/new/{_overpaid(hostile)}",
        data={"basis": "surplus", **(data or {}), "csrf_token": session_csrf_token(client)},
    )
    assert asked.status_code == 302, asked.status_code
    return asked.location


def _claim(hostile) -> Case:
    """The customer's claim of a new refund's link, as its page shows it when asked."""
    import re

    client = hostile.fresh_client("owner")
    shown = client.post(
        f"{_refund(hostile, client=client)}/claim-link",
        data={"csrf_token": session_csrf_token(client)},
    )
    path = re.search(r"/refund/[\w-]+", shown.get_data(as_text=True)).group(0)
    data = {"address": BTC_ADDRESS, "address_again": BTC_ADDRESS}
    case = Case(hostile.app.test_client(), path, data, anonymous=True)
    case.accepted = (303,)
    return case


def _booked(hostile) -> int:
    """A new address of Acme's book, added by the owner: its entry's id."""
    from portal.extensions import db
    from portal.money.models import BookAddress

    address = "0x" + uuid.uuid4().hex + uuid.uuid4().hex[:8]
    in_book(hostile.app, "ETH", address)
    with hostile.app.app_context():
        return db.session.scalar(db.select(BookAddress.id).where(BookAddress.address == address))


def _approve_address(hostile) -> Case:
    """Another owner, with two-factor on, approves an address before its cooling-off ends
    (the hostile portal's is 0: the approval then changes nothing, and its audit event is the
    change)."""
    entry = _booked(hostile)
    client, _address, _user_id, totp = _throwaway(hostile, "owner", two_factor=True)
    return Case(client, f"/address-book/{entry}/approve", {"code": totp.now()})


def _decide_approval(hostile, decision: str) -> Case:
    """Another owner, with two-factor on, decides a withdrawal the owner asked for."""
    approval = held_approval(hostile.app)
    client, _address, _user_id, totp = _throwaway(hostile, "owner", two_factor=True)
    return Case(client, f"/approvals/{approval}/{decision}", {"code": totp.now()})


def _relaxed(hostile) -> int:
    """The owner asks that a new accountant become an owner: the waiting change's id."""
    from portal.extensions import db
    from portal.identity.models import User
    from portal.identity.rules import accounts
    from portal.money.rules import controls

    _client, _address, user_id, _totp = _throwaway(hostile, "accountant", signed_in=False)
    with hostile.app.app_context():
        owner = accounts.find_user(hostile.email("owner"))
        return controls.make_owner(db.session.get(User, user_id), owner).id


def _approve_change(hostile) -> Case:
    """Another owner, with two-factor on, approves a relaxed control the owner asked for."""
    change = _relaxed(hostile)
    client, _address, _user_id, totp = _throwaway(hostile, "owner", two_factor=True)
    return Case(client, f"/approvals/changes/{change}/approve", {"code": totp.now()})


# endpoint -> a valid request by a visitor allowed to make it
VALID: dict[str, Callable[..., Case]] = {
    "auth.login": lambda w: _as(
        w, "anonymous", "/login", {"email": w.email("operator"), "password": PASSWORD}
    ),
    "auth.two_factor": _second_step,
    "auth.logout": lambda w: _as(w, "owner", "/logout"),
    "auth.forgot_password": lambda w: _as(
        w, "anonymous", "/password/forgot", {"email": _throwaway(w, signed_in=False)[1]}
    ),
    "auth.reset_password": lambda w: _mailed_link(w, "reset"),
    "auth.accept_invitation": lambda w: _mailed_link(w, "invite"),
    "account.index": lambda w: Case(_throwaway(w)[0], "/account", {"time_zone": "Asia/Tokyo"}),
    "account.time_zone_answer": lambda w: Case(
        _throwaway(w)[0], "/account/time-zone", {"zone-time_zone": "Asia/Tokyo"}
    ),
    "account.two_factor": _enable_two_factor,
    "account.recovery_codes": lambda w: _manage_two_factor(w, "/account/two-factor/recovery-codes"),
    "account.disable_two_factor": lambda w: _manage_two_factor(
        w, "/account/two-factor/disable", "disable-"
    ),
    "account.choose_password": _choose_password,
    "account.passkey_options": lambda w: Case(_throwaway(w)[0], "/account/passkeys/options"),
    "account.passkey_challenge": lambda w: Case(
        _with_passkey(w)[0], "/account/passkeys/challenge", {"action": "/withdrawals/k/confirm"}
    ),
    # no authenticator here: the refused passkey is the audit log's change
    "account.add_passkey": lambda w: Case(
        _throwaway(w)[0],
        "/account/passkeys",
        {"add-name": "Key", "add-password": PASSWORD, "add-credential": "{}"},
        accepted=(422,),
    ),
    "account.remove_passkey": _remove_passkey,
    "auth.passkey_challenge": _passkey_second_step,
    "account.mail_choices": lambda w: Case(
        _throwaway(w)[0], "/account/email", {"mail-event_types": ["operation.expired"]}
    ),
    "account.statement_mail_choice": lambda w: Case(
        _throwaway(w, "accountant")[0], "/account/statement-mail", {"statement-frequency": "weekly"}
    ),
    "account.change_password": lambda w: Case(
        _throwaway(w)[0],
        "/account/password",
        {
            "password-current_password": PASSWORD,
            "password-new_password": "a forged new password",
            "password-new_password_again": "a forged new password",
        },
    ),
    "operations.new": lambda w: _form(
        w, "operator", "/operations/new", {"amount": "1", "currency": "BTC", "order_id": "csrf"}
    ),
    "operations.link_transactions": lambda w: _transactions(w, "link"),
    "attention.settle": _settle,
    "operations.reject_transactions": lambda w: _transactions(w, "reject"),
    "operations.cancel": lambda w: _as(
        w,
        "operator",
        f"/operations/{w.api.create_operation('1', 'BTC', 'csrf').id}/cancel",
        {"confirm": "1"},
    ),
    "settings.api": lambda w: _as(
        w,
        "owner",
        "/settings/api",
        {"base_url": w.sandbox.base_url, "environment": "sandbox", "token": w.sandbox.token},
    ),
    # the other merchant's owner: the hostile shop name of Acme stays for the other tests
    "settings.checkout": lambda w: _as(
        w, "other", "/settings/checkout", {"display_name": f"Forged {uuid.uuid4()}", "shop_url": ""}
    ),
    "settings.payment_tolerance": lambda w: _as(
        w, "other", "/settings/checkout/tolerance", {"payment_tolerance_percent": "0.5"}
    ),
    # USD, the reporting currency Acme starts with: the change is its audit event
    "settings.reporting_currency": lambda w: _as(
        w, "owner", "/settings/reporting-currency", {"reporting_currency": "USD"}
    ),
    "settings.users": lambda w: _as(
        w,
        "owner",
        "/settings/users",
        {
            "email": f"forged-{uuid.uuid4().hex[:8]}@acme.test",
            "role": "owner",
            "password": "forged 1234",
        },
    ),
    "settings.require_two_factor": _require_two_factor,
    "settings.invite_user": lambda w: _as(
        w,
        "owner",
        "/settings/users/invite",
        {"invite-email": f"forged-{uuid.uuid4().hex[:8]}@acme.test", "invite-role": "owner"},
    ),
    "settings.invite_again": lambda w: _invited(w, "/invite-again"),
    "settings.revoke_invitation": lambda w: _invited(w, "/revoke-invitation"),
    "settings.edit_user": lambda w: _edit_user(w, data={"role": "owner", "password": ""}),
    "settings.remove_user": lambda w: _edit_user(w, "/remove"),
    # the other merchant's owner: Acme's webhooks stay as the hostile portal made them
    "settings.notifications": lambda w: _as(
        w,
        "other",
        "/settings/notifications",
        {"url": "https://shop.example.com/forged", "event_types": "operation.confirmed"},
    ),
    "settings.resync_mirror": lambda w: _as(w, "owner", "/settings/api/resync"),
    "settings.notifications_rotate": lambda w: _as(w, "owner", "/settings/notifications/rotate"),
    "settings.notifications_test": lambda w: _as(w, "owner", "/settings/notifications/test"),
    "settings.notifications_secret": lambda w: _as(
        w, "owner", "/settings/notifications/secret", {"password": PASSWORD}
    ),
    "settings.notifications_switch": lambda w: _as(
        w, "owner", f"/settings/notifications/switch?endpoint_id={_spare_endpoint(w)}"
    ),
    "settings.notifications_replay": lambda w: _as(
        w,
        "owner",
        "/settings/notifications/replay",
        {"replay-since": "2026-11-01", "replay-until": "2026-11-02", "replay-password": PASSWORD},
    ),
    "settings.notifications_resend": lambda w: _as(
        w, "owner", f"/settings/notifications/deliveries/{w.ids['delivery_id']}/resend"
    ),
    "withdrawals.new": lambda w: _as(
        w, "owner", "/withdrawals/new", {"amount": "0.001", "wallet": "BTC", "address": BTC_ADDRESS}
    ),
    "withdrawals.confirm": _confirm_withdrawal,
    "withdrawals.limits": lambda w: _as(
        w, "owner", "/withdrawals/limits", {"limit-wallet": "BTC", "limit-daily_limit": "5"}
    ),
    "vouchers.create": lambda w: _form(
        w, "owner", "/vouchers/new", {"amount": "0.01", "currency": "BTC"}
    ),
    "vouchers.code": lambda w: _as(w, "owner", f"/vouchers/{w.ids['voucher_id']}/code"),
    "vouchers.cancel": lambda w: _as(
        w, "operator", f"/vouchers/{w.api.create_voucher('0.01', 'BTC').id}/cancel"
    ),
    "vouchers.payoff": lambda w: _as(
        w, "operator", "/vouchers/payoff", {"code": w.api.create_voucher("0.01", "BTC").code}
    ),
    "exchanges.create": lambda w: _form(
        w,
        "operator",
        "/exchange",
        {"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "0.001"},
    ),
    "cross_exchanges.new": lambda w: _form(w, "operator", "/cross-exchanges/new", CROSS_EXCHANGE),
    "cross_exchanges.cancel": _cancel_cross_exchange,
    "balances.opening": lambda w: _as(w, "owner", "/balances/BTC/opening", {"amount": "1"}),
    "refunds.new": lambda w: _as(
        w, "operator", f"/refunds/new/{_overpaid(w)}", {"basis": "surplus"}
    ),
    "refunds.cancel": lambda w: _as(w, "operator", f"{_refund(w)}/cancel"),
    "refunds.new_link": lambda w: _as(w, "operator", f"{_refund(w, 'operator')}/link"),
    "refunds.link": lambda w: _as(w, "operator", f"{_refund(w, 'operator')}/claim-link"),
    "approvals.approve": lambda w: _decide_approval(w, "approve"),
    "approvals.reject": lambda w: _decide_approval(w, "reject"),
    "approvals.withdraw": lambda w: _as(w, "owner", f"/approvals/{held_approval(w.app)}/withdraw"),
    "address_book.add": lambda w: _as(
        w,
        "owner",
        "/address-book",
        {"currency": "ETH", "address": "0x" + uuid.uuid4().hex + "0" * 8, "name": "CSRF"},
    ),
    "address_book.remove": lambda w: _as(w, "owner", f"/address-book/{_booked(w)}/remove"),
    "address_book.approve": _approve_address,
    "address_book.cooling_off": lambda w: _as(
        w, "owner", "/address-book/cooling-off", {"hours": "0"}
    ),
    "approvals.approve_change": _approve_change,
    "approvals.cancel_change": lambda w: _as(
        w, "owner", f"/approvals/changes/{_relaxed(w)}/cancel"
    ),
    "withdrawals.reporting_limits": lambda w: _as(
        w,
        "other",
        "/withdrawals/limits/reporting",
        {"reporting-per_withdrawal": "", "reporting-per_day": ""},
    ),
    "refund_claims.claim": _claim,
    "settings.refund_link": lambda w: _as(
        w, "other", "/settings/checkout/refund-link", {"refund_link_days": "14"}
    ),
}


def state_changing_endpoints(app) -> set[str]:
    return {rule.endpoint for rule in app.url_map.iter_rules() if rule.methods & STATE_CHANGING}


def test_every_state_changing_route_is_covered(hostile):
    """Derived from url_map: a new POST/PUT/PATCH/DELETE route fails here until it has a row."""
    endpoints = state_changing_endpoints(hostile.app) - EXEMPT.keys()
    assert endpoints - VALID.keys() == set(), "state-changing routes without a CSRF case"
    assert VALID.keys() - endpoints == set(), "CSRF cases of routes that are gone"


def _own_token(case: Case) -> str:
    """The token of the case's session, once the visitor has seen a page: the first page after
    signing in asks for the time zone once and remembers that it asked."""
    if not case.anonymous:
        assert case.client.get(case.home).status_code == 200
    return session_csrf_token(case.client)


def _stolen_token(hostile, case: Case) -> str:
    """A valid token, of somebody else's session."""
    other = hostile.app.test_client() if case.anonymous else hostile.client("owner")
    token = session_csrf_token(other)
    assert token and token != _own_token(case)
    return token


@pytest.mark.parametrize("endpoint", sorted(VALID))
def test_forged_requests_are_refused_and_change_nothing(hostile, endpoint):
    case = VALID[endpoint](hostile)
    stolen = _stolen_token(hostile, case)
    attempts = [("no token", None), ("forged token", "forged-" + stolen[7:]), ("other", stolen)]
    before = snapshot(hostile)
    for kind, token in attempts:
        as_form = {**case.data, **({"csrf_token": token} if token else {})}
        htmx = {"HX-Request": "true", **({"X-CSRFToken": token} if token else {})}
        boosted = {**htmx, "HX-Boosted": "true"}
        for how, response in (
            ("form", case.client.post(case.url, data=as_form)),
            ("htmx", case.client.post(case.url, data=case.data, headers=htmx)),
            ("boosted", case.client.post(case.url, data=case.data, headers=boosted)),
            ("json", case.client.post(case.url, json=as_form)),
            ("text/plain", case.client.post(case.url, data="a=1", content_type="text/plain")),
        ):
            assert response.status_code == 400, f"{kind}, {how}: {response.status_code}"
            assert "This form has expired" in response.get_data(as_text=True)
    assert snapshot(hostile) == before, "a refused request changed something"
    if not case.anonymous:
        assert case.client.get(case.home).status_code == 200, "still signed in"


@pytest.mark.parametrize("htmx", [False, True], ids=["form", "htmx"])
@pytest.mark.parametrize("endpoint", sorted(VALID))
def test_the_same_request_with_the_sessions_token_works(hostile, endpoint, htmx):
    """Positive control: the request of the test above is valid, so CSRF alone refused it."""
    case = VALID[endpoint](hostile)
    token = _own_token(case)
    before = snapshot(hostile)
    if htmx:
        headers = {"HX-Request": "true", "X-CSRFToken": token}
        response = case.client.post(case.url, data=case.data, headers=headers)
    else:
        response = case.client.post(case.url, data={**case.data, "csrf_token": token})
    assert response.status_code in case.accepted, response.get_data(as_text=True)[:1000]
    assert snapshot(hostile) != before, "the valid request changed nothing: the case proves nothing"
