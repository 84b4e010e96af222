"""A peer that answers one line at a time, each well within any per-read timeout, holds no
thread past the call's total deadline: the Merchant API (the client itself, a list page on
gunicorn, the worker's mirror sync), a shop receiving a webhook, an SMTP server.

Each attack below would last as long as the dripping server runs (the servers of
tests/support/dripping.py never finish an answer); each call is run on a thread of its own and
given a generous bound, so a missing deadline fails with "still waiting" instead of hanging.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

import pytest

from portal.api import ApiUnavailable, MerchantApiClient
from portal.api.deadline import DeadlinePassed, within
from portal.api.session import make_session
from tests.support import factories
from tests.support.dripping import Dripping, dripping_http, dripping_smtp, run_dripping
from tests.support.portal_server import run_portal
from tests.support.tls import server_context

# Each test waits out a total deadline on purpose.
pytestmark = pytest.mark.slow

T = TypeVar("T")
CONNECT, READ = 0.5, 1.0  # the API's total timeout is their sum
TOTAL = CONNECT + READ
SLACK = 3.0  # for a loaded machine; the attacks last as long as the servers run


def finished_within(bound: float, call: Callable[[], T]) -> T | BaseException:
    """What `call` returned or raised; fails if it takes over `bound` seconds."""
    outcome: list[T | BaseException] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as failure:  # handed to the test
            outcome.append(failure)

    thread = threading.Thread(target=run, daemon=True)  # ends when the server closes
    thread.start()
    thread.join(bound)
    assert outcome, f"still waiting after {bound:g} s"
    return outcome[0]


def test_an_api_that_drips_its_answer_is_a_timeout_after_connect_plus_read():
    """The connection check (ping), one list page, and reading every page: each call ends at
    its total deadline as a timeout (a 504 for pages), not one read timeout per line."""
    with dripping_http() as api:
        client = MerchantApiClient(
            api.url, token="dripped-token-0123456789", timeout=(CONNECT, READ)
        )
        for call in (client.ping, client.list_operations, lambda: list(client.iter_operations())):
            started = time.monotonic()
            failure = finished_within(TOTAL + SLACK, call)
            assert isinstance(failure, ApiUnavailable), failure
            assert (failure.timeout, failure.request_sent) == (True, True)
            assert time.monotonic() - started > TOTAL - 0.1  # the deadline, not another failure
        assert api.lines_sent >= 1  # the answer had begun to drip (on a loaded machine the
        # dialogue before the drip may use most of the deadline, leaving time for one line)


def test_a_pooled_connection_used_again_is_under_the_next_calls_deadline():
    """The connection check is answered; the list page asked on the same connection drips."""
    with dripping_http(skip=1) as api:
        client = MerchantApiClient(
            api.url, token="dripped-token-0123456789", timeout=(CONNECT, READ)
        )
        client.ping()
        failure = finished_within(TOTAL + SLACK, client.list_operations)
        assert isinstance(failure, ApiUnavailable) and failure.timeout, failure
        assert api.connections == 1


def test_a_call_whose_deadline_passed_tries_no_other_connection():
    """A server that drips its status line a letter at a time: the deadline shuts the
    connection down before the line ends, which urllib3 counts as a connection error, retryable
    for a GET. Once the deadline has passed, nothing is tried again: no second connection."""
    stammering = Dripping(first=b"H", drip=b"T", trigger=b"GET")
    with run_dripping(stammering) as api:
        client = MerchantApiClient(
            api.url, token="dripped-token-0123456789", timeout=(CONNECT, READ)
        )
        failure = finished_within(TOTAL + SLACK, client.list_operations)
        assert isinstance(failure, ApiUnavailable) and failure.timeout, failure
        assert api.connections == 1


def test_a_connection_back_in_its_pool_is_left_alone_when_the_call_that_used_it_runs_out():
    """A call read its answer whole, and its connection went back to the pool, where another
    call may take it: the first call's deadline passing later shuts that connection down no
    more (here the next request finds it alive and uses it again)."""
    with dripping_http(skip=2) as api:
        session = make_session(retries=0)
        with pytest.raises(DeadlinePassed), within(TOTAL):
            assert session.get(api.url, timeout=5).json() == {}
            time.sleep(TOTAL + 0.5)  # the deadline passes while the connection waits in the pool
        assert session.get(api.url, timeout=5).json() == {}
        assert api.connections == 1


def _connect_to(app, url: str) -> None:
    """Point the merchant's stored connection at `url`, as a changed API would be."""
    from portal.extensions import db
    from portal.settings.models import ApiConnection

    with app.app_context():
        db.session.execute(db.update(ApiConnection).values(base_url=url))
        db.session.commit()


@pytest.mark.long  # started first: it would otherwise keep one worker busy at the end
def test_a_list_page_on_gunicorn_answers_from_the_mirror_while_the_api_drips(tmp_path, sandbox):
    env = {"PORTAL_API_TIMEOUT_CONNECT": str(CONNECT), "PORTAL_API_TIMEOUT_READ": str(READ)}
    with (
        dripping_http() as api,
        run_portal(tmp_path, sandbox, gunicorn=True, env=env) as server,
    ):
        owner = server.signed_in_session("owner@acme.test")
        _connect_to(server.app, api.url)
        # A list page waits for a retried GET at most its total timeout, then shows the
        # portal's copy, read-only.
        answer = finished_within(
            TOTAL + SLACK, lambda: owner.get(f"{server.url}/operations", timeout=30)
        )
        assert answer.status_code == 200, answer
        assert 'id="read-only-banner"' in answer.text


