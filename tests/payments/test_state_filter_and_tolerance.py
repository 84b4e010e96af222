"""The operations list by state, answered from the mirror's last sync; the merchant's payment
tolerance, which reads the mirror's states again; the state in the operations export."""

from __future__ import annotations

import csv
import io
import re
import uuid
from decimal import Decimal

import pytest
import sqlalchemy as sa

from portal.api import MerchantApiClient
from tests.support.forms import signed_in
from tests.support.mirror import sync_now
from tests.support.money import post
from tests.support.portal_app import MERCHANT, email

ROW_LINK = re.compile(r'<td[^>]*><a href="/operations/([^"/]+)">')
TOTAL = re.compile(r"<strong>(\d+) operations?</strong>")


@pytest.fixture(scope="module")
def sandbox(module_servers):
    return module_servers.sandbox()


@pytest.fixture(scope="module")
def app(module_servers, sandbox):
    return module_servers.portal(sandbox)


@pytest.fixture(scope="module")
def api(sandbox) -> MerchantApiClient:
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


@pytest.fixture(scope="module")
def owner(app):
    return signed_in(app, email("owner"))


def operation(api, amount: str = "0.5"):
    return api.create_operation(amount, "BTC", f"order-{uuid.uuid4().hex[:8]}")


def underpaid(api, sandbox, paid: str):
    """An operation of 1 BTC confirmed by a link of `paid` BTC."""
    made = operation(api, "1")
    sandbox.receive(made.id, paid, "undefined")
    (transaction,) = api.get_operation(made.id).transactions
    api.link_transactions(made.id, [transaction.id])
    return made


def listed(client, query: str) -> tuple[int, list[str], str]:
    response = client.get(f"/operations?{query}")
    assert response.status_code == 200, response.text[:2000]
    return int(TOTAL.search(response.text).group(1)), ROW_LINK.findall(response.text), response.text


def badge(html: str, operation_id: str) -> str:
    row = re.search(rf"<tr>(?:(?!</tr>).)*>{operation_id}</a></td>.*?</tr>", html, re.S).group(0)
    return re.findall(r'<span class="badge[^"]*">([^<]+)</span>', row)[-1]


def mirrored_state(app, operation_id: str) -> str | None:
    from portal.extensions import db
    from portal.payments.models import MirroredOperation

    with app.app_context():
        return db.session.scalar(
            sa.select(MirroredOperation.state).where(MirroredOperation.operation_id == operation_id)
        )


def tolerance(app) -> Decimal:
    from portal.identity.rules import accounts

    with app.app_context():
        return accounts.merchant_named(MERCHANT).payment_tolerance_percent


def test_a_state_lists_the_operations_of_that_state_as_of_the_last_sync(app, owner, api, sandbox):
    paid, partly, unpaid = operation(api), operation(api), operation(api)
    sandbox.receive(paid.id, "0.5")
    sandbox.receive(partly.id, "0.2")
    sync_now(app)
    mine = f"order_id={paid.order_id},{partly.order_id},{unpaid.order_id}"

    total, ids, html = listed(owner, f"state=partly_paid&{mine}")
    assert (total, ids) == (1, [partly.id])
    assert badge(html, partly.id) == "Partly paid"
    assert "States as of the last sync:" in html
    assert listed(owner, f"state=paid&{mine}")[:2] == (1, [paid.id])
    assert listed(owner, f"state=awaiting_payment&{mine}&status=0")[:2] == (1, [unpaid.id])
    assert listed(owner, f"state=awaiting_payment&{mine}&status=1")[:2] == (0, [])
    assert listed(owner, f"state=paid&{mine}&currency=ETH")[:2] == (0, [])
    # Money that arrives after the sync is not in the list until the next one.
    sandbox.receive(unpaid.id, "0.1")
    assert listed(owner, f"state=partly_paid&{mine}")[:2] == (1, [partly.id])
    sync_now(app)
    total, ids, _ = listed(owner, f"state=partly_paid&{mine}&sort=created&sort_type=asc")
    assert (total, ids) == (2, [partly.id, unpaid.id])

    without = owner.get(f"/operations?{mine}").text
    assert "as of the last sync" not in without and TOTAL.search(without).group(1) == "3"


def test_a_filter_the_mirror_cannot_answer_says_so(owner):
    response = owner.get("/operations?state=paid&fee_from=1&sort=amount")
    assert response.status_code == 422
    assert response.text.count("A state is read from the last sync, which cannot answer") == 2


def test_a_tolerance_turns_an_operation_short_within_it_to_paid(app, owner, api, sandbox):
    short = underpaid(api, sandbox, "0.995")  # half a percent short
    sync_now(app)
    assert badge(listed(owner, f"order_id={short.order_id}")[2], short.id) == "Underpaid"
    assert mirrored_state(app, short.id) == "underpaid"

    saved = post(owner, "/settings/checkout/tolerance", {"payment_tolerance_percent": "1"})
    assert saved.status_code == 302
    page = owner.get(saved.location).text
    assert "The payment tolerance is now 1%. 1 operation changed state." in page
    assert tolerance(app) == Decimal(1)
    assert mirrored_state(app, short.id) == "paid"
    _, ids, html = listed(owner, f"state=paid&order_id={short.order_id}")
    assert ids == [short.id] and badge(html, short.id) == "Paid"

    post(owner, "/settings/checkout/tolerance", {"payment_tolerance_percent": "0"})
    assert mirrored_state(app, short.id) == "underpaid"


@pytest.mark.parametrize("typed", ["10.01", "0.125", "-1", "1,5", "", "abc"])
def test_a_bad_tolerance_is_refused_and_changes_nothing(app, owner, typed):
    before = tolerance(app)
    refused = post(owner, "/settings/checkout/tolerance", {"payment_tolerance_percent": typed})
    assert refused.status_code == 422
    assert "Enter a percent from 0 to 10 with at most 2 decimals" in refused.text
    assert tolerance(app) == before


def test_only_owners_set_the_tolerance(app):
    for role in ("operator", "accountant"):
        client = signed_in(app, email(role))
        answer = post(client, "/settings/checkout/tolerance", {"payment_tolerance_percent": "1"})
        assert answer.status_code == 403
    assert tolerance(app) == 0


def test_the_export_says_each_operations_state(app, owner, api, sandbox):
    short, waiting = underpaid(api, sandbox, "0.5"), operation(api)
    sync_now(app)
    both = f"order_id={short.order_id},{waiting.order_id}"
    for query in (both, f"{both}&state=underpaid"):
        exported = owner.get(f"/operations/export.csv?{query}")
        assert exported.status_code == 200
        rows = {row["id"]: row["state"] for row in csv.DictReader(io.StringIO(exported.text))}
        if "state=" in query:
            assert rows == {short.id: "Underpaid"}
        else:
            assert rows == {short.id: "Underpaid", waiting.id: "Awaiting payment"}
