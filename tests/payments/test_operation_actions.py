"""Create, link, reject and cancel through the portal, against a sandbox of this module's own.

Every action asks for confirmation first: the first POST changes nothing at the API.
"""

from __future__ import annotations

import re
import uuid

import pytest

from portal.api import ApiRefusal, MerchantApiClient
from tests.support.forms import signed_in
from tests.support.htmx import HTMX
from tests.support.money import submit
from tests.support.portal_app import connected_portal, email
from tests.support.sandbox_server import free_port


@pytest.fixture(scope="module")
def sandbox(module_servers):
    return module_servers.sandbox()


@pytest.fixture(scope="module")
def app(module_servers, sandbox):
    return module_servers.portal(sandbox, WTF_CSRF_ENABLED=False, PUBLIC_URL="https://shop.example")


@pytest.fixture(scope="module")
def api(sandbox) -> MerchantApiClient:
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


@pytest.fixture(scope="module")
def operator(app):
    return signed_in(app, email("operator"))


# Linking one 0.1 BTC transaction of a 0.5 BTC operation confirms it 0.4 BTC short: accepted.
ACCEPTED = {"accept_underpayment": "y", "underpayment": "0.4"}


def new_operation(api, sandbox, transactions: int = 0):
    operation = api.create_operation("0.5", "BTC", f"order-{uuid.uuid4().hex[:8]}")
    ids = []
    for _ in range(transactions):
        body = {"amount": "0.1", "tx_id": f"hash-{uuid.uuid4().hex}", "status": "undefined"}
        response = sandbox.control("POST", f"operations/{operation.id}/transactions", body)
        ids.append(response.json()["data"]["id"])
    return operation, ids


def test_create_sends_the_checkout_page_as_redirect_url(app, operator, api):
    order = f"order-{uuid.uuid4().hex[:8]}"
    response = submit(
        operator,
        "/operations/new",
        {"amount": "12.5", "currency": "USDT", "payment_currency": "", "order_id": order},
    )
    assert response.status_code == 302
    operation_id = response.location.rsplit("/", 1)[1]
    operation = api.get_operation(operation_id)
    assert (operation.amount, operation.currency, operation.order_id) == (12.5, "USDT", order)
    assert operation.redirect_url.startswith("https://shop.example/checkout/")
    with app.app_context():
        from portal.payments.rules.checkout_links import find_link

        link = find_link(operation.redirect_url.rsplit("/", 1)[1])
        assert link.operation_id == operation_id
    page = operator.get(response.location).get_data(as_text=True)
    assert f"Operation {operation_id} was created." in page
    assert "Payment link" in page
    assert f'value="{operation.payment_url}" readonly' in page
    assert 'src="data:image/svg+xml' in page


def test_create_with_a_redirect_url_of_the_merchants_own(operator, api):
    response = submit(
        operator,
        "/operations/new",
        {
            "amount": "0.001",
            "currency": "BTC",
            "payment_currency": "ETH",
            "order_id": "own-redirect",
            "redirect_url": "https://merchant.example/thanks",
        },
    )
    operation = api.get_operation(response.location.rsplit("/", 1)[1])
    assert operation.redirect_url == "https://merchant.example/thanks"
    assert operation.currency_paid == "ETH"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("amount", "0", "The amount must be greater than zero."),
        ("amount", "1.123456789", "Enter an amount such as 12.5, with at most 8 decimals."),
        ("amount", "-3", "Enter an amount such as 12.5, with at most 8 decimals."),
        ("amount", "1e5", "Enter an amount such as 12.5, with at most 8 decimals."),
        ("currency", "DOGE", "Not a valid choice."),
        ("order_id", "", "Enter the order number."),
        ("order_id", "A-1,B-2", "An order number cannot contain a comma"),
        ("order_id", "A-1\t=1+1", "An order number is one line, without tabs"),
        (
            "redirect_url",
            "javascript:alert(1)",
            "Enter an address starting with http:// or https://.",
        ),
    ],
)
def test_bad_input_never_reaches_the_api(operator, api, field, value, message):
    before = api.list_operations(per_page=1).total
    data = {"amount": "1", "currency": "BTC", "order_id": "bad-input", field: value}
    response = submit(operator, "/operations/new", data)
    html = response.get_data(as_text=True)
    assert response.status_code == 422
    errors = re.search(rf'<ul class="errors" id="{field}-errors">(.*?)</ul>', html, re.S)
    assert errors and message in errors.group(1)
    assert api.list_operations(per_page=1).total == before


