"""/attention: what waits for a decision, from the mirror; the actions reach the real sandbox.

The mirror's rows are written here as the sync would write them (tests/support/mirror_rows.py);
for the actions, a real sandbox operation is copied into the mirror.
"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest

from portal.api import MerchantApiClient
from tests.support.forms import signed_in
from tests.support.mirror_rows import (
    mirror,
    mirror_from_sandbox,
    operation_record,
    transaction_record,
)
from tests.support.money import post
from tests.support.portal_app import email

REASONS = ("undecided", "late", "payment", "failed")


def section(page: str, reason: str) -> str:
    """The part of the page under one reason's heading."""
    found = re.search(
        rf'<section[^>]*aria-labelledby="reason-{reason}">(.*?)</section>', page, re.S
    )
    assert found, f"no section {reason}"
    return found.group(1)


def nav_count(page: str) -> str | None:
    """The figure next to "Needs attention" in the menu, None when there is none."""
    link = re.search(r'<nav class="main-nav".*?>Needs attention(.*?)</a>', page, re.S)
    assert link, "no Needs attention link in the menu"
    figure = re.search(r'<span class="badge[^"]*">(\d+)</span>', link.group(1))
    return figure.group(1) if figure else None


@pytest.fixture
def acme(app, accounts):
    """The per-test portal (no API needed: the page reads the mirror), with Acme and Other."""
    return app


def test_each_reason_appears_and_what_needs_nothing_does_not(acme):
    undefined = transaction_record("0.03", "undefined")
    undecided = mirror(acme, operation_record("0.5", transactions=[undefined]))
    partly = mirror(
        acme, operation_record("0.5", amount_paid="0.2", transactions=[transaction_record("0.2")])
    )
    over = mirror(
        acme,
        operation_record(
            "0.5", "ETH", amount_paid="0.75", transactions=[transaction_record("0.75")]
        ),
    )
    late_payment = transaction_record("0.00012345")
    late = mirror(acme, operation_record("0.5", status="expired", transactions=[late_payment]))
    failed = mirror(acme, operation_record("12", "USDT", status="failed"))
    quiet = [
        mirror(
            acme,
            operation_record(
                status="confirmed", amount_paid="0.5", transactions=[transaction_record("0.5")]
            ),
        ),
        mirror(acme, operation_record()),  # new, nothing paid
        mirror(
            acme,
            operation_record(
                status="expired", transactions=[transaction_record(status="rejected")]
            ),
        ),
        mirror(acme, operation_record(status="failed", age=timedelta(days=30))),
        mirror(
            acme,
            operation_record(status="confirmed", transactions=[transaction_record(linked=True)]),
        ),
    ]
    theirs = [
        mirror(
            acme, operation_record(transactions=[transaction_record(status="undefined")]), "Other"
        ),
        mirror(acme, operation_record(status="failed"), "Other"),
    ]
    page = signed_in(acme, email("accountant")).get("/attention").get_data(as_text=True)

    undecided_part = section(page, "undecided")
    assert f"Transaction {undefined['id']}" in undecided_part
    assert "0.03 BTC" in undecided_part
    assert f"Open operation {undecided['id']}" in undecided_part
    payment = section(page, "payment")
    assert f"Open operation {partly['id']}" in payment and "Partly paid" in payment
    assert f"Open operation {over['id']}" in payment and "Overpaid" in payment
    assert "0.2 BTC" in payment and "0.75 ETH" in payment
    late_part = section(page, "late")
    assert f"Transaction {late_payment['id']}" in late_part and "0.00012345 BTC" in late_part
    assert f"Open operation {late['id']}" in late_part
    assert f"Open operation {failed['id']}" in section(page, "failed")
    assert ">12 USDT<" in section(page, "failed")
    for record in quiet + theirs:
        assert record["id"] not in page, record
    assert re.search(r"<time [^>]*>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</time>", page)
    # The accountant reads: no button, no form posting anywhere.
    assert "<button" not in page.split('<main id="main">')[1]


def test_newest_first_and_in_the_users_zone(acme):
    from portal.extensions import db
    from portal.identity.models import User

    older = mirror(acme, operation_record(status="failed", age=timedelta(hours=5)))
    newer = mirror(acme, operation_record(status="failed", age=timedelta(hours=1)))
    with acme.app_context():
        user = db.session.query(User).filter_by(email=email("owner")).one()
        user.time_zone = "Europe/Berlin"
        db.session.commit()
    page = signed_in(acme, email("owner")).get("/attention").get_data(as_text=True)
    failed = section(page, "failed")
    assert failed.index(newer["id"]) < failed.index(older["id"])
    assert re.search(r"<time [^>]*>[\d: -]+ CES?T</time>", failed)
    assert "Times are in Europe/Berlin." in page


