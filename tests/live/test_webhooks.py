"""Signed webhooks to a real shop server on loopback: events written as the mirror writes them,
delivered by `webhooks.deliver_due` (what each worker tick calls), and /settings/notifications
used as an owner uses it."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support import factories
from tests.support.forms import PASSWORD, csrf_token, session_csrf_token, sign_in
from tests.support.mirror_rows import transaction_record
from tests.support.polling import wait_for
from tests.support.shop import Received, run_shop
from tests.support.worker import portal_process

PAGE = "/settings/notifications"
SECRET = re.compile(r'id="signing-secret"[^>]*value="(whsec_[^"]+)"')
BACKOFF = 0.5  # the first retry; long enough for two quick ticks to find nothing due


@pytest.fixture
def portal_config(portal_config):
    return portal_config | {
        "WEBHOOK_BACKOFF_SECONDS": BACKOFF,
        "WEBHOOK_TIMEOUT_SECONDS": 0.5,
        "SYNC_SECONDS": 5,
    }


def configure(client, url: str, *types: str, endpoint: int | str | None = None):
    """Save the endpoint's URL and types (the first endpoint's by default, `new` adds one)."""
    data = {"url": url, "event_types": list(types or ["operation.confirmed"])}
    path = PAGE if endpoint is None else f"{PAGE}?endpoint_id={endpoint}"
    return client.post(path, data={**data, "csrf_token": session_csrf_token(client)})


def shown_secret(client, endpoint: int | None = None) -> str:
    """The secret as an owner without two-factor reveals it: with their password."""
    data = {"password": PASSWORD, "csrf_token": session_csrf_token(client)}
    query = "" if endpoint is None else f"?endpoint_id={endpoint}"
    revealed = client.post(f"{PAGE}/secret{query}", data=data)
    return SECRET.search(revealed.get_data(as_text=True)).group(1)


def operation(operation_id: str, status: str = "confirmed", paid: str = "0.015") -> dict:
    """An operation as the API's JSON has it: amounts as strings, times ISO 8601 in UTC."""
    return {
        "id": operation_id,
        "order_id": f"order-{operation_id}",
        "category": "payment",
        "status": status,
        "amount": "0.015",
        "fee": "0.000075",
        "rate": "1",
        "amount_paid": paid,
        "currency": "BTC",
        "currency_paid": "BTC",
        "address": "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh",
        "created_at": "2026-11-24T06:00:00Z",
        "updated_at": "2026-11-24T06:05:12Z",
    }


# The portal's reading of an operation's money, which the mirror keeps beside its record.
PAID = {"state": "paid", "due": "0.015", "received": "0.015", "awaiting": "0", "difference": "0"}


