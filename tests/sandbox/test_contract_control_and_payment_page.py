"""Contract of the control surface (flags, faults, wallets) and the hosted payment page."""

from __future__ import annotations

import json
import time
from decimal import Decimal

import pytest
import requests

from tests.sandbox.contract import (
    DEFAULT_FLAGS,
    WALLETS_AT_START,
    Api,
    add_transaction,
    assert_error,
    ceil8,
    control,
    data_of,
    describe,
    parse_page,
    pay_page_url,
    press,
    q8,
    query_of,
    set_flags,
    set_wallet,
    shows_amount,
    wallets,
)
from tests.support.polling import wait_for

SHOP = "https://shop.example/return?order=42"
BUTTONS = {
    "pay_full": "Pay in full",
    "pay_part": "Pay part",
    "cancel": "Cancel payment",
    "expire": "Let it expire",
}


# Flags -------------------------------------------------------------------------------------------


def test_flags_start_at_their_defaults_and_can_be_set(sandbox):
    flags = data_of(control(sandbox, "GET", "flags"))
    assert {name: flags.get(name) for name in DEFAULT_FLAGS} == DEFAULT_FLAGS
    changed = set_flags(sandbox, withdrawals_allowed=False, exchange_daily_limit=3)
    assert changed["withdrawals_allowed"] is False
    assert changed["exchange_daily_limit"] == 3
    assert changed["application_banned"] is False  # untouched flags keep their value
    again = data_of(control(sandbox, "GET", "flags"))
    assert again["withdrawals_allowed"] is False and again["exchange_daily_limit"] == 3
    set_flags(sandbox, unknown_invoice_redirect_url="https://shop.example/missing")
    assert data_of(control(sandbox, "GET", "flags"))["unknown_invoice_redirect_url"] == (
        "https://shop.example/missing"
    )
    sandbox.reset()
    flags = data_of(control(sandbox, "GET", "flags"))
    assert {name: flags.get(name) for name in DEFAULT_FLAGS} == DEFAULT_FLAGS


def test_control_surface_needs_a_token_and_accepts_either(module_sandbox):
    url = f"{module_sandbox.base_url}/_control/flags"
    assert_error(requests.get(url, timeout=10), 2)
    assert_error(requests.get(url, headers={"Authorization": "Bearer nope"}, timeout=10), 2)
    headers = module_sandbox.headers(module_sandbox.company_token)
    data_of(requests.get(url, headers=headers, timeout=10))


def test_bodiless_control_posts_work_through_the_shared_helper(api, sandbox):
    """`server.control("POST", ".../expire")` sends no body and no Content-Type."""
    op = api.create_operation()
    response = sandbox.control("POST", f"operations/{op['id']}/expire")
    assert data_of(response)["status"] == "expired"


# Wallets -----------------------------------------------------------------------------------------


def test_wallets_can_be_read_set_and_removed(sandbox):
    assert wallets(sandbox) == WALLETS_AT_START
    set_wallet(sandbox, "BTC", "1.5")
    assert wallets(sandbox)["BTC"] == Decimal("1.5")
    set_wallet(sandbox, "USDT", None)
    assert "USDT" not in wallets(sandbox)
    set_wallet(sandbox, "USDT", "10")
    assert wallets(sandbox)["USDT"] == 10
    assert wallets(sandbox)["ETH"] == WALLETS_AT_START["ETH"]


# Faults ------------------------------------------------------------------------------------------


def set_fault(server, **fault):
    return data_of(control(server, "POST", "faults", fault))


def test_fault_error500_answers_html_500_before_doing_anything(api, sandbox):
    assert data_of(control(sandbox, "GET", "faults"))["mode"] == "none"
    fault = set_fault(sandbox, mode="error500")
    assert fault["mode"] == "error500"
    for prefix in ("/sandbox/v1", "/v1"):
        response = Api(sandbox, prefix).get("/ping")
        assert response.status_code == 500, describe(response)
        assert response.headers["Content-Type"].startswith("text/html")
    response = api.post("/operations", {"amount": "1", "currency": "BTC", "order_id": "x"})
    assert response.status_code == 500
    # The control surface and the payment page are not subject to faults.
    data_of(control(sandbox, "GET", "flags"))
    set_fault(sandbox, mode="none")
    assert api.total("/operations") == 0
    data_of(api.get("/ping"))


