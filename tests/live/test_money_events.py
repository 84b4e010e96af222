"""People hear what the money amounts to: each operation's event reaches the shop with the
portal's reading of its money (`portal`: state, due, received, awaiting, difference) and mails
its state in the words of its badge, against a real sandbox, a real shop and a real SMTP
server."""

from __future__ import annotations

import csv
import io
import re
import uuid
from decimal import Decimal

import pytest
import requests
import sqlalchemy as sa

from portal.api import MerchantApiClient
from tests.support.forms import signed_in
from tests.support.mirror import sync_now
from tests.support.money import BTC_ADDRESS
from tests.support.portal_app import MERCHANT, connected_portal, email
from tests.support.shop import run_shop


@pytest.fixture
def portal(tmp_path, sandbox, mail_server):
    """The portal on an empty sandbox, its first sync done, every event type sent to a shop and
    mailed to the owner."""
    from portal.extensions import db
    from portal.identity.models import User
    from portal.identity.rules import accounts
    from portal.live.rules import mail, webhooks
    from portal.live.rules.events import EventType

    with (
        connected_portal(
            tmp_path, sandbox, SYNC_SECONDS=0, SMTP_URL=mail_server.url, MAIL_RETRY_SECONDS=0
        ) as app,
        run_shop() as shop,
    ):
        with app.app_context():
            merchant = accounts.merchant_named(MERCHANT)
            webhooks.save_endpoint(merchant, shop.url, [type_.value for type_ in webhooks.TYPES])
            owner = db.session.scalars(sa.select(User).filter_by(email=email("owner"))).one()
            mail.choose(owner, EventType)
        sync_now(app)
        app.shop, app.heard_so_far = shop, 0
        yield app


@pytest.fixture
def api(sandbox):
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


def heard(app) -> list[tuple[dict, str | None]]:
    """Every operation event the shop received (its body) with the subject mailed about it,
    after a sync, the deliveries and the mail of the tick."""
    from portal.extensions import db
    from portal.live.models import Event, MailMessage
    from portal.live.rules import mail, webhooks

    sync_now(app)
    with app.app_context():
        webhooks.deliver_due(budget_seconds=10)
        mail.send_due()
        subjects = dict(
            db.session.execute(
                sa.select(Event.public_id, MailMessage.subject).join(
                    MailMessage, MailMessage.event_id == Event.id
                )
            ).all()
        )
    received = app.shop.requests()
    bodies = [request.json for request in received[app.heard_so_far :]]
    app.heard_so_far = len(received)
    return [
        (body, subjects.get(body["id"])) for body in bodies if body["type"].startswith("operation.")
    ]


def figures(portal: dict) -> dict:
    """A `portal` object with its decimal strings read as Decimals (the state as it is)."""
    return {key: value if key == "state" else Decimal(value) for key, value in portal.items()}


def of(app, operation_id: str) -> list[tuple[str, dict, str | None]]:
    """The type, `portal` figures and mail subject of each event about the operation heard."""
    return [
        (body["type"], figures(body["portal"]), subject)
        for body, subject in heard(app)
        if body["data"]["id"] == operation_id
    ]


def test_each_state_reaches_the_shop_as_portal_state_and_the_mail_in_its_words(
    portal, api, sandbox
):
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.payments.rules.operation_money import State
    from portal.payments.rules.state_words import STATE_WORDS

    with portal.app_context():
        accounts.merchant_named(MERCHANT).payment_tolerance_percent = Decimal(1)
        db.session.commit()

    made = {
        state: api.create_operation("0.5", "BTC", f"order-{uuid.uuid4().hex[:8]}")
        for state in State
        if state not in (State.SENT, State.REFUNDED, State.PARTLY_REFUNDED)
    }
    made[State.SENT] = api.withdraw(Decimal("0.5"), "BTC", BTC_ADDRESS)
    ids = {state: operation.id for state, operation in made.items()}
    sandbox.receive(ids[State.AWAITING_DECISION], "0.5", "undefined")
    events = heard(portal)  # their creation
    sandbox.receive(ids[State.PAID], "0.5")
    sandbox.receive(ids[State.OVERPAID], "0.7")
    sandbox.receive(ids[State.PARTLY_PAID], "0.2")
    sandbox.receive(ids[State.PAID_UNCONFIRMED], "0.498")  # within the 1 % tolerance
    api.link_transactions(ids[State.UNDERPAID], [sandbox.receive(ids[State.UNDERPAID], "0.2")])
    for ending in (State.EXPIRED, State.PAID_LATE):
        sandbox.control("POST", f"operations/{ids[ending]}/expire")
    sandbox.receive(ids[State.PAID_LATE], "0.5", "undefined")
    api.cancel_operation(ids[State.CANCELED])
    sandbox.control("POST", "flags", {"payment_gateway_fails": True})
    paid_on_page = requests.post(
        made[State.FAILED].payment_url,
        data={"action": "pay_full"},
        allow_redirects=False,
        timeout=10,
    )
    assert paid_on_page.status_code in (200, 302, 303)
    events += heard(portal)

    last = {}  # the last event of each operation, with its mail's subject
    for body, subject in events:
        last[body["data"]["id"]] = (body, subject)
    for state, operation_id in ids.items():
        body, subject = last[operation_id]
        assert body["portal"]["state"] == state.value, (state, body)
        assert Decimal(body["portal"]["due"]) == Decimal("0.5")
        if state is State.SENT:  # a withdrawal: no order, nothing due
            assert subject == "Sent — 0.5 BTC"
        else:
            assert subject.startswith(f"{STATE_WORDS[state]} — order "), (state, subject)
    assert_pages_say_each_state(portal, ids)


