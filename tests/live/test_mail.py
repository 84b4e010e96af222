"""E-mail: events mail the users who chose their type, through a real local
SMTP server; the outbox keeps what a server that is down did not take, and two senders send each
message once. Pages over real HTTP; events written with `events.record` as the mirror writes
them."""

from __future__ import annotations

import base64
import logging
import re
import threading
from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import quote, quote_plus

import pytest
import sqlalchemy as sa

from tests.support import factories
from tests.support.portal_app import ready_portal
from tests.support.portal_server import serve_in_thread
from tests.support.smtp import link_in, running_mail_server, text_of
from tests.support.visitor import Visitor, signed_in_visitor

PUBLIC_URL = "http://portal.example.com"  # http: the session cookie works on loopback


@pytest.fixture
def portal_config(portal_config, mail_server):
    return {
        **portal_config,
        "SMTP_URL": mail_server.url,
        "PUBLIC_URL": PUBLIC_URL,
        "MAIL_RETRY_SECONDS": 0,
    }


def transaction_record(tx_id: str = "9f2c4e0b7a", status: str = "undefined") -> dict:
    """A transaction of operation_record's operation, as the API returns it."""
    return {
        "id": "tx_51",
        "tx_id": tx_id,
        "operation_id": "op_8f3a2c",
        "amount": "0.1",
        "status": status,
        "linked": False,
        "reject_reason": None,
        "created_at": "2026-11-24T05:09:00Z",
        "updated_at": "2026-11-24T05:09:00Z",
    }


def operation_record(status: str = "confirmed", order: str = "A-1001", paid: str = "0.5") -> dict:
    """An operation as the API returns it (amounts as strings, times ISO 8601 Z), with the
    portal's reading of its money beside it, as the mirror writes an operation's event."""
    return {
        "id": "op_8f3a2c",
        "application_id": "app_1",
        "application_name": "Acme shop",
        "category": "application",
        "order_id": order,
        "amount": "0.5",
        "fee": "0.0025",
        "amount_paid": paid,
        "rate": "1",
        "currency": "BTC",
        "currency_paid": "BTC",
        "status": status,
        "address": "bc1qexampleaddress0000000000000000000000",
        "created_at": "2026-11-24T05:00:00Z",
        "updated_at": "2026-11-24T05:10:00Z",
        "payment_url": "https://pay.example.com/op_8f3a2c",
        "redirect_url": "https://shop.example.com/back",
        "transactions": [],
        "portal": {
            "state": "paid" if status == "confirmed" else "partly_paid",
            "due": "0.5",
            "received": paid,
            "awaiting": "0",
            "difference": str(Decimal(paid) - Decimal("0.5")),
        },
    }