def record(app, type_: str, operation_id: str | None = "op-1", *, notify: bool = True, **data):
    """Write an event as the mirror's sync does, and commit; its public id."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.models import Event
    from portal.live.rules import events

    key = f"{type_}:{operation_id}:{time.monotonic_ns()}"
    with app.app_context():
        merchant = accounts.merchant_named("Acme")
        events.record(
            merchant.id,
            events.EventType(type_),
            dedup_key=key,
            data=operation(operation_id or "none", **data) | {"portal": PAID}
            if type_.startswith("operation.")
            else transaction_record(operation_id=operation_id),
            occurred_at=datetime(2026, 11, 24, 6, 5, 12, tzinfo=UTC),
            operation_id=operation_id,
            notify=notify,
        )
        db.session.commit()
        return db.session.scalar(db.select(Event.public_id).where(Event.dedup_key.endswith(key)))


def deliver(app, budget_seconds: float | None = None) -> int:
    from portal.live.rules import webhooks

    with app.app_context():
        return webhooks.deliver_due(budget_seconds)


def test_a_delivered_event_verifies_with_the_secret_on_the_page(app, owner, shop):
    before = record(app, "operation.confirmed", "op-0")  # before the shop was set up
    assert configure(owner, shop.url, "operation.confirmed").status_code == 302
    secret = shown_secret(owner)
    record(app, "operation.expired", "op-2")  # a type not chosen
    record(app, "operation.confirmed", "op-3", notify=False)  # history of a first sync
    sent = record(app, "operation.confirmed", "op-1")

    assert deliver(app) == 1
    (request,) = shop.wait_for(1)
    assert request.signed_by(secret)
    assert not request.signed_by(secret.replace("whsec_", "whsec_x"))
    assert request.headers["Content-Type"] == "application/json"
    assert "Portal" in request.headers["User-Agent"]
    body = request.json
    assert set(body) == {"id", "type", "created_at", "data", "portal"}
    assert (body["id"], body["type"]) == (sent, "operation.confirmed")
    assert body["id"] != before
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", body["created_at"])
    assert body["data"] == operation("op-1")  # the API's record as it was
    assert body["portal"] == PAID
    assert deliver(app) == 0, "delivered once"
    assert shop.event_ids() == [sent]


def test_a_shop_answering_500_gets_the_same_event_again_after_the_backoff(
    app, owner, shop, monkeypatch
):
    from portal.live.rules import webhooks

    configure(owner, shop.url, "operation.confirmed")
    sent = record(app, "operation.confirmed")
    shop.status = 500
    # The deliveries' clock, moved by the test alone: a minute ahead, so that the delivery the
    # first pass makes (on the real clock) is due at once.
    now = [datetime.now(UTC) + timedelta(minutes=1)]
    monkeypatch.setattr(webhooks, "utcnow", lambda: now[0])
    assert deliver(app) == 0
    assert shop.event_ids() == [sent]
    now[0] += timedelta(seconds=BACKOFF * 0.9)
    deliver(app)  # before the backoff: nothing more
    assert shop.event_ids() == [sent]
    now[0] += timedelta(seconds=BACKOFF * 0.2)
    assert deliver(app) == 0
    assert shop.event_ids() == [sent, sent], "tried again once the backoff is over"
    now[0] += timedelta(seconds=BACKOFF * 1.9)
    deliver(app)  # the second backoff is twice the first
    assert len(shop.event_ids()) == 2
    shop.status = 200
    now[0] += timedelta(seconds=BACKOFF * 0.2)
    assert deliver(app) == 1
    assert shop.event_ids() == [sent] * 3
    log = owner.get(PAGE).get_data(as_text=True)
    assert ">500<" in log and ">200<" in log and "Delivered" in log


def test_a_slow_shop_is_given_up_on_after_the_timeout_and_sent_the_same_event_again(
    app, owner, shop
):
    configure(owner, shop.url, "operation.confirmed")
    sent = record(app, "operation.confirmed", "op-1")
    later = record(app, "operation.confirmed", "op-2")
    shop.delay = 6  # far beyond the tests' 0.5 s timeout, so a loaded machine cannot blur the two
    started = time.monotonic()
    assert deliver(app) == 0
    assert time.monotonic() - started < 3, "given up after the 0.5 s timeout of the tests"
    assert shop.event_ids() == [sent], "no second timeout for the same shop in one pass"
    assert "No answer within 0.5 s" in owner.get(PAGE).get_data(as_text=True)
    shop.delay = 0
    wait_for(lambda: deliver(app) >= 0 and shop.event_ids().count(sent) == 2, timeout=5)
    assert sorted(shop.event_ids()) == sorted([sent, sent, later])


def test_a_turn_under_way_for_another_portals_endpoint_of_the_same_id_holds_back_nothing(
    app, owner, shop, portal_config, tmp_path
):
    """Two portals served by one process (as the tests' are) both have an endpoint 1: a turn
    still waiting on one portal's slow shop does not make the other skip its own endpoint."""
    from portal import create_app
    from portal.live.rules import webhooks
    from tests.support.portal_app import ready_portal

    other = ready_portal(
        create_app(
            portal_config
            | {
                "DATABASE_URL": f"sqlite:///{tmp_path / 'other.sqlite3'}",
                "WEBHOOK_TIMEOUT_SECONDS": 5,
            }
        ),
        with_accounts=True,
    )
    other_owner = other.test_client()
    sign_in(other_owner, factories.Accounts().owner)
    with run_shop() as slow_shop:
        configure(other_owner, slow_shop.url, "operation.confirmed")
        record(other, "operation.confirmed", "op-slow")
        slow_shop.delay = 2
        with other.app_context():
            webhooks.deliver_due(wait=False)  # its turn waits on the slow shop
        slow_shop.wait_for(1)
        configure(owner, shop.url, "operation.confirmed")
        sent = record(app, "operation.confirmed", "op-1")
        assert deliver(app) == 1
        assert shop.event_ids() == [sent]


def test_events_of_an_operation_arrive_in_order(app, owner, shop):
    from portal.extensions import db
    from portal.live.models import Event, WebhookDelivery
    from portal.live.rules import webhooks

    configure(owner, shop.url, "transaction.received", "operation.confirmed")
    first = record(app, "transaction.received", "op-a")
    second = record(app, "operation.confirmed", "op-a")
    other = record(app, "operation.confirmed", "op-b")
    unrelated = record(app, "transaction.received", None)

    def lease_first(until: datetime) -> None:
        with app.app_context():
            webhooks.fan_out()
            event = db.session.scalar(db.select(Event.id).where(Event.public_id == first))
            delivery = db.session.scalars(
                db.select(WebhookDelivery).where(WebhookDelivery.event_id == event)
            ).one()
            delivery.lease_until = until
            db.session.commit()

    lease_first(datetime.now(UTC) + timedelta(minutes=1))  # another worker is sending it
    deliver(app)
    assert sorted(shop.event_ids()) == sorted([other, unrelated]), "second waits for first"
    lease_first(datetime.now(UTC) - timedelta(seconds=1))  # that worker died
    deliver(app)
    assert shop.event_ids()[2:] == [first, second]


@pytest.fixture
def on_postgres(request, portal_config):
    portal_config["DATABASE_URL"] = request.getfixturevalue("postgres_url")


def test_two_deliverers_at_once_send_each_event_once(on_postgres, app, owner, shop):
    # The default timeout: a POST the shop took but answered late (three senders and the shop
    # share this process) would rightly go again under the same id, which is not this test's case.
    app.config["WEBHOOK_TIMEOUT_SECONDS"] = 5.0
    configure(owner, shop.url, "operation.confirmed")
    sent = {record(app, "operation.confirmed", f"op-{n}") for n in range(40)}
    start = threading.Barrier(3)
    delivered: list[int] = []

    def deliverer() -> None:
        start.wait()
        delivered.append(deliver(app, budget_seconds=60))  # all of them, however loaded the machine

    threads = [threading.Thread(target=deliverer) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(shop.event_ids()) == sorted(sent)
    assert sum(delivered) == len(sent)


def test_after_a_rotation_both_secrets_sign_for_24_hours_then_only_the_new_one(app, owner, shop):
    from portal.extensions import db
    from portal.live.models import WebhookEndpoint

    configure(owner, shop.url, "operation.confirmed")
    old = shown_secret(owner)
    confirm = owner.get(f"{PAGE}/rotate").get_data(as_text=True)
    assert "24 hours" in confirm and "Rotate secret" in confirm
    rotated = owner.post(f"{PAGE}/rotate", data={"csrf_token": csrf_token(owner, f"{PAGE}/rotate")})
    assert rotated.status_code == 302
    page = owner.get(PAGE).get_data(as_text=True)
    new = shown_secret(owner)
    assert new != old and "The previous secret signs too" in page

    record(app, "operation.confirmed", "op-1")
    deliver(app)
    (during,) = shop.wait_for(1)
    assert len(during.signatures()[1]) == 2
    assert during.signed_by(old) and during.signed_by(new)

    def as_if_passed(elapsed: timedelta) -> None:
        """Time moves in the database: the previous secret's deadline comes `elapsed` closer."""
        with app.app_context():
            endpoint = db.session.scalars(db.select(WebhookEndpoint)).one()
            endpoint.previous_secret_until -= elapsed
            db.session.commit()

    as_if_passed(timedelta(hours=23, minutes=59))  # just before 24 hours
    record(app, "operation.confirmed", "op-2")
    deliver(app)
    before = shop.wait_for(2)[1]
    assert len(before.signatures()[1]) == 2
    assert before.signed_by(old) and before.signed_by(new)

    as_if_passed(timedelta(minutes=2))  # just after 24 hours
    record(app, "operation.confirmed", "op-3")
    deliver(app)
    after = shop.wait_for(3)[2]
    assert len(after.signatures()[1]) == 1
    assert after.signed_by(new) and not after.signed_by(old)
    assert "The previous secret signs too" not in owner.get(PAGE).get_data(as_text=True)


def test_the_page_sets_the_url_and_types_and_refuses_a_bad_url(app, owner, shop):
    refused = configure(owner, "ftp://shop.example.com/hooks", "operation.confirmed")
    assert refused.status_code == 422
    assert "Enter an address starting with http:// or https://" in refused.get_data(as_text=True)
    assert "Signing secret" not in owner.get(PAGE).get_data(as_text=True), "nothing saved"

    assert (
        configure(owner, shop.url, "operation.confirmed", "transaction.needs_review").status_code
        == 302
    )
    page = owner.get(PAGE).get_data(as_text=True)
    assert f'value="{shop.url}"' in page
    checked = set(
        re.findall(r'checked[^>]*value="([a-z_.]+)"|value="([a-z_.]+)"[^>]*checked', page)
    )
    assert {a or b for a, b in checked} == {"operation.confirmed", "transaction.needs_review"}

    refused = configure(owner, "https://user:hunter2@shop.example.com/", "operation.confirmed")
    assert refused.status_code == 422
    assert f'value="{shop.url}"' in owner.get(PAGE).get_data(as_text=True), "unchanged"
    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        events = db.session.scalars(db.select(AuditEvent)).all()
        logged = [(event.parameters, event.error_message) for event in events]
    assert "https://user:••••@shop.example.com/" in str(logged), "the refusal is audited"
    assert "hunter2" not in str(logged), "without the address's password"
    assert "hunter2" not in owner.get("/audit/export.csv").get_data(as_text=True)


def _connected_at_generation(app, generation: int) -> None:
    """Give Acme a connection of that generation (as after switching accounts)."""
    factories.api_connection(app, generation=generation)


def test_a_test_event_reaches_the_shop_shows_in_the_log_and_resend_sends_the_same_id(
    app, owner, shop
):
    _connected_at_generation(app, 3)
    configure(owner, shop.url, "operation.confirmed")
    secret = shown_secret(owner)
    sent = owner.post(f"{PAGE}/test", data={"csrf_token": csrf_token(owner, PAGE)})
    assert sent.status_code == 302
    deliver(app)  # the worker's pass
    (request,) = shop.wait_for(1)
    assert request.json["type"] == "test" and request.signed_by(secret)
    event_id = request.event_id
    page = owner.get(PAGE).get_data(as_text=True)
    assert event_id in page and ">200<" in page and re.search(r">\d+ ms<", page)
    assert "Time (UTC)" in page, "the zone the times are shown in"
    from portal.extensions import db
    from portal.live.models import Event

    with app.app_context():
        event = db.session.scalars(db.select(Event).where(Event.public_id == event_id)).one()
        assert event.connection_generation == 3, "of the current connection, as every event"
        assert event.dedup_key == f"3:test:{event_id}", "its key begins with the generation"

    delivery = re.search(r'action="(/settings/notifications/deliveries/\d+/resend)"', page).group(1)
    assert owner.post(delivery, data={"csrf_token": csrf_token(owner, PAGE)}).status_code == 302
    deliver(app)
    assert shop.event_ids() == [event_id, event_id]
    assert owner.get(PAGE).get_data(as_text=True).count(f"<code>{event_id}</code>") == 2


def test_without_a_csrf_token_nothing_is_sent_or_changed(app, owner, shop):
    configure(owner, shop.url, "operation.confirmed")
    secret = shown_secret(owner)
    assert owner.post(f"{PAGE}/test").status_code == 400
    assert owner.post(f"{PAGE}/rotate").status_code == 400
    assert owner.post(PAGE, data={"url": "https://evil.example.com/"}).status_code == 400
    assert shop.requests() == []
    assert shown_secret(owner) == secret


@pytest.mark.parametrize("role", ["operator", "accountant"])
def test_only_owners_open_the_notifications(app, client, accounts, role):
    sign_in(client, accounts.by_role(role))
    token = csrf_token(client, "/account")
    for path in (PAGE, f"{PAGE}/rotate"):
        assert client.get(path).status_code == 403
    for path in (PAGE, f"{PAGE}/test", f"{PAGE}/rotate", f"{PAGE}/deliveries/1/resend"):
        assert client.post(path, data={"csrf_token": token}).status_code == 403


def test_private_addresses_are_refused_where_not_allowed(portal_config, accounts, shop):
    from portal import create_app
    from tests.support.portal_app import ready_portal

    app = ready_portal(create_app(portal_config | {"WEBHOOK_ALLOW_PRIVATE": False}))
    client = app.test_client()
    sign_in(client, accounts.owner)
    refused = configure(client, shop.url, "operation.confirmed")
    assert refused.status_code == 422
    assert "private or local" in refused.get_data(as_text=True)


@pytest.mark.slow  # a worker process killed
def test_a_worker_killed_mid_send_loses_nothing_and_the_event_keeps_its_id(
    app, portal_config, owner, shop
):
    configure(owner, shop.url, "operation.confirmed")
    sent = record(app, "operation.confirmed")
    shop.delay = 5  # the shop holds the POST while the worker is killed
    worker = portal_process(
        portal_config, WORKER, WEBHOOK_LEASE_SECONDS="1", WEBHOOK_TIMEOUT_SECONDS="0.5"
    )
    try:
        shop.wait_for(1, timeout=20)
    finally:
        worker.kill()
        worker.wait()
    shop.delay = 0
    wait_for(lambda: deliver(app), timeout=5)  # once the lease has run out
    assert shop.event_ids() == [sent, sent]
    page = owner.get(PAGE).get_data(as_text=True)
    assert page.count(f"<code>{sent}</code>") == 1, "the killed worker wrote no attempt"
    assert "Delivered" in page


WORKER = """
from portal import create_app
from portal.live.rules import webhooks
with create_app().app_context():
    webhooks.deliver_due()
"""


def test_the_python_check_in_the_documentation_accepts_a_delivery(app, owner, shop):
    from werkzeug.exceptions import BadRequest

    secret, request = delivered_one(app, owner, shop)
    check = documented_check("verified")
    assert as_the_shop_receives(request, check, secret) == request.json
    tampered = request.body.replace(b"0.015", b"0.016")
    with pytest.raises(BadRequest):
        as_the_shop_receives(request, check, secret, tampered)


def delivered_one(app, owner, shop) -> tuple[str, Received]:
    """Acme's webhooks pointed at the shop, and one event delivered: the secret, the request."""
    configure(owner, shop.url, "operation.confirmed")
    secret = shown_secret(owner)
    record(app, "operation.confirmed")
    deliver(app)
    (request,) = shop.wait_for(1)
    return secret, request


def documented_check(name: str) -> Callable[[str], dict]:
    """The function `name` that a Python example of docs/webhooks.md defines."""
    documentation = (Path(__file__).resolve().parents[2] / "docs" / "webhooks.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", documentation, re.DOTALL)
    (example,) = [block for block in blocks if f"def {name}(" in block]
    namespace: dict = {}
    exec(example, namespace)  # noqa: S102 (the project's own documentation)
    return namespace[name]


def as_the_shop_receives(
    request: Received, check: Callable[[str], dict], secret: str, body: bytes | None = None
) -> dict:
    """What a documented check answers in a shop's Flask view, for the delivery's headers and
    its body (or `body` instead)."""
    from flask import Flask

    with Flask("shop").test_request_context(
        "/", method="POST", data=request.body if body is None else body, headers=request.headers
    ):
        return check(secret)


def test_after_the_retry_window_a_delivery_fails_and_the_operation_s_next_event_goes(
    portal_config, accounts, shop
):
    from portal import create_app
    from tests.support.portal_app import ready_portal

    window = {"WEBHOOK_BACKOFF_SECONDS": 0.1, "WEBHOOK_RETRY_SECONDS": 0.5}
    app = ready_portal(create_app(portal_config | window))
    client = app.test_client()
    sign_in(client, accounts.owner)
    configure(client, shop.url, "transaction.received", "operation.confirmed")
    first = record(app, "transaction.received")
    shop.status = 500
    wait_for(lambda: deliver(app) == 0 and "Failed" in client.get(PAGE).get_data(as_text=True))
    tries = len(shop.requests())
    assert tries >= 2 and set(shop.event_ids()) == {first}

    shop.status = 200
    later = record(app, "operation.confirmed")
    assert deliver(app) == 1
    assert shop.event_ids() == [first] * tries + [later], "no more tries of the failed one"


def test_webhooks_turned_off_send_nothing_until_turned_on_again(app, owner, shop):
    configure(owner, shop.url, "operation.confirmed")
    shop.status = 500
    waiting = record(app, "operation.confirmed")
    deliver(app)
    assert configure(owner, "", "operation.confirmed").status_code == 302
    record(app, "operation.confirmed", "op-2")  # while off: never sent
    time.sleep(BACKOFF)
    deliver(app)
    assert shop.event_ids() == [waiting]
    shop.status = 200
    configure(owner, shop.url, "operation.confirmed")
    assert deliver(app) == 1
    assert shop.event_ids() == [waiting, waiting]


def test_switching_off_stops_the_posts_of_the_turn_under_way(app, owner, shop):
    """A turn walks a batch it read before: each delivery is claimed only while its endpoint is
    on, so after Switch off at most the POST already under way arrives."""
    configure(owner, shop.url, "operation.confirmed")
    for number in range(6):
        record(app, "operation.confirmed", f"op-{number}")
    shop.delay = 0.2
    turn = threading.Thread(target=deliver, args=(app, 30))
    turn.start()
    shop.wait_for(1)
    switched = owner.post(f"{PAGE}/switch", data={"csrf_token": session_csrf_token(owner)})
    arrived = len(shop.event_ids())
    turn.join()

    assert switched.status_code == 302
    assert len(shop.event_ids()) <= arrived + 1 < 6
