"""Contract of rates, exchanges and cross exchanges (codes 18-25, wallet effects, expiry)."""

from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal

import pytest

from tests.sandbox.contract import (
    CRYPTO,
    CURRENCIES,
    EIGHT,
    EXTERNAL_ADDRESS,
    WALLETS_AT_START,
    Api,
    add_transaction,
    assert_error,
    check_cross_exchange,
    check_exchange,
    check_operation,
    check_sandbox_address,
    control,
    data_of,
    rates_of,
    set_flags,
    set_wallet,
    wallets,
)

MARKET_START = {"BTC": Decimal(65000), "ETH": Decimal(3200), "USDT": Decimal(1)}


def parse_time(value: str) -> dt.datetime:
    return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)


def stable_rates(api: Api) -> tuple[dict, dict]:
    """Rates and exchange rates read within the same minute (they change once a minute)."""
    for _ in range(3):
        rates = rates_of(api.get("/rates"))
        exchange = rates_of(api.get("/exchange/rates"))
        if rates_of(api.get("/rates")) == rates:
            return rates, exchange
    raise AssertionError("rates kept changing")


def exchange(api, sell, buy, *, sell_amount=None, buy_amount=None, **kwargs):
    body = {"sell_currency": sell, "buy_currency": buy}
    if sell_amount is not None:
        body["sell_amount"] = sell_amount
    if buy_amount is not None:
        body["buy_amount"] = buy_amount
    return api.post("/exchange", body, **kwargs)


def cross_body(sell="ETH", buy="BTC", **fields):
    body = {
        "sell_currency": sell,
        "buy_currency": buy,
        "sell_address": EXTERNAL_ADDRESS[sell]
        if sell in EXTERNAL_ADDRESS
        else EXTERNAL_ADDRESS["BTC"],
        "buy_address": EXTERNAL_ADDRESS[buy]
        if buy in EXTERNAL_ADDRESS
        else EXTERNAL_ADDRESS["BTC"],
    }
    if "sell_amount" not in fields and "buy_amount" not in fields:
        body["sell_amount"] = "1"
    body.update(fields)
    return {key: value for key, value in body.items() if value is not None}


def cross(api, **fields):
    return api.post("/cross-exchanges", cross_body(**fields))


# Rates -----------------------------------------------------------------------------------------


def test_rates_hold_the_twelve_pairs_as_json_numbers(module_api):
    rates, _ = stable_rates(module_api)
    expected = {f"{a}:{b}" for a, b in itertools.permutations(CURRENCIES, 2)}
    assert set(rates) == expected
    for pair, value in rates.items():
        assert value > 0, pair
        assert value.as_tuple().exponent >= -8, (pair, value)  # at most 8 decimals
    for currency, start in MARKET_START.items():
        price = rates[f"{currency}:USD"]
        assert start * Decimal("0.995") <= price <= start * Decimal("1.005"), (currency, price)


def test_rates_are_consistent_with_market_prices(module_api):
    rates, _ = stable_rates(module_api)
    price = {currency: rates[f"{currency}:USD"] for currency in CRYPTO}
    price["USD"] = Decimal(1)
    for base, quote in itertools.permutations(CURRENCIES, 2):
        expected = price[base] / price[quote]
        got = rates[f"{base}:{quote}"]
        assert abs(got - expected) <= expected * Decimal("1e-6") + 2 * EIGHT, (base, quote, got)


def test_exchange_rates_are_the_crypto_pairs_less_one_percent(module_api):
    rates, exchange_rates = stable_rates(module_api)
    assert set(exchange_rates) == {f"{a}:{b}" for a, b in itertools.permutations(CRYPTO, 2)}
    for pair, value in exchange_rates.items():
        assert value.as_tuple().exponent >= -8, (pair, value)
        assert abs(value - rates[pair] * Decimal("0.99")) <= 2 * EIGHT, (pair, value, rates[pair])


def test_rates_are_the_same_under_both_prefixes(module_sandbox):
    sandbox_api, production_api = Api(module_sandbox), Api(module_sandbox, "/v1")
    for _ in range(3):
        before = rates_of(sandbox_api.get("/rates"))
        (rates, production_rates), (exchange, production_exchange) = (
            (rates_of(sandbox_api.get(path)), rates_of(production_api.get(path)))
            for path in ("/rates", "/exchange/rates")
        )
        if rates_of(sandbox_api.get("/rates")) == before:  # all read within the same minute
            assert rates == production_rates
            assert exchange == production_exchange
            return
    raise AssertionError("rates kept changing")


# Exchanges -------------------------------------------------------------------------------------


