"""Refunds against a real sandbox: never above the money counted, one withdrawal however many
requests race for the same surplus, late money refunded without confirming the sale, amounts at
today's rate, the claim link kept off the session cookie, and each way a refund ends as the
merchant and the customer see it."""

from __future__ import annotations

import csv
import io
import re
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from portal.api import MerchantApiClient
from tests.live import test_money_events
from tests.live.test_money_events import api, portal  # noqa: F401  (the fixtures `refunding` uses)
from tests.money.test_approvals import audit_events
from tests.support.forms import csrf_token, signed_in
from tests.support.mirror import sync_now
from tests.support.money import (
    CROSS_EXCHANGE,
    approve_with_a_fresh_code,
    flags,
    in_book,
    post,
    race,
    review_withdrawal,
    submit,
    text,
)
from tests.support.portal_app import email
from tests.support.sandbox_server import SandboxServer
from tests.support.two_factor import signed_in_with_two_factor

BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
CLAIM_LINK = re.compile(r"https?://\S+?/refund/[\w-]+")


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


def ask_typed(refunding: Refunding, client: FlaskClient, address: str) -> TestResponse:
    """`client` asks to refund an overpaid operation's surplus to a typed `address`."""
    return post(
        client,
        f"/refunds/new/{overpaid(refunding.api, refunding.sandbox)}",
        {"basis": "surplus", "address": address},
    )


def typed_refund(refunding: Refunding, client: FlaskClient, address: str) -> str:
    """`client` refunds an overpaid operation's surplus to a typed `address`: the refund's
    page."""
    asked = ask_typed(refunding, client, address)
    assert asked.status_code == 302, text(asked)
    return asked.location


def by_link(refunding: Refunding, role: str = "owner", **form: str) -> tuple[FlaskClient, str, str]:
    """Someone of `role` refunds an overpaid operation's surplus (or what `form` says) by claim
    link: their client, the refund's page and the link read on it."""
    client = signed_in(refunding.portal, email(role))
    operation_id = overpaid(refunding.api, refunding.sandbox)
    asked = post(client, f"/refunds/new/{operation_id}", {"basis": "surplus", **form})
    assert asked.status_code == 302, text(asked)
    return client, asked.location, link_on(client, asked.location)


def link_on(owner: FlaskClient, refund_page: str) -> str:
    """The claim link the refund's page shows once asked (**Show claim link**): its path."""
    shown = post(owner, f"{refund_page}/claim-link")
    return re.search(r"https?://\S+?(/refund/[\w-]+)", text(shown)).group(1)


def opened(app: Flask, link: str) -> Callable[..., TestResponse]:
    """A customer, with no session, opens the claim page; what they send when they type an
    address twice there (from a network address, `REMOTE_ADDR`, when given), or with `landed`
    the page they are sent back to."""
    customer = app.test_client()
    token = csrf_token(customer, link)

    def claim(address: str, *, landed: bool = False, **environ: str) -> TestResponse:
        form = {"address": address, "address_again": address, "csrf_token": token}
        return customer.post(link, data=form, environ_base=environ, follow_redirects=landed)

    return claim


def claim(app: Flask, link: str, address: str) -> TestResponse:
    return opened(app, link)(address)


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
    sync_now(app)  # the mirror sees the refund's withdrawal: booked once all the same

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

    app, sandbox = refunding.portal, refunding.sandbox
    owner = signed_in(app, email("owner"))
    saved = post(owner, "/settings/checkout/refund-link", {"refund_link_days": "3"})
    assert saved.status_code == 302
    _owner, _page, link = by_link(refunding)
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
    _owner, _page, link = by_link(refunding)
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
    refund_page = typed_refund(refunding, operator, address)
    assert "Awaiting approval" in text(operator.get(refund_page))
    assert send_refunds(app) == 0
    approval = approval_of(operator.get(refund_page))
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
    refund_page = typed_refund(refunding, operator, booked_address(app))
    owner = signed_in_with_two_factor(app, email("owner"), monkeypatch)
    with app.app_context():
        accounts.require_passkey_for_approvals(accounts.find_user(email("owner")).merchant, True)
        db.session.commit()
    try:
        owner.clock.advance()
        code = owner.clock.code(owner.secret)
        approval = approval_of(owner.client.get(refund_page))
        refused = post(owner.client, f"{approval}/approve", {"code": code})
        assert refused.status_code == 403
        assert "require a passkey for approvals" in text(refused)
        assert "Awaiting approval" in text(owner.client.get(refund_page))
        assert send_refunds(app) == 0
    finally:
        with app.app_context():
            merchant = accounts.find_user(email("owner")).merchant
            accounts.require_passkey_for_approvals(merchant, False)
            db.session.commit()


def test_an_overpaid_operation_leaves_the_attention_list_once_refunded(refunding):
    app = refunding.portal
    operation_id = overpaid(refunding.api, refunding.sandbox)
    sync_now(app)
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
    claim(app, link, address)
    send_refunds(app)
    with app.app_context():
        mail.send_due()

    sent = [m for m in mail_server.messages if m["To"] == "customer@example.com"][1:]
    assert [m["Subject"] for m in sent] == ["Your refund of 0.2 BTC was sent"]
    assert f"to the address {address}" in sent[0].get_content()


