"""One merchant cannot hold the worker back for the others: a shop that does not answer costs
its own endpoint's turn, not another merchant's deliveries nor a password-reset mail; a record
that breaks one merchant's webhooks or mail is recorded on that merchant and the tick goes on;
a lease always outlives the send it covers. Real shops and a real SMTP server on loopback, and a
real worker process."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime

import pytest
from cryptography.fernet import Fernet

from tests.support import factories
from tests.support.mirror_rows import operation_record
from tests.support.polling import wait_for
from tests.support.shop import run_shop
from tests.support.worker import portal_process, running_worker

# Worker processes and shops that do not answer.
pytestmark = pytest.mark.slow

TIMEOUT = 15.0  # what a shop that does not answer costs the endpoint's turn


@pytest.fixture
def shops():
    with run_shop() as silent, run_shop() as quick:
        yield silent, quick


def set_up(app, silent_url: str, quick_url: str) -> None:
    """Acme's webhooks go to the silent shop, Other's to the quick one."""
    from portal.extensions import db
    from portal.live.models import WebhookEndpoint

    for name, url in (("Acme", silent_url), ("Other", quick_url)):
        factories.webhook_endpoint(app, url, merchant=name, since_event_id=0)
    with app.app_context():
        assert db.session.query(WebhookEndpoint).count() == 2


def record(app, merchant: str, order_id: str, type_: str = "operation.confirmed", **data) -> str:
    """An operation's event (confirmed unless `type_` says), as the mirror writes it; its public
    id."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.models import Event
    from portal.live.rules import events

    key = f"{merchant}:{time.monotonic_ns()}"
    with app.app_context():
        events.record(
            accounts.merchant_named(merchant).id,
            events.EventType(type_),
            dedup_key=key,
            data=events.with_money(
                operation_record(
                    id=f"op-{merchant}", order_id=order_id, status="confirmed", **data
                ),
                None,
            ),
            occurred_at=datetime.now(UTC),
            operation_id=f"op-{merchant}-{time.monotonic_ns()}",
            notify=True,
        )
        db.session.commit()
        return db.session.scalar(
            db.select(Event.public_id).where(Event.dedup_key.endswith(f":{key}"))
        )


def ask_for_reset(app, email: str) -> None:
    from portal.identity.rules import one_time_links

    with app.app_context():
        assert one_time_links.request_reset(email, "127.0.0.1")


@pytest.mark.long
def test_a_shop_that_does_not_answer_holds_back_no_other_merchant_nor_a_reset_mail(
    tmp_path, portal_config, accounts, shops, mail_server, monkeypatch
):
    from portal import create_app
    from tests.support.portal_app import ready_portal

    silent, quick = shops
    silent.delay = 60  # never answers within the timeout
    app = ready_portal(create_app(portal_config | {"SMTP_URL": mail_server.url}))
    set_up(app, silent.url, quick.url)
    for name, value in {
        "SMTP_URL": mail_server.url,
        "WEBHOOK_TIMEOUT_SECONDS": str(TIMEOUT),
        "WEBHOOK_BACKOFF_SECONDS": "600",  # one attempt of the silent shop in this test
    }.items():
        monkeypatch.setenv(f"PORTAL_{name}", value)
    worker = running_worker(app, tmp_path / "worker")
    with worker as process:
        # Acme's events come first, more of them than the worker has threads: a worker that
        # sends them before Other's, or gives each tick's thread one of them, waits the timeout.
        for number in range(6):
            record(app, "Acme", f"acme-{number}")
        silent.wait_for(1, timeout=TIMEOUT)
        time.sleep(5)  # five more ticks (more than 4 threads) while the silent shop holds on
        started = time.monotonic()
        other = record(app, "Other", "other-1")
        ask_for_reset(app, accounts.other_owner)

        wait_for(lambda: other in quick.event_ids(), timeout=3 * TIMEOUT)
        delivered = time.monotonic() - started
        (reset,) = wait_for(
            lambda: [m for m in mail_server.messages if "Reset your password" in m["Subject"]],
            timeout=3 * TIMEOUT,
        )
        mailed = time.monotonic() - started
        assert len(silent.requests()) >= 1, "the silent shop was asked meanwhile"
        process.stop(kill=True)  # the silent shop holds its turn for the timeout
    assert reset["To"] == accounts.other_owner
    # Each within a few ticks (1 s apart); behind the silent shop both came after 11 s.
    assert delivered < TIMEOUT / 2, f"Other's webhook after {delivered:.1f} s"
    assert mailed < TIMEOUT / 2, f"the reset mail after {mailed:.1f} s"


