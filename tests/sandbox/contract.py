"""Shared checks and helpers of the sandbox contract tests.

Everything here speaks real HTTP to a running sandbox process; nothing imports the sandbox.
The expectations come from docs/sandbox.md: what the API documents, and what the sandbox adds.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit

import requests

from tests.support.sandbox_server import SandboxServer

PREFIXES = ("/sandbox/v1", "/v1")

# code -> (HTTP status, message), as the API documents them (docs/sandbox.md).
ERRORS: dict[int, tuple[int, str]] = {
    0: (400, "Something went wrong"),
    1: (410, "Deprecated action"),
    2: (401, "Unauthenticated"),
    3: (403, "Application banned"),
    4: (403, "Company banned"),
    5: (404, "Operation not found"),
    6: (404, "Transaction not found"),
    7: (400, "Operation not created"),
    8: (400, "Cancel not allowed (operation)"),
    9: (422, "Validation errors"),
    10: (415, "Unsupported Content Type"),
    11: (400, "Withdrawal is not allowed"),
    12: (400, "Withdrawal limit"),
    13: (400, "Not found available wallets for withdrawal"),
    14: (404, "Voucher Not Found"),
    15: (400, "Voucher not created"),
    16: (400, "Cancel not allowed (voucher)"),
    17: (400, "Unable to pay off voucher"),
    18: (404, "Cross Exchange Not Found"),
    19: (400, "Cross Exchange not created"),
    20: (400, "Cancel of cross exchange not allowed"),
    21: (400, "Exchange pair not available"),
    22: (400, "Exceeded the number of exchange operations"),
    23: (400, "Currency exchange has been limited"),
    24: (400, "Available wallet for exchange was not found"),
    25: (400, "Exchange not created"),
}

ID_RE = re.compile(r"^[0-9]+$")
AMOUNT_RE = re.compile(r"^[0-9]+\.[0-9]{8}$")
TIMESTAMP_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
BECH32_SANDBOX_RE = re.compile(r"^tb1q[02-9ac-hj-np-z]{10,70}$")
HEX_ADDRESS_RE = re.compile(r"^0x[0-9a-fA-F]{40}$")
VOUCHER_CODE_RE = re.compile(r"^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$")

OPERATION_STATUS = {
    0: "new",
    1: "confirmed",
    2: "failed",
    3: "expired",
    4: "canceled",
    5: "processed",
}
TRANSACTION_STATUS = {1: "confirmed", 2: "undefined", 4: "rejected"}
VOUCHER_STATUS = {0: "new", 1: "successful", 2: "cancelled", 3: "expired"}
CROSS_EXCHANGE_STATUSES = {"processed", "successful", "canceled", "expired", "failed"}

CRYPTO = ("BTC", "ETH", "USDT")
CURRENCIES = (*CRYPTO, "USD")
WALLETS_AT_START = {"BTC": Decimal("25"), "ETH": Decimal("400"), "USDT": Decimal("1000000")}
NETWORK_FEE = {"BTC": Decimal("0.0001"), "ETH": Decimal("0.001"), "USDT": Decimal("1")}

# Addresses of the right shape that the sandbox never hands out (outside addresses).
EXTERNAL_ADDRESS = {
    "BTC": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
    "ETH": "0x" + "5a" * 20,
    "USDT": "0x" + "7B" * 20,
}
BTC_BASE58_ADDRESS = "1BoatSLRHtKNngkdXEeobR76b53LETtpyT"

DEFAULT_FLAGS = {
    "application_banned": False,
    "company_banned": False,
    "withdrawals_allowed": True,
    "payment_gateways_available": True,
    "payment_gateway_fails": False,
    "exchange_daily_limit": 20,
    "unknown_invoice_redirect_url": None,
}

OPERATION_FIELDS = {
    "id", "application_id", "application_name", "category", "order_id", "amount", "fee",
    "amount_paid", "rate", "currency", "currency_paid", "status", "address", "created_at",
    "updated_at", "payment_url", "redirect_url", "transactions",
}  # fmt: skip
TRANSACTION_FIELDS = {
    "id", "tx_id", "amount", "status", "linked", "reject_reason", "created_at", "updated_at",
}  # fmt: skip
VOUCHER_FIELDS = {"id", "amount", "currency", "code", "status", "type", "created_at", "updated_at"}
EXCHANGE_FIELDS = {
    "id", "sell_currency", "buy_currency", "sell_amount", "buy_amount", "rate", "fee", "status",
    "created_at", "updated_at",
}  # fmt: skip
CROSS_EXCHANGE_FIELDS = {
    "id", "operation_id", "sell_currency", "buy_currency", "sell_amount", "buy_amount", "fee",
    "rate", "invoice_address", "status", "expired_at", "created_at", "updated_at",
}  # fmt: skip

EIGHT = Decimal("0.00000001")
_NO_BODY = object()


def q8(value: Decimal) -> str:
    """The wire form of an amount: exactly 8 decimal places."""
    return f"{value.quantize(EIGHT):f}"


def ceil8(value: Decimal) -> Decimal:
    return value.quantize(EIGHT, rounding=ROUND_CEILING)


class Api:
    """Requests against one prefix of a running sandbox, with the bearer token and JSON."""

    def __init__(self, server: SandboxServer, prefix: str = "/sandbox/v1") -> None:
        self.server = server
        self.prefix = prefix
        self.root = server.base_url + prefix

    def url(self, path: str) -> str:
        return self.root + path

    def request(
        self,
        method: str,
        path: str,
        body: Any = _NO_BODY,
        *,
        params: Any = None,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 20,
    ) -> requests.Response:
        all_headers = self.server.headers(token)
        data = None
        if method in ("POST", "PUT"):
            all_headers["Content-Type"] = "application/json"
            data = b"" if body is _NO_BODY else json.dumps(body).encode()
        if headers:
            all_headers.update(headers)
        return requests.request(
            method, self.url(path), params=params, data=data, headers=all_headers, timeout=timeout
        )

    def get(self, path: str, params: Any = None, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, params=params, **kwargs)

    def post(self, path: str, body: Any = _NO_BODY, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, body, **kwargs)

    def put(self, path: str, body: Any = _NO_BODY, **kwargs: Any) -> requests.Response:
        return self.request("PUT", path, body, **kwargs)

    # Shortcuts that assert success and return the record.
    def create_operation(self, **fields: Any) -> dict:
        body = {"amount": "0.5", "currency": "BTC", "order_id": "order-1", **fields}
        return data_of(self.post("/operations", body), 201)

    def operation(self, operation_id: str) -> dict:
        return data_of(self.get(f"/operations/{operation_id}"), 200)

    def transaction(self, transaction_id: str) -> dict:
        return data_of(self.get(f"/transactions/{transaction_id}"), 200)

    def voucher(self, voucher_id: str) -> dict:
        return data_of(self.get(f"/vouchers/{voucher_id}"), 200)

    def cross_exchange(self, cross_exchange_id: str) -> dict:
        return data_of(self.get(f"/cross-exchanges/{cross_exchange_id}"), 200)

    def total(self, path: str, params: dict | None = None) -> int:
        return list_of(self.get(path, {**(params or {}), "per_page": 1}))["meta"]["total"]


def _is_json(response: requests.Response) -> bool:
    return response.headers.get("Content-Type", "").split(";")[0].strip() == "application/json"


def describe(response: requests.Response) -> str:
    request = response.request
    return f"{request.method} {request.url} -> {response.status_code} {response.text[:600]!r}"


def data_of(response: requests.Response, status: int = 200) -> Any:
    """Assert a `{data: ...}` answer with the given status and return its data."""
    assert response.status_code == status, describe(response)
    assert _is_json(response), describe(response)
    body = response.json()
    assert isinstance(body, dict) and set(body) == {"data"}, describe(response)
    return body["data"]


def list_of(response: requests.Response) -> dict:
    """Assert a 200 pagination envelope and return it."""
    assert response.status_code == 200, describe(response)
    assert _is_json(response), describe(response)
    body = response.json()
    assert set(body) == {"data", "links", "meta"}, describe(response)
    assert isinstance(body["data"], list)
    assert set(body["links"]) == {"first", "last", "prev", "next"}
    assert set(body["meta"]) == {
        "current_page", "from", "to", "last_page", "path", "per_page", "total",
    }  # fmt: skip
    return body


def assert_error(response: requests.Response, code: int, *fields: str) -> dict:
    """Assert the error body `{code, message, errors?}` with the HTTP status of `code`."""
    status, message = ERRORS[code]
    assert response.status_code == status, describe(response)
    assert _is_json(response), describe(response)
    body = response.json()
    assert isinstance(body, dict), describe(response)
    assert body.get("code") == code, describe(response)
    assert type(body["code"]) is int
    assert isinstance(body.get("message"), str) and body["message"], describe(response)
    if code == 0:
        assert body["message"] == message, describe(response)
    else:
        # The documented message, possibly followed by details ("Withdrawal limit: ...").
        # "(operation)" and "(voucher)" in the table tell apart the two cancel messages.
        assert body["message"].startswith(message.split(" (")[0]), describe(response)
    if code == 9:
        assert set(body) == {"code", "message", "errors"}, describe(response)
        errors = body["errors"]
        assert isinstance(errors, dict) and errors, describe(response)
        for name, messages in errors.items():
            assert isinstance(name, str)
            assert isinstance(messages, list) and messages, describe(response)
            assert all(isinstance(text, str) and text for text in messages)
        for name in fields:
            assert name in errors, f"errors does not name {name!r}: {describe(response)}"
    else:
        assert set(body) == {"code", "message"}, describe(response)
    return body


# Record shapes ------------------------------------------------------------------------------


def check_id(value: Any) -> None:
    assert isinstance(value, str) and ID_RE.match(value), value


def check_amount(value: Any) -> None:
    assert isinstance(value, str) and AMOUNT_RE.match(value), value


def check_timestamp(value: Any) -> None:
    assert isinstance(value, str) and TIMESTAMP_RE.match(value), value


def check_nullable_string(value: Any) -> None:
    assert value is None or isinstance(value, str), value


def check_transaction(tx: dict, *, embedded: bool = False, loose: bool = False) -> None:
    """Transaction shape: embedded ones lack `operation_id`, the others carry it."""
    if loose:
        assert set(tx) >= TRANSACTION_FIELDS, tx
    elif embedded:
        assert set(tx) == TRANSACTION_FIELDS, tx
    else:
        assert set(tx) == TRANSACTION_FIELDS | {"operation_id"}, tx
        check_id(tx["operation_id"])
    check_id(tx["id"])
    assert isinstance(tx["tx_id"], str) and tx["tx_id"]
    check_amount(tx["amount"])
    assert tx["status"] in TRANSACTION_STATUS.values(), tx
    assert type(tx["linked"]) is bool
    check_nullable_string(tx["reject_reason"])
    if tx["status"] != "rejected":
        assert tx["reject_reason"] is None, tx
    if tx["linked"]:
        assert tx["status"] == "confirmed", tx
    check_timestamp(tx["created_at"])
    check_timestamp(tx["updated_at"])
    assert tx["updated_at"] >= tx["created_at"]


def check_operation(op: dict) -> None:
    assert set(op) == OPERATION_FIELDS, sorted(op)
    check_id(op["id"])
    for name in ("application_id", "application_name", "order_id", "payment_url", "redirect_url"):
        check_nullable_string(op[name])
    if op["application_id"] is not None:
        check_id(op["application_id"])
    assert op["category"] in ("application", "manual", "transfer", "internal_transfer"), op
    for name in ("amount", "fee", "rate"):
        check_amount(op[name])
    if op["amount_paid"] is not None:
        check_amount(op["amount_paid"])
    assert op["currency"] in CURRENCIES, op
    assert op["currency_paid"] in CRYPTO, op
    assert op["status"] in OPERATION_STATUS.values(), op
    assert isinstance(op["address"], str) and op["address"]
    check_timestamp(op["created_at"])
    check_timestamp(op["updated_at"])
    assert op["updated_at"] >= op["created_at"]
    assert isinstance(op["transactions"], list)
    for tx in op["transactions"]:
        check_transaction(tx, embedded=True)


def check_voucher(voucher: dict) -> None:
    assert set(voucher) == VOUCHER_FIELDS, sorted(voucher)
    check_id(voucher["id"])
    check_amount(voucher["amount"])
    assert voucher["currency"] in CRYPTO
    assert isinstance(voucher["code"], str) and VOUCHER_CODE_RE.match(voucher["code"]), voucher
    assert voucher["status"] in VOUCHER_STATUS.values(), voucher
    assert voucher["type"] in ("issued", "paid off"), voucher
    check_timestamp(voucher["created_at"])
    check_timestamp(voucher["updated_at"])
    assert voucher["updated_at"] >= voucher["created_at"]


def check_exchange(exchange: dict) -> None:
    assert set(exchange) == EXCHANGE_FIELDS, sorted(exchange)
    check_id(exchange["id"])
    assert exchange["sell_currency"] in CRYPTO and exchange["buy_currency"] in CRYPTO
    for name in ("sell_amount", "buy_amount", "rate", "fee"):
        check_amount(exchange[name])
    assert exchange["status"] == "successful", exchange
    check_timestamp(exchange["created_at"])
    check_timestamp(exchange["updated_at"])


def check_cross_exchange(cross: dict) -> None:
    assert set(cross) == CROSS_EXCHANGE_FIELDS, sorted(cross)
    check_id(cross["id"])
    check_id(cross["operation_id"])
    assert cross["sell_currency"] in CRYPTO and cross["buy_currency"] in CRYPTO
    for name in ("sell_amount", "buy_amount", "fee", "rate"):
        check_amount(cross[name])
    assert isinstance(cross["invoice_address"], str) and cross["invoice_address"]
    assert cross["status"] in CROSS_EXCHANGE_STATUSES, cross
    for name in ("expired_at", "created_at", "updated_at"):
        check_timestamp(cross[name])


def check_sandbox_address(address: str, currency: str) -> None:
    """The sandbox hands out tb1q... addresses for BTC and 0x... for ETH and USDT."""
    if currency == "BTC":
        assert BECH32_SANDBOX_RE.match(address) and 14 <= len(address) <= 74, address
    else:
        assert HEX_ADDRESS_RE.match(address), address


# Lists --------------------------------------------------------------------------------------


def fetch_all(api: Api, path: str, params: dict | None = None) -> list[dict]:
    """Every record of a list, walking the pages with per_page=100."""
    records: list[dict] = []
    page = 1
    while True:
        body = list_of(api.get(path, {**(params or {}), "per_page": 100, "page": page}))
        records.extend(body["data"])
        if page >= body["meta"]["last_page"]:
            assert len(records) == body["meta"]["total"]
            return records
        page += 1


def ids(records: list[dict]) -> list[str]:
    return [record["id"] for record in records]


def newest_first(records: list[dict]) -> list[dict]:
    """The documented default order: created_at descending, then id descending."""
    return sorted(records, key=lambda r: (r["created_at"], int(r["id"])), reverse=True)


def query_of(url: str) -> tuple[str, list[tuple[str, str]]]:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}", parse_qsl(
        parts.query, keep_blank_values=True
    )


# Control surface ----------------------------------------------------------------------------


def control(server: SandboxServer, method: str, path: str, body: Any = None) -> requests.Response:
    """A control-surface request that may fail (the fixture helper raises on errors)."""
    headers = server.headers()
    data = None
    if method in ("POST", "PUT"):
        headers["Content-Type"] = "application/json"
        data = b"" if body is None else json.dumps(body).encode()
    return requests.request(
        method,
        f"{server.base_url}/_control/{path.lstrip('/')}",
        data=data,
        headers=headers,
        timeout=20,
    )


def set_flags(server: SandboxServer, **flags: Any) -> dict:
    response = control(server, "POST", "flags", flags)
    return data_of(response, 200)


def add_transaction(
    server: SandboxServer,
    operation_id: str,
    amount: str,
    status: str = "confirmed",
    tx_id: str | None = None,
) -> dict:
    """Simulate a blockchain transaction arriving at the operation's address."""
    body = {"amount": amount, "status": status}
    if tx_id is not None:
        body["tx_id"] = tx_id
    tx = data_of(control(server, "POST", f"operations/{operation_id}/transactions", body), 201)
    check_transaction(tx, loose=True)
    return tx


