"""Contract of authentication, bans, content type, malformed bodies, versions and error bodies."""

from __future__ import annotations

import json

import pytest
import requests

from tests.sandbox.contract import (
    EXTERNAL_ADDRESS,
    PREFIXES,
    Api,
    assert_error,
    control,
    data_of,
    describe,
    list_of,
    set_flags,
)

CROSS_EXCHANGE_BODY = {
    "sell_currency": "ETH",
    "buy_currency": "BTC",
    "sell_amount": "1",
    "sell_address": EXTERNAL_ADDRESS["ETH"],
    "buy_address": EXTERNAL_ADDRESS["BTC"],
}

# The 21 endpoints with a valid body where they take one; ids need not exist.
ENDPOINTS: list[tuple[str, str, dict | None]] = [
    ("GET", "/ping", None),
    ("GET", "/operations/1", None),
    ("GET", "/operations", None),
    ("POST", "/operations", {"amount": "1", "currency": "BTC", "order_id": "x"}),
    ("PUT", "/operations/1/cancel", None),
    ("GET", "/transactions", None),
    ("GET", "/transactions/1", None),
    ("PUT", "/operations/1/link-transactions", {"tx_id": ["1"]}),
    ("PUT", "/operations/1/reject-transactions", {"tx_id": ["1"], "reason": "r"}),
    ("GET", "/rates", None),
    ("POST", "/withdraw", {"amount": "0.1", "wallet": "BTC", "address": EXTERNAL_ADDRESS["BTC"]}),
    ("GET", "/vouchers", None),
    ("GET", "/vouchers/1", None),
    ("POST", "/vouchers", {"amount": "0.1", "currency": "BTC"}),
    ("PUT", "/vouchers/1/cancel", None),
    ("POST", "/vouchers/payoff", {"code": "AAAA-BBBB-CCCC-DDDD"}),
    ("POST", "/exchange", {"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "0.1"}),
    ("GET", "/exchange/rates", None),
    ("POST", "/cross-exchanges", CROSS_EXCHANGE_BODY),
    ("GET", "/cross-exchanges/1", None),
    ("PUT", "/cross-exchanges/1/cancel", None),
]
COMPANY_ENDPOINTS = {("GET", "/vouchers"), ("POST", "/cross-exchanges")}
WRITE_ENDPOINTS = [endpoint for endpoint in ENDPOINTS if endpoint[0] in ("POST", "PUT")]


def endpoint_id(endpoint) -> str:
    return f"{endpoint[0]} {endpoint[1]}"


def send(
    base: str, method: str, path: str, body, headers: dict[str, str], *, raw: bytes | None = None
) -> requests.Response:
    data = raw
    if raw is None and method in ("POST", "PUT"):
        data = b"" if body is None else json.dumps(body).encode()
    return requests.request(method, base + path, data=data, headers=headers, timeout=20)


def json_headers(token: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def totals(api: Api) -> tuple[int, int, int]:
    return (
        api.total("/operations"),
        api.total("/transactions"),
        api.total("/vouchers"),
    )


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=endpoint_id)
def test_missing_or_invalid_bearer_is_code_2(module_sandbox, prefix, endpoint):
    method, path, body = endpoint
    base = module_sandbox.base_url + prefix
    before = totals(Api(module_sandbox))
    variants = [
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": "Bearer "},
        {"Authorization": f"Basic {module_sandbox.token}"},
        {"Authorization": module_sandbox.token},
        {"Authorization": f"Bearer {module_sandbox.token}x"},
    ]
    for extra in variants:
        headers = {"Accept": "application/json", "Content-Type": "application/json", **extra}
        assert_error(send(base, method, path, body, headers), 2)
    assert totals(Api(module_sandbox)) == before


@pytest.mark.parametrize(
    "endpoint", [e for e in ENDPOINTS if (e[0], e[1]) not in COMPANY_ENDPOINTS], ids=endpoint_id
)
def test_company_token_is_refused_elsewhere(module_sandbox, endpoint):
    method, path, body = endpoint
    api = Api(module_sandbox)
    before = totals(api)
    response = send(api.root, method, path, body, json_headers(module_sandbox.company_token))
    assert_error(response, 2)
    assert totals(api) == before


def test_company_token_is_accepted_for_voucher_list_and_create_cross_exchange(module_sandbox):
    api = Api(module_sandbox)
    voucher = data_of(api.post("/vouchers", {"amount": "0.1", "currency": "BTC"}), 201)
    listing = list_of(api.get("/vouchers", token=module_sandbox.company_token))
    assert voucher["id"] in [record["id"] for record in listing["data"]]
    cross = data_of(
        api.post("/cross-exchanges", CROSS_EXCHANGE_BODY, token=module_sandbox.company_token), 201
    )
    assert cross["status"] == "processed"
    # The application token works everywhere, these two included.
    list_of(api.get("/vouchers"))
    data_of(api.post("/cross-exchanges", CROSS_EXCHANGE_BODY), 201)


@pytest.mark.parametrize(
    "path",
    ["/v0/ping", "/sandbox/v0/ping", "/sandbox/v2/rates", "/v2/operations", "/v0/operations/1"],
)
def test_other_versions_are_code_1_before_authentication(module_sandbox, path):
    url = module_sandbox.base_url + path
    assert_error(requests.get(url, timeout=10), 1)
    assert_error(requests.get(url, headers=module_sandbox.headers(), timeout=10), 1)
    assert_error(
        requests.post(url, data=b"{}", headers=json_headers(module_sandbox.token), timeout=10), 1
    )


def test_application_ban(api, sandbox):
    before = totals(api)
    flags = set_flags(sandbox, application_banned=True)
    assert flags["application_banned"] is True
    for method, path, body in ENDPOINTS:
        response = send(api.root, method, path, body, json_headers(sandbox.token))
        assert_error(response, 3)
    # Authentication comes first; the company token is not an application's request.
    assert_error(api.get("/operations", token="wrong"), 2)
    list_of(api.get("/vouchers", token=sandbox.company_token))
    assert_error(api.get("/operations", token=sandbox.company_token), 2)
    # Also under the production prefix.
    assert_error(Api(sandbox, "/v1").get("/ping"), 3)
    # The control surface is never subject to bans.
    data_of(control(sandbox, "GET", "flags"))
    data_of(control(sandbox, "GET", "wallets"))

    set_flags(sandbox, application_banned=False)
    assert totals(api)[0] == before[0]
    data_of(api.get("/ping"))


def test_company_ban(api, sandbox):
    set_flags(sandbox, company_banned=True)
    for method, path, body in ENDPOINTS:
        response = send(api.root, method, path, body, json_headers(sandbox.token))
        assert_error(response, 4)
    for method, path, body in ENDPOINTS:
        if (method, path) in COMPANY_ENDPOINTS:
            response = send(api.root, method, path, body, json_headers(sandbox.company_token))
            assert_error(response, 4)
    assert_error(api.get("/operations", token="wrong"), 2)
    set_flags(sandbox, application_banned=True)
    assert_error(api.get("/operations"), 4)  # company ban is checked before application ban
    assert_error(Api(sandbox, "/v1").get("/rates"), 4)
    data_of(control(sandbox, "GET", "flags"))

    set_flags(sandbox, company_banned=False, application_banned=False)
    data_of(api.get("/ping"))
    assert api.total("/operations") == 0


@pytest.mark.parametrize("endpoint", WRITE_ENDPOINTS, ids=endpoint_id)
@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "application/xml"]
)
def test_post_and_put_without_json_content_type_are_code_10(module_sandbox, endpoint, content_type):
    method, path, body = endpoint
    api = Api(module_sandbox)
    before = totals(api)
    headers = module_sandbox.headers()
    if content_type:
        headers["Content-Type"] = content_type
    payload = json.dumps(body).encode() if body is not None else None
    response = requests.request(method, api.url(path), data=payload, headers=headers, timeout=20)
    assert_error(response, 10)
    assert totals(api) == before


