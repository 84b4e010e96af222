"""The mirror belongs to one API connection: connecting to another account and back starts a
new mirror each time. Two real sandboxes are the two accounts; their first operations have the
same id ("1"), and the connection changes with the `connect-api` command."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from portal.api import MerchantApiClient
from tests.support.forms import signed_in
from tests.support.mirror import sync_now
from tests.support.portal_app import connected_portal, email
from tests.support.sandbox_server import SandboxServer, run_sandbox
from tests.support.smtp import text_of

PUBLIC_URL = "http://portal.example.com"


def switch_to(app, account: SandboxServer) -> None:
    result = app.test_cli_runner().invoke(
        args=[
            "connect-api",
            "--merchant",
            "Acme",
            "--base-url",
            account.base_url,
            "--environment",
            "sandbox",
            "--token",
            account.token,
        ]
    )
    assert result.exit_code == 0, result.output


def pay(account: SandboxServer, operation_id: str, amount: str, status: str = "confirmed") -> None:
    body = {"amount": amount, "tx_id": uuid.uuid4().hex, "status": status}
    account.control("POST", f"operations/{operation_id}/transactions", body)


def found_orders(client, text: str) -> list[str]:
    page = client.get("/search", query_string={"q": text}).get_data(as_text=True)
    results = page.split('<main id="main">')[1]
    return sorted(order for order in ORDERS if order in results)


ORDERS = {"order-of-a", "order-of-b", "second-of-b"}
CONFIRMED = ["operation.confirmed"]


def current_events(app, **where) -> list:
    from portal.extensions import db
    from portal.live.models import Event
    from portal.live.rules.events import of_current_connection

    with app.app_context():
        query = sa.select(Event).filter_by(**where).where(of_current_connection())
        return list(db.session.scalars(query.order_by(Event.id)))


def test_another_account_and_back_each_start_a_new_mirror(tmp_path, sandbox, mail_server):
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.models import Event, WebhookDelivery
    from portal.live.rules import mail, webhooks
    from portal.payments.rules.timeline import timeline

    a, config = sandbox, {"SMTP_URL": mail_server.url, "PUBLIC_URL": PUBLIC_URL}
    in_a = MerchantApiClient(a.base_url, token=a.token).create_operation("1", "BTC", "order-of-a")
    with (
        run_sandbox(tmp_path / "b.db") as b,
        connected_portal(tmp_path, a, SYNC_SECONDS=0, MAIL_RETRY_SECONDS=0, **config) as app,
    ):
        api_b = MerchantApiClient(b.base_url, token=b.token)
        in_b = api_b.create_operation("1", "BTC", "order-of-b")
        second_of_b = api_b.create_operation("1", "BTC", "second-of-b")
        assert in_a.id == in_b.id  # one id, two accounts' operations
        owner = signed_in(app, email("owner"))
        with app.app_context():
            merchant = accounts.merchant_named("Acme").id
            webhooks.save_endpoint(
                accounts.merchant_named("Acme"), "https://shop.example.com/hooks", CONFIRMED
            )
        sync_now(app)

        switch_to(app, b)
        assert sync_now(app).kind == "first"  # B's history: nobody is told of it
        assert found_orders(owner, "order-of") == ["order-of-b"]
        pay(b, in_b.id, "1")  # confirmed in B
        pay(b, second_of_b.id, "1")
        sync_now(app)  # B's news, neither mailed nor sent to the shop when the connection changes

        switch_to(app, a)
        assert sync_now(app).kind == "first"
        assert found_orders(owner, "of-") == ["order-of-a"]
        with app.app_context():
            entries = timeline(merchant, in_a.id).entries
        assert [entry.type for entry in entries] == ["operation.created"]  # A's, not B's

        pay(a, in_a.id, "1")
        sync_now(app)
        confirmed = current_events(app, operation_id=in_a.id, type="operation.confirmed")
        assert [(event.notify, event.data["order_id"]) for event in confirmed] == [
            (True, "order-of-a")
        ]
        assert sync_now(app, full=True).events == 0  # A's mirror is A's: nothing to tell
        with app.app_context():
            mail.send_due()
            webhooks.fan_out()
            delivered = db.session.scalars(
                sa.select(Event.data).join(WebhookDelivery, WebhookDelivery.event_id == Event.id)
            )
            assert [data["order_id"] for data in delivered] == ["order-of-a"]
        subjects = [(message["Subject"], text_of(message)) for message in mail_server.messages]
        assert len(subjects) == 1 and "order-of-a" in subjects[0][1], subjects


def test_a_sync_of_the_old_account_under_way_writes_nothing_after_the_change(tmp_path, sandbox):
    """The old account answers slowly; the connection changes while its sync waits: that sync
    loses its lease at its page, and the new mirror holds nothing of the old account."""
    import threading

    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.rules import mirror
    from portal.payments.models import MirroredOperation
    from tests.support.fake_api import Answer, FakeApi, operation_json, page_json

    with (
        FakeApi() as old,
        connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app,
    ):
        old.answer("GET", "/sandbox/v1/ping", Answer(200, {"data": {"status": "ok"}}))
        page = page_json([operation_json(order_id="old-account")], page=1, per_page=100, total=1)
        old.answer("GET", "/sandbox/v1/operations", Answer(200, page, delay=1.0))
        switch_to(app, SandboxServer(old.base_url, sandbox.database, sandbox.process))
        with app.app_context():
            merchant = accounts.merchant_named("Acme").id
        reports = []

        def sync_old() -> None:
            with app.app_context():
                reports.append(mirror.sync_merchant(merchant))

        under_way = threading.Thread(target=sync_old)
        under_way.start()
        while not old.count("GET", "/sandbox/v1/operations"):
            under_way.join(0.01)
        switch_to(app, sandbox)  # while the old account's answer is on its way
        under_way.join()
        assert reports == [None]  # its lease went with the old mirror
        with app.app_context():
            assert db.session.scalars(sa.select(MirroredOperation.order_id)).all() == []
        assert sync_now(app).kind == "first"


def test_a_refund_of_an_earlier_connection_waits_for_an_owner_instead_of_being_sent(
    tmp_path, sandbox
):
    """API ids are the account's own (both sandboxes number from 1), and a new token may be
    another account: a refund asked under the first connection is never sent by itself from
    the wallet connected now; it waits for an owner's approval, which says why."""
    from portal.extensions import db
    from portal.money.models import Approval, IntentState, Refund, RefundStage
    from portal.money.rules import approvals, refunds
    from tests.support import factories

    in_a = MerchantApiClient(sandbox.base_url, token=sandbox.token).create_operation(
        "1", "BTC", "order-of-a"
    )
    with (
        run_sandbox(tmp_path / "b.db") as account_b,
        connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app,
    ):
        api_b = MerchantApiClient(account_b.base_url, token=account_b.token)
        pay(sandbox, in_a.id, "1")
        sync_now(app)
        ready = factories.refund(
            app, "owner@acme.test", in_a.id, amount="0.5", state=IntentState.PENDING,
            address="bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
        )  # fmt: skip
        by_link = factories.refund(app, "owner@acme.test", in_a.id, amount="0.25", number=2)
        with app.app_context():
            db.session.get(Refund, ready).stage = RefundStage.READY
            db.session.commit()
        switch_to(app, account_b)

        with app.app_context():
            assert refunds.send_due() == 0
            assert approvals.send_due() == 0
            claimed = db.session.get(Refund, by_link)
            assert approvals.claim_refund(claimed, "bc1qcustomer0000000000000000000000000000")
            for refund_id in (ready, by_link):
                assert db.session.get(Refund, refund_id).stage is RefundStage.AWAITING_APPROVAL
            reasons = db.session.scalars(sa.select(Approval.reason)).all()
            assert reasons == ["earlier_connection"] * 2
            assert refunds.send_due() == 0
        page = signed_in(app, email("owner")).get("/approvals").get_data(as_text=True)
        assert "Asked through an earlier API connection" in page
        assert api_b.list_operations(category="transfer").items == ()


