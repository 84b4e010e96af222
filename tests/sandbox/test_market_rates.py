"""Contract of the market prices a tester sets on the control surface (`/_control/rates`): they
hold the market still, so that a test can move rates between one payment and the next."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest

from tests.sandbox.contract import (
    CURRENCIES,
    Api,
    assert_error,
    control,
    data_of,
    rates_of,
)
from tests.sandbox.test_contract_exchanges import MARKET_START, stable_rates
from tests.support.sandbox_server import run_sandbox


def market(server) -> dict:
    """`GET /_control/rates`: `{"frozen", "prices": {currency: USD price}}`."""
    return data_of(control(server, "GET", "rates"))


def usd_prices(server) -> dict[str, Decimal]:
    return {code: Decimal(price) for code, price in market(server)["prices"].items()}


def assert_rates_follow(api: Api, prices: dict[str, Decimal]) -> None:
    """Every pair of `/rates` under both prefixes is the quotient of the prices, to 8 places."""
    for prefix in ("/sandbox/v1", "/v1"):
        rates = rates_of(Api(api.server, prefix).get("/rates"))
        for base, quote in itertools.permutations(CURRENCIES, 2):
            quotient = (prices[base] / prices[quote]).quantize(Decimal("1e-8"))
            assert rates[f"{base}:{quote}"] == quotient, (prefix, base, quote)


def assert_drifting(server) -> None:
    state = market(server)
    assert state["frozen"] is False
    for currency, start in MARKET_START.items():
        price = Decimal(state["prices"][currency])
        assert start * Decimal("0.995") <= price <= start * Decimal("1.005"), (currency, price)


def test_set_prices_hold_every_rate_at_their_quotients(api, sandbox):
    assert_drifting(sandbox)
    sandbox.set_prices(BTC="60000", ETH="3000")
    state = market(sandbox)
    assert state["frozen"] is True
    assert state["prices"]["BTC"] == "60000.00000000"
    assert state["prices"]["ETH"] == "3000.00000000"
    assert state["prices"]["USD"] == "1.00000000"
    rates, exchange_rates = stable_rates(api)
    assert rates["BTC:USD"] == 60000
    assert rates["ETH:BTC"] == Decimal("0.05")
    assert rates["BTC:ETH"] == 20
    assert exchange_rates["ETH:BTC"] == Decimal("0.0495")  # less the 1 % spread
    assert_rates_follow(api, usd_prices(sandbox))


def test_currencies_not_named_keep_their_price_of_the_moment(sandbox):
    for _ in range(3):
        before = market(sandbox)["prices"]
        frozen = data_of(control(sandbox, "POST", "rates", {"prices": {"BTC": "60000"}}))
        sandbox.thaw_prices()
        if market(sandbox)["prices"] == before:  # the market did not move meanwhile
            break
    assert frozen == {"frozen": True, "prices": {**before, "BTC": "60000.00000000"}}


def test_operations_created_after_a_change_carry_the_new_rate(api, sandbox):
    sandbox.set_prices(BTC="60000", ETH="3000")
    first = api.create_operation(amount="1", currency="ETH", payment_currency="BTC")
    sandbox.set_prices(ETH="2400")
    second = api.create_operation(amount="1", currency="ETH", payment_currency="BTC")
    assert Decimal(first["rate"]) == Decimal("0.05")
    assert Decimal(second["rate"]) == Decimal("0.04")
    assert Decimal(api.operation(first["id"])["rate"]) == Decimal("0.05")  # its rate stays
    dollars = api.create_operation(amount="120", currency="USD", payment_currency="BTC")
    assert Decimal(dollars["rate"]) == Decimal("0.00001667")  # 1/60000 to 8 places


def test_a_second_post_moves_only_the_prices_it_names(api, sandbox):
    sandbox.set_prices(BTC="60000", ETH="3000", USDT="1.01")
    sandbox.set_prices(ETH="2400.5")
    prices = usd_prices(sandbox)
    assert prices == {
        "BTC": Decimal(60000),
        "ETH": Decimal("2400.5"),
        "USDT": Decimal("1.01"),
        "USD": Decimal(1),
    }
    assert_rates_follow(api, prices)


def test_delete_lets_the_market_drift_again(api, sandbox):
    sandbox.set_prices(BTC="1000", ETH="100")
    sandbox.thaw_prices()
    assert_drifting(sandbox)
    rates, _ = stable_rates(api)
    assert rates["BTC:USD"] > 1000
    op = api.create_operation(amount="1", currency="BTC", payment_currency="ETH")
    assert Decimal(op["rate"]) != 10


def test_frozen_prices_survive_a_restart(tmp_path):
    """They live in the sandbox's database, where every server process reads them."""
    database = tmp_path / "sandbox.db"
    with run_sandbox(database) as server:
        server.set_prices(BTC="60000")
    with run_sandbox(database) as server:
        assert market(server)["frozen"] is True
        assert rates_of(Api(server).get("/rates"))["BTC:USD"] == 60000


@pytest.mark.parametrize(
    ("prices", "field"),
    [
        ({"XRP": "1"}, "prices.XRP"),
        ({"USD": "2"}, "prices.USD"),
        ({"BTC": "-60000"}, "prices.BTC"),
        ({"BTC": "0"}, "prices.BTC"),
        ({"BTC": "sixty thousand"}, "prices.BTC"),
        ({"BTC": 60000}, "prices.BTC"),
        ({"BTC": "60000", "ETH": "-1"}, "prices.ETH"),
        ({}, "prices"),
        (["BTC", "60000"], "prices"),
        (None, "prices"),
    ],
)
def test_a_bad_body_is_refused_and_changes_nothing(sandbox, prices, field):
    sandbox.set_prices(BTC="50000", ETH="2500")
    before = market(sandbox)
    assert_error(control(sandbox, "POST", "rates", {"prices": prices}), 9, field)
    assert market(sandbox) == before