def record(
    app, type_name: str, data: dict, key: str, merchant: str = "Acme", event_id: int | None = None
) -> None:
    """An event with notify on, as the mirror's sync writes it; `event_id`: the id a sequence
    handed it (a lower one than an event committed before it: its transaction committed late)."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.rules import events

    with app.app_context():
        events.record(
            accounts.merchant_named(merchant).id,
            events.EventType(type_name),
            dedup_key=key,
            data=data,
            occurred_at=datetime(2026, 11, 24, 5, 10, tzinfo=UTC),
            operation_id=data.get("operation_id") or data["id"],
            transaction_id=None if type_name.startswith("operation.") else data["id"],
        )
        if event_id is not None:
            [event] = db.session.new
            event.id = event_id
        db.session.commit()


def send_due(app) -> None:
    from portal.live.rules import mail

    with app.app_context():
        mail.send_due()


def queued(app) -> list[tuple[str, int]]:
    from portal.extensions import db
    from portal.live.models import MailMessage

    with app.app_context():
        rows = db.session.execute(sa.select(MailMessage.state, MailMessage.attempts)).all()
        return [(str(state), attempts) for state, attempts in rows]


def test_a_confirmed_payment_mails_the_owners_who_chose_it_and_nobody_else(
    app, accounts, mail_server
):
    record(app, "operation.confirmed", operation_record(), "op_8f3a2c:status:confirmed")
    record(app, "operation.partly_paid", operation_record("new", paid="0.2"), "op_8f3a2c:paid:0.2")
    send_due(app)
    send_due(app)  # a second tick sends nothing again

    [message] = mail_server.messages
    assert message["To"] == accounts.owner
    assert message["From"] == "Merchant Portal <portal@localhost>"
    assert message["Subject"] == "Paid — order A-1001 — received 0.5 BTC of 0.5 BTC"
    text = text_of(message).replace("\r\n", "\n")
    assert "Order number: A-1001" in text
    assert "State: Paid\nDue: 0.5 BTC\nReceived: 0.5 BTC\nDifference: 0 BTC\n" in text
    assert link_in(message) == f"{PUBLIC_URL}/operations/op_8f3a2c"


def test_a_mail_says_what_arrived_against_what_was_due_as_the_pages_write_amounts(
    app, accounts, mail_server
):
    """An operation confirmed by a link below its due: the owner reads the shortfall, the
    amounts as the operation page writes them (never `100.00000000 USD`)."""
    underpaid = operation_record(paid="25.00000000") | {
        "amount": "100.00000000",
        "currency": "USD",
        "currency_paid": "USDT",
        "portal": {
            "state": "underpaid",
            "due": "100.00000000",
            "received": "25.00000000",
            "awaiting": "1250.50000000",
            "difference": "-75.00000000",
        },
    }
    record(app, "operation.confirmed", underpaid, "op_8f3a2c:underpaid")
    send_due(app)

    [message] = mail_server.messages
    assert message["Subject"] == "Underpaid — order A-1001 — received 25 USDT of 100 USDT"
    text = text_of(message).replace("\r\n", "\n")
    assert text.startswith("Operation confirmed\n")
    assert (
        "State: Underpaid\nAmount: 100.00 USD\nDue: 100 USDT\nReceived: 25 USDT\n"
        "Difference: -75 USDT\nAwaiting a decision: 1,250.5 USDT\n"
    ) in text
    assert "00000" not in text


# An order number that would forge lines of a mail from the portal's own sender.
FORGED = "A-1\n\nAction needed: your account is locked. Confirm here:\nhttps://portal-verify.example/login"


def test_the_apis_values_each_stay_on_their_own_line_of_a_mail(app, accounts, mail_server):
    """An order number, a hash or a status from the API with line breaks is written on its
    own line, collapsed: it forges no line of a mail from the portal's own sender."""
    record(app, "operation.confirmed", operation_record(order=FORGED), "op_8f3a2c:confirmed")
    transaction = transaction_record(
        tx_id="9f2c\r\nAction needed: confirm here:\u2028https://portal-verify.example/h",
        status="undefined\n\nhttps://portal-verify.example/s",
    )
    record(app, "transaction.needs_review", transaction, "tx_51:needs_review")
    send_due(app)

    texts = [text_of(message).replace("\r\n", "\n") for message in mail_server.wait_for(3)]
    [operation] = [text for text in texts if "Order number:" in text]
    [payment, _] = [text for text in texts if "Hash:" in text]  # the owner's, the operator's
    assert (
        "\nOrder number: A-1 Action needed: your account is locked. Confirm here: "
        "https://portal-verify.example/login\nOperation: op_8f3a2c\n"
    ) in operation
    assert (
        "\nHash: 9f2c Action needed: confirm here: https://portal-verify.example/h\n"
        "Status: undefined https://portal-verify.example/s\n"
    ) in payment
    for text in texts:
        lines = text.splitlines()
        assert not [line for line in lines if line.startswith(("Action", "https://portal-v"))]
        assert link_in_text(text) == "http://portal.example.com"


def link_in_text(text: str) -> str:
    """Where the mail's own link ("Open it on the portal") points."""
    [line] = [line for line in text.splitlines() if line.startswith("Open it on the portal")]
    return line.split(": ", 1)[1].split("/operations")[0].split("/transactions")[0]


