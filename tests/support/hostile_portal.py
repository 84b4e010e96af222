"""The hostile portal, a pytest plugin (see tests/conftest.py) built once per worker: a sandbox
whose records hold markup and formulas, and a portal connected to it whose own records (checkout
link, shop name, user, audit events, withdrawal intents, cross exchange reference) were made
through its forms with hostile input.

Tests may add records but must leave the ones listed in `HostilePortal.ids` as they are.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from flask import Flask

from portal.api import MerchantApiClient
from tests.support import factories
from tests.support.attack import HOSTILE, HOSTILE_EMAIL, XSS
from tests.support.forms import PASSWORD, signed_in
from tests.support.money import BTC_ADDRESS, CROSS_EXCHANGE, connect, post, submit
from tests.support.portal_app import connected_portal, email
from tests.support.sandbox_server import SandboxServer, free_port, run_sandbox

OTHER_OWNER = "owner@other.test"


@dataclass
class HostilePortal:
    app: Flask
    sandbox: SandboxServer
    api: MerchantApiClient
    folder: Path
    ids: dict[str, object] = field(default_factory=dict)
    hostile_operations: dict[str, str] = field(default_factory=dict)  # payload -> operation id
    checkout_order: str = ""
    _clients: dict[str, object] = field(default_factory=dict)

    def email(self, visitor: str) -> str:
        return OTHER_OWNER if visitor == "other" else email(visitor)

    def client(self, visitor: str):
        """A client of `visitor`, signed in once per worker (do not sign it out)."""
        if visitor == "anonymous":
            return self.app.test_client()
        if visitor not in self._clients:
            self._clients[visitor] = signed_in(self.app, self.email(visitor))
        return self._clients[visitor]

    def fresh_client(self, visitor: str):
        """A client with a session of its own, for tests that end it."""
        return signed_in(self.app, self.email(visitor))

    @property
    def database(self) -> Path:
        return Path(self.app.config["SQLALCHEMY_DATABASE_URI"].removeprefix("sqlite:///"))


def _a_user_stored_before_addresses_were_checked(app: Flask, address: str) -> None:
    """An accountant of Acme whose address no form takes now (angle brackets, quotes): the
    pages must show it escaped all the same."""
    factories.user(app, address, "accountant", checked=False)


def _hostile_api_records(hostile: HostilePortal) -> None:
    """An operation per hostile string as its order number, a transaction with it as tx_id,
    rejected with it as the reason; the first XSS operation keeps two undefined transactions."""
    api, sandbox = hostile.api, hostile.sandbox
    for payload in HOSTILE:
        operation = api.create_operation("0.5", "BTC", payload)
        hostile.hostile_operations[payload] = operation.id
        body = {"amount": "0.1", "tx_id": payload[:120], "status": "undefined"}
        transaction = sandbox.control("POST", f"operations/{operation.id}/transactions", body)
        api.reject_transactions(operation.id, [transaction.json()["data"]["id"]], payload)
    first = hostile.hostile_operations[XSS[0]]
    pending = []
    for payload in XSS[1:]:
        body = {"amount": "0.1", "tx_id": payload + "-pending", "status": "undefined"}
        pending.append(
            sandbox.control("POST", f"operations/{first}/transactions", body).json()["data"]["id"]
        )
    hostile.ids.update(operation_id=first, transaction_id=pending[0])
    hostile.ids["voucher_id"] = api.create_voucher("0.01", "BTC").id


def _hostile_portal_records(hostile: HostilePortal) -> None:
    """Records of the portal itself, made through its forms by the owner."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.models import WebhookDelivery
    from portal.payments.models import CheckoutLink

    owner = hostile.client("owner")
    hostile.checkout_order = XSS[1] + "-checkout"
    made = submit(
        owner,
        "/operations/new",
        {"amount": "1", "currency": "BTC", "order_id": hostile.checkout_order},
    )
    assert made.status_code == 302, made.get_data(as_text=True)[:1000]
    saved = post(owner, "/settings/checkout", {"display_name": XSS[0], "shop_url": ""})
    assert saved.status_code == 302
    _a_user_stored_before_addresses_were_checked(hostile.app, HOSTILE_EMAIL)
    rejected = post(
        owner,
        f"/operations/{hostile.ids['operation_id']}/reject-transactions",
        {"transaction_id": hostile.ids["transaction_id"], "reason": XSS[2], "confirm": "1"},
    )
    assert rejected.status_code == 302, rejected.get_data(as_text=True)[:1000]
    # the first pending transaction is rejected now: the detail page keeps the other
    transactions = hostile.api.get_operation(hostile.ids["operation_id"]).transactions
    hostile.ids["transaction_id"] = next(t.id for t in transactions if t.status == "undefined")

    keys = []
    for _ in range(2):
        review = post(
            owner, "/withdrawals/new", {"amount": "0.001", "wallet": "BTC", "address": BTC_ADDRESS}
        )
        assert review.status_code == 302
        keys.append(review.location.rsplit("/", 1)[1])
    assert post(owner, f"/withdrawals/{keys[0]}/confirm").status_code == 302
    cross = submit(owner, "/cross-exchanges/new", CROSS_EXCHANGE)
    assert cross.status_code == 302, cross.get_data(as_text=True)[:1000]
    refunded = hostile.api.create_operation("0.5", "BTC", XSS[0] + "-refund")
    hostile.sandbox.receive(refunded.id, "0.7")
    refund = post(owner, f"/refunds/new/{refunded.id}", {"basis": "surplus"})
    assert refund.status_code == 302, refund.get_data(as_text=True)[:1000]

    # Webhooks to a port nobody listens on: each attempt fails at once, and is in the log.
    webhooks = {
        "url": f"http://127.0.0.1:{free_port()}/hooks",
        "event_types": "operation.confirmed",
    }
    assert post(owner, "/settings/notifications", webhooks).status_code == 302
    assert post(owner, "/settings/notifications/test").status_code == 302

    with hostile.app.app_context():
        hostile.ids["delivery_id"] = db.session.scalar(db.select(db.func.max(WebhookDelivery.id)))
        link = db.session.scalars(
            db.select(CheckoutLink).where(CheckoutLink.order_id == hostile.checkout_order)
        ).one()
        hostile.ids.update(
            token=link.token,
            key=keys[1],  # still pending
            confirmed_key=keys[0],
            user_id=accounts.find_user(email("accountant")).id,
            cross_exchange_id=cross.location.rsplit("/", 1)[1],
            refund_id=int(refund.location.rsplit("/", 1)[1]),
            approval_id=held_approval(hostile.app),
            entry_id=_booked_entry(),
            change_id=_relaxed_control(),
            passkey_id=1,  # nobody's: a passkey needs an authenticator, its routes refuse this one
            filename="portal.css",
            currency="BTC",
        )