def test_exchange_by_sell_amount(api, sandbox):
    _, before = stable_rates(api)
    result = data_of(exchange(api, "BTC", "ETH", sell_amount="1"), 201)
    _, after = stable_rates(api)
    check_exchange(result)
    assert result["sell_currency"] == "BTC" and result["buy_currency"] == "ETH"
    assert result["sell_amount"] == "1.00000000"
    assert result["fee"] == "0.00200000"
    rate = Decimal(result["rate"])
    assert rate in {before["BTC:ETH"], after["BTC:ETH"]}
    buy = Decimal(result["buy_amount"])
    assert abs(buy - (Decimal(1) - Decimal("0.002")) * rate) <= EIGHT
    balances = wallets(sandbox)
    assert balances["BTC"] == WALLETS_AT_START["BTC"] - 1
    assert balances["ETH"] == WALLETS_AT_START["ETH"] + buy
    assert balances["USDT"] == WALLETS_AT_START["USDT"]


def test_exchange_by_buy_amount(api, sandbox):
    result = data_of(exchange(api, "ETH", "BTC", buy_amount="0.1"), 201)
    check_exchange(result)
    assert result["buy_amount"] == "0.10000000"
    sell, fee, rate = (Decimal(result[name]) for name in ("sell_amount", "fee", "rate"))
    assert abs(fee - sell * Decimal("0.002")) <= EIGHT
    assert abs((sell - fee) * rate - Decimal("0.1")) <= 2 * EIGHT * (rate + 1)
    balances = wallets(sandbox)
    assert balances["ETH"] == WALLETS_AT_START["ETH"] - sell
    assert balances["BTC"] == WALLETS_AT_START["BTC"] + Decimal("0.1")


def test_exchange_pair_not_available_is_code_21(api, sandbox):
    before = wallets(sandbox)
    assert_error(exchange(api, "BTC", "USD", sell_amount="1"), 21)
    assert_error(exchange(api, "USD", "BTC", sell_amount="100"), 21)
    assert_error(exchange(api, "BTC", "BTC", sell_amount="1"), 21)
    assert_error(cross(api, sell="BTC", buy="USD"), 21)
    assert_error(cross(api, sell="ETH", buy="ETH"), 21)
    assert wallets(sandbox) == before


def test_no_wallet_for_exchange_is_code_24(api, sandbox):
    set_wallet(sandbox, "ETH", None)
    before = wallets(sandbox)
    assert_error(exchange(api, "BTC", "ETH", sell_amount="1"), 24)
    assert_error(exchange(api, "ETH", "BTC", sell_amount="1"), 24)
    assert_error(cross(api, sell="ETH", buy="BTC"), 24)
    assert_error(cross(api, sell="BTC", buy="ETH", sell_amount="0.1"), 24)
    assert wallets(sandbox) == before
    assert api.total("/operations") == 0


def test_daily_number_of_exchanges_is_code_22(api, sandbox):
    set_flags(sandbox, exchange_daily_limit=2)
    data_of(exchange(api, "BTC", "ETH", sell_amount="0.1"), 201)
    data_of(cross(api), 201)  # cross exchanges count too
    before = wallets(sandbox)
    assert_error(exchange(api, "BTC", "ETH", sell_amount="0.1"), 22)
    assert_error(cross(api), 22)
    assert_error(exchange(api, "BTC", "ETH", sell_amount="6"), 22)  # 22 comes before 23
    assert wallets(sandbox) == before
    set_flags(sandbox, exchange_daily_limit=3)
    data_of(exchange(api, "BTC", "ETH", sell_amount="0.1"), 201)


def test_limit_per_request_is_code_23(api, sandbox):
    before = wallets(sandbox)
    assert_error(exchange(api, "BTC", "ETH", sell_amount="5.00000001"), 23)
    assert_error(exchange(api, "ETH", "USDT", sell_amount="100.1"), 23)
    assert_error(exchange(api, "USDT", "BTC", sell_amount="250001"), 23)
    assert_error(exchange(api, "BTC", "USDT", buy_amount="400000"), 23)  # sells about 6 BTC
    assert_error(cross(api, sell="BTC", buy="ETH", sell_amount="6"), 23)
    set_wallet(sandbox, "BTC", "1")
    assert_error(exchange(api, "BTC", "ETH", sell_amount="6"), 23)  # 23 comes before 25
    set_wallet(sandbox, "BTC", str(before["BTC"]))
    assert wallets(sandbox) == before
    data_of(exchange(api, "BTC", "ETH", sell_amount="5"), 201)


