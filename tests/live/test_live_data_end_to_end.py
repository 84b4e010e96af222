"""Live data end to end: a real sandbox, a real worker process, a real shop and a real SMTP server.

A customer pays on the sandbox's hosted payment page; nothing in the test calls the portal's
rules to move things along: the worker notices the payment through the API, writes its events,
and delivers them to the shop and to the owner's inbox.
"""

from __future__ import annotations

import collections
import time
import uuid

import pytest
import requests

from tests.support.forms import signed_in
from tests.support.polling import wait_for
from tests.support.portal_app import MERCHANT, connected_portal, email
from tests.support.shop import Shop, run_shop
from tests.support.smtp import text_of
from tests.support.worker import running_worker

# A worker process, a shop, an SMTP server and the hosted payment page.
pytestmark = pytest.mark.slow


def create_operation(sandbox, order_id: str, amount: str = "0.01") -> dict:
    """An operation as the merchant's shop creates it through the API."""
    response = requests.post(
        f"{sandbox.api_url}/operations",
        json={"order_id": order_id, "amount": amount, "currency": "BTC"},
        headers=sandbox.headers(),
        timeout=10,
    )
    response.raise_for_status()
    return response.json()["data"]


def pay_on_hosted_page(operation: dict) -> None:
    """What the customer does: press "Pay in full" on the hosted payment page."""
    response = requests.post(
        operation["payment_url"], data={"action": "pay_full"}, allow_redirects=False, timeout=10
    )
    assert response.status_code in (200, 302, 303), response.text


def point_webhooks_at(app, shop: Shop) -> str:
    """Every webhook type to the shop; the signing secret the owner's page shows."""
    from portal.identity.rules import accounts
    from portal.live.rules import webhooks

    with app.app_context():
        endpoint = webhooks.save_endpoint(
            accounts.merchant_named(MERCHANT), shop.url, [type_.value for type_ in webhooks.TYPES]
        )
        return webhooks.secret_of(endpoint)


def confirmed_for(shop: Shop, operation_id: str) -> list:
    return [
        request
        for request in shop.requests()
        if request.json["type"] == "operation.confirmed"
        and request.json["data"]["id"] == operation_id
    ]


def test_a_payment_on_the_hosted_page_reaches_the_shop_signed_and_the_owner_by_mail(
    tmp_path, sandbox, mail_server, monkeypatch
):
    monkeypatch.setenv("PORTAL_WEBHOOK_BACKOFF_SECONDS", "1")
    monkeypatch.setenv("PORTAL_SMTP_URL", mail_server.url)
    monkeypatch.setenv("PORTAL_PUBLIC_URL", "https://portal.example.com")
    with (
        connected_portal(tmp_path, sandbox) as app,
        run_shop() as shop,
        running_worker(app, tmp_path / "worker") as worker,
    ):
        wait_for(lambda: "first sync done" in worker.output(), timeout=30)
        secret = point_webhooks_at(app, shop)
        shop.status = 500  # the shop is down when the payment arrives
        operation = create_operation(sandbox, order_id=f"ORDER-{uuid.uuid4().hex[:8]}")
        pay_on_hosted_page(operation)

        refused = shop.wait_for(1, timeout=30)[0]  # answered 500
        shop.status = 200
        confirmed = wait_for(lambda: confirmed_for(shop, operation["id"]), timeout=30)[0]
        mail = mail_server.wait_for(1, timeout=30)[0]

    # The refused event came again under the same id, and the events of the operation came in
    # the order they happened: the confirmation only after the refused one went through.
    ids = shop.event_ids()
    assert ids.count(refused.event_id) == 2
    assert ids.index(confirmed.event_id) > max(
        index for index, event_id in enumerate(ids) if event_id == refused.event_id
    )
    assert confirmed.signed_by(secret)
    body = confirmed.json
    assert set(body) == {"id", "type", "created_at", "data", "portal"}
    assert body["data"]["order_id"] == operation["order_id"]
    assert body["data"]["status"] == "confirmed"
    assert body["portal"]["state"] == "paid"  # the whole amount: ship
    # The owner chose nothing and gets confirmed payments by default.
    assert mail["To"] == email("owner")
    assert mail["Subject"].startswith(f"Paid — order {operation['order_id']} — received ")
    assert operation["order_id"] in text_of(mail)
    assert f"https://portal.example.com/operations/{operation['id']}" in text_of(mail)


@pytest.mark.long
def test_two_workers_on_postgresql_and_redis_send_each_event_once(
    tmp_path, sandbox, fresh_postgres_url, redis_store
):
    with (
        connected_portal(tmp_path, sandbox, DATABASE_URL=fresh_postgres_url) as app,
        run_shop() as shop,
        running_worker(app, tmp_path / "one", queue_url=redis_store.url, name="one") as one,
        running_worker(app, tmp_path / "two", queue_url=redis_store.url, name="two") as two,
    ):
        wait_for(lambda: "first sync done" in one.output() + two.output(), timeout=30)
        point_webhooks_at(app, shop)
        operations = [create_operation(sandbox, f"TWO-{n}") for n in range(6)]
        for operation in operations:
            pay_on_hosted_page(operation)
        paid = {operation["id"] for operation in operations}
        wait_for(lambda: all(confirmed_for(shop, operation_id) for operation_id in paid), 45)
        time.sleep(3)  # three more ticks of each worker: time enough to send a second copy

    logs = one.output() + two.output()
    assert logs.count("first sync done") == 1, logs  # the two workers shared the merchant
    sent = collections.Counter(shop.event_ids())
    assert sent and max(sent.values()) == 1, sent
    types = collections.Counter(request.json["type"] for request in shop.requests())
    assert types["operation.confirmed"] == 6
    assert types["transaction.received"] == 6


def test_what_the_sync_saw_is_on_the_attention_list_and_found_by_a_fragment(tmp_path, sandbox):
    from portal.live.rules import mirror

    order_id = f"SHOP-{uuid.uuid4().hex[:10].upper()}"
    with connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app:
        operation = create_operation(sandbox, order_id)
        arrived = {"amount": "0.004", "tx_id": f"hash-{uuid.uuid4().hex}", "status": "undefined"}
        sandbox.control("POST", f"operations/{operation['id']}/transactions", arrived)
        with app.app_context():
            mirror.sync_due()  # what the worker's tick does, over real HTTP to the sandbox

        accountant = signed_in(app, email("accountant"))
        attention = accountant.get("/attention").get_data(as_text=True)
        found = accountant.get(f"/search?q={order_id[7:13].lower()}").get_data(as_text=True)

    assert arrived["tx_id"] in attention or operation["id"] in attention
    assert order_id in attention
    assert "Link" not in attention  # accountants read; they do not decide
    assert order_id in found
    assert f'href="/operations/{operation["id"]}"' in found