def test_bodiless_cancel_without_content_type_is_code_10_and_changes_nothing(module_api):
    op = module_api.create_operation()
    headers = module_api.server.headers()
    response = requests.put(
        module_api.url(f"/operations/{op['id']}/cancel"), headers=headers, timeout=10
    )
    assert_error(response, 10)
    assert module_api.operation(op["id"])["status"] == "new"
    voucher = data_of(module_api.post("/vouchers", {"amount": "0.1", "currency": "BTC"}), 201)
    response = requests.put(
        module_api.url(f"/vouchers/{voucher['id']}/cancel"), headers=headers, timeout=10
    )
    assert_error(response, 10)
    assert module_api.voucher(voucher["id"])["status"] == "successful"


def test_content_type_is_checked_before_the_endpoint_rules(module_sandbox):
    headers = module_sandbox.headers()
    base = module_sandbox.base_url + "/sandbox/v1"
    assert_error(requests.put(f"{base}/operations/999999/cancel", headers=headers, timeout=10), 10)
    assert_error(requests.post(f"{base}/operations", data=b"{", headers=headers, timeout=10), 10)
    # ... and after authentication.
    assert_error(requests.post(f"{base}/operations", data=b"{}", timeout=10), 2)


def test_json_content_type_with_charset_is_accepted(module_api):
    response = module_api.post(
        "/operations",
        {"amount": "1", "currency": "BTC", "order_id": "charset"},
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert data_of(response, 201)["order_id"] == "charset"


def test_empty_body_with_the_header_is_an_empty_object(module_api):
    op = module_api.create_operation()
    response = module_api.put(f"/operations/{op['id']}/cancel")  # empty body, JSON header
    assert response.status_code == 204, describe(response)
    assert_error(module_api.post("/operations"), 9, "amount", "currency", "order_id")
    assert_error(module_api.post("/withdraw"), 9, "amount", "wallet", "address")
    assert_error(module_api.post("/vouchers"), 9, "amount", "currency")
    assert_error(module_api.put(f"/operations/{op['id']}/link-transactions"), 9, "tx_id")


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b"not json",
        b"[]",
        b'[{"amount": "1"}]',
        b'"text"',
        b"null",
        b"42",
        b"true",
        b"\xff\xfe",
    ],
    ids=[
        "truncated",
        "text",
        "array",
        "array-of-object",
        "string",
        "null",
        "number",
        "bool",
        "binary",
    ],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/operations"),
        ("POST", "/withdraw"),
        ("POST", "/vouchers"),
        ("POST", "/vouchers/payoff"),
        ("POST", "/exchange"),
        ("POST", "/cross-exchanges"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_code_9(module_sandbox, method, path, raw):
    api = Api(module_sandbox)
    before = totals(api)
    response = send(api.root, method, path, None, json_headers(module_sandbox.token), raw=raw)
    assert_error(response, 9, "body")
    assert totals(api) == before


def test_a_bad_body_on_put_is_code_9(module_api, module_sandbox):
    op = module_api.create_operation()
    for path in ("link-transactions", "reject-transactions"):
        response = send(
            module_api.root,
            "PUT",
            f"/operations/{op['id']}/{path}",
            None,
            json_headers(module_sandbox.token),
            raw=b"[1, 2",
        )
        assert_error(response, 9, "body")


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("path", ["/no-such-thing", "/operations/1/2", "/vouchers/a%2Fb"])
def test_a_path_the_sandbox_cannot_place_is_400_code_0(module_sandbox, prefix, path):
    """The API documents one status and one message for code 0: 400 "Something went wrong"."""
    response = requests.get(
        f"{module_sandbox.base_url}{prefix}{path}",
        headers=module_sandbox.headers(),
        timeout=10,
    )
    assert_error(response, 0)
    assert response.json() == {"code": 0, "message": "Something went wrong"}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/operations"),
        ("PATCH", "/operations/1"),
        ("POST", "/rates"),
        ("GET", "/withdraw"),
    ],
)
def test_a_method_the_path_does_not_take_is_400_code_0(module_sandbox, method, path):
    headers = json_headers(module_sandbox.token)
    response = requests.request(
        method,
        f"{module_sandbox.base_url}/sandbox/v1{path}",
        data=b"{}",
        headers=headers,
        timeout=10,
    )
    assert_error(response, 0)
    assert response.json() == {"code": 0, "message": "Something went wrong"}


def test_errors_other_than_validation_carry_no_errors_field(module_api):
    body = assert_error(module_api.get("/operations/999999"), 5)
    assert "errors" not in body
    body = assert_error(module_api.post("/operations", {"amount": "x"}), 9, "amount")
    assert isinstance(body["errors"]["amount"], list)
