"""Bad input to create operation: the documented code, never a 500, and nothing created."""

from __future__ import annotations

import pytest

from tests.sandbox.contract import assert_error, wallets

VALID = {"amount": "10", "currency": "BTC", "order_id": "order-1"}

AMOUNTS = [
    10,
    10.5,
    -1,
    "-1",
    "0",
    "0.00000000",
    "1.123456789",
    "1e3",
    "1E3",
    "+1",
    " 1",
    "1 ",
    "1,5",
    "1.2.3",
    "abc",
    "",
    "NaN",
    "Infinity",
    "0x10",
    "1000000000.00000001",
    "1000000001",
    "١٢",  # Arabic-Indic digits
    "\uff11\uff12",  # full-width digits
    "9" * 10_000,
    None,
    True,
    ["1"],
    {"value": "1"},
]
CURRENCIES = ["XYZ", "", "btc", "BTC ", "Ƀ", "B" * 10_000, 1, None, ["BTC"]]
ORDER_IDS = ["", "x" * 256, "x" * 10_000, 12345, None, ["a"], {"id": "a"}]
REDIRECTS = [
    "not a url",
    "/relative/path",
    "ftp://shop.example/file",
    "javascript:alert(1)",
    "https://",
    "https://shop.example/" + "p" * 2048,
    "h" * 10_000,
    42,
]
PAYMENT_CURRENCIES = ["XYZ", "btc", 5, "\u039e", "B" * 10_000]


def _case(field, value):
    return pytest.param(field, value, id=f"{field}={str(value)[:20]!r}")


CASES = [
    *[_case("amount", value) for value in AMOUNTS],
    *[_case("currency", value) for value in CURRENCIES],
    *[_case("order_id", value) for value in ORDER_IDS],
    *[_case("redirect_url", value) for value in REDIRECTS],
    *[_case("payment_currency", value) for value in PAYMENT_CURRENCIES],
]


@pytest.mark.parametrize(("field", "value"), CASES)
def test_create_operation_rejects_a_bad_field(module_api, module_sandbox, field, value):
    before = module_api.total("/operations")
    balances = wallets(module_sandbox)
    response = module_api.post("/operations", {**VALID, field: value})
    assert_error(response, 9, field)
    assert module_api.total("/operations") == before
    assert wallets(module_sandbox) == balances


@pytest.mark.parametrize("field", ["amount", "currency", "order_id"])
def test_create_operation_requires_each_field(module_api, field):
    before = module_api.total("/operations")
    body = {key: value for key, value in VALID.items() if key != field}
    assert_error(module_api.post("/operations", body), 9, field)
    assert module_api.total("/operations") == before


def test_every_missing_field_is_named(module_api):
    assert_error(module_api.post("/operations", {}), 9, "amount", "currency", "order_id")


def test_huge_body_is_refused_without_a_server_error(module_api):
    before = module_api.total("/operations")
    body = {**VALID, "order_id": "z" * 1_000_000}
    response = module_api.post("/operations", body)
    assert response.status_code in (413, 422), response.status_code
    if response.status_code == 422:
        assert_error(response, 9, "order_id")
    assert module_api.total("/operations") == before
