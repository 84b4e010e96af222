"""Several endpoints per merchant, each with its URL, secret, types, on/off, test event and log;
an endpoint that answers 410 Gone is switched off; the log keeps what was sent and answered."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import sqlalchemy as sa

from portal.extensions import db
from portal.live.models import WebhookAttempt, WebhookEndpoint
from portal.live.rules import webhooks
from tests.live.test_webhooks import PAGE, configure, deliver, record, shown_secret
from tests.support import factories
from tests.support.forms import csrf_token, sign_in
from tests.support.polling import wait_for
from tests.support.shop import run_shop
from tests.support.smtp import text_of


@pytest.fixture
def portal_config(portal_config, mail_server):
    return portal_config | {
        "SMTP_URL": mail_server.url,
        "MAIL_RETRY_SECONDS": 0,
        "WEBHOOK_BACKOFF_SECONDS": 0.2,
    }


def endpoint_ids(app) -> list[int]:
    with app.app_context():
        return list(db.session.scalars(sa.select(WebhookEndpoint.id).order_by(WebhookEndpoint.id)))


def post(client, action: str, endpoint: int):
    """A bare button of the endpoint's page (`switch`, `test`)."""
    return client.post(
        f"{PAGE}/{action}?endpoint_id={endpoint}", data={"csrf_token": csrf_token(client, PAGE)}
    )


def test_each_endpoint_gets_its_own_types_signed_with_its_own_secret_and_logs_its_own(
    app, owner, shop
):
    with run_shop() as other_shop:
        assert configure(owner, shop.url, "operation.confirmed", endpoint="new").status_code == 302
        both = ("operation.confirmed", "transaction.received")
        assert configure(owner, other_shop.url, *both, endpoint="new").status_code == 302
        first, second = endpoint_ids(app)
        secrets = {first: shown_secret(owner, first), second: shown_secret(owner, second)}
        assert secrets[first] != secrets[second]

        confirmed = record(app, "operation.confirmed", "op-1")
        received = record(app, "transaction.received", "op-1")
        deliver(app)
        assert shop.event_ids() == [confirmed], "only the type it chose"
        assert sorted(other_shop.wait_for(2) and other_shop.event_ids()) == sorted(
            [confirmed, received]
        )
        for request in shop.requests():
            assert request.verified_in_python(secrets[first]) == request.json
            assert not request.signed_by(secrets[second])
        for request in other_shop.requests():
            assert request.verified_in_python(secrets[second]) == request.json

        assert post(owner, "test", second).status_code == 302
        deliver(app)
        assert other_shop.wait_for(3)[2].json["type"] == "test"
        assert len(shop.requests()) == 1, "a test event goes to its endpoint alone"

        first_log = owner.get(f"{PAGE}?endpoint_id={first}").get_data(as_text=True)
        second_log = owner.get(f"{PAGE}?endpoint_id={second}").get_data(as_text=True)
        assert f"<code>{confirmed}</code>" in first_log
        assert f"<code>{received}</code>" not in first_log, "each endpoint's log its own"
        assert f"<code>{received}</code>" in second_log
        assert shop.url in first_log and other_shop.url in first_log, "the list of endpoints"


def test_past_ten_endpoints_another_is_refused_and_nothing_is_added(app, owner, accounts):
    for number in range(webhooks.MAX_ENDPOINTS):
        configure(owner, f"https://shop{number}.example.com/hooks", endpoint="new")
    page = owner.get(PAGE).get_data(as_text=True)
    assert "Add endpoint" not in page
    refused = configure(owner, "https://one-more.example.com/hooks", endpoint="new")
    assert refused.status_code == 422
    assert "the most there can be" in refused.get_data(as_text=True)
    assert len(endpoint_ids(app)) == webhooks.MAX_ENDPOINTS


def test_another_merchants_endpoint_is_not_found(app, client, accounts, shop):
    theirs = factories.webhook_endpoint(app, shop.url, merchant="Other")
    sign_in(client, accounts.owner)
    assert client.get(f"{PAGE}?endpoint_id={theirs}").status_code == 404
    assert client.get(f"{PAGE}/rotate?endpoint_id={theirs}").status_code == 404
    for action in ("switch", "test"):
        assert post(client, action, theirs).status_code == 404
    with app.app_context():
        assert db.session.get(WebhookEndpoint, theirs).enabled


