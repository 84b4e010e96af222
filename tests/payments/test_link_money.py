"""Deciding shows the money: the link confirmation says what the operation will have received,
and confirming below the due takes the acceptance of that very shortfall, recomputed by the
server; each decision made through the portal is remembered until the mirror sees it."""

from __future__ import annotations

import re
import uuid
from decimal import Decimal

import pytest

from portal.api import MerchantApiClient
from tests.support.forms import signed_in
from tests.support.htmx import HTMX
from tests.support.mirror import merchant_id, mirror_operations, sync_now
from tests.support.portal_app import email


@pytest.fixture(scope="module")
def sandbox(module_servers):
    return module_servers.sandbox()


@pytest.fixture(scope="module")
def app(module_servers, sandbox):
    return module_servers.portal(sandbox, WTF_CSRF_ENABLED=False)


@pytest.fixture(scope="module")
def api(sandbox) -> MerchantApiClient:
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


@pytest.fixture(scope="module")
def operator(app):
    return signed_in(app, email("operator"))


def new_operation(api, amount: str = "0.5"):
    return api.create_operation(amount, "BTC", f"order-{uuid.uuid4().hex[:8]}")


def confirmation(html: str) -> str:
    return re.search(r'<section class="card confirm".*?</section>', html, re.S).group(0)


def fact(html: str, term: str) -> str:
    """The text of the `<dd>` after the `<dt>` `term`."""
    found = re.search(rf"<dt>{re.escape(term)}</dt>\s*<dd>(.*?)</dd>", html, re.S)
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


def audit_events(app, action: str):
    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        return db.session.scalars(
            db.select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)
        ).all()


def test_the_link_confirmation_shows_the_money_after_the_link(operator, api, sandbox):
    """0.1 BTC confirmed, two 0.1 BTC undecided: linking one of them counts that one alone."""
    operation = new_operation(api)
    counted = sandbox.receive(operation.id, "0.1")
    chosen, _other = (
        sandbox.receive(operation.id, "0.1", "undefined"),
        sandbox.receive(operation.id, "0.1", "undefined"),
    )
    asked = operator.post(
        f"/operations/{operation.id}/link-transactions",
        data={"transaction_id": [chosen]},
        headers=HTMX,
    )
    shown = confirmation(asked.text)
    assert fact(shown, "Due") == "0.5 BTC"
    assert fact(shown, "Received after linking").startswith("0.1 BTC")
    assert fact(shown, "Difference") == "0.4 BTC short of the due (shortfall)"
    assert fact(shown, "State after linking") == "Underpaid"
    assert re.search(rf"1 confirmed transaction stops counting:.*{counted}: 0.1 BTC", shown, re.S)
    assert "Yes, accept an underpayment of 0.4 BTC" in shown
    assert 'name="underpayment" value="0.40000000"' in shown
    assert "autofocus" in shown  # the confirmation takes the focus


def test_below_the_due_the_shortfall_must_be_accepted_for_its_figure(app, operator, api, sandbox):
    operation = new_operation(api)
    chosen = sandbox.receive(operation.id, "0.1", "undefined")
    url = f"/operations/{operation.id}/link-transactions"
    confirm = {"transaction_id": [chosen], "confirm": "1"}

    for refused_data in (
        confirm,  # no tick
        {**confirm, "underpayment": "0.4"},  # the figure, without the tick
        {**confirm, "accept_underpayment": "y", "underpayment": "0.3"},  # another figure
        {**confirm, "accept_underpayment": "y", "underpayment": "sNaN"},
    ):
        refused = operator.post(url, data=refused_data, headers=HTMX)
        assert refused.status_code == 422
        assert "Tick the box to confirm" in refused.text
        assert "Yes, accept an underpayment of 0.4 BTC" in confirmation(refused.text)
    assert sandbox.requests_received("PUT", f"/operations/{operation.id}/link-transactions") == 0
    assert api.get_transaction(chosen).linked is False
    assert api.get_operation(operation.id).status == "new"
    refusals = audit_events(app, "transactions.link")[-4:]
    assert {(event.outcome, event.parameters["underpayment"]) for event in refusals} == {
        ("refused", "0.40000000 BTC")
    }

    done = operator.post(
        url, data={**confirm, "accept_underpayment": "y", "underpayment": "0.40"}, headers=HTMX
    )
    assert done.status_code == 200
    assert "1 transaction linked to the operation." in done.text
    assert api.get_transaction(chosen).linked is True
    accepted = audit_events(app, "transactions.link")[-1]
    assert accepted.outcome == "success"
    assert Decimal(accepted.parameters["underpayment_accepted"].split()[0]) == Decimal("0.4")


def test_up_to_the_due_no_acceptance_is_asked(operator, api, sandbox):
    operation = new_operation(api)
    ids = [sandbox.receive(operation.id, amount, "undefined") for amount in ("0.3", "0.3")]
    url = f"/operations/{operation.id}/link-transactions"
    asked = operator.post(url, data={"transaction_id": ids}, headers=HTMX)
    shown = confirmation(asked.text)
    assert fact(shown, "Difference") == "0.1 BTC more than due (surplus)"
    assert fact(shown, "State after linking") == "Overpaid"
    assert "accept an underpayment" not in shown
    done = operator.post(url, data={"transaction_id": ids, "confirm": "1"}, headers=HTMX)
    assert "2 transactions linked to the operation." in done.text