def wallets(server: SandboxServer) -> dict[str, Decimal]:
    """Wallet balances by currency, from `GET /_control/wallets` (removed wallets absent)."""
    payload = data_of(control(server, "GET", "wallets"), 200)
    balances: dict[str, Decimal] = {}
    if isinstance(payload, dict):
        items = []
        for currency, value in payload.items():
            if isinstance(value, dict):
                items.append({"currency": currency, **value})
            else:
                items.append({"currency": currency, "balance": value})
    else:
        items = payload
    for item in items:
        if item.get("balance") is not None:
            balances[item["currency"]] = Decimal(str(item["balance"]))
    return balances


def set_wallet(server: SandboxServer, currency: str, balance: str | None) -> None:
    data_of(control(server, "POST", "wallets", {"currency": currency, "balance": balance}), 200)


def rates_of(response: requests.Response) -> dict[str, Decimal]:
    """A Rates object at the top level: JSON numbers, parsed as Decimal."""
    assert response.status_code == 200, describe(response)
    assert _is_json(response), describe(response)
    body = json.loads(response.text, parse_float=Decimal)
    assert isinstance(body, dict) and "data" not in body, body
    for pair, value in body.items():
        assert re.match(r"^[A-Z]+:[A-Z]+$", pair), pair
        assert isinstance(value, Decimal | int) and not isinstance(value, bool), (pair, value)
    return {pair: Decimal(value) for pair, value in body.items()}