def test_an_event_mails_no_address_that_holds_a_list(app, accounts, mail_server, caplog):
    """An owner stored before addresses were checked, whose address is a list, is mailed
    nothing (a message would reach every mailbox of the list); the other owner still is. A
    message queued before the outbox checked addresses is not sent either: it ends failed.
    The log names neither address."""
    from portal.extensions import db
    from portal.live.models import MailMessage, MailState

    listed = "x@a.example,other@b.example"
    factories.user(app, listed, "owner", checked=False)
    factories.mail_message(app, "y@c.example,z@d.example", subject="Old", body="A link")
    record(app, "operation.confirmed", operation_record(), "op_8f3a2c:status:confirmed")
    send_due(app)

    assert [message["To"] for message in mail_server.messages] == [accounts.owner]
    with app.app_context():
        rows = db.session.execute(sa.select(MailMessage.to_address, MailMessage.state)).all()
        assert sorted(rows) == [
            (accounts.owner, MailState.SENT),
            ("y@c.example,z@d.example", MailState.FAILED),
        ]
    assert "not one email address" in caplog.text
    for address in ("x@a.example", "other@b.example", "y@c.example", "z@d.example"):
        assert address not in caplog.text


def test_a_subject_is_sent_on_one_line_whatever_breaks_its_lines(app, accounts, mail_server):
    """A subject holding the API's words (a refund's currency, an order number) with a line
    break of any kind is sent on one line, with its body: a header with one would add headers,
    or be no mail at all. Rows queued before are sent the same way."""
    from portal.extensions import db
    from portal.live.rules.outbox import queue

    with app.app_context():
        assert queue(accounts.owner, "Refund sent —\r\n1 US\u2028D\x85to\nBcc: x", "Claim: t0k")
        db.session.commit()
    factories.mail_message(app, accounts.operator, subject="After it", body="Hello")
    send_due(app)

    first, second = sorted(
        mail_server.wait_for(2), key=lambda message: message["To"] != accounts.owner
    )
    assert first["Subject"] == "Refund sent — 1 US D to Bcc: x"
    assert first["Bcc"] is None and "Claim: t0k" in text_of(first)
    assert second["Subject"] == "After it"
    assert queued(app).count(("sent", 0)) == 2


def test_an_event_of_the_first_sync_mails_nobody(app, accounts, mail_server):
    from portal.extensions import db
    from portal.identity.rules import accounts as service
    from portal.live.rules import events

    with app.app_context():
        events.record(
            service.merchant_named("Acme").id,
            events.EventType.OPERATION_CONFIRMED,
            dedup_key="history",
            data=operation_record(),
            occurred_at=datetime(2026, 11, 1, tzinfo=UTC),
            operation_id="op_8f3a2c",
            notify=False,
        )
        db.session.commit()
    send_due(app)
    assert mail_server.messages == []


def test_an_event_that_commits_below_the_cursor_is_mailed_once(
    each_database, app, accounts, mail_server
):
    """A sync's page took ids 50-51 and commits after an event with id 100 was mailed (the
    cursor passed it): the next ticks still mail the late events, each once."""
    record(app, "operation.confirmed", operation_record(order="A-1100"), "A-1100", event_id=100)
    send_due(app)
    record(app, "operation.confirmed", operation_record(order="A-1050"), "A-1050", event_id=50)
    record(app, "operation.confirmed", operation_record(order="A-1051"), "A-1051", event_id=51)
    send_due(app)
    send_due(app)
    send_due(app)

    orders = [message["Subject"].split(" — ")[1] for message in mail_server.messages]
    assert orders == ["order A-1100", "order A-1050", "order A-1051"]
    assert {message["To"] for message in mail_server.messages} == {accounts.owner}


def test_a_worker_that_queues_a_late_event_second_rolls_back_quietly(
    each_database, app, accounts, mail_server, monkeypatch, caplog
):
    """Two workers find the same late event: the one whose message the outbox refuses (the
    unique event and user) rolls back without an error, and the owner gets one mail."""
    from portal.live.rules import mail

    record(app, "operation.confirmed", operation_record(order="A-1100"), "A-1100", event_id=100)
    send_due(app)
    record(app, "operation.confirmed", operation_record(order="A-1050"), "A-1050", event_id=50)
    describe = mail.describe
    others = []

    def other_worker_first(event, link):
        """While this worker writes the mail, another one's whole tick queues and sends it."""
        if not others:
            others.append(event.id)
            send_due(app)
        return describe(event, link)

    monkeypatch.setattr(mail, "describe", other_worker_first)
    send_due(app)
    send_due(app)

    assert others == [50]
    subjects = [message["Subject"] for message in mail_server.messages]
    assert [subject.split(" — ")[1] for subject in subjects] == ["order A-1100", "order A-1050"]
    assert "Failed" not in caplog.text