def test_a_shortfall_within_the_tolerance_needs_no_acceptance(app, operator, api, sandbox):
    from portal.extensions import db
    from portal.identity.models import Merchant

    operation = new_operation(api)
    chosen = sandbox.receive(operation.id, "0.49", "undefined")
    with app.app_context():
        merchant = db.session.get(Merchant, merchant_id(app))
        merchant.payment_tolerance_percent = Decimal(2)  # 0.01 BTC of 0.5
        db.session.commit()
    url = f"/operations/{operation.id}/link-transactions"
    try:
        asked = operator.post(url, data={"transaction_id": [chosen]}, headers=HTMX)
        done = operator.post(url, data={"transaction_id": [chosen], "confirm": "1"}, headers=HTMX)
    finally:
        with app.app_context():
            db.session.get(Merchant, merchant_id(app)).payment_tolerance_percent = Decimal(0)
            db.session.commit()
    shown = confirmation(asked.text)
    assert fact(shown, "Difference") == "None"
    assert fact(shown, "State after linking") == "Paid"
    assert "accept an underpayment" not in shown
    assert "1 transaction linked to the operation." in done.text


def test_each_decision_is_remembered_as_handled_with_the_status_it_met(app, operator, api, sandbox):
    """The attention list hides what was handled through the portal until the next sync;
    money linked to an ended operation is late."""
    from portal.extensions import db
    from portal.payments.models import Decision

    linked, rejected, canceled = new_operation(api, "0.1"), new_operation(api), new_operation(api)
    to_link = sandbox.receive(linked.id, "0.1", "undefined")
    to_reject = sandbox.receive(rejected.id, "0.1", "undefined")
    operator.post(
        f"/operations/{linked.id}/link-transactions",
        data={"transaction_id": [to_link], "confirm": "1"},
    )
    operator.post(
        f"/operations/{rejected.id}/reject-transactions",
        data={"transaction_id": [to_reject], "reason": "Not ours", "confirm": "1"},
    )
    operator.post(f"/operations/{canceled.id}/cancel", data={"confirm": "1"})
    with app.app_context():
        marks = {
            (d.operation_id, d.transaction_id, d.kind.value)
            for d in db.session.scalars(db.select(Decision))
        }
    assert {
        (linked.id, to_link, "handled"),
        (rejected.id, to_reject, "handled"),
        (canceled.id, None, "handled"),
    } <= marks


def test_money_linked_to_an_ended_operation_is_late(app, operator, api, sandbox):
    """Linking after the operation expired confirms it late, even when the mirror never saw
    it expired: the decision tells the mirror what status it met."""
    from portal.extensions import db
    from portal.payments.models import MirroredOperation

    operation = new_operation(api, "0.1")
    mirror_operations(app, [operation])  # the mirror saw it new, never expired
    sandbox.control("POST", f"operations/{operation.id}/expire")
    late = sandbox.receive(operation.id, "0.1", "undefined")
    url = f"/operations/{operation.id}/link-transactions"
    asked = operator.post(url, data={"transaction_id": [late]}, headers=HTMX)
    assert fact(confirmation(asked.text), "State after linking") == "Paid late"
    done = operator.post(url, data={"transaction_id": [late], "confirm": "1"}, headers=HTMX)
    assert "1 transaction linked to the operation." in done.text
    with app.app_context():
        ended = db.session.scalar(
            db.select(MirroredOperation.ended_status).where(
                MirroredOperation.operation_id == operation.id
            )
        )
    assert ended == "expired"
    assert ">Paid late</span>" in done.text


def test_late_money_waits_on_the_list_until_it_is_linked_and_the_mirror_syncs(
    app, operator, api, sandbox
):
    """Money that reached an expired operation is on the list as the sync finds it; once linked
    and synced, its operation waits to be settled instead. The menu's count, kept by each
    sync, agrees with the page's."""
    operation = new_operation(api, "0.1")
    sandbox.control("POST", f"operations/{operation.id}/expire")
    late = sandbox.receive(operation.id, "0.1", "undefined")

    def after_a_sync() -> tuple[str, int, int]:
        sync_now(app)
        page = operator.get("/attention").get_data(as_text=True)
        menu = re.search(r"Needs attention(?: <span[^>]*>(\d+)</span>)?</a>", page)
        headings = re.findall(r'<h2 id="reason-[a-z]+">[^<]*\((\d+)\)</h2>', page)
        return page, int(menu.group(1) or 0), sum(int(total) for total in headings)

    page, menu, listed = after_a_sync()
    late_part = page.split('id="reason-late"')[1].split("</section>")[0]
    assert f"Transaction {late}" in late_part
    assert menu == listed
    operator.post(
        f"/operations/{operation.id}/link-transactions",
        data={"transaction_id": [late], "confirm": "1"},
    )
    page, menu_after, listed_after = after_a_sync()
    assert f"Transaction {late}" not in page
    # Linked late, the operation is paid late: now to be settled, as the difference group says.
    difference = page.split('id="reason-difference"')[1].split("</section>")[0]
    assert f"Open operation {operation.id}" in difference and "Paid late" in difference
    assert menu_after == listed_after == listed
