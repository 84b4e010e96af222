"""Contract of operations: every endpoint under both prefixes, create, show, cancel, expiry."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.sandbox.contract import (
    EXTERNAL_ADDRESS,
    PREFIXES,
    Api,
    add_transaction,
    assert_error,
    check_cross_exchange,
    check_exchange,
    check_operation,
    check_sandbox_address,
    check_transaction,
    check_voucher,
    control,
    data_of,
    list_of,
    q8,
    rates_of,
)
from tests.support.sandbox_server import run_sandbox


@pytest.mark.parametrize("prefix", PREFIXES)
def test_every_endpoint_answers_with_its_documented_status_and_shape(sandbox, prefix):
    """All 21 endpoints, in one walk through a fresh sandbox, under one prefix."""
    api = Api(sandbox, prefix)

    # 1 ping
    assert data_of(api.get("/ping"), 200) == {"status": "ok"}

    # 4 create operation, 2 show, 3 list
    op = data_of(
        api.post("/operations", {"amount": "0.5", "currency": "BTC", "order_id": "A-1"}), 201
    )
    check_operation(op)
    assert data_of(api.get(f"/operations/{op['id']}"), 200) == op
    listing = list_of(api.get("/operations"))
    assert [record["id"] for record in listing["data"]] == [op["id"]]
    check_operation(listing["data"][0])
    assert listing["meta"]["path"] == f"{sandbox.base_url}{prefix}/operations"

    # 6 transactions list, 7 show, 8 link, 9 reject
    first = add_transaction(sandbox, op["id"], "0.1", "undefined")
    second = add_transaction(sandbox, op["id"], "0.2", "undefined")
    transactions = list_of(api.get("/transactions"))
    assert sorted(tx["id"] for tx in transactions["data"]) == sorted([first["id"], second["id"]])
    for tx in transactions["data"]:
        check_transaction(tx)
        assert tx["operation_id"] == op["id"]
    shown = data_of(api.get(f"/transactions/{first['id']}"), 200)
    check_transaction(shown)
    assert shown["operation_id"] == op["id"]
    linked = data_of(api.put(f"/operations/{op['id']}/link-transactions", {"tx_id": [first["id"]]}))
    check_operation(linked)
    rejected = data_of(
        api.put(
            f"/operations/{op['id']}/reject-transactions",
            {"tx_id": [second["id"]], "reason": "wrong amount"},
        )
    )
    check_operation(rejected)

    # 5 cancel operation: 204 and no body
    other = data_of(
        api.post("/operations", {"amount": "1", "currency": "ETH", "order_id": "A-2"}), 201
    )
    cancel = api.put(f"/operations/{other['id']}/cancel")
    assert cancel.status_code == 204, cancel.text
    assert cancel.content == b""

    # 10 rates, 18 exchange rates
    assert len(rates_of(api.get("/rates"))) == 12
    assert len(rates_of(api.get("/exchange/rates"))) == 6

    # 11 withdrawal
    withdrawal = data_of(
        api.post(
            "/withdraw", {"amount": "0.01", "wallet": "BTC", "address": EXTERNAL_ADDRESS["BTC"]}
        ),
        200,
    )
    check_operation(withdrawal)

    # 14 create voucher, 12 list, 13 show, 15 cancel, 16 pay off
    voucher = data_of(api.post("/vouchers", {"amount": "0.01", "currency": "BTC"}), 201)
    check_voucher(voucher)
    vouchers = list_of(api.get("/vouchers"))
    assert [record["id"] for record in vouchers["data"]] == [voucher["id"]]
    assert data_of(api.get(f"/vouchers/{voucher['id']}"), 200) == voucher
    check_voucher(data_of(api.put(f"/vouchers/{voucher['id']}/cancel"), 200))
    second_voucher = data_of(api.post("/vouchers", {"amount": "0.02", "currency": "BTC"}), 201)
    check_voucher(data_of(api.post("/vouchers/payoff", {"code": second_voucher["code"]}), 200))

    # 17 create exchange
    check_exchange(
        data_of(
            api.post(
                "/exchange", {"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "0.1"}
            ),
            201,
        )
    )

    # 19 create cross exchange, 20 show, 21 cancel
    cross = data_of(
        api.post(
            "/cross-exchanges",
            {
                "sell_currency": "ETH",
                "buy_currency": "BTC",
                "sell_amount": "1",
                "sell_address": EXTERNAL_ADDRESS["ETH"],
                "buy_address": EXTERNAL_ADDRESS["BTC"],
            },
        ),
        201,
    )
    check_cross_exchange(cross)
    assert data_of(api.get(f"/cross-exchanges/{cross['id']}"), 200) == cross
    check_cross_exchange(data_of(api.put(f"/cross-exchanges/{cross['id']}/cancel"), 200))


def test_ping_answers_ok(module_api):
    response = module_api.get("/ping")
    assert data_of(response, 200) == {"status": "ok"}


def test_create_operation_returns_a_new_operation(module_api, module_sandbox):
    redirect = "https://shop.example/return?order=42"
    response = module_api.post(
        "/operations",
        {
            "amount": "12.5",
            "currency": "BTC",
            "order_id": "INV-2024-0001",
            "redirect_url": redirect,
        },
    )
    op = data_of(response, 201)
    check_operation(op)
    assert op["status"] == "new"
    assert op["category"] == "application"
    assert op["application_id"] == "1"
    assert op["application_name"] == "Sandbox application"
    assert op["order_id"] == "INV-2024-0001"
    assert op["amount"] == "12.50000000"
    assert op["fee"] == "0.12500000"
    assert op["amount_paid"] is None
    assert op["currency"] == "BTC"
    assert op["currency_paid"] == "BTC"  # payment_currency defaults to currency
    assert op["rate"] == "1.00000000"
    assert op["transactions"] == []
    assert op["redirect_url"] == redirect
    assert op["payment_url"] == f"{module_sandbox.base_url}/pay/{op['id']}"
    check_sandbox_address(op["address"], "BTC")
    assert op["created_at"] == op["updated_at"] or op["updated_at"] > op["created_at"]

    shown = module_api.operation(op["id"])
    assert shown == op


def test_create_operation_without_redirect_url_has_null_redirect(module_api):
    op = module_api.create_operation(amount="3", currency="ETH", order_id="no-redirect")
    assert op["redirect_url"] is None
    assert op["currency_paid"] == "ETH"
    check_sandbox_address(op["address"], "ETH")


@pytest.mark.parametrize(
    ("amount", "fee"),
    [
        ("12.5", "0.12500000"),
        ("1", "0.01000000"),
        ("0.000001", "0.00000001"),
        ("1000000000", "10000000.00000000"),
        ("250.12345600", "2.50123456"),
    ],
)
def test_fee_is_one_percent_of_the_amount(module_api, amount, fee):
    op = module_api.create_operation(amount=amount, currency="USDT", order_id=f"fee-{amount}")
    assert op["amount"] == q8(Decimal(amount))
    assert op["fee"] == fee


@pytest.mark.parametrize(
    ("currency", "payment_currency"),
    [("USD", "BTC"), ("USD", "ETH"), ("BTC", "ETH"), ("ETH", "USDT"), ("USDT", "BTC")],
)
def test_rate_is_the_market_rate_to_the_payment_currency(module_api, currency, payment_currency):
    before = rates_of(module_api.get("/rates"))
    op = module_api.create_operation(
        amount="100", currency=currency, payment_currency=payment_currency, order_id="rated"
    )
    after = rates_of(module_api.get("/rates"))
    pair = f"{currency}:{payment_currency}"
    assert op["currency"] == currency
    assert op["currency_paid"] == payment_currency
    assert Decimal(op["rate"]) in {before[pair], after[pair]}, (op["rate"], before[pair])
    check_sandbox_address(op["address"], payment_currency)


def test_every_operation_gets_a_fresh_address(module_api):
    addresses = {
        module_api.create_operation(currency=currency, order_id=f"addr-{n}")["address"]
        for n in range(3)
        for currency in ("BTC", "ETH", "USDT")
    }
    assert len(addresses) == 9


def test_operation_ids_are_distinct_increasing_integers(module_api):
    created = [module_api.create_operation(order_id=f"seq-{n}")["id"] for n in range(3)]
    numbers = [int(value) for value in created]
    assert numbers == sorted(numbers) and len(set(numbers)) == 3


def test_payment_currency_must_be_a_crypto_currency(module_api):
    before = module_api.total("/operations")
    response = module_api.post(
        "/operations",
        {"amount": "10", "currency": "BTC", "payment_currency": "USD", "order_id": "fiat"},
    )
    assert_error(response, 7)
    assert module_api.total("/operations") == before


def test_usd_can_be_the_operation_currency_only_with_a_crypto_payment_currency(module_api):
    response = module_api.post("/operations", {"amount": "10", "currency": "USD", "order_id": "u"})
    assert_error(response, 7)
    op = module_api.create_operation(amount="10", currency="USD", payment_currency="USDT")
    assert op["currency"] == "USD" and op["currency_paid"] == "USDT"


@pytest.mark.parametrize(
    "operation_id",
    ["999999", "0", "abc", "-1", "1.0", "99999999999999999999999999", "%E2%82%AC", "1%20"],
)
def test_unknown_operation_is_code_5(module_api, operation_id):
    assert_error(module_api.get(f"/operations/{operation_id}"), 5)
    assert_error(module_api.put(f"/operations/{operation_id}/cancel"), 5)
    assert_error(
        module_api.put(f"/operations/{operation_id}/link-transactions", {"tx_id": ["1"]}), 5
    )
    assert_error(
        module_api.put(
            f"/operations/{operation_id}/reject-transactions", {"tx_id": ["1"], "reason": "r"}
        ),
        5,
    )


def test_cancel_a_new_operation(api):
    op = api.create_operation()
    untouched = api.create_operation(order_id="other")
    response = api.put(f"/operations/{op['id']}/cancel")
    assert response.status_code == 204, response.text
    assert response.content == b""
    canceled = api.operation(op["id"])
    assert canceled["status"] == "canceled"
    assert canceled["updated_at"] >= op["updated_at"]
    assert api.operation(untouched["id"])["status"] == "new"

    again = api.put(f"/operations/{op['id']}/cancel")
    assert_error(again, 8)
    assert api.operation(op["id"])["status"] == "canceled"


def test_cancel_is_refused_unless_the_operation_is_new(api, sandbox):
    confirmed = api.create_operation(amount="0.5")
    add_transaction(sandbox, confirmed["id"], "0.5", "confirmed")
    assert api.operation(confirmed["id"])["status"] == "confirmed"
    assert_error(api.put(f"/operations/{confirmed['id']}/cancel"), 8)
    assert api.operation(confirmed["id"])["status"] == "confirmed"

    expired = api.create_operation()
    data_of(control(sandbox, "POST", f"operations/{expired['id']}/expire"), 200)
    assert_error(api.put(f"/operations/{expired['id']}/cancel"), 8)
    assert api.operation(expired["id"])["status"] == "expired"

    withdrawal = data_of(
        api.post(
            "/withdraw", {"amount": "0.1", "wallet": "BTC", "address": EXTERNAL_ADDRESS["BTC"]}
        )
    )
    assert_error(api.put(f"/operations/{withdrawal['id']}/cancel"), 8)
    assert api.operation(withdrawal["id"])["status"] == "processed"


def test_control_expire_makes_a_new_operation_expired(api, sandbox):
    op = api.create_operation()
    response = control(sandbox, "POST", f"operations/{op['id']}/expire")
    expired = data_of(response, 200)
    check_operation(expired)
    assert expired["id"] == op["id"]
    assert expired["status"] == "expired"
    assert api.operation(op["id"])["status"] == "expired"

    again = control(sandbox, "POST", f"operations/{op['id']}/expire")
    assert_error(again, 8)
    assert_error(control(sandbox, "POST", "operations/999999/expire"), 5)


def test_operations_stay_new_within_the_default_ttl(api):
    op = api.create_operation()
    assert api.operation(op["id"])["status"] == "new"
    assert api.total("/operations", {"status": "0"}) == 1


def test_operation_expires_after_the_configured_ttl(tmp_path):
    """With `--operation-ttl-minutes 0` a new operation is expired at the next request."""
    with run_sandbox(tmp_path / "ttl.db", extra_args=("--operation-ttl-minutes", "0")) as server:
        api = Api(server)
        op = api.create_operation()
        shown = api.operation(op["id"])
        assert shown["status"] == "expired"
        assert [
            record["id"] for record in list_of(api.get("/operations", {"status": "3"}))["data"]
        ] == [op["id"]]
        assert_error(api.put(f"/operations/{op['id']}/cancel"), 8)


def test_unicode_order_id_round_trips(module_api):
    order_id = "заказ-№1 🚀 注文"
    op = module_api.create_operation(order_id=order_id)
    assert op["order_id"] == order_id
    assert module_api.operation(op["id"])["order_id"] == order_id
    found = list_of(module_api.get("/operations", {"order_id": order_id}))
    assert [record["id"] for record in found["data"]] == [op["id"]]


def test_boundary_values_are_accepted(module_api):
    long_order = "x" * 255
    long_url = "https://shop.example/" + "p" * (2048 - len("https://shop.example/"))
    op = module_api.create_operation(
        amount="1000000000", order_id=long_order, redirect_url=long_url
    )
    assert op["order_id"] == long_order
    assert op["redirect_url"] == long_url
    assert op["amount"] == "1000000000.00000000"
    small = module_api.create_operation(amount="0.00000001", order_id="y")
    assert small["amount"] == "0.00000001"
    http = module_api.create_operation(redirect_url="http://localhost:8000/back")
    assert http["redirect_url"] == "http://localhost:8000/back"
