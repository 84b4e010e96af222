"""The OpenAPI document of API v1 (sandbox/openapi.json) describes the sandbox exactly.

Schemathesis generates requests from the document, sends them to a freshly started sandbox and
checks every answer against it: no server errors, only documented status codes and content
types, and bodies that match the response schemas (which forbid undocumented fields).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import requests
import schemathesis

from tests.support.required import THOROUGH
from tests.support.sandbox_server import ROOT, SandboxServer

DOCUMENT = ROOT / "sandbox" / "openapi.json"

ENDPOINTS = {
    ("get", "/v1/ping"),
    ("get", "/v1/operations"),
    ("post", "/v1/operations"),
    ("get", "/v1/operations/{operation_id}"),
    ("put", "/v1/operations/{operation_id}/cancel"),
    ("put", "/v1/operations/{operation_id}/link-transactions"),
    ("put", "/v1/operations/{operation_id}/reject-transactions"),
    ("get", "/v1/transactions"),
    ("get", "/v1/transactions/{transaction_id}"),
    ("get", "/v1/rates"),
    ("post", "/v1/withdraw"),
    ("get", "/v1/vouchers"),
    ("post", "/v1/vouchers"),
    ("get", "/v1/vouchers/{voucher_id}"),
    ("put", "/v1/vouchers/{voucher_id}/cancel"),
    ("post", "/v1/vouchers/payoff"),
    ("post", "/v1/exchange"),
    ("get", "/v1/exchange/rates"),
    ("post", "/v1/cross-exchanges"),
    ("get", "/v1/cross-exchanges/{cross_exchange_id}"),
    ("put", "/v1/cross-exchanges/{cross_exchange_id}/cancel"),
}
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}

CHECKS = (
    "not_a_server_error,status_code_conformance,content_type_conformance,"
    "response_schema_conformance"
)
# The sandbox environment gets every phase; the plain `/v1` form is answered by the same views, so
# its run shows each operation answers there as documented: the document's examples and generated
# requests, without the coverage and stateful phases, which would walk the same views' edge cases
# and links again; a few requests per operation show that, more only walk the same views again.
# `make test` generates 10 requests per operation and phase in the sandbox environment (the
# coverage phase's edge cases are the same at any number) and 3 in the plain form;
# PORTAL_TEST_THOROUGH=1 (`make test-thorough`) 40 and 10, which costs twice the CPU.
RUNS = {
    "/sandbox": (40 if THOROUGH else 10, "examples,coverage,fuzzing,stateful"),
    "": (10 if THOROUGH else 3, "examples,fuzzing"),
}
SEED = 20240601
BTC_EXTERNAL = "tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx"
ETH_EXTERNAL = "0x52908400098527886E0F7030069857D2E4169EE7"


def load_document() -> dict[str, Any]:
    return json.loads(DOCUMENT.read_text(encoding="utf-8"))


def embedded_schemas(node: Any) -> list[dict[str, Any]]:
    """Every JSON Schema of the document: components and the `schema` of parameters and bodies."""
    found = []
    if isinstance(node, dict):
        if isinstance(node.get("schema"), dict):
            found.append(node["schema"])
        for value in node.values():
            found.extend(embedded_schemas(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(embedded_schemas(value))
    return found


def test_document_is_valid_openapi_31_with_every_endpoint() -> None:
    document = load_document()
    assert document["openapi"] == "3.1.0"

    schema = schemathesis.openapi.from_dict(document)
    schema.validate()  # against the OpenAPI 3.1 meta-schema; raises on any error
    schemas = [*document["components"]["schemas"].values(), *embedded_schemas(document)]
    for each in schemas:
        jsonschema_rs.meta.validate(each)  # JSON Schema 2020-12, the 3.1 dialect

    operations = {
        (method, path): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in HTTP_METHODS
    }
    assert set(operations) == ENDPOINTS
    for (method, path), operation in operations.items():
        statuses = set(operation["responses"])
        assert {"400", "401", "403"} <= statuses, (method, path)
        if method in {"post", "put"}:
            assert {"415", "422"} <= statuses, (method, path)
        if "{" in path:
            assert "404" in statuses, (method, path)
    assert operations[("put", "/v1/operations/{operation_id}/cancel")]["responses"]["204"] == {
        "description": "Canceled; no body."
    }
    assert len(list(schema.get_all_operations())) == len(ENDPOINTS)


def test_sandbox_serves_the_document(sandbox: SandboxServer) -> None:
    response = requests.get(f"{sandbox.base_url}/openapi.json", timeout=10)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.content == DOCUMENT.read_bytes()


def populate(server: SandboxServer, api_url: str) -> None:
    """Give every resource a few records in varied states, so that known ids and lists exist."""
    session = requests.Session()
    session.headers.update(server.headers())
    # Room for the exchanges the run creates, so that it reaches successful creations too.
    server.control("POST", "flags", {"exchange_daily_limit": 100_000})

    def call(method: str, path: str, payload: dict | None = None) -> dict | None:
        response = session.request(method, f"{api_url}{path}", json=payload, timeout=10)
        assert response.ok, (method, path, response.status_code, response.text)
        return response.json() if response.content else None

    order_numbers = itertools.count(1)

    def create_operation(amount: str, currency: str, paid_in: str, **extra: str) -> dict:
        payload = {"amount": amount, "currency": currency, "payment_currency": paid_in}
        payload["order_id"] = f"order-{next(order_numbers)}"
        return call("POST", "/operations", {**payload, **extra})["data"]

    def arrive(operation: dict, amount: str, status: str) -> dict:
        path = f"operations/{operation['id']}/transactions"
        return server.control("POST", path, {"amount": amount, "status": status}).json()["data"]

    paid_in_part = create_operation("100", "USD", "BTC", redirect_url="https://shop.example/r")
    arrive(paid_in_part, "0.0001", "confirmed")
    linked = arrive(paid_in_part, "0.0002", "undefined")
    call("PUT", f"/operations/{paid_in_part['id']}/link-transactions", {"tx_id": [linked["id"]]})

    rejected_on = create_operation("0.5", "ETH", "ETH")
    rejected = arrive(rejected_on, "0.1", "undefined")
    call(
        "PUT",
        f"/operations/{rejected_on['id']}/reject-transactions",
        {"tx_id": [rejected["id"]], "reason": "Sent to the wrong order"},
    )
    paid = create_operation("25", "USDT", "USDT")
    arrive(paid, "25", "confirmed")
    arrive(create_operation("10", "USD", "ETH"), "0.001", "undefined")
    call("PUT", f"/operations/{create_operation('1', 'BTC', 'BTC')['id']}/cancel", {})
    server.control("POST", f"operations/{create_operation('2', 'ETH', 'ETH')['id']}/expire", {})
    create_operation("3", "USDT", "USDT")

    call("POST", "/withdraw", {"amount": "0.01", "wallet": "BTC", "address": BTC_EXTERNAL})
    call("POST", "/withdraw", {"amount": "1", "wallet": "USDT", "address": paid["address"]})

    vouchers = [
        call("POST", "/vouchers", {"amount": amount, "currency": currency})["data"]
        for amount, currency in [("0.01", "BTC"), ("0.5", "ETH"), ("10", "USDT")]
    ]
    call("PUT", f"/vouchers/{vouchers[1]['id']}/cancel", {})
    call("POST", "/vouchers/payoff", {"code": vouchers[2]["code"]})

    call("POST", "/exchange", {"sell_currency": "ETH", "buy_currency": "BTC", "sell_amount": "1"})
    addresses = {"sell_address": ETH_EXTERNAL, "buy_address": BTC_EXTERNAL}
    cross = [
        call(
            "POST",
            "/cross-exchanges",
            {"sell_currency": "ETH", "buy_currency": "BTC", **amount, **addresses},
        )["data"]
        for amount in ({"sell_amount": "0.5"}, {"buy_amount": "0.01"})
    ]
    call("PUT", f"/cross-exchanges/{cross[1]['id']}/cancel", {})


def run_schemathesis(
    base_url: str, token: str, max_examples: int, phases: str, workdir: Path
) -> subprocess.CompletedProcess:
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", str(DOCUMENT),
        "--url", base_url,
        "--header", f"Authorization: Bearer {token}",
        "--checks", CHECKS,
        "--max-examples", str(max_examples),
        "--phases", phases,
        "--seed", str(SEED),
        "--workers", "1",
        "--generation-database", "none",
        "--request-timeout", "10",
        "--no-color",
    ]  # fmt: skip
    return subprocess.run(
        command, cwd=workdir, capture_output=True, text=True, timeout=240, check=False
    )


@pytest.mark.long
@pytest.mark.slow
@pytest.mark.parametrize("prefix", ["/sandbox", ""], ids=["sandbox-prefix", "no-prefix"])
def test_schemathesis_finds_no_failures(
    sandbox: SandboxServer, tmp_path: Path, prefix: str
) -> None:
    base_url = f"{sandbox.base_url}{prefix}"
    populate(sandbox, f"{base_url}/v1")

    result = run_schemathesis(base_url, sandbox.token, *RUNS[prefix], tmp_path)

    report = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, f"schemathesis reported failures:\n{report}"
    assert f"Tested: {len(ENDPOINTS)}" in result.stdout, report