@pytest.fixture
def url(app, accounts):
    with serve_in_thread(app) as served:
        yield served


def ticked(page: str) -> set[str]:
    """The event types ticked under "E-mail me about"."""
    boxes = re.findall(r"<input[^>]*name=\"mail-event_types\"[^>]*>", page)
    return {re.search(r'value="([^"]+)"', box).group(1) for box in boxes if " checked" in box}


def test_a_user_chooses_what_mails_them_on_the_account_page(app, url, accounts, mail_server):
    operator = signed_in_visitor(url, accounts.operator)
    page = operator.get("/account").text
    assert "E-mail me about" in page
    assert 'value="transaction.needs_review"' in page
    needs_a_person = {
        "transaction.needs_review",
        "operation.underpaid",
        "operation.overpaid",
        "operation.paid_late",
    }
    assert ticked(page) == needs_a_person
    owner = signed_in_visitor(url, accounts.owner)
    assert ticked(owner.get("/account").text) == needs_a_person | {"operation.confirmed"}
    assert "chooses which events mail them" in owner.get("/settings/notifications").text

    saved = operator.post(
        "/account/email", {"mail-event_types": ["transaction.needs_review"]}, page="/account"
    )
    assert saved.status_code == 302
    transaction = transaction_record()
    record(app, "transaction.needs_review", transaction, "tx_51:needs_review")
    send_due(app)

    messages = mail_server.wait_for(2)
    assert sorted(message["To"] for message in messages) == [accounts.operator, accounts.owner]
    assert link_in(messages[0]) == f"{PUBLIC_URL}/transactions/tx_51"
    assert "Hash: 9f2c4e0b7a" in text_of(messages[0])


def test_mail_waits_in_the_outbox_while_the_smtp_server_is_down(app, accounts, mail_server):
    mail_server.stop()
    record(app, "operation.confirmed", operation_record(), "op_8f3a2c:status:confirmed")
    send_due(app)
    assert queued(app) == [("queued", 1)]

    mail_server.start()
    send_due(app)
    send_due(app)
    assert [message["To"] for message in mail_server.messages] == [accounts.owner]
    assert queued(app) == [("sent", 1)]


def test_a_server_without_tls_is_sent_to_without_making_a_tls_context(
    app, accounts, mail_server, monkeypatch
):
    """Loading the trusted certificates takes about 30 ms of CPU: a connection that will not
    use TLS (smtp:// to a server that offers no STARTTLS) does not pay it."""
    import ssl

    def refused() -> None:
        raise AssertionError("a TLS context made for a connection without TLS")

    monkeypatch.setattr(ssl, "create_default_context", refused)
    record(app, "operation.confirmed", operation_record(), "op_8f3a2c:status:confirmed")
    send_due(app)
    assert [message["To"] for message in mail_server.messages] == [accounts.owner]