def test_fault_with_probability_zero_never_fires(api, sandbox):
    set_fault(sandbox, mode="error500", probability=0)
    answers = [api.get("/ping") for _ in range(5)]
    assert [answer.status_code for answer in answers] == [200] * 5


def test_fault_slow_delays_and_still_handles_the_request(api, sandbox):
    set_fault(sandbox, mode="slow", delay_ms=600)
    started = time.monotonic()
    data_of(api.get("/ping"))
    assert time.monotonic() - started >= 0.55
    with pytest.raises(requests.Timeout):
        api.post("/operations", {"amount": "1", "currency": "BTC", "order_id": "slow"}, timeout=0.2)
    set_fault(sandbox, mode="none")  # the request already held up is still carried out
    operations = wait_for(lambda: api.get("/operations").json()["data"])
    assert [op["order_id"] for op in operations] == ["slow"]


def test_fault_malformed_handles_the_request_and_truncates_the_answer(api, sandbox):
    set_fault(sandbox, mode="malformed")
    response = api.post("/operations", {"amount": "1", "currency": "BTC", "order_id": "mal"})
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.text)
    set_fault(sandbox, mode="none")
    assert api.total("/operations") == 1


def test_fault_reset_handles_the_request_and_drops_the_connection(api, sandbox):
    set_fault(sandbox, mode="reset")
    with pytest.raises(requests.ConnectionError):
        api.post("/operations", {"amount": "1", "currency": "BTC", "order_id": "reset"})
    set_fault(sandbox, mode="none")
    assert api.total("/operations") == 1


def test_faults_spare_the_payment_page(api, sandbox):
    op = api.create_operation(redirect_url=SHOP)
    set_fault(sandbox, mode="error500")
    assert requests.get(pay_page_url(sandbox, op["id"]), timeout=10).status_code == 200


# The hosted payment page -------------------------------------------------------------------------


def redirect_of(response: requests.Response) -> tuple[str, list[tuple[str, str]]]:
    assert response.status_code in (302, 303), describe(response)
    return query_of(response.headers["Location"])


def shop_with(status: int | None, base: str = SHOP) -> tuple[str, list[tuple[str, str]]]:
    path, query = query_of(base)
    return path, [*query, ("status", str(status))] if status is not None else query


def open_page(server, operation_id) -> requests.Response:
    return requests.get(pay_page_url(server, operation_id), timeout=10, allow_redirects=False)


def test_the_page_shows_amount_address_and_four_buttons(api, sandbox):
    op = api.create_operation(amount="0.12345678", redirect_url=SHOP)
    response = open_page(sandbox, op["id"])
    assert response.status_code == 200, describe(response)
    assert response.headers["Content-Type"].startswith("text/html")
    html = response.text
    assert shows_amount(html, Decimal("0.12345678"))
    assert op["address"] in html
    page = parse_page(html)
    forms = [form for form in page.forms if form.method == "post"]
    assert len(forms) == 1
    form = forms[0]
    buttons = {button.get("value"): button for button in form.buttons}
    assert set(buttons) == set(BUTTONS)
    for value, label in BUTTONS.items():
        assert buttons[value].get("type") == "submit"
        assert buttons[value].get("name") == "action"
        assert buttons[value]["label"] == label
    assert not [field for field in form.inputs if "csrf" in (field.get("name") or "").lower()]


def test_the_page_shows_the_amount_due_in_the_payment_currency(api, sandbox):
    op = api.create_operation(amount="250", currency="USD", payment_currency="ETH")
    due = ceil8(Decimal(op["amount"]) * Decimal(op["rate"]))
    html = open_page(sandbox, op["id"]).text
    assert shows_amount(html, due), (q8(due), html)
    assert op["address"] in html


