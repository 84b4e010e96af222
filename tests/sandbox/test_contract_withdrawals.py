"""Contract of withdrawals: the resulting operation, wallet effects, codes 11-13, concurrency."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest

from tests.sandbox.contract import (
    BTC_BASE58_ADDRESS,
    EXTERNAL_ADDRESS,
    NETWORK_FEE,
    WALLETS_AT_START,
    assert_error,
    check_operation,
    control,
    data_of,
    fetch_all,
    set_flags,
    set_wallet,
    wallets,
)


def withdraw(api, amount, wallet, address):
    return api.post("/withdraw", {"amount": amount, "wallet": wallet, "address": address})


def test_wallets_start_with_the_documented_balances(sandbox):
    assert wallets(sandbox) == WALLETS_AT_START


@pytest.mark.parametrize("currency", ["BTC", "ETH", "USDT"])
def test_withdrawal_to_an_outside_address_is_a_transfer(api, sandbox, currency):
    address = EXTERNAL_ADDRESS[currency]
    op = data_of(withdraw(api, "1.5", currency, address), 200)
    check_operation(op)
    assert op["status"] == "processed"
    assert op["category"] == "transfer"
    for name in ("application_id", "application_name", "order_id", "payment_url", "redirect_url"):
        assert op[name] is None, name
    assert op["amount"] == "1.50000000"
    assert op["amount_paid"] == "1.50000000"
    assert Decimal(op["fee"]) == NETWORK_FEE[currency]
    assert op["rate"] == "1.00000000"
    assert op["currency"] == currency
    assert op["currency_paid"] == currency
    assert op["address"] == address
    assert op["transactions"] == []

    assert api.operation(op["id"]) == op
    assert (
        wallets(sandbox)[currency]
        == WALLETS_AT_START[currency] - Decimal("1.5") - NETWORK_FEE[currency]
    )
    listed = fetch_all(api, "/operations", {"category": "transfer"})
    assert [record["id"] for record in listed] == [op["id"]]
    assert [record["id"] for record in fetch_all(api, "/operations", {"status": "5"})] == [op["id"]]

    # The same outside address again: still a transfer with its network fee.
    again = data_of(withdraw(api, "0.5", currency, address), 200)
    assert again["category"] == "transfer"
    assert Decimal(again["fee"]) == NETWORK_FEE[currency]
    assert wallets(sandbox)[currency] == (
        WALLETS_AT_START[currency] - Decimal("2") - 2 * NETWORK_FEE[currency]
    )


def test_withdrawal_to_a_sandbox_address_is_an_internal_transfer_without_fee(api, sandbox):
    target = api.create_operation(currency="ETH", order_id="internal")
    op = data_of(withdraw(api, "2", "ETH", target["address"]), 200)
    check_operation(op)
    assert op["category"] == "internal_transfer"
    assert op["status"] == "processed"
    assert Decimal(op["fee"]) == 0
    assert op["address"] == target["address"]
    assert op["order_id"] is None and op["application_id"] is None
    assert wallets(sandbox)["ETH"] == WALLETS_AT_START["ETH"] - 2
    listed = fetch_all(api, "/operations", {"category": "internal_transfer"})
    assert [record["id"] for record in listed] == [op["id"]]


def test_withdrawal_to_a_wallet_address_is_an_internal_transfer(api, sandbox):
    items = data_of(control(sandbox, "GET", "wallets"))
    addresses = {item["currency"]: item["address"] for item in items}
    assert addresses["BTC"], "every wallet of the control surface has an address"
    op = data_of(withdraw(api, "1", "BTC", addresses["BTC"]), 200)
    assert op["category"] == "internal_transfer"
    assert op["address"] == addresses["BTC"]
    assert Decimal(op["fee"]) == 0
    assert wallets(sandbox)["BTC"] == WALLETS_AT_START["BTC"] - 1


def test_base58_bitcoin_addresses_are_accepted(api, sandbox):
    op = data_of(withdraw(api, "0.1", "BTC", BTC_BASE58_ADDRESS), 200)
    assert op["category"] == "transfer"
    assert op["address"] == BTC_BASE58_ADDRESS


def test_withdrawals_disabled_is_code_11(api, sandbox):
    set_flags(sandbox, withdrawals_allowed=False)
    before = wallets(sandbox)
    assert_error(withdraw(api, "0.1", "BTC", EXTERNAL_ADDRESS["BTC"]), 11)
    assert_error(withdraw(api, "0.1", "USD", EXTERNAL_ADDRESS["ETH"]), 11)  # 11 comes before 13
    assert_error(withdraw(api, "1000", "BTC", EXTERNAL_ADDRESS["BTC"]), 11)  # ... and before 12
    assert wallets(sandbox) == before
    assert api.total("/operations") == 0
    set_flags(sandbox, withdrawals_allowed=True)
    data_of(withdraw(api, "0.1", "BTC", EXTERNAL_ADDRESS["BTC"]), 200)


def test_no_wallet_is_code_13(api, sandbox):
    assert_error(withdraw(api, "1", "USD", EXTERNAL_ADDRESS["ETH"]), 13)
    set_wallet(sandbox, "ETH", None)
    assert "ETH" not in wallets(sandbox)
    assert_error(withdraw(api, "1", "ETH", EXTERNAL_ADDRESS["ETH"]), 13)
    assert api.total("/operations") == 0
    set_wallet(sandbox, "ETH", "5")
    data_of(withdraw(api, "1", "ETH", EXTERNAL_ADDRESS["ETH"]), 200)


def test_amount_plus_fee_above_the_balance_is_code_12(api, sandbox):
    set_wallet(sandbox, "ETH", "1")
    assert_error(withdraw(api, "0.9995", "ETH", EXTERNAL_ADDRESS["ETH"]), 12)
    assert_error(withdraw(api, "2", "ETH", EXTERNAL_ADDRESS["ETH"]), 12)
    assert wallets(sandbox)["ETH"] == 1
    data_of(withdraw(api, "0.999", "ETH", EXTERNAL_ADDRESS["ETH"]), 200)  # exactly the balance
    assert wallets(sandbox)["ETH"] == 0
    assert_error(withdraw(api, "0.00000001", "ETH", EXTERNAL_ADDRESS["ETH"]), 12)
    assert api.total("/operations") == 1


def test_the_daily_limit_is_code_12(api, sandbox):
    data_of(withdraw(api, "6", "BTC", EXTERNAL_ADDRESS["BTC"]), 200)
    data_of(withdraw(api, "3.9", "BTC", BTC_BASE58_ADDRESS), 200)
    before = wallets(sandbox)["BTC"]
    assert_error(withdraw(api, "0.2", "BTC", "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy"), 12)
    assert wallets(sandbox)["BTC"] == before
    assert before == WALLETS_AT_START["BTC"] - Decimal("9.9") - 2 * NETWORK_FEE["BTC"]
    # Another currency has its own limit.
    data_of(withdraw(api, "150", "ETH", EXTERNAL_ADDRESS["ETH"]), 200)
    assert_error(withdraw(api, "51", "ETH", EXTERNAL_ADDRESS["ETH"]), 12)


@pytest.mark.parametrize(
    ("wallet", "address"),
    [
        ("BTC", EXTERNAL_ADDRESS["ETH"]),
        ("ETH", EXTERNAL_ADDRESS["BTC"]),
        ("USDT", BTC_BASE58_ADDRESS),
        ("ETH", "0x" + "a" * 39),
        ("ETH", "0x" + "a" * 41),
        ("ETH", "0x" + "g" * 40),
        ("BTC", "1BoatSLRHtKNngkdXEeobR76b53LETtpO"),  # O is not base58
        ("BTC", "1Boat"),  # too short
        ("BTC", "bc1q" + "b" * 38),  # b is not in the bech32 alphabet
        ("BTC", "x" + BTC_BASE58_ADDRESS[1:]),
        ("BTC", ""),
        ("BTC", " " + EXTERNAL_ADDRESS["BTC"]),
        ("BTC", "bc1q" + "q" * 10_000),
        ("ETH", "0x" + "\u0430" * 40),  # Cyrillic a
        ("ETH", 12345),
        ("ETH", None),
    ],
)
def test_an_address_of_the_wrong_shape_is_code_9(module_api, module_sandbox, wallet, address):
    before = wallets(module_sandbox)
    total = module_api.total("/operations")
    assert_error(withdraw(module_api, "0.1", wallet, address), 9, "address")
    assert wallets(module_sandbox) == before
    assert module_api.total("/operations") == total


@pytest.mark.parametrize(
    "amount",
    [
        0.1,
        1,
        "0",
        "-0.1",
        "0.123456789",
        "1e-3",
        "abc",
        "",
        " 0.1",
        "0,1",
        "1000000001",
        None,
        True,
        "NaN",
        "Infinity",
        "١٢",
        "9" * 10_000,
    ],
)
def test_a_bad_amount_is_code_9(module_api, module_sandbox, amount):
    before = wallets(module_sandbox)
    total = module_api.total("/operations")
    assert_error(withdraw(module_api, amount, "BTC", EXTERNAL_ADDRESS["BTC"]), 9, "amount")
    assert wallets(module_sandbox) == before
    assert module_api.total("/operations") == total


@pytest.mark.parametrize("wallet", ["XYZ", "", "btc ", 1, None, "B" * 10_000, "Биткоин"])
def test_an_unknown_wallet_currency_is_code_9(module_api, module_sandbox, wallet):
    before = wallets(module_sandbox)
    assert_error(withdraw(module_api, "0.1", wallet, EXTERNAL_ADDRESS["BTC"]), 9, "wallet")
    assert wallets(module_sandbox) == before


def test_concurrent_withdrawals_never_overdraw_a_wallet(api, sandbox):
    set_wallet(sandbox, "ETH", "1")
    barrier = threading.Barrier(8)
    responses = [None] * 8

    def run(index):
        barrier.wait()
        # A distinct outside address each: every one is a transfer with its fee.
        responses[index] = withdraw(api, "0.3", "ETH", "0x" + format(0xABC000 + index, "040x"))

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    succeeded = [r for r in responses if r.status_code == 200]
    for response in responses:
        if response.status_code != 200:
            assert_error(response, 12)
    assert len(succeeded) == 3  # 3 x (0.3 + 0.001) fit in 1, a fourth does not
    assert wallets(sandbox)["ETH"] == Decimal("1") - 3 * Decimal("0.301")
    assert api.total("/operations", {"category": "transfer"}) == 3