def test_an_amount_at_todays_rate_is_refused_without_a_fresh_rate_and_converted_with_one(
    refunding,
):
    """The reporting currency's amount goes at the rate the portal read last: none read in the
    last minutes stores nothing; once read, the refund sends the amount at it and says so."""
    from portal.extensions import db
    from portal.money.models import RateRecord, Refund

    app, sandbox = refunding.portal, refunding.sandbox
    owner = signed_in(app, email("owner"))
    operation_id = overpaid(refunding.api, sandbox)
    with app.app_context():  # the rates were last read an hour ago
        for record in db.session.scalars(sa.select(RateRecord)):
            record.recorded_at -= timedelta(hours=1)
            record.last_seen_at -= timedelta(hours=1)
        db.session.commit()
    address = booked_address(app)
    form = {"basis": "now", "amount": "1000", "address": address}

    stale = post(owner, f"/refunds/new/{operation_id}", form)
    sandbox.set_prices(BTC="50000")
    sync_now(app)  # the rates are read again
    offered = text(owner.get(f"/refunds/new/{operation_id}"))
    asked = post(owner, f"/refunds/new/{operation_id}", form)

    assert stale.status_code == 422
    assert "There is no rate of BTC in USD from the last 15 minutes" in text(stale)
    assert "1 BTC = 50,000.00 USD, read" in offered
    assert asked.status_code == 302
    shown = text(owner.get(asked.location))
    assert "Amount 0.02 BTC" in shown
    assert "Converted from 1,000.00 USD at today's rate, 1 BTC = 50,000.00 USD, read 20" in shown
    with app.app_context():
        assert db.session.scalars(sa.select(Refund.amount)).all() == [Decimal("0.02")]
    assert send_refunds(app) == 1
    assert [w.amount for w in refunding.api.list_operations(address=address).items] == [
        Decimal("0.02")
    ]


def test_the_claim_link_is_on_the_refunds_page_and_never_in_the_session_cookie(refunding):
    from portal.extensions import db
    from portal.money.models import Refund

    app = refunding.portal
    owner = signed_in(app, email("owner"))
    operation_id = overpaid(refunding.api, refunding.sandbox)

    asked = post(owner, f"/refunds/new/{operation_id}", {"basis": "surplus"})
    with owner.session_transaction() as session:
        told = [message for _category, message in session.get("_flashes", [])]
    link = link_on(owner, asked.location)
    token = link.rsplit("/", 1)[1]
    with app.app_context():
        stored = db.session.scalars(sa.select(Refund)).one()
        kept = (stored.token_hash, stored.token_encrypted)
    address = fresh_address()
    claimed = claim(app, link, address)
    after = text(owner.get(asked.location))

    assert told == ["Requested: show the claim link below and give it to the customer."]
    assert all(token not in value for value in kept)
    assert claimed.status_code == 303
    assert "/refund/" not in after, "a claimed link is no longer shown"
    with app.app_context():
        assert db.session.scalars(sa.select(Refund.token_encrypted)).one() is None
    assert send_refunds(app) == 1
    assert refunding.sandbox.operations_to(address) == 1


def test_sending_the_link_again_kills_the_old_one_and_mails_the_new_one(refunding, mail_server):
    from portal.live.rules import mail

    app = refunding.portal
    owner, refund_page, old = by_link(refunding, email="customer@example.com")
    late = opened(app, old)  # the customer opened the first link, and comes back to it later
    with app.app_context():
        mail.send_due()

    again = post(owner, f"{refund_page}/link")
    new = link_on(owner, refund_page)
    with app.app_context():
        mail.send_due()
    mailed = [
        re.search(r"https?://\S+(/refund/[\w-]+)", m.get_content()).group(1)
        for m in mail_server.messages
        if m["To"] == "customer@example.com"
    ]
    address = fresh_address()
    dead = late(address)
    claimed = claim(app, new, address)

    assert again.status_code == 302
    assert new != old
    assert mailed == [old, new]
    assert dead.status_code == 404
    assert claimed.status_code == 303
    assert send_refunds(app) == 1
    assert refunding.sandbox.operations_to(address) == 1


def queued_bodies(app) -> list[str]:
    """The bodies of the mails to the customer waiting in the outbox, oldest first."""
    from portal.extensions import db
    from portal.live.models import MailMessage, MailState

    with app.app_context():
        waiting = sa.select(MailMessage.body).where(
            MailMessage.state == MailState.QUEUED,
            MailMessage.to_address == "customer@example.com",
        )
        return list(db.session.scalars(waiting.order_by(MailMessage.id)))


def test_with_email_off_no_claim_link_waits_in_the_outbox(refunding, monkeypatch):
    """Nothing would ever send it: the link would stay in clear in the database."""
    monkeypatch.setitem(refunding.portal.config, "SMTP_URL", None)
    owner, refund_page, _link = by_link(refunding, email="customer@example.com")
    assert post(owner, f"{refund_page}/link").status_code == 302

    assert queued_bodies(refunding.portal) == []