def test_pay_in_full_redirects_without_status(api, sandbox):
    op = api.create_operation(amount="0.5", redirect_url=SHOP)
    assert redirect_of(press(sandbox, op["id"], "pay_full")) == shop_with(None)
    paid = api.operation(op["id"])
    assert paid["status"] == "confirmed"
    assert paid["amount_paid"] == "0.50000000"
    assert [(tx["amount"], tx["status"], tx["linked"]) for tx in paid["transactions"]] == [
        ("0.50000000", "confirmed", False)
    ]
    # Coming back to a handled invoice.
    assert redirect_of(open_page(sandbox, op["id"])) == shop_with(5)


def test_pay_in_full_of_a_usd_invoice_pays_the_amount_due(api, sandbox):
    op = api.create_operation(
        amount="100", currency="USD", payment_currency="BTC", redirect_url=SHOP
    )
    due = ceil8(Decimal(op["amount"]) * Decimal(op["rate"]))
    assert redirect_of(press(sandbox, op["id"], "pay_full")) == shop_with(None)
    paid = api.operation(op["id"])
    assert paid["status"] == "confirmed"
    assert paid["amount_paid"] == q8(due)


def test_pay_part_keeps_the_payer_on_the_page(api, sandbox):
    op = api.create_operation(amount="0.12345678", redirect_url=SHOP)
    response = press(sandbox, op["id"], "pay_part")
    if response.status_code in (301, 302, 303, 307):
        location, _ = query_of(
            requests.compat.urljoin(pay_page_url(sandbox, op["id"]), response.headers["Location"])
        )
        assert location == pay_page_url(sandbox, op["id"]), response.headers["Location"]
        response = open_page(sandbox, op["id"])
    assert response.status_code == 200, describe(response)
    half = Decimal("0.06172839")
    assert shows_amount(response.text, half)  # what remains
    partly = api.operation(op["id"])
    assert partly["status"] == "new"
    assert partly["amount_paid"] == "0.06172839"
    assert [tx["status"] for tx in partly["transactions"]] == ["confirmed"]

    assert redirect_of(press(sandbox, op["id"], "pay_full")) == shop_with(None)
    paid = api.operation(op["id"])
    assert paid["status"] == "confirmed"
    assert paid["amount_paid"] == "0.12345678"
    assert sorted(tx["amount"] for tx in paid["transactions"]) == ["0.06172839", "0.06172839"]


def test_cancel_payment_redirects_with_status_1(api, sandbox):
    op = api.create_operation(redirect_url=SHOP)
    assert redirect_of(press(sandbox, op["id"], "cancel")) == shop_with(1)
    assert api.operation(op["id"])["status"] == "canceled"
    assert redirect_of(open_page(sandbox, op["id"])) == shop_with(1)


def test_let_it_expire_redirects_with_status_4(api, sandbox):
    op = api.create_operation(redirect_url=SHOP)
    assert redirect_of(press(sandbox, op["id"], "expire")) == shop_with(4)
    assert api.operation(op["id"])["status"] == "expired"
    assert redirect_of(open_page(sandbox, op["id"])) == shop_with(4)


def test_opening_the_page_of_a_handled_operation(api, sandbox):
    canceled = api.create_operation(redirect_url=SHOP)
    assert api.put(f"/operations/{canceled['id']}/cancel").status_code == 204
    assert redirect_of(open_page(sandbox, canceled["id"])) == shop_with(1)

    expired = api.create_operation(redirect_url=SHOP)
    data_of(control(sandbox, "POST", f"operations/{expired['id']}/expire"))
    assert redirect_of(open_page(sandbox, expired["id"])) == shop_with(4)

    linked = api.create_operation(redirect_url=SHOP)
    tx = add_transaction(sandbox, linked["id"], "0.01", "undefined")
    data_of(api.put(f"/operations/{linked['id']}/link-transactions", {"tx_id": [tx["id"]]}))
    assert redirect_of(open_page(sandbox, linked["id"])) == shop_with(5)