def field_errors(html: str, field: str) -> str:
    """The text of the errors shown next to `field` ("" when there are none)."""
    errors = re.search(rf'<ul class="errors" id="{field}-errors">(.*?)</ul>', html, re.S)
    return errors.group(1) if errors else ""


def test_a_usd_price_is_paid_in_a_crypto_currency_by_default(operator, api):
    """USD cannot be paid on a blockchain: it is not offered as the payment currency, and a
    USD price left at the default is paid in the first crypto currency."""
    form = operator.get("/operations/new").get_data(as_text=True)
    payment = re.search(r'<select[^>]*id="payment_currency".*?</select>', form, re.S).group(0)
    assert 'value="USD"' not in payment
    assert "Same as the currency (BTC for a price in USD)" in payment
    order = f"usd-{uuid.uuid4().hex[:8]}"
    data = {"amount": "5", "currency": "USD", "payment_currency": "", "order_id": order}
    response = submit(operator, "/operations/new", data)
    assert response.status_code == 302, response.text
    operation = api.get_operation(response.location.rsplit("/", 1)[1])
    assert (operation.currency, operation.currency_paid) == ("USD", "BTC")
    refused = submit(operator, "/operations/new", {**data, "payment_currency": "USD"})
    assert refused.status_code == 422
    assert "Not a valid choice." in field_errors(refused.text, "payment_currency")


def test_code_7_is_said_next_to_the_payment_currency(operator, monkeypatch):
    def refuse(_client, **_asked):
        raise ApiRefusal(7, "Operation not created")

    monkeypatch.setattr(MerchantApiClient, "create_operation", refuse)
    data = {"amount": "5", "currency": "ETH", "payment_currency": "BTC", "order_id": "seven"}
    response = submit(operator, "/operations/new", data)
    assert response.status_code == 422
    said = field_errors(response.text, "payment_currency")
    assert "The payment service did not create the operation" in said
    assert 'class="form-error"' not in response.text


def test_api_refusals_are_shown_on_the_form(operator):
    """An amount above the API's limit is its code 9, next to the amount."""
    data = {"amount": "999999999999", "currency": "BTC", "order_id": "huge"}
    response = submit(operator, "/operations/new", data)
    errors = re.search(r'<ul class="errors" id="amount-errors">(.*?)</ul>', response.text, re.S)
    assert response.status_code == 422 and errors, response.text


def test_link_asks_first_then_links(operator, api, sandbox):
    operation, (first, second) = new_operation(api, sandbox, transactions=2)
    url = f"/operations/{operation.id}/link-transactions"
    asked = operator.post(url, data={"transaction_id": [first, second]}, headers=HTMX)
    html = asked.get_data(as_text=True)
    assert asked.status_code == 200 and html.lstrip().startswith('<div id="operation"')
    assert "Link 2 transactions?" in html
    assert {t.status for t in api.get_operation(operation.id).transactions} == {"undefined"}

    linking = {"transaction_id": [first], "confirm": "1", **ACCEPTED}
    done = operator.post(url, data=linking, headers=HTMX)
    assert "1 transaction linked to the operation." in done.get_data(as_text=True)
    linked = {t.id: t for t in api.get_operation(operation.id).transactions}
    assert linked[first].linked and linked[first].status == "confirmed"
    assert not linked[second].linked
    assert api.get_operation(operation.id).status == "confirmed"