def test_a_link_that_stops_working_leaves_no_queued_mail_holding_it(refunding):
    owner, refund_page, first = by_link(refunding, email="customer@example.com")
    assert post(owner, f"{refund_page}/link").status_code == 302  # the first one stops working
    second = link_on(owner, refund_page)
    queued = queued_bodies(refunding.portal)
    assert post(owner, f"{refund_page}/cancel").status_code == 302

    assert len(queued) == 1 and second in queued[0] and first not in queued[0], "one dropped"
    assert queued_bodies(refunding.portal) == []


def test_a_canceled_refund_reads_canceled_to_the_customer_and_takes_no_claim(refunding):
    app = refunding.portal
    owner, refund_page, link = by_link(refunding)
    late = opened(app, link)

    canceled = post(owner, f"{refund_page}/cancel")
    address = fresh_address()
    claimed = late(address)

    assert canceled.status_code == 302
    assert "Status Canceled" in text(owner.get(refund_page))
    assert "Status Canceled" in text(app.test_client().get(link))
    assert claimed.status_code == 409
    assert "The shop canceled this refund: nothing was sent." in text(claimed)
    assert send_refunds(app) == 0
    assert refunding.sandbox.operations_to(address) == 0


def claimed_and_sent(refunding: Refunding, **fault: object) -> tuple[FlaskClient, str, str, str]:
    """A refund by link the customer claimed, sent by the worker while the sandbox has `fault`
    (its flags or fault): the owner's client, the refund's page, the link and the address."""
    owner, refund_page, link = by_link(refunding)
    address = fresh_address()
    assert claim(refunding.portal, link, address).status_code == 303
    with flags(refunding.sandbox, **fault):
        assert send_refunds(refunding.portal) == 0
    return owner, refund_page, link, address


def test_a_refund_the_payment_service_refuses_reads_refused_and_is_never_sent_again(refunding):
    app = refunding.portal
    owner, refund_page, link, address = claimed_and_sent(refunding, withdrawals_allowed=False)

    again = send_refunds(app)  # withdrawals are allowed again: the next tick

    merchant = text(owner.get(refund_page))
    assert "Status Refused" in merchant
    assert "The payment service refused this refund, so nothing moved." in merchant
    assert "Status Refused: nothing was sent" in text(app.test_client().get(link))
    assert again == 0
    assert refunding.sandbox.operations_to(address) == 0


def test_a_lost_answer_is_outcome_unknown_and_the_worker_never_sends_it_again(refunding):
    """The withdrawal is made, then the connection drops before its answer."""
    app, sandbox = refunding.portal, refunding.sandbox
    owner, refund_page, link, address = claimed_and_sent(refunding, fault={"mode": "reset"})

    again = send_refunds(app)

    assert "Status Outcome unknown" in text(owner.get(refund_page))
    assert "It will not be sent again" in text(owner.get(refund_page))
    assert "Outcome unknown: the shop is checking it" in text(app.test_client().get(link))
    assert again == 0
    assert sandbox.requests_received("POST", "/withdraw") == 1
    assert sandbox.operations_to(address) == 1


def test_the_claim_page_shares_the_checkout_pages_limit_per_address(refunding, monkeypatch):
    app = refunding.portal
    _owner, _page, link = by_link(refunding)
    monkeypatch.setitem(app.config, "CHECKOUT_LIMIT_PER_ADDRESS", "2 per minute")
    customer = app.test_client()
    one, other = {"REMOTE_ADDR": "198.51.100.41"}, {"REMOTE_ADDR": "198.51.100.42"}
    submit = opened(app, link)

    seen = [customer.get(link, environ_base=one).status_code for _ in range(2)]
    throttled = submit(fresh_address(), **one)
    elsewhere = customer.get(link, environ_base=other)

    assert seen == [200, 200]
    assert throttled.status_code == 429
    assert elsewhere.status_code == 200
    assert send_refunds(app) == 0, "the throttled claim claimed nothing"
    assert "Waiting for your address" in text(elsewhere)


def test_the_operations_list_finds_refunded_and_partly_refunded_operations(refunding):
    app, client, sandbox = refunding.portal, refunding.api, refunding.sandbox
    owner = signed_in(app, email("owner"))
    surplus_back, all_back, kept = (overpaid(client, sandbox) for _ in range(3))
    for operation_id, form in (
        (surplus_back, {"basis": "surplus"}),
        (all_back, {"basis": "amount", "amount": "0.7"}),
    ):
        form = {**form, "address": booked_address(app)}
        asked = post(owner, f"/refunds/new/{operation_id}", form)
        assert asked.status_code == 302
    assert send_refunds(app) == 2
    sync_now(app)

    offered = owner.get("/operations").get_data(as_text=True)
    listed = {
        state: ids_listed(owner, state) for state in ("refunded", "partly_refunded", "overpaid")
    }

    assert '<option value="refunded">Refunded</option>' in offered
    assert '<option value="partly_refunded">Partly refunded</option>' in offered
    assert listed == {
        "refunded": [all_back],
        "partly_refunded": [surplus_back],
        "overpaid": [kept],  # the other two read refunded or partly refunded, not overpaid
    }


