"""The sandbox's wallets follow the money model (docs/sandbox.md, "Wallets"): after each step of
a merchant's day, `GET /_control/wallets` holds the opening balances plus what the model makes
of the records the API shows."""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

from tests.sandbox.contract import (
    EXTERNAL_ADDRESS,
    NETWORK_FEE,
    WALLETS_AT_START,
    Api,
    data_of,
    fetch_all,
    wallets,
)
from tests.support.sandbox_server import SandboxServer

EIGHT_PLACES = Decimal("0.00000001")


def fee_in_payment_currency(operation: dict) -> Decimal:
    """The fee (in the operation's currency) in the currency paid: fee x rate, rounded down."""
    fee = Decimal(operation["fee"])
    if operation["currency"] == operation["currency_paid"]:
        return fee
    return (fee * Decimal(operation["rate"])).quantize(EIGHT_PLACES, ROUND_FLOOR)


def link(api: Api, operation_id: str, tx_id: str) -> dict:
    return data_of(api.put(f"/operations/{operation_id}/link-transactions", {"tx_id": [tx_id]}))


def reject(api: Api, operation_id: str, tx_id: str) -> dict:
    body = {"tx_id": [tx_id], "reason": "Paid to a wrong invoice"}
    return data_of(api.put(f"/operations/{operation_id}/reject-transactions", body))