# The hosted payment page ---------------------------------------------------------------------


@dataclass
class Form:
    method: str
    action: str | None
    buttons: list[dict] = field(default_factory=list)
    inputs: list[dict] = field(default_factory=list)


class PageParser(HTMLParser):
    """Collects the forms, their buttons (with their labels) and inputs of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []
        self._form: Form | None = None
        self._button: dict | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._form = Form(attributes.get("method", "get").lower(), attributes.get("action"))
            self.forms.append(self._form)
        elif tag == "button":
            self._button = {**attributes, "label": ""}
            if self._form is not None:
                self._form.buttons.append(self._button)
        elif tag == "input" and self._form is not None:
            self._form.inputs.append(attributes)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag == "button" and self._button is not None:
            self._button["label"] = " ".join(self._button["label"].split())
            self._button = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._button is not None:
            self._button["label"] += data


def parse_page(html: str) -> PageParser:
    parser = PageParser()
    parser.feed(html)
    parser.close()
    return parser


def pay_page_url(server: SandboxServer, operation_id: str) -> str:
    return f"{server.base_url}/pay/{operation_id}"


def press(server: SandboxServer, operation_id: str, action: str) -> requests.Response:
    """Load the payment page and press the button whose value is `action` (no redirects)."""
    url = pay_page_url(server, operation_id)
    page = requests.get(url, timeout=20, allow_redirects=False)
    assert page.status_code == 200, describe(page)
    forms = [form for form in parse_page(page.text).forms if form.method == "post"]
    assert len(forms) == 1, page.text
    values = [button.get("value") for button in forms[0].buttons]
    assert action in values, values
    target = urljoin(url, forms[0].action or url)
    return requests.post(target, data={"action": action}, timeout=20, allow_redirects=False)


def shows_amount(html: str, value: Decimal) -> bool:
    """The page shows the amount, in the wire form or without trailing zeros."""
    plain = f"{value.normalize():f}"
    return q8(value) in html or plain in html.replace(",", "")


def acceptable_orders(records: list[dict], key, descending: bool) -> list[list[str]]:
    """Id orders allowed for a sort: by key, ties by id in the same direction.

    Records whose key is null may come all first or all last (the documentation is silent).
    """
    present = [record for record in records if key(record) is not None]
    missing = [record for record in records if key(record) is None]
    ordered = sorted(present, key=lambda r: (key(r), int(r["id"])), reverse=descending)
    nulls = sorted(missing, key=lambda r: int(r["id"]), reverse=descending)
    return [ids(nulls + ordered), ids(ordered + nulls)]