def ids_listed(owner: FlaskClient, state: str) -> list[str]:
    """The ids of the operations the list gives for `state`, as its export has them."""
    export = owner.get(f"/operations/export.csv?state={state}").get_data(as_text=True)
    return [row["id"] for row in csv.DictReader(io.StringIO(export.lstrip("\ufeff")))]


def test_a_claimed_refund_above_the_limits_awaits_an_owner_other_than_the_requester(
    refunding, monkeypatch
):
    from tests.support import factories

    app = refunding.portal
    factories.user(app, "second-owner@acme.test", "owner")
    owner, refund_page, link = by_link(refunding)
    limits = {"reporting-per_withdrawal": "1", "reporting-per_day": ""}
    assert post(owner, "/withdrawals/limits/reporting", limits).status_code == 302
    address = fresh_address()

    landed = text(opened(app, link)(address, landed=True))
    assert "Awaiting approval" in landed
    assert "will be sent" not in landed, "the customer is told only what is sure"
    assert send_refunds(app) == 0 and refunding.sandbox.operations_to(address) == 0
    approval = approval_of(owner.get(refund_page))
    assert post(owner, f"{approval}/approve").status_code == 403, "the requester's own"

    second = signed_in_with_two_factor(app, "second-owner@acme.test", monkeypatch)
    assert approve_with_a_fresh_code(second, approval).status_code == 302
    assert send_refunds(app) == 1
    assert refunding.sandbox.operations_to(address) == 1


def test_a_cross_exchanges_operation_is_never_refunded_out_of_the_wallet(refunding):
    """Its money went to the exchange's payout address, never to the wallet (design §5a): a
    refund would pay the customer a second time, out of the merchant's own money."""
    app, sandbox = refunding.portal, refunding.sandbox
    owner = signed_in(app, email("owner"))
    made = submit(owner, "/cross-exchanges/new", CROSS_EXCHANGE)
    assert made.status_code == 302, text(made)
    exchange = refunding.api.get_cross_exchange(made.location.rsplit("/", 1)[1])
    sandbox.receive(exchange.operation_id, CROSS_EXCHANGE["sell_amount"])
    sync_now(app)
    page = owner.get(f"/operations/{exchange.operation_id}")
    assert "Paid" in text(page)
    assert f"/refunds/new/{exchange.operation_id}" not in page.get_data(as_text=True)
    address = booked_address(app)
    form = {"basis": "amount", "amount": CROSS_EXCHANGE["sell_amount"], "address": address}

    asked = post(owner, f"/refunds/new/{exchange.operation_id}", form)

    assert asked.status_code == 422
    assert "for a cross exchange: its money goes to the exchange" in text(asked)
    assert send_refunds(app) == 0
    assert sandbox.operations_to(address) == 0


def test_an_operation_made_while_a_cross_exchanges_answer_was_lost_is_never_refunded(refunding):
    """The API lists no cross exchanges, so the portal knows none whose answer was lost: an
    operation in its sold currency and amount, made while it was asked, may pay for it. It is
    neither refunded nor booked as money received in the wallet."""
    from portal.extensions import db
    from portal.money.models import LedgerEntry

    app, sandbox = refunding.portal, refunding.sandbox
    owner = signed_in(app, email("owner"))
    sandbox.control("POST", "faults", {"mode": "reset", "methods": ["POST"]})
    lost = submit(owner, "/cross-exchanges/new", CROSS_EXCHANGE)
    sandbox.control("POST", "faults", {"mode": "none"})
    operation = refunding.api.list_operations().items[0]  # the cross exchange's, made anyway
    sandbox.receive(operation.id, CROSS_EXCHANGE["sell_amount"])
    sale = refunding.api.create_operation(CROSS_EXCHANGE["sell_amount"], "BTC", "shop-order-1")
    sandbox.receive(sale.id, "0.02")  # a shop's sale, made at the same moment, paid more
    sync_now(app)
    page = owner.get(f"/operations/{operation.id}")
    address = booked_address(app)
    form = {"basis": "amount", "amount": CROSS_EXCHANGE["sell_amount"], "address": address}

    asked = post(owner, f"/refunds/new/{operation.id}", form)

    assert "Outcome unknown" in text(lost)
    assert (operation.currency, operation.amount) == ("BTC", Decimal("0.01"))
    assert "Paid" in text(page)
    assert f"/refunds/new/{operation.id}" not in page.get_data(as_text=True)
    assert asked.status_code == 422
    assert "may pay) for a cross exchange" in text(asked)
    assert send_refunds(app) == 0 and sandbox.operations_to(address) == 0
    with app.app_context():
        booked = sa.select(LedgerEntry).where(LedgerEntry.operation_id == operation.id)
        assert db.session.scalars(booked).all() == []

    def refund_offered(operation_id: str) -> bool:
        page = owner.get(f"/operations/{operation_id}").get_data(as_text=True)
        return f"/refunds/new/{operation_id}" in page

    # Until the cross exchange is known, a sale of its amount made in those minutes may be its.
    assert not refund_offered(sale.id)
    looked_up = owner.get("/cross-exchanges/1")  # its id, as the payment service tells it
    assert looked_up.status_code == 200
    assert refund_offered(sale.id) and not refund_offered(operation.id)
    assert "Cross exchange 1" in text(owner.get("/cross-exchanges")), "now in the list"


