"""Refunds against a real sandbox: never above the money counted, one withdrawal however many
requests race for the same surplus, and late money refunded without confirming the sale."""

from __future__ import annotations

import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa
from flask import Flask

from portal.api import MerchantApiClient
from tests.live import test_money_events
from tests.live.test_money_events import api, portal  # noqa: F401  (the fixtures `refunding` uses)
from tests.support.forms import csrf_token, signed_in
from tests.support.money import in_book, post, race, text
from tests.support.portal_app import email
from tests.support.sandbox_server import SandboxServer
from tests.support.two_factor import signed_in_with_two_factor

BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def fresh_address() -> str:
    """A testnet Bitcoin address nobody used yet."""
    return "tb1q" + "".join(secrets.choice(BECH32) for _ in range(38))


def booked_address(app) -> str:
    """A fresh address in the merchant's address book, as a typed refund address must be."""
    address = fresh_address()
    in_book(app, "BTC", address)
    return address


@dataclass
class Refunding:
    """A connected portal whose events reach a shop, the sandbox and a client of its API."""

    portal: Flask
    api: MerchantApiClient
    sandbox: SandboxServer


@pytest.fixture
def refunding(portal, api, sandbox) -> Refunding:  # noqa: F811  (the imported fixtures)
    return Refunding(portal, api, sandbox)


def send_refunds(app) -> int:
    """The worker's refund pass, as a tick runs it."""
    from portal.money.rules import refunds

    with app.app_context():
        return refunds.send_due()


def approval_of(refund_page) -> str:
    """The approval a refund's page links to."""
    found = re.search(r'href="(/approvals/\d+)"', refund_page.get_data(as_text=True))
    assert found, "the refund's page links to its approval"
    return found.group(1)


def overpaid(client: MerchantApiClient, sandbox: SandboxServer, paid: str = "0.7") -> str:
    """An operation of 0.5 BTC paid `paid` (more)."""
    operation = client.create_operation("0.5", "BTC", f"order-{uuid.uuid4().hex[:8]}")
    sandbox.receive(operation.id, paid)
    return operation.id


def test_a_refund_above_the_money_counted_answers_422_and_sends_nothing(refunding):
    app, client, sandbox = refunding.portal, refunding.api, refunding.sandbox
    operation_id = overpaid(client, sandbox)
    owner = signed_in(app, email("owner"))
    address = booked_address(refunding.portal)
    form = {"basis": "amount", "amount": "0.70000001", "address": address}

    answer = post(owner, f"/refunds/new/{operation_id}", form)

    assert answer.status_code == 422
    assert "At most 0.7 BTC of this operation can be refunded" in text(answer)
    assert send_refunds(app) == 0
    assert sandbox.operations_to(address) == 0
    within = post(owner, f"/refunds/new/{operation_id}", {**form, "amount": "0.7"})
    assert within.status_code == 302


def test_two_parallel_requests_for_the_same_surplus_send_one(refunding):
    app, client, sandbox = refunding.portal, refunding.api, refunding.sandbox
    from portal.extensions import db
    from portal.money.models import Refund

    operation_id = overpaid(client, sandbox)
    owner = signed_in(app, email("owner"))
    address = booked_address(app)
    url = f"/refunds/new/{operation_id}"
    form = {"basis": "surplus", "address": address, "csrf_token": csrf_token(owner, url)}

    statuses = race(app, owner, url, form, 2)
    sent = send_refunds(app)

    assert sorted(statuses) == [302, 422]
    assert sent == 1
    assert sandbox.operations_to(address) == 1
    with app.app_context():
        amounts = db.session.scalars(sa.select(Refund.amount)).all()
    assert amounts == [Decimal("0.2")]