def _relaxed_control() -> int:
    """A waiting change: the owner asks that a new accountant become an owner."""
    from portal.identity.models import Role
    from portal.identity.rules import accounts
    from portal.money.rules import controls

    owner = accounts.find_user(email("owner"))
    added = accounts.add_user(owner.merchant, "pending-owner@acme.test", Role.ACCOUNTANT, PASSWORD)
    return controls.make_owner(added, owner).id


def _booked_entry() -> int:
    """The address book's entry of the tests' Bitcoin address."""
    from portal.extensions import db
    from portal.money.models import BookAddress

    return db.session.scalar(db.select(BookAddress.id).where(BookAddress.address == BTC_ADDRESS))


def held_approval(app) -> int:
    """A withdrawal the owner reviewed and confirmed above a limit: its approval's id."""
    from decimal import Decimal

    from portal.identity.rules import accounts
    from portal.money.rules import approvals, limits, withdrawals

    with app.app_context():
        owner = accounts.find_user(email("owner"))
        key = withdrawals.create(owner.merchant, owner, Decimal("0.001"), "BTC", BTC_ADDRESS)
        intent = withdrawals.find(owner.merchant, key)
        checked = limits.Check(limits.Reason.PER_WITHDRAWAL, None, "USD")
        return approvals.hold_withdrawal(intent, owner, checked).id


@pytest.fixture(scope="session")
def hostile(tmp_path_factory) -> HostilePortal:
    """The hostile portal of this worker (see the module docstring)."""
    from portal.identity.models import Role
    from portal.identity.rules import accounts

    folder = tmp_path_factory.mktemp("security")
    with (
        run_sandbox(folder / "sandbox.db") as sandbox,
        # E-mail on, so that its forms are there to attack; requests only queue mail (the
        # worker sends it), and no worker runs here.
        # The test client's host as the public URL: passkeys are on, so their routes are too.
        connected_portal(
            folder, sandbox, SMTP_URL="smtp://127.0.0.1:9", PUBLIC_URL="http://localhost"
        ) as app,
    ):
        connect(app, sandbox)  # with the company token too
        with app.app_context():
            other = accounts.merchant_named("Other", create=True)
            accounts.add_user(other, OTHER_OWNER, Role.OWNER, PASSWORD)
        api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
        built = HostilePortal(app, sandbox, api, folder)
        _hostile_api_records(built)
        _hostile_portal_records(built)
        yield built


@pytest.fixture
def unique() -> str:
    return uuid.uuid4().hex[:10]