def test_the_menu_counts_what_needs_attention_for_every_role(acme):
    for role in ("owner", "operator", "accountant"):
        assert (
            nav_count(signed_in(acme, email(role)).get("/attention").get_data(as_text=True)) is None
        )
    mirror(acme, operation_record(transactions=[transaction_record(status="undefined")] * 1))
    mirror(acme, operation_record(status="failed"))
    mirror(acme, operation_record(status="failed"), "Other")
    for role in ("owner", "operator", "accountant"):
        client = signed_in(acme, email(role))
        assert (
            nav_count(
                client.get("/operations/new" if role != "accountant" else "/account").get_data(
                    as_text=True
                )
            )
            == "2"
        )


# --- Actions on a real sandbox operation ------------------------------------------------------


@pytest.fixture(scope="module")
def sandbox(module_servers):
    return module_servers.sandbox()


@pytest.fixture(scope="module")
def connected(module_servers, sandbox):
    return module_servers.portal(sandbox)


def undecided_operation(connected, sandbox) -> tuple[str, str]:
    """A sandbox operation with a transaction of status undefined, copied into the mirror."""
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    operation = api.create_operation("0.5", "BTC", f"order-{uuid.uuid4().hex[:8]}")
    body = {"amount": "0.1", "tx_id": f"hash-{uuid.uuid4().hex}", "status": "undefined"}
    transaction = sandbox.control("POST", f"operations/{operation.id}/transactions", body)
    mirror_from_sandbox(connected, sandbox, operation.id)
    return operation.id, transaction.json()["data"]["id"]


def form_of(page: str, action: str, transaction_id: str) -> dict:
    """The fields of the form on `page` that posts to `action` for `transaction_id`."""
    for form in re.findall(r'<form method="post" action="([^"]+)">(.*?)</form>', page, re.S):
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]+)"', form[1]))
        if form[0] == action and fields.get("transaction_id") == transaction_id:
            return fields
    raise AssertionError(f"no form to {action} for {transaction_id}")


def test_link_from_the_attention_list(connected, sandbox):
    from portal.extensions import db
    from portal.payments.models import MirroredOperation, MirroredTransaction

    operation_id, transaction_id = undecided_operation(connected, sandbox)
    operator = signed_in(connected, email("operator"))
    page = operator.get("/attention").get_data(as_text=True)
    action = f"/operations/{operation_id}/link-transactions"
    fields = form_of(section(page, "undecided"), action, transaction_id)
    assert set(fields) == {"csrf_token", "transaction_id"}

    asked = operator.post(action, data=fields)  # as the browser sends it: the page asks first
    assert asked.status_code == 200 and "Link 1 transaction?" in asked.get_data(as_text=True)
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    assert not api.get_operation(operation_id).transactions[0].linked
    done = operator.post(action, data={**fields, "confirm": "1"})
    assert done.status_code == 302
    operation = api.get_operation(operation_id)
    assert operation.status == "confirmed" and operation.transactions[0].linked

    # Until the next sync the mirror still has it; once the mirror knows, it leaves the list.
    assert f"Transaction {transaction_id}" in operator.get("/attention").get_data(as_text=True)
    with connected.app_context():
        for model in (MirroredTransaction, MirroredOperation):
            db.session.query(model).filter_by(operation_id=operation_id).delete()
        db.session.commit()
    mirror_from_sandbox(connected, sandbox, operation_id)
    assert f"Transaction {transaction_id}" not in operator.get("/attention").get_data(as_text=True)


def test_reject_from_the_attention_list_sends_the_reason(connected, sandbox):
    operation_id, transaction_id = undecided_operation(connected, sandbox)
    owner = signed_in(connected, email("owner"))
    action = f"/operations/{operation_id}/reject-transactions"
    page = owner.get("/attention").get_data(as_text=True)
    fields = form_of(page, action, transaction_id)
    assert re.search(r'<label for="reason-\d+">Reason</label>', page)
    done = owner.post(action, data={**fields, "reason": "Not our customer", "confirm": "1"})
    assert done.status_code == 302
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    transaction = api.get_operation(operation_id).transactions[0]
    assert (transaction.status, transaction.reject_reason) == ("rejected", "Not our customer")


def test_accountants_see_no_buttons_and_are_refused(connected, sandbox):
    operation_id, transaction_id = undecided_operation(connected, sandbox)
    accountant = signed_in(connected, email("accountant"))
    page = accountant.get("/attention").get_data(as_text=True)
    assert f"Transaction {transaction_id}" in page
    assert "link-transactions" not in page and "reject-transactions" not in page
    assert "your role reads this list" in page
    refused = post(
        accountant,
        f"/operations/{operation_id}/link-transactions",
        {"transaction_id": transaction_id, "confirm": "1"},
    )
    assert refused.status_code == 403
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    assert api.get_operation(operation_id).transactions[0].status == "undefined"
