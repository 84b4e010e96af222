"""Contract of vouchers: create, show, list, cancel, pay off, expiry, codes 14-17, wallets."""

from __future__ import annotations

import datetime as dt
import threading
from decimal import Decimal

import pytest

from tests.sandbox.contract import (
    VOUCHER_STATUS,
    WALLETS_AT_START,
    acceptable_orders,
    assert_error,
    check_voucher,
    control,
    data_of,
    fetch_all,
    ids,
    list_of,
    newest_first,
    set_wallet,
    wallets,
)

STATUS_CODE = {text: code for code, text in VOUCHER_STATUS.items()}


def create(api, amount="0.5", currency="BTC"):
    return api.post("/vouchers", {"amount": amount, "currency": currency})


def payoff(api, code):
    return api.post("/vouchers/payoff", {"code": code})


def test_create_voucher_takes_the_amount_from_the_wallet(api, sandbox):
    voucher = data_of(create(api, "1.5", "BTC"), 201)
    check_voucher(voucher)
    assert voucher["amount"] == "1.50000000"
    assert voucher["currency"] == "BTC"
    assert voucher["status"] == "successful"
    assert voucher["type"] == "issued"
    assert wallets(sandbox)["BTC"] == WALLETS_AT_START["BTC"] - Decimal("1.5")
    assert api.voucher(voucher["id"]) == voucher
    assert ids(fetch_all(api, "/vouchers")) == [voucher["id"]]

    other = data_of(create(api, "10", "USDT"), 201)
    assert other["code"] != voucher["code"] and other["id"] != voucher["id"]
    assert wallets(sandbox)["USDT"] == WALLETS_AT_START["USDT"] - 10


def test_cancel_voucher_returns_the_amount(api, sandbox):
    voucher = data_of(create(api, "2", "ETH"), 201)
    assert wallets(sandbox)["ETH"] == WALLETS_AT_START["ETH"] - 2
    canceled = data_of(api.put(f"/vouchers/{voucher['id']}/cancel"), 200)
    check_voucher(canceled)
    assert canceled["id"] == voucher["id"]
    assert canceled["status"] == "cancelled"
    assert canceled["type"] == "issued"
    assert canceled["code"] == voucher["code"]
    assert wallets(sandbox)["ETH"] == WALLETS_AT_START["ETH"]
    assert api.voucher(voucher["id"])["status"] == "cancelled"

    assert_error(api.put(f"/vouchers/{voucher['id']}/cancel"), 16)
    assert_error(payoff(api, voucher["code"]), 17)
    assert wallets(sandbox)["ETH"] == WALLETS_AT_START["ETH"]
    assert api.voucher(voucher["id"])["status"] == "cancelled"


def test_pay_off_voucher_credits_the_wallet_once(api, sandbox):
    voucher = data_of(create(api, "0.75", "BTC"), 201)
    paid = data_of(payoff(api, voucher["code"]), 200)
    check_voucher(paid)
    assert paid["id"] == voucher["id"]
    assert paid["type"] == "paid off"
    assert paid["amount"] == "0.75000000"
    assert wallets(sandbox)["BTC"] == WALLETS_AT_START["BTC"]
    assert api.voucher(voucher["id"])["type"] == "paid off"

    assert_error(payoff(api, voucher["code"]), 17)
    assert_error(api.put(f"/vouchers/{voucher['id']}/cancel"), 16)
    assert wallets(sandbox)["BTC"] == WALLETS_AT_START["BTC"]


def test_voucher_expiry_returns_the_amount(api, sandbox):
    voucher = data_of(create(api, "3", "BTC"), 201)
    expired = data_of(control(sandbox, "POST", f"vouchers/{voucher['id']}/expire"), 200)
    check_voucher(expired)
    assert expired["status"] == "expired"
    assert api.voucher(voucher["id"])["status"] == "expired"
    assert wallets(sandbox)["BTC"] == WALLETS_AT_START["BTC"]
    assert_error(payoff(api, voucher["code"]), 17)
    assert_error(api.put(f"/vouchers/{voucher['id']}/cancel"), 16)
    assert wallets(sandbox)["BTC"] == WALLETS_AT_START["BTC"]


def test_voucher_not_created_is_code_15(api, sandbox):
    assert_error(create(api, "1", "USD"), 15)
    set_wallet(sandbox, "BTC", "1")
    assert_error(create(api, "1.00000001", "BTC"), 15)
    set_wallet(sandbox, "ETH", None)
    assert_error(create(api, "1", "ETH"), 15)
    assert api.total("/vouchers") == 0
    assert wallets(sandbox)["BTC"] == 1
    data_of(create(api, "1", "BTC"), 201)  # exactly the balance
    assert wallets(sandbox)["BTC"] == 0