def ticked(html: str) -> list[str]:
    """The transactions whose selection box is ticked on the operation page."""
    return re.findall(
        r'<input type="checkbox" name="transaction_id" value="([^"]+)"[^>]* checked', html
    )


def test_after_an_action_no_box_stays_ticked(operator, api, sandbox):
    """Once, after Link selected the linked ones stayed ticked, so the next Reject selected
    rejected them too. After any action, sent or refused, nothing is ticked."""
    operation, (first, second) = new_operation(api, sandbox, transactions=2)
    url = f"/operations/{operation.id}/link-transactions"
    asked = operator.post(url, data={"transaction_id": [first, second]}, headers=HTMX)
    assert sorted(ticked(asked.text)) == sorted([first, second])  # the choice being confirmed
    linking = {"transaction_id": [first], "confirm": "1", **ACCEPTED}
    done = operator.post(url, data=linking, headers=HTMX)
    assert "1 transaction linked to the operation." in done.text
    assert ticked(done.text) == []

    reject = f"/operations/{operation.id}/reject-transactions"
    data = {"transaction_id": [second], "reason": "Duplicate", "confirm": "1"}
    done = operator.post(reject, data=data, headers=HTMX)
    assert "1 transaction rejected." in done.text and ticked(done.text) == []
    refused = operator.post(reject, data={**data, "transaction_id": ["999999"]}, headers=HTMX)
    assert refused.status_code == 422 and ticked(refused.text) == []


def test_the_confirmation_lists_each_transaction_with_its_amount_and_status(operator, api, sandbox):
    operation, (first, second) = new_operation(api, sandbox, transactions=2)
    asked = operator.post(
        f"/operations/{operation.id}/reject-transactions",
        data={"transaction_id": [first, second], "reason": "Not ours"},
        headers=HTMX,
    )
    confirmation = re.search(r'<section class="card confirm".*?</section>', asked.text, re.S)
    rows = re.findall(
        r"<tr>\s*<td>(\w+)</td>\s*<td[^>]*>([^<]+)</td>\s*<td>(.*?)</td>",
        confirmation.group(0),
        re.S,
    )
    assert [(tid, amount) for tid, amount, _ in rows] == [
        (first, "0.1 BTC"),
        (second, "0.1 BTC"),
    ]
    assert all("Undefined" in status for _, _, status in rows)
    assert "already count" not in confirmation.group(0)  # nothing paid among them


def test_rejecting_a_linked_transaction_needs_its_own_confirmation(operator, api, sandbox):
    operation, (first,) = new_operation(api, sandbox, transactions=1)
    base = f"/operations/{operation.id}"
    linking = {"transaction_id": [first], "confirm": "1", **ACCEPTED}
    operator.post(f"{base}/link-transactions", data=linking)
    assert api.get_operation(operation.id).status == "confirmed"

    data = {"transaction_id": [first], "reason": "Linked by mistake"}
    asked = operator.post(f"{base}/reject-transactions", data=data, headers=HTMX)
    assert "1 of these already counts as paid" in asked.text
    assert "Yes, reject transactions that already count as paid" in asked.text
    refused = operator.post(f"{base}/reject-transactions", data={**data, "confirm": "1"})
    assert refused.status_code == 422
    assert "Tick the box to confirm" in field_errors(refused.text, "paid_ones_too")
    assert api.get_transaction(first).status == "confirmed"  # nothing sent

    done = operator.post(
        f"{base}/reject-transactions", data={**data, "confirm": "1", "paid_ones_too": "y"}
    )
    assert done.status_code == 302
    after = api.get_operation(operation.id)
    assert after.transactions[0].status == "rejected"
    assert (after.status, after.amount_paid) == ("new", 0)