def test_a_cross_exchange_made_but_not_yet_listed_when_its_process_died_is_never_refunded(
    refunding,
):
    """The key is settled, then the list written in a commit of its own: a process that died
    between the two left the portal no reference, and its operation is still set apart."""
    from portal.extensions import db
    from portal.money.models import CrossExchangeReference

    app, sandbox = refunding.portal, refunding.sandbox
    owner = signed_in(app, email("owner"))
    made = submit(owner, "/cross-exchanges/new", CROSS_EXCHANGE)
    assert made.status_code == 302, text(made)
    exchange = refunding.api.get_cross_exchange(made.location.rsplit("/", 1)[1])
    with app.app_context():
        db.session.execute(sa.delete(CrossExchangeReference))
        db.session.commit()
    sandbox.receive(exchange.operation_id, CROSS_EXCHANGE["sell_amount"])
    sync_now(app)

    page = owner.get(f"/operations/{exchange.operation_id}").get_data(as_text=True)
    assert f"/refunds/new/{exchange.operation_id}" not in page


def test_an_operators_refund_claimed_on_its_link_waits_for_an_owner(refunding, monkeypatch):
    """Staff read the claim link on the refund's page: an operator claiming it with an address
    of their own sends nothing until an owner approves, whatever the limits."""
    app = refunding.portal
    operator, refund_page, link = by_link(refunding, "operator", basis="amount", amount="0.7")
    address = fresh_address()  # in no address book

    landed = text(opened(app, link)(address, landed=True))

    assert "Awaiting approval" in landed
    assert send_refunds(app) == 0 and refunding.sandbox.operations_to(address) == 0
    approval = approval_of(operator.get(refund_page))
    owner = signed_in_with_two_factor(app, email("owner"), monkeypatch)
    assert "Claimed on a link staff other than an owner could read" in text(
        owner.client.get(approval)
    )
    assert approve_with_a_fresh_code(owner, approval).status_code == 302
    assert send_refunds(app) == 1
    assert refunding.sandbox.operations_to(address) == 1


def test_an_owners_claim_link_is_read_and_renewed_by_owners_only(refunding):
    """An operator who could read an owner's link could claim it with an address of their own,
    sent with no owner involved: the refund's page shows it to the owners and to who asked."""
    app = refunding.portal
    owner, refund_page, link = by_link(refunding)
    operator = signed_in(app, email("operator"))

    seen = text(operator.get(refund_page))
    renewed = post(operator, f"{refund_page}/link")

    assert "/refund/" not in seen
    assert "Shown to the owners and to who asked for the refund" in seen
    assert "Send link again" not in seen
    assert renewed.status_code == 403
    assert link_on(owner, refund_page) == link, "the customer's link still works"


def test_a_refund_of_someone_since_removed_waits_for_any_owner_once_claimed(refunding, monkeypatch):
    """The operator read the link before being removed: once claimed, the refund waits for an
    owner (any of them: who asked is gone), whatever the limits."""
    from portal.extensions import db
    from portal.identity.models import User
    from portal.identity.rules import accounts

    app = refunding.portal
    _operator, refund_page, link = by_link(refunding, "operator", basis="amount", amount="0.7")
    with app.app_context():
        users = {user.email: user for user in db.session.scalars(sa.select(User))}
        accounts.remove_user(users[email("operator")], by=users[email("owner")])
    address = fresh_address()

    landed = text(opened(app, link)(address, landed=True))

    assert "Awaiting approval" in landed
    assert send_refunds(app) == 0 and refunding.sandbox.operations_to(address) == 0
    owner = signed_in_with_two_factor(app, email("owner"), monkeypatch)
    approval = approval_of(owner.client.get(refund_page))
    shown = text(owner.client.get(approval))
    assert "a removed user" in shown
    assert "Claimed on a link staff other than an owner could read" in shown
    assert approve_with_a_fresh_code(owner, approval).status_code == 302
    assert send_refunds(app) == 1
    assert refunding.sandbox.operations_to(address) == 1


def test_a_refund_ready_to_send_counts_against_the_daily_limit(refunding):
    """The worker sends a ready refund without asking the limits again: a second refund asked
    before it went must count it, or two refunds together pass a daily limit each passes alone."""
    app, sandbox = refunding.portal, refunding.sandbox
    owner = signed_in(app, email("owner"))
    daily = {"limit-wallet": "BTC", "limit-per_withdrawal": "", "limit-daily_limit": "0.3"}
    assert post(owner, "/withdrawals/limits", daily).status_code == 302
    address = booked_address(app)
    surplus = {"basis": "surplus", "address": address}  # 0.2 BTC each

    first = post(owner, f"/refunds/new/{overpaid(refunding.api, sandbox)}", surplus)
    second = post(owner, f"/refunds/new/{overpaid(refunding.api, sandbox)}", surplus)

    assert first.status_code == 302, text(first)
    assert second.status_code == 422
    assert "This refund is above the owners' limits" in text(second)
    assert send_refunds(app) == 1
    assert sandbox.operations_to(address) == 1