def test_a_refund_sent_under_an_earlier_connection_still_counts_on_its_operation_id(
    tmp_path, sandbox
):
    """Figures count every sent refund of an operation id, whatever the connection it was asked
    through: after a switch to another account, that account's operation of the same id reads
    refunded. A refund refused for money already given back is safer than one paid twice (a
    new token for the same account starts a new connection too)."""
    from decimal import Decimal

    from portal.identity.rules.accounts import merchant_named
    from portal.money.models import IntentState
    from portal.payments.rules.operation_money import State, money_of
    from tests.support import factories

    in_a = MerchantApiClient(sandbox.base_url, token=sandbox.token).create_operation(
        "1", "BTC", "order-of-a"
    )
    with (
        run_sandbox(tmp_path / "b.db") as account_b,
        connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app,
    ):
        factories.refund(app, "owner@acme.test", in_a.id, amount="1", state=IntentState.SENT)
        switch_to(app, account_b)
        api_b = MerchantApiClient(account_b.base_url, token=account_b.token)
        in_b = api_b.create_operation("1", "BTC", "order-of-b")
        pay(account_b, in_b.id, "1")
        assert in_b.id == in_a.id  # one id, two accounts' operations
        with app.app_context():
            money = money_of(merchant_named("Acme"), api_b.get_operation(in_b.id))
    assert money.refunded == Decimal("1")
    assert money.state is State.REFUNDED