def test_status_is_appended_to_a_redirect_url_without_query(api, sandbox):
    plain = "https://shop.example/done"
    op = api.create_operation(redirect_url=plain)
    response = press(sandbox, op["id"], "cancel")
    assert redirect_of(response) == ("https://shop.example/done", [("status", "1")])
    paid = api.create_operation(redirect_url=plain)
    response = press(sandbox, paid["id"], "pay_full")
    assert redirect_of(response) == ("https://shop.example/done", [])


def _flagged_outcome(sandbox, operation_id, action="pay_full"):
    """The redirect a flag causes: when the page opens, or at the latest on a button press."""
    response = open_page(sandbox, operation_id)
    if response.status_code == 200:
        response = requests.post(
            pay_page_url(sandbox, operation_id),
            data={"action": action},
            timeout=10,
            allow_redirects=False,
        )
    return redirect_of(response)


@pytest.mark.parametrize(
    ("flags", "status"),
    [
        ({"application_banned": True}, 3),
        ({"payment_gateways_available": False}, 6),
        ({"company_banned": True}, 7),
    ],
)
def test_flags_redirect_with_their_status(api, sandbox, flags, status):
    op = api.create_operation(redirect_url=SHOP)
    set_flags(sandbox, **flags)
    assert _flagged_outcome(sandbox, op["id"]) == shop_with(status)
    sandbox.reset()
    shown = api.operation(op["id"])
    assert shown["status"] == "new" and shown["amount_paid"] is None


@pytest.mark.parametrize("action", ["pay_full", "pay_part"])
def test_failing_gateway_redirects_with_status_8(api, sandbox, action):
    op = api.create_operation(redirect_url=SHOP)
    set_flags(sandbox, payment_gateway_fails=True)
    assert redirect_of(press(sandbox, op["id"], action)) == shop_with(8)
    sandbox.reset()
    assert api.operation(op["id"])["status"] == "failed"
    assert redirect_of(open_page(sandbox, op["id"])) == shop_with(5)


def test_unknown_invoice(api, sandbox):
    assert open_page(sandbox, "999999").status_code == 404
    assert open_page(sandbox, "not-an-id").status_code == 404
    missing = "https://shop.example/missing?from=pay"
    set_flags(sandbox, unknown_invoice_redirect_url=missing)
    assert redirect_of(open_page(sandbox, "999999")) == shop_with(2, missing)
    sandbox.reset()


def test_without_redirect_url_the_page_shows_the_outcome(api, sandbox):
    op = api.create_operation(amount="0.5")
    response = press(sandbox, op["id"], "pay_full")
    if response.status_code in (301, 302, 303, 307):
        target = requests.compat.urljoin(
            pay_page_url(sandbox, op["id"]), response.headers["Location"]
        )
        assert query_of(target)[0] == pay_page_url(sandbox, op["id"])
        response = requests.get(target, timeout=10, allow_redirects=False)
    assert response.status_code == 200, describe(response)
    assert response.headers["Content-Type"].startswith("text/html")
    assert api.operation(op["id"])["status"] == "confirmed"

    canceled = api.create_operation()
    response = press(sandbox, canceled["id"], "cancel")
    assert response.status_code in (200, 302, 303)
    if response.status_code != 200:
        target = requests.compat.urljoin(
            pay_page_url(sandbox, canceled["id"]), response.headers["Location"]
        )
        assert query_of(target)[0] == pay_page_url(sandbox, canceled["id"])
    assert api.operation(canceled["id"])["status"] == "canceled"


def test_a_page_needs_no_bearer_token(api, sandbox):
    op = api.create_operation(redirect_url=SHOP)
    response = requests.get(pay_page_url(sandbox, op["id"]), timeout=10, allow_redirects=False)
    assert response.status_code == 200