def test_lost_answers_count_once_against_the_day_when_the_mirror_sees_what_they_made(refunding):
    """A withdrawal and a refund whose answers were lost count until the mirror sees the
    withdrawals they made; then the ledger's booking counts, and they no more."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.models import LedgerEntry
    from portal.money.rules.withdrawal_figures import withdrawn_today

    app, sandbox = refunding.portal, refunding.sandbox
    owner = signed_in(app, email("owner"))
    address, review = review_withdrawal(owner, "0.01")
    refund_address = booked_address(app)
    typed_refund(refunding, owner, refund_address)
    sandbox.control("POST", "faults", {"mode": "reset", "methods": ["POST"]})
    lost = post(owner, review + "/confirm")
    send_refunds(app)
    sandbox.control("POST", "faults", {"mode": "none"})

    def today() -> tuple[Decimal, Decimal]:
        with app.app_context():
            merchant = accounts.merchant_named("Acme")
            return withdrawn_today(merchant, "ETH"), withdrawn_today(merchant, "BTC")

    before = today()
    sync_now(app)

    assert "Outcome unknown" in text(lost)
    assert sandbox.operations_to(address) == sandbox.operations_to(refund_address) == 1
    assert before == today() == (Decimal("0.01"), Decimal("0.2"))
    with app.app_context():
        sent = sa.select(LedgerEntry.kind).where(LedgerEntry.kind.in_(["refund", "withdrawal"]))
        assert sorted(db.session.scalars(sent)) == ["refund", "withdrawal"], "the refund as one"


def test_a_refund_whose_answer_was_lost_counts_on_its_own_day_only(refunding):
    """Its money may have left the day it was sent; a lost answer stays lost, so on later days
    it would hold back the daily limit for good."""
    from portal.database import utcnow
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.models import IntentState, Refund
    from portal.money.rules.withdrawal_figures import withdrawn_today

    app = refunding.portal
    owner = signed_in(app, email("owner"))
    typed_refund(refunding, owner, booked_address(app))
    with app.app_context():
        merchant = accounts.merchant_named("Acme")
        refund = db.session.scalars(sa.select(Refund)).one()
        refund.state = IntentState.UNKNOWN
        db.session.commit()
        assert withdrawn_today(merchant, "BTC") == Decimal("0.2")
        db.session.execute(sa.update(Refund).values(updated_at=utcnow() - timedelta(days=1)))
        db.session.commit()
        assert withdrawn_today(merchant, "BTC") == 0


def test_a_refunds_events_name_it_by_its_operation_not_by_the_portals_count(app, accounts):
    """The portal's own id counts every merchant's refunds: a shop would read another
    merchant's volume in it."""
    from portal.extensions import db
    from portal.money.models import Refund
    from portal.money.rules.refunds import refund_record
    from tests.support import factories

    for number in range(3):
        factories.refund(app, accounts.other_owner, f"other-{number}")
    first = factories.refund(app, accounts.owner, "op-7")

    with app.app_context():
        shown = refund_record(db.session.get(Refund, first))
    assert "id" not in shown
    assert (shown["operation_id"], shown["number"]) == ("op-7", 1)


def test_a_refund_its_process_left_sending_becomes_an_outcome_to_check(refunding):
    """The worker died between the claim and the answer (a restart, a crash): once longer than
    any request takes, the refund reads "Outcome unknown", is told to the shop, and is never
    sent again; one claimed a moment ago is left alone."""
    from datetime import timedelta

    from portal.database import utcnow
    from portal.extensions import db
    from portal.live.models import Event
    from portal.money.models import IntentState, Refund

    app = refunding.portal
    owner = signed_in(app, email("owner"))
    stranded_page = typed_refund(refunding, owner, booked_address(app))
    recent_page = typed_refund(refunding, owner, booked_address(app))
    with app.app_context():
        stranded, recent = db.session.scalars(sa.select(Refund).order_by(Refund.id)).all()
        stranded.state = recent.state = IntentState.SENDING
        stranded.updated_at = utcnow() - timedelta(minutes=11)
        recent.updated_at = utcnow() - timedelta(minutes=1)
        db.session.commit()

    assert send_refunds(app) == 0
    assert "Outcome unknown" in text(owner.get(stranded_page))
    assert "Outcome unknown" not in text(owner.get(recent_page))
    with app.app_context():
        told = sa.select(Event.type).where(Event.type == "refund.outcome_unknown")
        assert db.session.scalars(told).all() == ["refund.outcome_unknown"]
    assert refunding.sandbox.requests_received("POST", "/withdraw") == 0


def test_a_stopping_worker_claims_no_more_refunds_to_send(refunding, monkeypatch):
    """What a stopping worker claimed but could not finish would be left `sending`: once it is
    asked to stop, its pass sends nothing more, and the next worker sends it."""
    import threading

    from portal import shutdown

    app = refunding.portal
    address = booked_address(app)
    typed_refund(refunding, signed_in(app, email("owner")), address)
    stopped = threading.Event()
    monkeypatch.setattr(shutdown, "_requested", stopped)
    shutdown.request()

    assert send_refunds(app) == 0
    stopped.clear()  # the next worker
    assert send_refunds(app) == 1
    assert refunding.sandbox.operations_to(address) == 1


