"""/settings/notifications against a stolen owner cookie and an owner's impatient clicks: the
signing secret is step-up money (masked, revealed with a fresh code or the password, audited),
test events and resends are queued for the worker (the request never waits for the shop) and
limited per endpoint, and every refused change is in the audit log. Over a real shop on
loopback."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.support import factories
from tests.support.forms import PASSWORD, csrf_token, sign_in
from tests.support.htmx import HTMX
from tests.support.money import post, text
from tests.support.portal_server import run_portal
from tests.support.shop import Shop, run_shop
from tests.support.two_factor import signed_in_with_two_factor

PAGE = "/settings/notifications"
REVEAL = f"{PAGE}/secret"
LIMIT = 3


@pytest.fixture
def portal_config(portal_config):
    # The default timeout: an answer held by a shop that sleeps would hold the click this long.
    return portal_config | {"WEBHOOK_TIMEOUT_SECONDS": 5.0, "WEBHOOK_MANUAL_LIMIT": "3 per minute"}


@pytest.fixture
def shop() -> Shop:
    with run_shop() as running:
        yield running


def configure(client, url: str):
    return post(client, PAGE, {"url": url, "event_types": ["operation.confirmed"]})


def stored_secret(app) -> str:
    from portal.extensions import db
    from portal.live.models import WebhookEndpoint
    from portal.live.rules import webhooks

    with app.app_context():
        return webhooks.secret_of(db.session.scalars(db.select(WebhookEndpoint)).one())


def audited(app, action: str) -> list:
    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        query = db.select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)
        return list(db.session.scalars(query))


def connect_without_checking(app) -> None:
    """An API connection for Acme, as if saved: the resync button only asks the worker."""
    factories.api_connection(app, token="a-token-never-sent")


def deliver(app) -> int:
    from portal.live.rules import webhooks

    with app.app_context():
        return webhooks.deliver_due()


def everything_an_owner_reads(client) -> list[str]:
    """The page, its fragments (the log's poller, the secret's part) as htmx asks for them."""
    return [
        client.get(path, headers=headers).get_data(as_text=True)
        for path in (PAGE, REVEAL)
        for headers in ({}, HTMX, {**HTMX, "HX-Trigger": "delivery-log"})
    ]


def test_the_secret_is_masked_and_revealed_with_the_password_audited(app, client, accounts, shop):
    sign_in(client, accounts.owner)
    assert configure(client, shop.url).status_code == 302
    secret = stored_secret(app)
    for body in everything_an_owner_reads(client):
        assert secret not in body and secret[6:] not in body
    assert f"whsec_••••{secret[-4:]}" in text(client.get(PAGE))

    asking = client.get(REVEAL)
    assert asking.status_code == 200 and "Your password" in text(asking)
    for typed in ("", "not the password"):
        refused = post(client, REVEAL, {"password": typed})
        assert refused.status_code == 422 and secret not in refused.get_data(as_text=True)
        assert "That is not your current password." in text(refused)
    assert [event.outcome for event in audited(app, "webhooks.reveal_secret")] == ["refused"] * 2

    revealed = post(client, REVEAL, {"password": PASSWORD}, **HTMX)
    assert revealed.status_code == 200 and secret in revealed.get_data(as_text=True)
    assert "<html" not in revealed.get_data(as_text=True), "htmx gets the secret's part only"
    *_, event = audited(app, "webhooks.reveal_secret")
    assert event.outcome == "success" and secret not in f"{event.parameters} {event.error_message}"
    assert secret not in client.get(PAGE).get_data(as_text=True), "masked again"


def test_with_two_factor_on_revealing_the_secret_needs_a_fresh_code(
    app, accounts, shop, monkeypatch
):
    owner, clock, secret_key, sign_in_code = signed_in_with_two_factor(
        app, accounts.owner, monkeypatch
    )
    clock.advance()
    assert configure(owner, shop.url).status_code == 422, "a change needs a code"
    assert post(owner, PAGE, {"url": shop.url, "code": clock.code(secret_key)}).status_code == 302
    secret = stored_secret(app)
    wrong = f"{(int(sign_in_code) + 1) % 1_000_000:06d}"
    for data in ({"password": PASSWORD}, {"code": sign_in_code}, {"code": wrong}):
        refused = post(owner, REVEAL, data)
        assert refused.status_code == 422 and secret not in refused.get_data(as_text=True)
    assert len(audited(app, "webhooks.reveal_secret")) == 3

    clock.advance()
    revealed = post(owner, REVEAL, {"code": clock.code(secret_key)})
    assert revealed.status_code == 200 and secret in revealed.get_data(as_text=True)
    assert [event.outcome for event in audited(app, "webhooks.reveal_secret")] == [
        "refused",
        "refused",
        "refused",
        "success",
    ]


def test_a_test_event_is_queued_and_answered_at_once_while_the_shop_sleeps(
    app, client, accounts, shop
):
    sign_in(client, accounts.owner)
    configure(client, shop.url)
    shop.delay = 8  # longer than the 5 s timeout: the old click waited all of it
    token = csrf_token(client, PAGE)
    started = time.monotonic()
    clicked = client.post(f"{PAGE}/test", data={"csrf_token": token})
    assert time.monotonic() - started < 2, "the click waited for the shop"
    assert clicked.status_code == 302 and shop.requests() == []
    assert "is queued" in text(client.get(clicked.location))

    page = client.get(PAGE).get_data(as_text=True)
    poller = re.search(r'<section[^>]*id="delivery-log"[^>]*>', page).group(0)
    assert 'hx-get="/settings/notifications' in poller and "every" in poller
    assert "Waiting for the worker" in page and 'href="/settings/notifications' in page
    fragment = client.get(PAGE, headers={**HTMX, "HX-Trigger": "delivery-log"})
    assert fragment.get_data(as_text=True).lstrip().startswith("<section")

    shop.delay = 0
    assert deliver(app) == 1, "the worker sends it"
    (request,) = shop.requests()
    assert request.json["type"] == "test"
    after = client.get(PAGE, headers={**HTMX, "HX-Trigger": "delivery-log"})
    body = after.get_data(as_text=True)
    assert request.event_id in body and ">200<" in body
    assert "hx-trigger" not in body, "nothing waits: the log stops asking"


def test_test_events_and_resends_are_limited_per_endpoint(app, client, accounts, shop):
    from portal.extensions import db
    from portal.live.models import WebhookDelivery

    sign_in(client, accounts.owner)
    configure(client, shop.url)
    for _ in range(LIMIT):
        assert post(client, f"{PAGE}/test").status_code == 302
    refused = post(client, f"{PAGE}/test")
    assert refused.status_code == 429
    assert "Too many test events and resends to this endpoint" in text(refused)
    with app.app_context():
        queued = db.session.scalars(db.select(WebhookDelivery.id)).all()
    assert len(queued) == LIMIT, "the refused click queued nothing"
    resend = post(client, f"{PAGE}/deliveries/{queued[0]}/resend")
    assert resend.status_code == 429
    deliver(app)
    assert len(shop.requests()) == LIMIT
    refusals = [e for e in audited(app, "webhooks.test") + audited(app, "webhooks.resend")]
    assert sorted(event.outcome for event in refusals) == ["refused"] * 2 + ["success"] * LIMIT

    other = app.test_client()  # another merchant's endpoint has its own count
    sign_in(other, accounts.other_owner)
    configure(other, shop.url)
    assert post(other, f"{PAGE}/test").status_code == 302


def test_refused_webhook_changes_a_resync_and_mail_choices_are_audited(
    portal_config, accounts, shop, mail_server
):
    from portal import create_app
    from tests.support.portal_app import ready_portal

    app = ready_portal(create_app(portal_config | {"SMTP_URL": mail_server.url}))
    client = app.test_client()
    sign_in(client, accounts.owner)
    assert configure(client, "ftp://shop.example.com/hooks").status_code == 422
    (change,) = audited(app, "webhooks.change")
    assert change.outcome == "refused" and "http:// or https://" in change.error_message
    assert change.parameters["url"] == "ftp://shop.example.com/hooks"

    configure(client, shop.url)
    assert post(client, f"{PAGE}/rotate", {"code": "x" * 65}).status_code == 422
    (rotate,) = audited(app, "webhooks.rotate")
    assert rotate.outcome == "refused" and "longer than any code" in rotate.error_message

    assert post(client, "/settings/api/resync").status_code == 302
    connect_without_checking(app)
    assert post(client, "/settings/api/resync").status_code == 302
    refused, requested = audited(app, "mirror.resync")
    assert refused.outcome == "refused", "no connection to resync"
    assert requested.outcome == "success" and requested.user_email == accounts.owner

    chosen = {"mail-event_types": ["operation.confirmed", "operation.expired"]}
    assert post(client, "/account/email", chosen).status_code == 302
    assert post(client, "/account/email", {"mail-event_types": ["no.such"]}).status_code == 422
    saved, refused = audited(app, "mail.choices")
    assert saved.outcome == "success"
    assert saved.parameters == {"event_types": "operation.confirmed, operation.expired"}
    assert refused.outcome == "refused"


@pytest.mark.slow  # gunicorn workers
def test_eight_parallel_test_events_on_gunicorn_hold_no_thread_while_the_shop_sleeps(
    tmp_path, sandbox, shop
):
    """Eight owners' clicks at once (twice gunicorn's threads), the shop asleep past the
    timeout: every click, and another visitor's sign-in page, answers at once."""
    from tests.support.forms import CSRF_FIELD
    from tests.support.portal_app import email

    shop.delay = 30
    settings = {"PORTAL_WEBHOOK_TIMEOUT_SECONDS": "10", "PORTAL_WEBHOOK_MANUAL_LIMIT": "20/minute"}
    with run_portal(tmp_path, sandbox, gunicorn=True, env=settings) as server:
        owner = server.signed_in_session(email("owner"))
        page = f"{server.url}{PAGE}"
        token = CSRF_FIELD.search(owner.get(page, timeout=10).text).group(1)
        data = {"url": shop.url, "event_types": "operation.confirmed", "csrf_token": token}
        assert owner.post(page, data=data, allow_redirects=False, timeout=10).status_code == 302

        def click(_: int) -> tuple[int, float]:
            started = time.monotonic()
            answer = owner.post(
                f"{page}/test", data={"csrf_token": token}, allow_redirects=False, timeout=60
            )
            return answer.status_code, time.monotonic() - started

        with ThreadPoolExecutor(8) as clicks:
            clicked = clicks.map(click, range(8))
            time.sleep(0.2)  # the clicks are in
            started = time.monotonic()
            assert requests.get(f"{server.url}/login", timeout=60).status_code == 200
            sign_in_page = time.monotonic() - started
            answers = list(clicked)
    assert [status for status, _ in answers] == [302] * 8
    slowest = max(elapsed for _, elapsed in answers)
    # Under 5 s each, where each click held a thread for the 10 s timeout before.
    assert slowest < 5 and sign_in_page < 5, (slowest, sign_in_page)
    assert shop.requests() == [], "queued for the worker: no request thread posted"