@pytest.mark.parametrize("voucher_id", ["999999", "abc", "-1", "2.0", "99999999999999999999999999"])
def test_unknown_voucher_is_code_14(module_api, voucher_id):
    assert_error(module_api.get(f"/vouchers/{voucher_id}"), 14)
    assert_error(module_api.put(f"/vouchers/{voucher_id}/cancel"), 14)


@pytest.mark.parametrize(
    "code", ["AAAA-BBBB-CCCC-DDDD", "nonsense", "🙂", "x" * 10_000, "", "0000-0000-0000-0000"]
)
def test_paying_off_an_unknown_code_is_refused(module_api, module_sandbox, code):
    before = wallets(module_sandbox)
    response = payoff(module_api, code)
    if code == "" or len(code) > 255:
        # Either "validation" or "unknown code" fits an empty or oversized code.
        assert response.json().get("code") in (9, 17), response.text
        assert_error(response, response.json()["code"])
    else:
        assert_error(response, 17)
    assert wallets(module_sandbox) == before


@pytest.mark.parametrize("body", [{}, {"code": None}, {"code": 1234}, {"code": ["AAAA"]}])
def test_pay_off_validates_its_body(module_api, body):
    assert_error(module_api.post("/vouchers/payoff", body), 9, "code")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"currency": "BTC"}, "amount"),
        ({"amount": "1"}, "currency"),
        ({"amount": 1, "currency": "BTC"}, "amount"),
        ({"amount": "-1", "currency": "BTC"}, "amount"),
        ({"amount": "0", "currency": "BTC"}, "amount"),
        ({"amount": "0.000000001", "currency": "BTC"}, "amount"),
        ({"amount": "1e2", "currency": "BTC"}, "amount"),
        ({"amount": "", "currency": "BTC"}, "amount"),
        ({"amount": "9" * 10_000, "currency": "BTC"}, "amount"),
        ({"amount": "1", "currency": "XYZ"}, "currency"),
        ({"amount": "1", "currency": ""}, "currency"),
        ({"amount": "1", "currency": 7}, "currency"),
        ({"amount": "1", "currency": "₿"}, "currency"),
        ({"amount": "1", "currency": "B" * 10_000}, "currency"),
    ],
)
def test_create_voucher_validates_its_body(module_api, module_sandbox, body, field):
    before = wallets(module_sandbox)
    total = module_api.total("/vouchers")
    assert_error(module_api.post("/vouchers", body), 9, field)
    assert wallets(module_sandbox) == before
    assert module_api.total("/vouchers") == total


def test_concurrent_vouchers_never_overdraw_a_wallet(api, sandbox):
    set_wallet(sandbox, "BTC", "1")
    barrier = threading.Barrier(8)
    responses = [None] * 8

    def run(index):
        barrier.wait()
        responses[index] = create(api, "0.3", "BTC")

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for response in responses:
        if response.status_code != 201:
            assert_error(response, 15)
    assert sum(response.status_code == 201 for response in responses) == 3
    assert wallets(sandbox)["BTC"] == Decimal("0.1")
    assert api.total("/vouchers") == 3


# The voucher list -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def voucher_book(module_api, module_sandbox):
    """A set of vouchers of every reachable status, in three currencies."""
    created = []
    amounts = ["0.5", "1.25", "0.5", "2", "0.001", "3.5", "10", "0.75", "42", "0.5", "7", "1"]
    currencies = ["BTC", "ETH", "USDT"]
    for n, amount in enumerate(amounts):
        created.append(data_of(create(module_api, amount, currencies[n % 3]), 201))
    for voucher in created[:3]:
        data_of(module_api.put(f"/vouchers/{voucher['id']}/cancel"), 200)
    for voucher in created[3:5]:
        data_of(control(module_sandbox, "POST", f"vouchers/{voucher['id']}/expire"), 200)
    for voucher in created[5:7]:
        data_of(payoff(module_api, voucher["code"]), 200)
    return created


def test_voucher_list_default_order_is_newest_first(module_api, voucher_book):
    everything = fetch_all(module_api, "/vouchers")
    for voucher in everything:
        check_voucher(voucher)
    assert set(ids(voucher_book)) <= set(ids(everything))
    assert ids(everything) == ids(newest_first(everything))
    statuses = {voucher["status"] for voucher in everything}
    assert {"successful", "cancelled", "expired"} <= statuses