def test_a_refund_whose_client_cannot_be_made_stays_pending_and_goes_next_time(
    refunding, monkeypatch
):
    """The client is made before the claim: a failure there (a database error, a token no key
    decrypts) leaves the refund pending, sent by a later pass, not stranded `sending`."""
    from portal.extensions import db
    from portal.money.models import IntentState, Refund
    from portal.money.rules import refunds

    app = refunding.portal
    address = booked_address(app)
    typed_refund(refunding, signed_in(app, email("owner")), address)
    made = refunds.api_client_for

    def broken(_merchant):
        raise RuntimeError("no key decrypts the token")

    monkeypatch.setattr(refunds, "api_client_for", broken)
    with pytest.raises(RuntimeError):
        send_refunds(app)
    with app.app_context():
        assert db.session.scalars(sa.select(Refund.state)).one() is IntentState.PENDING
    monkeypatch.setattr(refunds, "api_client_for", made)
    assert send_refunds(app) == 1
    assert refunding.sandbox.operations_to(address) == 1


def test_a_refund_and_its_claim_link_take_a_fresh_code_from_an_owner_with_two_factor(
    refunding, monkeypatch
):
    """A refund sends the wallet's money, and whoever has its claim link chooses where: a stolen
    session alone (no code) neither asks for a refund nor reads a link."""
    from portal.extensions import db
    from portal.money.models import Refund

    app = refunding.portal
    owner = signed_in_with_two_factor(app, email("owner"), monkeypatch)
    operation_id = overpaid(refunding.api, refunding.sandbox)

    without = post(owner.client, f"/refunds/new/{operation_id}", {"basis": "surplus"})
    assert without.status_code == 422
    assert "Enter the 6-digit code" in text(without)
    with app.app_context():
        assert db.session.scalars(sa.select(Refund)).all() == []

    owner.clock.advance()
    code = {"code": owner.clock.code(owner.secret)}
    asked = post(owner.client, f"/refunds/new/{operation_id}", {"basis": "surplus", **code})
    assert asked.status_code == 302, text(asked)
    page = owner.client.get(asked.location).get_data(as_text=True)
    assert not CLAIM_LINK.search(page) and 'value="Show claim link"' in page
    refused = post(owner.client, f"{asked.location}/claim-link")
    assert refused.status_code == 422 and not CLAIM_LINK.search(text(refused))

    owner.clock.advance()
    fresh = {"code": owner.clock.code(owner.secret)}
    shown = post(owner.client, f"{asked.location}/claim-link", fresh)
    assert shown.status_code == 200
    assert CLAIM_LINK.search(text(shown))
    refund_id = asked.location.rsplit("/", 1)[1]
    assert audit_events(app, "refund.reveal_link") == [{"refund_id": refund_id}]