def _written_forms(password: str) -> list[str]:
    """How a password can show: as typed, percent-encoded as PORTAL_SMTP_URL holds it (every
    way), and as AUTH PLAIN sends it."""
    plain = f"\0portal\0{password}".encode()
    return [
        password,
        quote(password, safe=""),
        quote(password),
        quote_plus(password),
        base64.b64encode(plain).decode(),
    ]


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
def test_the_smtp_password_signs_in_and_is_never_logged(
    portal_config, app, accounts, caplog, capfd
):
    """Every log record at any level, the process's output and the error stored on the message
    (a login refused, then a server gone) hold neither password in any form, nor the URL."""
    from portal import create_app
    from portal.extensions import db
    from portal.live.models import MailMessage

    password = "p@ss:w/rd%42 +x"  # characters the URL must percent-encode
    wrong = "wr@ng/pass:word%"
    urls = []

    def sender(url: str, given: str, timeout: float = 10.0):
        login = url.replace("smtp://", f"smtp://portal:{quote(given, safe='')}@")
        urls.append(login)
        return create_app({**portal_config, "SMTP_URL": login, "SMTP_TIMEOUT": timeout})

    caplog.set_level(logging.DEBUG)
    with running_mail_server(("portal", password)) as server:
        record(app, "operation.confirmed", operation_record(), "op_8f3a2c:status:confirmed")
        # The same database. aiosmtpd leaves smtplib's second try of a wrong password (AUTH
        # LOGIN after PLAIN) unanswered: a short timeout ends it (the right one gets the usual).
        send_due(sender(server.url, wrong, timeout=0.5))
        assert server.messages == []
        assert queued(app) == [("queued", 1)]
        with app.app_context():
            refused = db.session.scalars(sa.select(MailMessage.last_error)).one()
        send_due(sender(server.url, password))
        assert [message["To"] for message in server.messages] == [accounts.owner]
        record(app, "operation.confirmed", operation_record(order="A-1002"), "A-1002")
    send_due(sender(server.url, password, timeout=0.5))  # the server is gone
    with app.app_context():
        gone = db.session.scalars(
            sa.select(MailMessage.last_error).where(MailMessage.attempts > 0)
        ).all()
    assert "Mail 1 not sent (attempt 1)" in caplog.text  # the failures are logged...
    assert "Mail 2 not sent (attempt 1)" in caplog.text
    output = capfd.readouterr()
    written = {
        "the log": caplog.text,
        "the output": output.out + output.err,
        "the stored errors": " ".join([refused or "", *(error or "" for error in gone)]),
    }
    for where, text in written.items():  # ...neither password, nor the URL
        for secret in [*_written_forms(password), *_written_forms(wrong), *urls]:
            assert secret not in text, f"{secret!r} in {where}"


@pytest.fixture
def postgres_app(postgres_url, portal_config):
    from portal import create_app
    from portal.extensions import db

    application = ready_portal(create_app({**portal_config, "DATABASE_URL": postgres_url}))
    yield application
    with application.app_context():
        db.engine.dispose()


def test_two_workers_at_once_send_each_message_once(postgres_app, mail_server):

    for number in range(3):
        factories.user(postgres_app, f"owner{number}@acme.test", "owner")
    for number in range(8):
        order = f"A-{2000 + number}"
        record(postgres_app, "operation.confirmed", operation_record(order=order), order)
    start = threading.Barrier(2)

    def worker() -> None:
        start.wait()
        send_due(postgres_app)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    send_due(postgres_app)  # what either left for later

    sent = [(message["To"], message["Subject"]) for message in mail_server.wait_for(24)]
    assert len(set(sent)) == len(sent) == 24
    assert len(mail_server.messages) == 24


# --- Without e-mail --------------------------------------------------------------------------


@pytest.fixture
def url_without_mail(portal_config, accounts):
    """The same database and users, served by a portal with no SMTP_URL."""
    from portal import create_app
    from portal.extensions import db

    application = create_app({**portal_config, "SMTP_URL": None})
    with serve_in_thread(application) as served:
        yield served
    with application.app_context():
        db.engine.dispose()


def test_without_smtp_the_pages_say_e_mail_is_off(url_without_mail, accounts):
    owner = signed_in_visitor(url_without_mail, accounts.owner)
    assert "E-mail is off" in owner.get("/account").text
    assert "E-mail me about" not in owner.get("/account").text
    users = owner.get("/settings/users").text
    assert "E-mail is off" in users
    assert "Send invitation" not in users
    assert "E-mail is off" in owner.get("/settings/notifications").text
    refused = owner.post(
        "/settings/users/invite",
        {"invite-email": "new@acme.test", "invite-role": "operator"},
        page="/settings/users",
    )
    assert refused.status_code == 422
    assert "new@acme.test" not in owner.get("/settings/users").text
    forgot = Visitor(url_without_mail).get("/password/forgot")
    assert "E-mail is off" in forgot.text
    assert "Send me a link" not in forgot.text