@pytest.fixture
def portal_config(portal_config):
    return portal_config | {
        "API_TIMEOUT_CONNECT": CONNECT,
        "API_TIMEOUT_READ": READ,
        "WEBHOOK_TIMEOUT_SECONDS": TOTAL,
        "SMTP_TIMEOUT": TOTAL,
        "MAIL_FROM": "Portal <portal@acme.test>",
        "MAIL_RETRY_SECONDS": 0,
    }


def test_the_mirror_sync_gives_up_on_a_dripping_api_at_the_deadline(app, accounts):
    from portal import crypto
    from portal.extensions import db
    from portal.identity.rules import accounts as people
    from portal.live.rules import mirror
    from portal.settings.models import ApiConnection, Environment

    with dripping_http() as api, app.app_context():
        acme = people.merchant_named("Acme")
        db.session.add(
            ApiConnection(
                merchant=acme,
                base_url=api.url,
                environment=Environment.SANDBOX,
                token_encrypted=crypto.encrypt("dripped-token-0123456789"),
            )
        )
        db.session.commit()
        merchant_id = acme.id

        def sync():
            with app.app_context():
                return mirror.sync_merchant(merchant_id, force=True)

        report = finished_within(2 * TOTAL + SLACK, sync)
        assert not isinstance(report, BaseException), report
        assert report is not None and report.error, report
    assert api.lines_sent >= 1  # the drip had begun


def test_a_shop_that_drips_its_answer_costs_one_deadline(app, accounts):
    """The worker's delivery gives up on the shop at the webhook timeout, records why, and
    retries later."""
    from portal.extensions import db
    from portal.identity.rules import accounts as people
    from portal.live.models import DeliveryState, WebhookAttempt, WebhookDelivery
    from portal.live.rules import events, webhooks

    with dripping_http() as shop:
        with app.app_context():
            acme = people.merchant_named("Acme")
            webhooks.save_endpoint(acme, shop.url + "/hooks", ["operation.confirmed"])
            events.record(
                acme.id,
                events.EventType.OPERATION_CONFIRMED,
                dedup_key="slow-shop",
                data={"id": "op-1"},
                occurred_at=datetime.now(UTC),
                operation_id="op-1",
                notify=True,
            )
            db.session.commit()

        def deliver():
            with app.app_context():
                return webhooks.deliver_due(budget_seconds=60)

        delivered = finished_within(TOTAL + SLACK, deliver)
        assert delivered == 0, delivered
        assert shop.lines_sent >= 1  # the drip had begun
    with app.app_context():
        attempt = db.session.scalars(db.select(WebhookAttempt)).one()
        assert attempt.error == f"No answer within {TOTAL:g} s"
        assert attempt.duration_ms < (TOTAL + SLACK) * 1000
        delivery = db.session.scalars(db.select(WebhookDelivery)).one()
        assert delivery.state == DeliveryState.PENDING  # tried again after the backoff


@pytest.mark.parametrize(
    ("at", "skip", "messages"),
    [(None, 0, 1), (b"MAIL", 0, 1), (b"MAIL", 1, 2), (b"QUIT", 0, 1)],
    ids=["greeting", "sending", "second-message", "quit"],
)
def test_an_smtp_server_that_drips_costs_one_deadline_per_message(
    app, portal_config, at, skip, messages
):
    """Connecting (the greeting), sending a message, sending the next message on the same
    connection, saying goodbye: each dialogue ends at `PORTAL_SMTP_TIMEOUT`, and a message it
    cut short waits for a retry."""
    from portal.extensions import db
    from portal.live.models import MailMessage, MailState
    from portal.live.rules import mail

    with dripping_smtp(at, skip) as server:
        app.config["SMTP_URL"] = server.url
        for number in range(messages):
            factories.mail_message(app, f"person{number}@acme.test")

        def send():
            with app.app_context():
                mail.send_due()

        failure = finished_within(TOTAL + SLACK + 1, send)
        assert failure is None, failure
        assert server.lines_sent >= 1  # the drip had begun
    with app.app_context():
        sent, dripped = [], []
        for message in db.session.scalars(db.select(MailMessage).order_by(MailMessage.id)):
            (sent if message.state == MailState.SENT else dripped).append(message)
        assert len(sent) == (messages if at == b"QUIT" else skip)  # QUIT comes after them
        for waiting in dripped:  # the message the deadline cut short
            assert (waiting.state, waiting.attempts) == (MailState.QUEUED, 1)
            assert waiting.last_error == f"DeadlinePassed: no complete answer within {TOTAL:g} s"


def test_an_smtps_server_that_drips_its_greeting_costs_one_deadline(app, tmp_path, monkeypatch):
    """`smtps://`: the socket is watched from before the TLS handshake, and through it."""
    from portal.extensions import db
    from portal.live.models import MailMessage
    from portal.live.rules import mail

    tls = server_context(tmp_path, "127.0.0.1")
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "127.0.0.1.pem"))  # trusted by the portal
    with dripping_smtp(tls=tls) as server:
        app.config["SMTP_URL"] = server.url
        factories.mail_message(app)

        def send():
            with app.app_context():
                mail.send_due()

        assert finished_within(TOTAL + SLACK, send) is None
        assert server.lines_sent >= 1  # the drip had begun
    with app.app_context():
        waiting = db.session.scalars(db.select(MailMessage)).one()
        assert waiting.last_error == f"DeadlinePassed: no complete answer within {TOTAL:g} s"