def test_staff_ask_for_no_refund_above_the_owners_limits_and_none_is_approved_above_them(
    refunding, monkeypatch
):
    """One owner approving an operator's refund would let money above the limits leave with one
    owner's consent, and an owner can sign in as any operator (they set their passwords): an
    operator's refund above the limits is refused, and one that is above them once claimed is
    approved by no owner."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.models import Refund
    from portal.money.rules import limits
    from tests.support.money import in_book

    app = refunding.portal
    owner = signed_in_with_two_factor(app, email("owner"), monkeypatch)
    operator, refund_page, link = by_link(refunding, "operator", basis="amount", amount="0.7")
    with app.app_context():
        limits.set_limits(accounts.merchant_named("Acme"), Decimal("1"), None)  # 1 USD each
        db.session.commit()
        before = len(db.session.scalars(sa.select(Refund)).all())

    booked = fresh_address()
    in_book(app, "BTC", booked)
    refused = ask_typed(refunding, operator, booked)
    assert refused.status_code == 422
    assert "only an owner may ask for it" in text(refused)
    with app.app_context():
        assert len(db.session.scalars(sa.select(Refund)).all()) == before

    address = fresh_address()
    assert "Awaiting approval" in text(opened(app, link)(address, landed=True))
    approval = approval_of(operator.get(refund_page))
    denied = approve_with_a_fresh_code(owner, approval)
    assert denied.status_code == 422
    assert "no single owner approves it" in text(denied)
    assert send_refunds(app) == 0 and refunding.sandbox.operations_to(address) == 0


def test_a_ready_refund_to_a_typed_address_that_left_the_book_is_canceled_not_sent(refunding):
    """The address left the book while the refund was ready (or while a sending that never left
    held it): the worker sends nothing to it and cancels the refund."""
    from portal.extensions import db
    from portal.money.models import BookAddress, Refund, RefundStage
    from tests.support.money import in_book

    app = refunding.portal
    owner = signed_in(app, email("owner"))
    address = fresh_address()
    in_book(app, "BTC", address)
    refund_page = typed_refund(refunding, owner, address)
    with app.app_context():
        assert db.session.scalars(sa.select(Refund)).one().stage is RefundStage.READY
        db.session.execute(db.delete(BookAddress).where(BookAddress.address == address))
        db.session.commit()

    assert send_refunds(app) == 0 and refunding.sandbox.operations_to(address) == 0
    assert "Canceled" in text(owner.get(refund_page))


def test_without_a_fresh_rate_staff_are_told_to_ask_again_after_the_next_sync(refunding):
    """The limits in the reporting currency cannot value a refund without a fresh rate: staff
    are told so, not that the refund is above the limits."""
    from datetime import timedelta

    from portal.database import utcnow
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.models import RateRecord
    from portal.money.rules import limits
    from tests.support.money import in_book

    app = refunding.portal
    operator = signed_in(app, email("operator"))
    address = fresh_address()
    in_book(app, "BTC", address)
    with app.app_context():
        limits.set_limits(accounts.merchant_named("Acme"), Decimal("1000000"), None)
        stale = utcnow() - timedelta(hours=1)
        db.session.execute(sa.update(RateRecord).values(last_seen_at=stale))
        db.session.commit()

    refused = ask_typed(refunding, operator, address)
    assert refused.status_code == 422
    assert "No fresh rate values this refund" in text(refused)


def test_the_claim_of_a_typed_refund_asks_for_its_address_in_the_book(refunding, monkeypatch):
    """The address leaves the book between the worker's sweep and its claim: the claim's own
    statement finds no entry, and nothing is sent."""
    from portal.extensions import db
    from portal.money.models import BookAddress
    from portal.money.rules import refunds
    from tests.support.money import in_book

    app = refunding.portal
    owner = signed_in(app, email("owner"))
    address = fresh_address()
    in_book(app, "BTC", address)
    typed_refund(refunding, owner, address)
    with app.app_context():
        db.session.execute(db.delete(BookAddress).where(BookAddress.address == address))
        db.session.commit()
    monkeypatch.setattr(refunds, "cancel_typed_to_unlisted", lambda *_: None)

    assert send_refunds(app) == 0 and refunding.sandbox.operations_to(address) == 0


def test_two_staff_refunds_approved_at_once_pass_the_daily_limit_once(refunding, monkeypatch):
    """Each refund is within the day's limit alone, not both: two owners approving them at the
    same moment send one, the other is refused with the reason."""
    import threading

    from tests.support import factories
    from tests.support.money import in_book

    app = refunding.portal
    owner = signed_in(app, email("owner"))
    daily = {"limit-wallet": "BTC", "limit-per_withdrawal": "", "limit-daily_limit": "0.3"}
    assert post(owner, "/withdrawals/limits", daily).status_code == 302
    operator = signed_in(app, email("operator"))
    pages = []
    for _ in range(2):  # 0.2 BTC each
        address = fresh_address()
        in_book(app, "BTC", address)
        pages.append(typed_refund(refunding, operator, address))
    approvers = []
    for address in ("b@acme.test", "c@acme.test"):
        factories.user(app, address, "owner")
        approvers.append(signed_in_with_two_factor(app, address, monkeypatch))
    approvals = [approval_of(operator.get(page)) for page in pages]
    for approver in approvers:
        approver.clock.advance()
    forms = [{"code": a.clock.code(a.secret)} for a in approvers]
    start, answers = threading.Barrier(2), []

    def approve(approver, approval: str, form: dict) -> None:
        start.wait()
        answers.append(post(approver.client, approval + "/approve", form))

    threads = [
        threading.Thread(target=approve, args=args)
        for args in zip(approvers, approvals, forms, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(answer.status_code for answer in answers) == [302, 422]
    [refused] = [answer for answer in answers if answer.status_code == 422]
    assert "would take today's money out above the owners' daily limit" in text(refused)
    assert send_refunds(app) == 1


def test_a_staff_refund_approved_already_is_not_refused_by_the_money_it_counts(
    refunding, monkeypatch
):
    """Once a staff refund is approved, the day's total counts it: a second owner pressing
    Approve on the page they opened before is told it no longer waits, not that it would pass
    the day's limit, and it is sent once."""
    from tests.support import factories
    from tests.support.money import in_book

    app = refunding.portal
    owner = signed_in(app, email("owner"))
    daily = {"limit-wallet": "BTC", "limit-per_withdrawal": "", "limit-daily_limit": "0.3"}
    assert post(owner, "/withdrawals/limits", daily).status_code == 302
    operator = signed_in(app, email("operator"))
    address = fresh_address()
    in_book(app, "BTC", address)
    approval = approval_of(operator.get(typed_refund(refunding, operator, address)))  # 0.2 BTC
    approvers = []
    for who in ("b@acme.test", "c@acme.test"):
        factories.user(app, who, "owner")
        approvers.append(signed_in_with_two_factor(app, who, monkeypatch))

    assert approve_with_a_fresh_code(approvers[0], approval).status_code == 302
    again = approve_with_a_fresh_code(approvers[1], approval)

    assert again.status_code == 302
    assert "no longer waits" in text(approvers[1].client.get(again.headers["Location"]))
    assert send_refunds(app) == 1