def test_late_money_refunded_never_sends_operation_confirmed(refunding):
    app, client, sandbox = refunding.portal, refunding.api, refunding.sandbox
    from portal.extensions import db
    from portal.money.models import LedgerEntry

    operation = client.create_operation("0.5", "BTC", "order-late-refund")
    test_money_events.heard(app)
    sandbox.control("POST", f"operations/{operation.id}/expire")
    late = sandbox.receive(operation.id, "0.5", "undefined")
    heard = test_money_events.heard(app)  # the mirror saw it end, and the money come late
    client.link_transactions(operation.id, [late])  # counted now: the wallet holds it
    owner = signed_in(app, email("owner"))
    address = booked_address(app)

    asked = post(
        owner,
        f"/refunds/new/{operation.id}",
        {"basis": "amount", "amount": "0.5", "address": address},
    )
    assert asked.status_code == 302
    assert send_refunds(app) == 1
    heard += test_money_events.heard(app)
    types = [body["type"] for body, _ in heard if body["data"]["id"] == operation.id]
    test_money_events.sync(app)  # the mirror sees the refund's withdrawal: booked once all the same

    assert "operation.paid_late" in types
    assert "operation.confirmed" not in types
    assert sandbox.operations_to(address) == 1
    assert "Refunded" in text(owner.get(f"/operations/{operation.id}"))
    with app.app_context():
        out = db.session.execute(
            sa.select(LedgerEntry.kind, LedgerEntry.amount).where(LedgerEntry.amount < 0)
        ).all()
    assert [(kind, amount) for kind, amount in out if kind in ("refund", "withdrawal")] == [
        ("refund", Decimal("-0.5"))
    ]


def test_an_unclaimed_link_expires_after_the_owners_period_and_sends_nothing(refunding):
    from portal.extensions import db
    from portal.money.models import Refund

    app, client, sandbox = refunding.portal, refunding.api, refunding.sandbox
    owner = signed_in(app, email("owner"))
    saved = post(owner, "/settings/checkout/refund-link", {"refund_link_days": "3"})
    assert saved.status_code == 302
    operation_id = overpaid(client, sandbox)
    asked = post(owner, f"/refunds/new/{operation_id}", {"basis": "surplus"})
    link = re.search(r"/refund/[\w-]+", text(owner.get(asked.location))).group(0)
    customer = app.test_client()
    token = csrf_token(customer, link)  # the customer opens the link, then leaves it
    with app.app_context():
        refund = db.session.scalars(sa.select(Refund)).one()
        assert refund.expires_at - refund.created_at == timedelta(days=3)
        refund.expires_at = refund.created_at  # three days later
        db.session.commit()

    address = fresh_address()
    page = customer.get(link)
    claimed = customer.post(
        link, data={"address": address, "address_again": address, "csrf_token": token}
    )

    assert "Expired" in text(page)
    assert claimed.status_code == 409
    assert "This link expired: nothing was sent." in text(claimed)
    assert send_refunds(app) == 0
    assert sandbox.operations_to(address) == 0


def test_the_claim_page_speaks_the_customers_language(refunding):
    app = refunding.portal
    owner = signed_in(app, email("owner"))
    asked = post(
        owner, f"/refunds/new/{overpaid(refunding.api, refunding.sandbox)}", {"basis": "surplus"}
    )
    link = re.search(r"/refund/[\w-]+", text(owner.get(asked.location))).group(0)
    customer = app.test_client()
    headings = {
        language: text(customer.get(link, headers={"Accept-Language": language}))
        for language in ("en", "de", "es", "ru")
    }

    assert "Your address again" in headings["en"]
    assert "Ihre Adresse noch einmal" in headings["de"]
    assert "Su dirección otra vez" in headings["es"]
    assert "Ваш адрес ещё раз" in headings["ru"]