def test_a_record_that_breaks_one_merchants_webhooks_or_mail_stops_no_one_else(
    portal_config, accounts, shops, mail_server
):
    """Acme's webhook secret no key decrypts (as after a key rotation that missed it), and an
    event of Acme holds a lone surrogate no database can store in a mail: the first is recorded
    on Acme's delivery, the second logged for Acme; Other's webhook, Other's mail and a reset
    mail go."""
    from portal import create_app
    from portal.extensions import db
    from portal.identity.rules import accounts as merchants
    from portal.live.models import MailMessage, WebhookAttempt, WebhookEndpoint
    from portal.live.rules import mail, webhooks
    from tests.support.portal_app import ready_portal

    silent, quick = shops
    app = ready_portal(create_app(portal_config | {"SMTP_URL": mail_server.url}))
    set_up(app, silent.url, quick.url)
    with app.app_context():
        acme = merchants.merchant_named("Acme")
        endpoint = db.session.scalars(
            db.select(WebhookEndpoint).where(WebhookEndpoint.merchant_id == acme.id)
        ).one()
        endpoint.secret_encrypted = Fernet(Fernet.generate_key()).encrypt(b"whsec_lost").decode()
        db.session.commit()
    record(app, "Acme", "acme-1")
    record(app, "Acme", "acme-2", "transaction.needs_review", tx_id="broken-\ud800")
    other = record(app, "Other", "other-1")
    ask_for_reset(app, accounts.owner)

    with app.app_context():
        assert webhooks.deliver_due() == 1
        mail.send_due()
        attempts = db.session.scalars(db.select(WebhookAttempt).order_by(WebhookAttempt.id))
        assert {(attempt.status, attempt.error) for attempt in attempts} == {
            (None, "Not sent: TokenKeyError"),  # on Acme's delivery, retried later
            (200, None),
        }
        sent = db.session.scalars(db.select(MailMessage.subject)).all()
    assert quick.event_ids() == [other] and silent.requests() == []
    subjects = sorted(message["Subject"] for message in mail_server.wait_for(2))
    assert subjects[0].startswith("Paid — order other-1")
    assert subjects[1] == "Reset your password on the merchant portal"
    assert len(sent) == 2, "Acme's broken event made no message, and stopped none"


def test_a_lease_that_could_run_out_mid_send_is_refused(portal_config):
    from portal import create_app
    from portal.config import ConfigError

    for lease, timeout in (
        ({"WEBHOOK_LEASE_SECONDS": 9}, {"WEBHOOK_TIMEOUT_SECONDS": 5}),
        ({"MAIL_LEASE_SECONDS": 30}, {"SMTP_TIMEOUT": 20}),
    ):
        with pytest.raises(ConfigError) as refused:
            create_app(portal_config | lease | timeout)
        (lease_name,), (timeout_name,) = lease, timeout
        assert f"PORTAL_{lease_name}" in str(refused.value)
        assert f"PORTAL_{timeout_name}" in str(refused.value)


def test_two_workers_with_the_shortest_lease_send_each_event_once(
    app, portal_config, accounts, shops
):
    """The shortest lease allowed (twice the timeout) covers a slow shop's send: two
    deliverers in two processes send every event, and none twice. The shop's delay leaves a
    wide margin to the timeout (a missed send would wait for its backoff, past this test)."""
    silent, quick = shops
    quick.delay = 0.3
    set_up(app, silent.url, quick.url)
    sent = {record(app, "Other", f"order-{number}") for number in range(4)}
    deliverers = [
        portal_process(
            portal_config, DELIVERER, WEBHOOK_TIMEOUT_SECONDS="2", WEBHOOK_LEASE_SECONDS="4"
        )
        for _ in range(2)
    ]
    for deliverer in deliverers:
        assert deliverer.wait(timeout=60) == 0
    arrived = Counter(quick.event_ids())
    assert [event for event, times in arrived.items() if times > 1] == [], "none twice"
    assert set(arrived) == sent, "every event"


DELIVERER = """
from portal import create_app
from portal.live.rules import webhooks
with create_app().app_context():
    webhooks.deliver_due(budget_seconds=10)
"""


def test_a_stopping_worker_ends_its_delivery_turns_after_the_post_under_way(
    tmp_path, app, accounts, shops, monkeypatch
):
    """SIGTERM while a slow shop takes a long backlog: the turn ends after the POST under way
    (not at the end of the tick's interval), and leaves no lease to run out."""
    from portal.extensions import db
    from portal.live.models import WebhookDelivery

    silent, slow = shops
    slow.delay = 0.5
    set_up(app, silent.url, slow.url)
    for number in range(60):
        record(app, "Other", f"order-{number}")
    monkeypatch.setenv("PORTAL_WEBHOOK_TIMEOUT_SECONDS", "5")
    with running_worker(app, tmp_path / "worker", sync_seconds=60) as worker:
        try:
            slow.wait_for(2, timeout=30)
        except AssertionError as late:  # what the worker and the deliveries say, to tell why
            raise AssertionError(f"{late}\n{_deliveries(app)}\n{worker.output()}") from None
        started = time.monotonic()
        assert worker.stop() == 0, worker.output()
        stopped = time.monotonic() - started
    # Within a POST or two, where the turn would have gone on for the 60 s interval.
    assert stopped < 15, f"stopped after {stopped:.1f} s"
    assert len(slow.requests()) < 40
    with app.app_context():
        leased = db.session.scalars(
            db.select(WebhookDelivery.id).where(WebhookDelivery.lease_owner.is_not(None))
        ).all()
    assert leased == [], "a lease left to run out"


def _deliveries(app) -> list[tuple]:
    """Each delivery's state, attempts, lease and next attempt: whether the worker made them,
    claimed them or tried them."""
    from portal.extensions import db
    from portal.live.models import WebhookDelivery

    columns = ("state", "attempts", "lease_owner", "lease_until", "next_attempt_at")
    with app.app_context():
        query = db.select(*(getattr(WebhookDelivery, name) for name in columns))
        return [tuple(row) for row in db.session.execute(query)]