def test_reject_needs_a_reason_and_a_confirmation(operator, api, sandbox):
    operation, (first,) = new_operation(api, sandbox, transactions=1)
    url = f"/operations/{operation.id}/reject-transactions"
    missing = operator.post(url, data={"transaction_id": [first]})
    assert missing.status_code == 422
    assert "Enter the reason for the rejection." in missing.get_data(as_text=True)
    none = operator.post(url, data={"reason": "Duplicate"})
    assert "Select at least one transaction." in none.get_data(as_text=True)

    asked = operator.post(url, data={"transaction_id": [first], "reason": "Duplicate"})
    assert "Reject 1 transaction?" in asked.get_data(as_text=True)
    done = operator.post(
        url, data={"transaction_id": [first], "reason": "Duplicate", "confirm": "1"}
    )
    assert done.status_code == 302  # without htmx: Post/Redirect/Get
    (transaction,) = api.get_operation(operation.id).transactions
    assert (transaction.status, transaction.reject_reason) == ("rejected", "Duplicate")


def test_a_transaction_of_another_operation_is_refused(operator, api, sandbox):
    operation, _ = new_operation(api, sandbox, transactions=1)
    _, (foreign,) = new_operation(api, sandbox, transactions=1)
    response = operator.post(
        f"/operations/{operation.id}/link-transactions",
        data={"transaction_id": [foreign], "confirm": "1"},
    )
    assert response.status_code == 422
    assert api.get_transaction(foreign).linked is False


def test_a_refusal_that_names_no_field_is_said_on_the_page(operator, api, sandbox, monkeypatch):
    """Code 6 (the API no longer finds a transaction the page offered) is shown, not just 422."""
    operation, (first,) = new_operation(api, sandbox, transactions=1)

    def refuse(_client, _operation_id, _ids):
        raise ApiRefusal(6, "Transaction not found")

    monkeypatch.setattr(MerchantApiClient, "link_transactions", refuse)
    response = operator.post(
        f"/operations/{operation.id}/link-transactions",
        data={"transaction_id": [first], "confirm": "1", **ACCEPTED},
        headers=HTMX,
    )
    assert response.status_code == 422
    said = r'class="form-error"[^>]*>[^<]*has no transaction with this id'
    assert re.search(said, response.get_data(True))


def test_cancel_asks_first_and_explains_code_8(operator, api, sandbox):
    operation, _ = new_operation(api, sandbox)
    url = f"/operations/{operation.id}/cancel"
    asked = operator.post(url, headers=HTMX).get_data(as_text=True)
    assert f"Cancel operation {operation.id}?" in asked
    assert api.get_operation(operation.id).status == "new"
    done = operator.post(url, data={"confirm": "1"}, headers=HTMX).get_data(as_text=True)
    assert "The operation was canceled." in done
    assert api.get_operation(operation.id).status == "canceled"
    assert "Cancel operation</button>" not in done

    again = operator.post(url, data={"confirm": "1"}, headers=HTMX)
    assert again.status_code == 409
    assert "error 8" in again.get_data(as_text=True)


def test_the_accountant_sees_no_controls_and_is_refused(app, api, sandbox):
    accountant = signed_in(app, email("accountant"))
    operation, (first,) = new_operation(api, sandbox, transactions=1)
    page = accountant.get(f"/operations/{operation.id}").get_data(as_text=True)
    for control in ("Link selected", "Reject selected", "Cancel operation", 'type="checkbox"'):
        assert control not in page
    assert "New operation" not in accountant.get("/operations").get_data(as_text=True)
    for action in ("link-transactions", "reject-transactions", "cancel"):
        data = {"transaction_id": [first], "reason": "x", "confirm": "1"}
        assert accountant.post(f"/operations/{operation.id}/{action}", data=data).status_code == 403
    assert accountant.get("/operations/new").status_code == 403
    assert api.get_operation(operation.id).status == "new"