def test_exchange_not_created_is_code_25(api, sandbox):
    assert_error(exchange(api, "BTC", "ETH", sell_amount="0.00009999"), 25)
    assert_error(exchange(api, "ETH", "BTC", sell_amount="0.0009"), 25)
    assert_error(exchange(api, "USDT", "ETH", sell_amount="0.5"), 25)
    set_wallet(sandbox, "BTC", "1")
    before = wallets(sandbox)
    assert_error(exchange(api, "BTC", "ETH", sell_amount="1.5"), 25)
    assert wallets(sandbox) == before
    data_of(exchange(api, "BTC", "ETH", sell_amount="0.0001"), 201)  # the minimum
    data_of(exchange(api, "BTC", "ETH", sell_amount="0.9999"), 201)  # the rest of the balance
    assert wallets(sandbox)["BTC"] == 0


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"sell_currency": "BTC", "buy_currency": "ETH"}, ("sell_amount", "buy_amount")),
        (
            {"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "1", "buy_amount": "10"},
            ("sell_amount", "buy_amount"),
        ),
        ({"buy_currency": "ETH", "sell_amount": "1"}, ("sell_currency",)),
        ({"sell_currency": "BTC", "sell_amount": "1"}, ("buy_currency",)),
        ({"sell_currency": "XYZ", "buy_currency": "ETH", "sell_amount": "1"}, ("sell_currency",)),
        ({"sell_currency": "BTC", "buy_currency": "", "sell_amount": "1"}, ("buy_currency",)),
        ({"sell_currency": "BTC", "buy_currency": 3, "sell_amount": "1"}, ("buy_currency",)),
        ({"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": 1}, ("sell_amount",)),
        ({"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "-1"}, ("sell_amount",)),
        ({"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "0"}, ("sell_amount",)),
        (
            {"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "1.000000001"},
            ("sell_amount",),
        ),
        ({"sell_currency": "BTC", "buy_currency": "ETH", "buy_amount": "abc"}, ("buy_amount",)),
        (
            {"sell_currency": "BTC", "buy_currency": "ETH", "buy_amount": "1" * 10_000},
            ("buy_amount",),
        ),
        ({"sell_currency": "Ƀ", "buy_currency": "ETH", "sell_amount": "1"}, ("sell_currency",)),
    ],
)
def test_exchange_validates_its_body(module_api, module_sandbox, body, fields):
    before = wallets(module_sandbox)
    response = module_api.post("/exchange", body)
    error = assert_error(response, 9)
    assert set(fields) & set(error["errors"]), error
    assert wallets(module_sandbox) == before


# Cross exchanges -------------------------------------------------------------------------------


def test_create_cross_exchange(api, sandbox):
    _, before = stable_rates(api)
    response = cross(api, sell="ETH", buy="BTC", sell_amount="2")
    created = data_of(response, 201)
    _, after = stable_rates(api)
    check_cross_exchange(created)
    assert created["status"] == "processed"
    assert created["sell_currency"] == "ETH" and created["buy_currency"] == "BTC"
    assert created["sell_amount"] == "2.00000000"
    assert Decimal(created["buy_amount"]) > 0
    assert Decimal(created["rate"]) in {before["ETH:BTC"], after["ETH:BTC"]}
    lifetime = parse_time(created["expired_at"]) - parse_time(created["created_at"])
    assert abs(lifetime - dt.timedelta(minutes=30)) <= dt.timedelta(seconds=2), lifetime
    check_sandbox_address(created["invoice_address"], "ETH")

    op = api.operation(created["operation_id"])
    check_operation(op)
    assert op["category"] == "manual"
    assert op["application_id"] == "1"  # like every other manual operation
    assert op["application_name"] == "Sandbox application"
    assert op["order_id"] == f"cross-exchange-{created['id']}"
    assert op["amount"] == created["sell_amount"]
    assert op["currency"] == "ETH"
    assert op["address"] == created["invoice_address"]
    assert op["status"] == "new"

    assert api.cross_exchange(created["id"]) == created


def test_cross_exchange_by_buy_amount_has_a_btc_invoice_address(api):
    created = data_of(cross(api, sell="BTC", buy="USDT", buy_amount="1000"), 201)
    check_cross_exchange(created)
    assert created["buy_amount"] == "1000.00000000"
    assert Decimal(created["sell_amount"]) > 0
    check_sandbox_address(created["invoice_address"], "BTC")
    assert created["status"] == "processed"


def test_cancel_cross_exchange(api, sandbox):
    created = data_of(cross(api), 201)
    canceled = data_of(api.put(f"/cross-exchanges/{created['id']}/cancel"), 200)
    check_cross_exchange(canceled)
    assert canceled["id"] == created["id"]
    assert canceled["status"] == "canceled"
    assert api.cross_exchange(created["id"])["status"] == "canceled"
    assert api.operation(created["operation_id"])["status"] == "canceled"
    assert_error(api.put(f"/cross-exchanges/{created['id']}/cancel"), 20)
    assert api.cross_exchange(created["id"])["status"] == "canceled"


def test_paying_the_invoice_makes_the_cross_exchange_successful(api, sandbox):
    created = data_of(cross(api, sell="ETH", buy="BTC", sell_amount="2"), 201)
    add_transaction(sandbox, created["operation_id"], "2", "confirmed")
    assert api.operation(created["operation_id"])["status"] == "confirmed"
    assert api.cross_exchange(created["id"])["status"] == "successful"
    assert_error(api.put(f"/cross-exchanges/{created['id']}/cancel"), 20)
    assert api.cross_exchange(created["id"])["status"] == "successful"


def test_rejecting_the_payment_of_a_cross_exchange_makes_it_await_payment_again(api, sandbox):
    created = data_of(cross(api, sell="ETH", buy="BTC", sell_amount="2"), 201)
    paid = add_transaction(sandbox, created["operation_id"], "2", "confirmed")
    rejected = api.put(
        f"/operations/{created['operation_id']}/reject-transactions",
        {"tx_id": [paid["id"]], "reason": "not ours"},
    )
    assert data_of(rejected)["status"] == "new"
    assert api.cross_exchange(created["id"])["status"] == "processed"


def test_cross_exchange_expiry(api, sandbox):
    unpaid = data_of(cross(api), 201)
    expired = data_of(control(sandbox, "POST", f"cross-exchanges/{unpaid['id']}/expire"), 200)
    check_cross_exchange(expired)
    assert expired["status"] == "expired"
    assert api.cross_exchange(unpaid["id"])["status"] == "expired"
    assert api.operation(unpaid["operation_id"])["status"] == "expired"
    assert_error(api.put(f"/cross-exchanges/{unpaid['id']}/cancel"), 20)

    partly = data_of(cross(api, sell_amount="2"), 201)
    add_transaction(sandbox, partly["operation_id"], "0.5", "confirmed")
    assert api.cross_exchange(partly["id"])["status"] == "processed"
    failed = data_of(control(sandbox, "POST", f"cross-exchanges/{partly['id']}/expire"), 200)
    assert failed["status"] == "failed"
    assert api.cross_exchange(partly["id"])["status"] == "failed"
    assert api.operation(partly["operation_id"])["status"] == "expired"
    assert_error(api.put(f"/cross-exchanges/{partly['id']}/cancel"), 20)


def test_cross_exchange_below_the_minimum_is_code_19(api, sandbox):
    total = api.total("/operations")
    assert_error(cross(api, sell="BTC", buy="ETH", sell_amount="0.00009999"), 19)
    assert_error(cross(api, sell="USDT", buy="ETH", sell_amount="0.99"), 19)
    assert api.total("/operations") == total
    data_of(cross(api, sell="BTC", buy="ETH", sell_amount="0.0001"), 201)


@pytest.mark.parametrize(
    "cross_exchange_id", ["999999", "abc", "-1", "1.0", "99999999999999999999999999"]
)
def test_unknown_cross_exchange_is_code_18(module_api, cross_exchange_id):
    assert_error(module_api.get(f"/cross-exchanges/{cross_exchange_id}"), 18)
    assert_error(module_api.put(f"/cross-exchanges/{cross_exchange_id}/cancel"), 18)


@pytest.mark.parametrize(
    ("fields", "names"),
    [
        ({"sell_amount": None}, ("sell_amount", "buy_amount")),
        ({"sell_amount": "1", "buy_amount": "0.05"}, ("sell_amount", "buy_amount")),
        ({"sell_address": None}, ("sell_address",)),
        ({"buy_address": None}, ("buy_address",)),
        ({"sell_address": EXTERNAL_ADDRESS["BTC"]}, ("sell_address",)),  # ETH is sold
        ({"buy_address": EXTERNAL_ADDRESS["ETH"]}, ("buy_address",)),  # BTC is bought
        ({"buy_address": ""}, ("buy_address",)),
        ({"buy_address": "x" * 10_000}, ("buy_address",)),
        ({"sell_address": 42}, ("sell_address",)),
        ({"sell_currency": "DOGE"}, ("sell_currency",)),
        ({"sell_amount": "-2"}, ("sell_amount",)),
        ({"sell_amount": 2}, ("sell_amount",)),
        ({"sell_amount": "1e1"}, ("sell_amount",)),
        ({"sell_amount": "\uff12"}, ("sell_amount",)),  # full-width digit
    ],
)
def test_cross_exchange_validates_its_body(module_api, fields, names):
    total = module_api.total("/operations")
    body = cross_body()
    body.update(fields)
    body = {key: value for key, value in body.items() if value is not None}
    error = assert_error(module_api.post("/cross-exchanges", body), 9)
    assert set(names) & set(error["errors"]), error
    assert module_api.total("/operations") == total
