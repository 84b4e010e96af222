"""Contract of persistence and seeding: restarts on the same database file, `--seed N`."""

from __future__ import annotations

from urllib.parse import urlsplit

from tests.sandbox.contract import (
    DEFAULT_FLAGS,
    EXTERNAL_ADDRESS,
    WALLETS_AT_START,
    Api,
    add_transaction,
    control,
    data_of,
    fetch_all,
    ids,
    set_flags,
    set_wallet,
    wallets,
)
from tests.support.sandbox_server import ReusedSandbox, run_sandbox


def portable(op: dict) -> dict:
    """An operation without what depends on the host and port the sandbox listens on."""
    result = dict(op)
    if result["payment_url"] is not None:
        result["payment_url"] = urlsplit(result["payment_url"]).path
    return result


def without_timestamps(op: dict) -> dict:
    result = portable(op)
    for name in ("created_at", "updated_at"):
        result.pop(name)
    result["transactions"] = [
        {k: v for k, v in tx.items() if k not in ("created_at", "updated_at")}
        for tx in op["transactions"]
    ]
    return result


def test_data_survives_a_restart(tmp_path):
    database = tmp_path / "sandbox.db"
    with run_sandbox(database) as server:
        api = Api(server)
        op = api.create_operation(amount="0.5", redirect_url="https://shop.example/r")
        tx = add_transaction(server, op["id"], "0.2", "undefined")
        data_of(
            api.put(
                f"/operations/{op['id']}/reject-transactions", {"tx_id": [tx["id"]], "reason": "x"}
            )
        )
        canceled = api.create_operation(order_id="to-cancel")
        assert api.put(f"/operations/{canceled['id']}/cancel").status_code == 204
        data_of(
            api.post(
                "/withdraw", {"amount": "1", "wallet": "ETH", "address": EXTERNAL_ADDRESS["ETH"]}
            )
        )
        voucher = data_of(api.post("/vouchers", {"amount": "0.3", "currency": "BTC"}), 201)
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
        set_flags(server, exchange_daily_limit=7, withdrawals_allowed=False)
        operations = [portable(o) for o in fetch_all(api, "/operations")]
        transactions = fetch_all(api, "/transactions")
        vouchers = fetch_all(api, "/vouchers")
        balances = wallets(server)
        data_of(control(server, "POST", "faults", {"mode": "error500"}))

    with run_sandbox(database) as server:
        api = Api(server)
        data_of(api.get("/ping"))  # the fault mode lives in memory: a restart ends it
        assert [portable(o) for o in fetch_all(api, "/operations")] == operations
        assert fetch_all(api, "/transactions") == transactions
        assert fetch_all(api, "/vouchers") == vouchers
        assert api.voucher(voucher["id"]) == voucher
        assert api.cross_exchange(cross["id"]) == cross
        assert wallets(server) == balances
        flags = data_of(control(server, "GET", "flags"))
        assert flags["exchange_daily_limit"] == 7
        assert flags["withdrawals_allowed"] is False
        assert data_of(control(server, "GET", "faults"))["mode"] == "none"
        # Sequences continue: no id is handed out twice.
        new = api.create_operation(order_id="after-restart")
        assert int(new["id"]) > max(int(o["id"]) for o in operations)


def test_seed_creates_operations_only_on_first_start(tmp_path):
    database = tmp_path / "seeded.db"
    with run_sandbox(database, seed=12) as server:
        first = fetch_all(Api(server), "/operations")
        assert len(first) == 12
    with run_sandbox(database, seed=12) as server:
        assert [portable(o) for o in fetch_all(Api(server), "/operations")] == [
            portable(o) for o in first
        ]
    with run_sandbox(database, seed=30, random_seed=99) as server:
        assert Api(server).total("/operations") == 12

    other = tmp_path / "not-empty.db"
    with run_sandbox(other) as server:
        Api(server).create_operation()
    with run_sandbox(other, seed=12) as server:
        assert Api(server).total("/operations") == 1  # the database already held an operation


def test_seed_is_deterministic_for_a_random_seed(tmp_path):
    """Two fresh databases with the same --random-seed hold the same records.

    Compared: every field of every operation and its transactions, and the default (newest
    first) order, except created_at/updated_at (the seed spreads dates back from "now") and
    the host:port part of payment_url.
    """
    snapshots = []
    for name, random_seed in (("a", 3), ("b", 3), ("c", 4)):
        with run_sandbox(tmp_path / f"{name}.db", seed=25, random_seed=random_seed) as server:
            operations = fetch_all(Api(server), "/operations")
            snapshots.append((ids(operations), [without_timestamps(o) for o in operations]))
    assert len(snapshots[0][1]) == 25
    assert snapshots[0] == snapshots[1]
    assert snapshots[0][1] != snapshots[2][1]


def test_a_reused_sandbox_comes_back_as_it_started(tmp_path):
    """What the `sandbox` fixture relies on: records, wallets and flags put back, ids from 1."""
    reused = ReusedSandbox(tmp_path)
    try:
        server = reused.fresh()
        api = Api(server)
        first = api.create_operation(order_id="before")
        set_flags(server, withdrawals_allowed=False)
        set_wallet(server, "BTC", "1")
        control(server, "POST", "faults", {"mode": "error500", "methods": ["PUT"]})
        # a fault left on: a new process instead
        replaced = reused.fresh()
        assert replaced.base_url != server.base_url
        assert server.process.poll() is not None
        Api(replaced).create_operation(order_id="before")
        set_flags(replaced, withdrawals_allowed=False)
        set_wallet(replaced, "BTC", "1")
        # no fault: the same process, with its records put back
        again = reused.fresh()
        assert again.base_url == replaced.base_url
        assert Api(again).total("/operations") == 0
        assert wallets(again) == WALLETS_AT_START
        assert data_of(control(again, "GET", "flags")) == DEFAULT_FLAGS
        assert Api(again).create_operation(order_id="after")["id"] == first["id"]
    finally:
        reused.close()