def test_every_movement_of_a_merchants_day_reaches_the_wallets(api: Api, sandbox: SandboxServer):
    sandbox.set_prices(BTC="60000", ETH="3000")
    expected = dict(WALLETS_AT_START)
    assert wallets(sandbox) == expected

    # Paid in full: the payment in, its fee out at the confirmation.
    full = api.create_operation(amount="0.5", currency="BTC")
    sandbox.receive(full["id"], "0.5")
    expected["BTC"] += Decimal("0.5") - Decimal("0.005")
    assert wallets(sandbox) == expected

    # Priced in USD, paid in BTC in two parts: each part in, the converted fee (rounded down)
    # out only when the second part confirms the operation.
    in_parts = api.create_operation(amount="123.45", currency="USD", payment_currency="BTC")
    sandbox.receive(in_parts["id"], "0.001")
    expected["BTC"] += Decimal("0.001")
    assert wallets(sandbox) == expected
    rest = Decimal(in_parts["amount"]) * Decimal(in_parts["rate"]) - Decimal("0.001")
    sandbox.receive(in_parts["id"], str(rest.quantize(EIGHT_PLACES, ROUND_CEILING)))
    in_parts = api.operation(in_parts["id"])
    assert in_parts["status"] == "confirmed"
    assert fee_in_payment_currency(in_parts) == Decimal("0.00002057")
    expected["BTC"] += Decimal(in_parts["amount_paid"]) - Decimal("0.001") - Decimal("0.00002057")
    assert wallets(sandbox) == expected

    # Overpaid: everything received counts.
    overpaid = api.create_operation(amount="2", currency="ETH")
    sandbox.receive(overpaid["id"], "2.5")
    expected["ETH"] += Decimal("2.5") - Decimal("0.02")
    assert wallets(sandbox) == expected

    # Awaiting a decision moves nothing; the link counts it and confirms (the fee).
    undecided = api.create_operation(amount="1", currency="ETH")
    tx = sandbox.receive(undecided["id"], "1", "undefined")
    assert wallets(sandbox) == expected
    link(api, undecided["id"], tx)
    expected["ETH"] += Decimal("1") - Decimal("0.01")
    assert wallets(sandbox) == expected

    # Rejecting money never counted moves nothing; rejecting linked money un-counts it. The fee
    # leaves once, at the first confirmation.
    unlinked = api.create_operation(amount="100", currency="USDT")
    stray = sandbox.receive(unlinked["id"], "10", "undefined")
    reject(api, unlinked["id"], stray)
    assert wallets(sandbox) == expected
    tx = sandbox.receive(unlinked["id"], "40", "undefined")
    link(api, unlinked["id"], tx)
    expected["USDT"] += Decimal("40") - Decimal("1")
    assert wallets(sandbox) == expected
    assert reject(api, unlinked["id"], tx)["status"] == "new"
    expected["USDT"] -= Decimal("40")
    assert wallets(sandbox) == expected
    link(api, unlinked["id"], tx)  # confirmed again: the fee is not taken twice
    expected["USDT"] += Decimal("40")
    assert wallets(sandbox) == expected

    # Paid after it expired: not counted until the merchant links it.
    late = api.create_operation(amount="0.1", currency="BTC")
    sandbox.control("POST", f"operations/{late['id']}/expire")
    tx = sandbox.receive(late["id"], "0.1")
    assert api.operation(late["id"])["amount_paid"] in (None, "0.00000000")
    assert wallets(sandbox) == expected
    link(api, late["id"], tx)
    expected["BTC"] += Decimal("0.1") - Decimal("0.001")
    assert wallets(sandbox) == expected

    # A cross exchange's invoice paid: the money goes on to its buy address, not to a wallet.
    cross = data_of(
        api.post(
            "/cross-exchanges",
            {
                "sell_currency": "BTC",
                "buy_currency": "ETH",
                "sell_amount": "0.2",
                "sell_address": EXTERNAL_ADDRESS["BTC"],
                "buy_address": EXTERNAL_ADDRESS["ETH"],
            },
        ),
        201,
    )
    sandbox.receive(cross["operation_id"], "0.2")
    assert api.cross_exchange(cross["id"])["status"] == "successful"
    assert wallets(sandbox) == expected

    # A withdrawal takes amount + network fee; an internal transfer only its amount.
    sent = data_of(
        api.post("/withdraw", {"amount": "1", "wallet": "BTC", "address": EXTERNAL_ADDRESS["BTC"]})
    )
    assert sent["category"] == "transfer"
    expected["BTC"] -= Decimal("1") + NETWORK_FEE["BTC"]
    assert wallets(sandbox) == expected
    moved = data_of(
        api.post("/withdraw", {"amount": "0.5", "wallet": "ETH", "address": overpaid["address"]})
    )
    assert moved["category"] == "internal_transfer"
    expected["ETH"] -= Decimal("0.5")
    assert wallets(sandbox) == expected

    # Vouchers: taken at creation, given back when cancelled or expired, in again when paid off.
    cancelled = data_of(api.post("/vouchers", {"amount": "50", "currency": "USDT"}), 201)
    expected["USDT"] -= Decimal("50")
    assert wallets(sandbox) == expected
    data_of(api.put(f"/vouchers/{cancelled['id']}/cancel"))
    expected["USDT"] += Decimal("50")
    assert wallets(sandbox) == expected
    paid_off = data_of(api.post("/vouchers", {"amount": "0.3", "currency": "BTC"}), 201)
    expected["BTC"] -= Decimal("0.3")
    assert wallets(sandbox) == expected
    data_of(api.post("/vouchers/payoff", {"code": paid_off["code"]}))
    expected["BTC"] += Decimal("0.3")
    assert wallets(sandbox) == expected
    expired = data_of(api.post("/vouchers", {"amount": "1", "currency": "ETH"}), 201)
    sandbox.control("POST", f"vouchers/{expired['id']}/expire")
    assert wallets(sandbox) == expected

    # An exchange: the sell amount (its fee inside) out, the buy amount in.
    exchange = data_of(
        api.post(
            "/exchange", {"sell_currency": "USDT", "buy_currency": "ETH", "sell_amount": "1000"}
        ),
        201,
    )
    expected["USDT"] -= Decimal(exchange["sell_amount"])
    expected["ETH"] += Decimal(exchange["buy_amount"])
    assert wallets(sandbox) == expected


def test_seeded_history_has_moved_the_wallets_from_their_opening_balances(
    seeded_api: Api, seeded_sandbox: SandboxServer
):
    """The wallets of a seeded sandbox are the opening balances plus every seeded record's
    movement, so that a ledger opened before the history ends at the same balances."""
    expected = dict(WALLETS_AT_START)
    for operation in fetch_all(seeded_api, "/operations"):
        wallet = operation["currency_paid"]
        if operation["category"] in ("transfer", "internal_transfer"):
            expected[wallet] -= Decimal(operation["amount"]) + Decimal(operation["fee"])
            continue
        expected[wallet] += Decimal(operation["amount_paid"] or 0)
        if operation["status"] == "confirmed":
            expected[wallet] -= fee_in_payment_currency(operation)
    for voucher in fetch_all(seeded_api, "/vouchers"):
        if (voucher["status"], voucher["type"]) == ("successful", "issued"):
            expected[voucher["currency"]] -= Decimal(voucher["amount"])
    assert expected != WALLETS_AT_START
    assert wallets(seeded_sandbox) == expected