def test_an_endpoint_answering_410_is_switched_off_its_owners_mailed_and_it_can_be_switched_on(
    app, owner, shop, mail_server, accounts
):
    from portal.live.rules import mail

    configure(owner, shop.url, "operation.confirmed")
    (endpoint,) = endpoint_ids(app)
    shop.status = 410
    gone = record(app, "operation.confirmed", "op-1")
    waiting = record(app, "operation.confirmed", "op-2")
    deliver(app)
    assert shop.event_ids() == [gone], "switched off after that attempt"
    deliver(app)
    assert shop.event_ids() == [gone]
    page = owner.get(PAGE).get_data(as_text=True)
    assert "is <strong>off</strong>" in page and "Switch on" in page

    with app.app_context():
        mail.send_due()
    (message,) = [sent for sent in mail_server.messages if "switched off" in sent["Subject"]]
    assert message["To"] == accounts.owner
    assert shop.url in text_of(message) and "410" in text_of(message)

    shop.status = 200
    assert post(owner, "switch", endpoint).status_code == 302
    assert "is <strong>on</strong>" in owner.get(PAGE).get_data(as_text=True)
    wait_for(lambda: deliver(app) >= 0 and len(shop.event_ids()) == 3)
    assert sorted(shop.event_ids()) == sorted([gone, gone, waiting]), "both went, once each"


def test_an_endpoint_switched_off_is_sent_no_test_event_and_the_page_says_why(app, owner, shop):
    configure(owner, shop.url, "operation.confirmed")
    (endpoint,) = endpoint_ids(app)
    assert post(owner, "switch", endpoint).status_code == 302

    refused = owner.post(
        f"{PAGE}/test?endpoint_id={endpoint}",
        data={"csrf_token": csrf_token(owner, PAGE)},
        follow_redirects=True,
    )

    assert "This endpoint is off: switch it on to send it a test event." in refused.get_data(
        as_text=True
    )
    deliver(app)
    assert shop.event_ids() == [], "nothing queued, so nothing sent"


def test_the_log_shows_what_was_sent_signatures_masked_and_the_answer_s_first_4_kb(
    app, owner, shop
):
    configure(owner, shop.url, "operation.confirmed")
    secret = shown_secret(owner)
    shop.answer = b"<p>" + b"a" * 5000 + b"END"
    sent = record(app, "operation.confirmed")
    deliver(app)
    (request,) = shop.wait_for(1)
    with app.app_context():
        attempt = db.session.scalars(sa.select(WebhookAttempt)).one()
        assert attempt.request_body.encode() == request.body
        assert attempt.response_body == (b"<p>" + b"a" * 4093).decode()
        assert attempt.request_headers["webhook-id"] == sent
    page = owner.get(PAGE).get_data(as_text=True)
    assert "webhook-id: " + sent in page
    assert re.search(r"webhook-signature: v1,••••", page)
    assert re.search(r"Portal-Signature: t=\d+,v1=••••", page)
    signed = request.headers["webhook-signature"] + " " + request.headers["Portal-Signature"]
    signatures = re.findall(r"v1[,=]([^ ,]+)", signed)
    assert len(signatures) == 2 and not any(map(page.__contains__, signatures)), "masked"
    assert secret not in page
    assert "&lt;p&gt;aaaa" in page and "END" not in page, "escaped, and cut at 4 KB"


def test_attempts_older_than_30_days_are_forgotten(app, owner, shop):
    """To the hour: the worker's hourly housekeeping forgets the log (tests/live/
    test_housekeeping.py)."""
    configure(owner, shop.url, "operation.confirmed")
    record(app, "operation.confirmed")
    deliver(app)
    with app.app_context():
        attempt = db.session.scalars(sa.select(WebhookAttempt)).one()
        attempt.started_at -= timedelta(days=29, hours=23)
        db.session.commit()
        webhooks.forget_old_log()
        assert db.session.scalar(sa.select(sa.func.count()).select_from(WebhookAttempt)) == 1
        attempt = db.session.scalars(sa.select(WebhookAttempt)).one()
        attempt.started_at -= timedelta(hours=2)
        db.session.commit()
        webhooks.forget_old_log()
        assert db.session.scalar(sa.select(sa.func.count()).select_from(WebhookAttempt)) == 0