def _filtered(api, params, predicate):
    everything = fetch_all(api, "/vouchers")
    expected = [voucher for voucher in newest_first(everything) if predicate(voucher)]
    got = fetch_all(api, "/vouchers", params)
    assert ids(got) == ids(expected), params
    return got


@pytest.mark.parametrize(
    ("params", "predicate"),
    [
        ({"currency": "BTC"}, lambda v: v["currency"] == "BTC"),
        ({"currency": "BTC, ETH"}, lambda v: v["currency"] in ("BTC", "ETH")),
        ({"status": "2"}, lambda v: v["status"] == "cancelled"),
        ({"status": "1,3"}, lambda v: v["status"] in ("successful", "expired")),
        ({"status": "0"}, lambda v: v["status"] == "new"),
        ({"amount_from": "1"}, lambda v: Decimal(v["amount"]) >= 1),
        ({"amount_to": "0.5"}, lambda v: Decimal(v["amount"]) <= Decimal("0.5")),
        (
            {"amount_from": "0.5", "amount_to": "2"},
            lambda v: Decimal("0.5") <= Decimal(v["amount"]) <= 2,
        ),
        ({"amount_from": "0.500000001"}, lambda v: Decimal(v["amount"]) > Decimal("0.5")),
        ({"amount_from": "-5"}, lambda v: True),
        (
            {"currency": "ETH", "status": "1", "amount_from": "1"},
            lambda v: (
                v["currency"] == "ETH" and v["status"] == "successful" and Decimal(v["amount"]) >= 1
            ),
        ),
    ],
)
def test_voucher_list_filters(module_api, voucher_book, params, predicate):
    _filtered(module_api, params, predicate)


def test_voucher_list_date_filters_are_inclusive_utc_days(module_api, voucher_book):
    today = dt.datetime.now(dt.UTC).date()
    day = dt.timedelta(days=1)
    everything = fetch_all(module_api, "/vouchers")
    by_day = {voucher["created_at"][:10] for voucher in everything}
    assert by_day == {today.isoformat()}
    assert ids(fetch_all(module_api, "/vouchers", {"created_from": today.isoformat()})) == ids(
        everything
    )
    assert ids(fetch_all(module_api, "/vouchers", {"created_to": today.isoformat()})) == ids(
        everything
    )
    assert ids(fetch_all(module_api, "/vouchers", {
        "created_from": today.isoformat(), "created_to": today.isoformat()
    })) == ids(everything)  # fmt: skip
    assert fetch_all(module_api, "/vouchers", {"created_to": (today - day).isoformat()}) == []
    assert fetch_all(module_api, "/vouchers", {"created_from": (today + day).isoformat()}) == []


@pytest.mark.parametrize("sort_type", [None, "asc", "desc"])
@pytest.mark.parametrize(
    ("sort", "key"),
    [
        ("amount", lambda v: Decimal(v["amount"])),
        ("status", lambda v: STATUS_CODE[v["status"]]),
        ("created", lambda v: v["created_at"]),
        ("updated", lambda v: v["updated_at"]),
    ],
)
def test_voucher_list_sorts(module_api, voucher_book, sort, key, sort_type):
    params = {"sort": sort} if sort_type is None else {"sort": sort, "sort_type": sort_type}
    everything = fetch_all(module_api, "/vouchers")
    got = ids(fetch_all(module_api, "/vouchers", params))
    assert got in acceptable_orders(everything, key, sort_type == "desc"), params


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"sort": "code"}, "sort"),
        ({"sort": "id"}, "sort"),
        ({"sort": "amount", "sort_type": "up"}, "sort_type"),
        ({"currency": "XYZ"}, "currency"),
        ({"currency": "BTC,XYZ"}, "currency"),
        ({"status": "4"}, "status"),
        ({"status": "successful"}, "status"),
        ({"amount_from": "abc"}, "amount_from"),
        ({"amount_to": "1e5"}, "amount_to"),
        ({"created_from": "2024-02-30"}, "created_from"),
        ({"created_to": "01/02/2024"}, "created_to"),
        ({"page": "0"}, "page"),
        ({"per_page": "x"}, "per_page"),
    ],
)
def test_voucher_list_malformed_parameters_are_code_9(module_api, params, field):
    assert_error(module_api.get("/vouchers", params), 9, field)


def test_voucher_list_envelope(module_api, module_sandbox, voucher_book):
    body = list_of(module_api.get("/vouchers", {"per_page": 5, "currency": "BTC"}))
    total = body["meta"]["total"]
    assert body["meta"]["path"] == f"{module_sandbox.base_url}/sandbox/v1/vouchers"
    assert body["meta"]["per_page"] == 5
    assert body["meta"]["last_page"] == max(1, -(-total // 5))