def test_unknown_ids_are_a_clear_404(operator):
    for path, title in (
        ("/operations/999999", "Operation not found"),
        ("/transactions/999999", "Transaction not found"),
        ("/operations/not%20an%20id", "Operation not found"),
    ):
        response = operator.get(path)
        assert response.status_code == 404
        assert title in response.get_data(as_text=True)


def test_invalid_filters_never_reach_the_api(tmp_path, sandbox):
    """Connected to an address where nothing listens: a call would be a 502, not a 422."""
    unreachable = type(sandbox)(f"http://127.0.0.1:{free_port()}", sandbox.database, None)
    with connected_portal(tmp_path, sandbox, WTF_CSRF_ENABLED=False) as application:
        with application.app_context():
            from portal.extensions import db
            from portal.settings.models import ApiConnection

            db.session.scalar(db.select(ApiConnection)).base_url = unreachable.base_url
            db.session.commit()
        client = signed_in(application, email("accountant"))
        for path, field, message in (
            ("/operations?amount_from=ten", "amount_from", "Enter a number such as 10 or 0.5."),
            ("/operations?amount_from=5&amount_to=1", "amount_to", "Must be at least"),
            ("/operations?created_from=2024-02-30", "created_from", "Enter a date as YYYY-MM-DD."),
            (
                "/operations?created_from=2024-02-02&created_to=2024-02-01",
                "created_to",
                "on or after",
            ),
            ("/operations?status=9", "status", "Choose from the values shown."),
            ("/operations?sort=price", "sort", "Choose from the values shown."),
            ("/operations?sort_type=up", "sort_type", "Choose from the values shown."),
            ("/operations?per_page=1000", "per_page", "Choose 10, 25, 50 or 100."),
            ("/operations?id=1;2", "id", "is not valid"),
            ("/operations?currency=b$c", "currency", "Use codes such as BTC."),
            ("/operations?category=gift", "category", "Choose from the values shown."),
            ("/transactions?linked=yes", "linked", "Choose from the values shown."),
            ("/transactions?status=0", "status", "Choose from the values shown."),
        ):
            response = client.get(path)
            assert response.status_code == 422, path
            html = response.get_data(as_text=True)
            slot = re.search(rf'id="{field}-errors">(.*?)</div>', html, re.S)
            assert slot and message in slot.group(1), path
        response = client.get("/operations?page=0")
        assert response.status_code == 422
        assert "Enter a page number of at least 1." in response.get_data(as_text=True)


def test_every_action_on_operations_is_in_the_audit_log(app, operator, api, sandbox):
    operation, (first, second) = new_operation(api, sandbox, transactions=2)
    base = f"/operations/{operation.id}"
    linking = {"transaction_id": [first], "confirm": "1", **ACCEPTED}
    operator.post(f"{base}/link-transactions", data=linking)
    operator.post(
        f"{base}/reject-transactions",
        data={"transaction_id": [second], "reason": "Duplicate", "confirm": "1"},
    )
    operator.post(f"{base}/cancel", data={"confirm": "1"})  # confirmed now: refused, code 8
    created = submit(
        operator, "/operations/new", {"amount": "3", "currency": "USDT", "order_id": "audited"}
    )
    new_id = created.location.rsplit("/", 1)[1]

    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        events = db.session.scalars(
            db.select(AuditEvent).order_by(AuditEvent.id.desc()).limit(4)
        ).all()[::-1]
    summary = [(event.action, event.outcome, event.error_code) for event in events]
    assert summary == [
        ("transactions.link", "success", None),
        ("transactions.reject", "success", None),
        ("operation.cancel", "error", 8),
        ("operation.create", "success", None),
    ]
    assert all(event.user_email == email("operator") for event in events)
    assert events[0].parameters == {
        "operation_id": operation.id,
        "transaction_ids": first,
        "underpayment_accepted": "0.40000000 BTC",
    }
    assert events[1].parameters["reason"] == "Duplicate"
    assert events[3].parameters["operation_id"] == new_id
    assert events[3].parameters["amount"] == "3"