def assert_pages_say_each_state(app, ids: dict) -> None:
    """The list's badge, the operation page's badge, its timeline's last state line and the
    export's cell say each state in the words the shop's mail and `portal.state` said."""
    from portal.payments.rules.operation_money import State
    from portal.payments.rules.state_words import STATE_WORDS

    owner = signed_in(app, email("owner"))
    listed = owner.get("/operations?per_page=100").get_data(as_text=True)
    exported = list(csv.DictReader(io.StringIO(owner.get("/operations/export.csv").text)))
    cells = {row["id"]: row["state"] for row in exported}
    announced = {State.AWAITING_PAYMENT, State.AWAITING_DECISION, State.SENT}  # no state event
    for state, operation_id in ids.items():
        words = STATE_WORDS[state]
        row = re.search(
            rf'<tr>(?:(?!</tr>).)*<a href="/operations/{operation_id}">.*?</tr>', listed, re.S
        ).group(0)
        assert badges(row) == [words], (state, row)
        page = owner.get(f"/operations/{operation_id}").get_data(as_text=True)
        assert words in badges(page), (state, badges(page))
        if state not in announced:
            timeline = re.findall(
                r'<li class="timeline-operation-[^"]*">.*?</time>: ([^<]*)</li>', page
            )
            assert any(line.startswith(words) for line in timeline), (state, timeline)
        assert cells[operation_id] == words, (state, cells[operation_id])


def badges(html: str) -> list[str]:
    return re.findall(r'<span class="badge state-[a-z_]+">([^<]+)</span>', html)


def test_an_accepted_underpayment_is_underpaid_and_confirmed_and_a_top_up_is_news(
    portal, api, sandbox
):
    operation = api.create_operation("0.5", "BTC", "order-under")
    heard(portal)
    api.link_transactions(operation.id, [sandbox.receive(operation.id, "0.2", "undefined")])
    money = {
        "due": Decimal("0.5"),
        "received": Decimal("0.2"),
        "awaiting": Decimal(0),
        "difference": Decimal("-0.3"),
    }
    linked = of(portal, operation.id)
    assert [(type_, money) for type_, money, _ in linked] == [
        ("operation.underpaid", {"state": "underpaid", **money}),
        ("operation.confirmed", {"state": "underpaid", **money}),
    ]
    subject = linked[0][2]
    assert subject == "Underpaid — order order-under — received 0.2 BTC of 0.5 BTC"

    top_up = sandbox.receive(operation.id, "0.1", "undefined")
    api.link_transactions(operation.id, [top_up])
    assert [
        (type_, money["received"], money["state"]) for type_, money, _ in of(portal, operation.id)
    ] == [("operation.underpaid", Decimal("0.3"), "underpaid")]
    api.link_transactions(operation.id, [sandbox.receive(operation.id, "0.2", "undefined")])
    assert [(type_, money["state"]) for type_, money, _ in of(portal, operation.id)] == [
        ("operation.confirmed", "paid")
    ]


def test_a_confirmation_after_a_reject_is_news_again(portal, api, sandbox):
    operation = api.create_operation("0.5", "BTC", "order-again")
    payment = sandbox.receive(operation.id, "0.5", "undefined")
    heard(portal)
    api.link_transactions(operation.id, [payment])
    assert [type_ for type_, _, _ in of(portal, operation.id)] == ["operation.confirmed"]
    api.reject_transactions(operation.id, [payment], "not this order's")
    assert [type_ for type_, _, _ in of(portal, operation.id)] == ["operation.status_changed"]
    api.link_transactions(operation.id, [payment])
    assert [(type_, money["state"]) for type_, money, _ in of(portal, operation.id)] == [
        ("operation.confirmed", "paid")
    ]


def test_an_overpaid_operation_reaches_the_shop_as_overpaid(portal, api, sandbox):
    operation = api.create_operation("20", "USDT", "order-over", payment_currency="USDT")
    heard(portal)
    sandbox.receive(operation.id, "30")
    assert [(type_, money["difference"]) for type_, money, _ in of(portal, operation.id)] == [
        ("operation.overpaid", Decimal(10)),
        ("operation.confirmed", Decimal(10)),
    ]


def test_a_late_link_is_paid_late_and_never_confirmed(portal, api, sandbox):
    operation = api.create_operation("0.5", "BTC", "order-late")
    heard(portal)
    sandbox.control("POST", f"operations/{operation.id}/expire")
    late = sandbox.receive(operation.id, "0.5", "undefined")
    assert [type_ for type_, _, _ in of(portal, operation.id)] == [
        "operation.expired",
        "operation.paid_late",
    ]
    api.link_transactions(operation.id, [late])
    assert [(type_, money["received"]) for type_, money, _ in of(portal, operation.id)] == [
        ("operation.paid_late", Decimal("0.5"))
    ]