def test_an_operators_typed_address_waits_for_an_owners_fresh_code(refunding, monkeypatch):
    app = refunding.portal
    operator = signed_in(app, email("operator"))
    address = booked_address(app)
    asked = post(
        operator,
        f"/refunds/new/{overpaid(refunding.api, refunding.sandbox)}",
        {"basis": "surplus", "address": address},
    )
    assert asked.status_code == 302
    assert "Awaiting approval" in text(operator.get(asked.location))
    assert send_refunds(app) == 0
    approval = approval_of(operator.get(asked.location))
    refused = post(operator, f"{approval}/approve")

    owner = signed_in_with_two_factor(app, email("owner"), monkeypatch)
    assert "Approvals 1" in text(owner.client.get("/approvals"))
    used = post(owner.client, f"{approval}/approve", {"code": owner.sign_in_code})
    owner.clock.advance()
    approved = post(owner.client, f"{approval}/approve", {"code": owner.clock.code(owner.secret)})

    assert refused.status_code == 403
    assert used.status_code == 422
    assert approved.status_code == 302
    assert send_refunds(app) == 1
    assert refunding.sandbox.operations_to(address) == 1


def test_a_code_does_not_approve_when_the_owners_require_a_passkey(refunding, monkeypatch):
    """With "passkey for approvals" on, an owner's fresh code approves nothing: the refund
    waits and nothing is sent."""
    from portal.extensions import db
    from portal.identity.rules import accounts

    app = refunding.portal
    operator = signed_in(app, email("operator"))
    asked = post(
        operator,
        f"/refunds/new/{overpaid(refunding.api, refunding.sandbox)}",
        {"basis": "surplus", "address": booked_address(refunding.portal)},
    )
    owner = signed_in_with_two_factor(app, email("owner"), monkeypatch)
    with app.app_context():
        accounts.require_passkey_for_approvals(accounts.find_user(email("owner")).merchant, True)
        db.session.commit()
    try:
        owner.clock.advance()
        code = owner.clock.code(owner.secret)
        approval = approval_of(owner.client.get(asked.location))
        refused = post(owner.client, f"{approval}/approve", {"code": code})
        assert refused.status_code == 403
        assert "require a passkey for approvals" in text(refused)
        assert "Awaiting approval" in text(owner.client.get(asked.location))
        assert send_refunds(app) == 0
    finally:
        with app.app_context():
            merchant = accounts.find_user(email("owner")).merchant
            accounts.require_passkey_for_approvals(merchant, False)
            db.session.commit()


def test_an_overpaid_operation_leaves_the_attention_list_once_refunded(refunding):
    app = refunding.portal
    operation_id = overpaid(refunding.api, refunding.sandbox)
    test_money_events.sync(app)
    owner = signed_in(app, email("owner"))
    before = text(owner.get("/attention"))

    typed = {"basis": "surplus", "address": booked_address(refunding.portal)}
    post(owner, f"/refunds/new/{operation_id}", typed)
    after = text(owner.get("/attention"))

    assert f"Open operation {operation_id}" in before
    assert f"Open operation {operation_id}" not in after


def test_the_customer_is_mailed_the_link_and_when_the_refund_was_sent(refunding, mail_server):
    from portal.live.rules import mail

    app = refunding.portal
    owner = signed_in(app, email("owner"))
    operation_id = overpaid(refunding.api, refunding.sandbox)
    form = {"basis": "surplus", "email": "customer@example.com"}
    assert post(owner, f"/refunds/new/{operation_id}", form).status_code == 302
    with app.app_context():
        mail.send_due()
    (linked,) = [m for m in mail_server.messages if m["To"] == "customer@example.com"]
    link = re.search(r"https?://\S+(/refund/[\w-]+)", linked.get_content()).group(1)
    address = fresh_address()
    customer = app.test_client()
    token = csrf_token(customer, link)
    customer.post(link, data={"address": address, "address_again": address, "csrf_token": token})
    send_refunds(app)
    with app.app_context():
        mail.send_due()

    sent = [m for m in mail_server.messages if m["To"] == "customer@example.com"][1:]
    assert [m["Subject"] for m in sent] == ["Your refund of 0.2 BTC was sent"]
    assert f"to the address {address}" in sent[0].get_content()
