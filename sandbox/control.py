"""The sandbox's control surface (docs/sandbox.md): what a tester does that the real API
leaves to the blockchain, the clock or the provider's staff. Never subject to bans or faults."""

from __future__ import annotations

import json
from decimal import Decimal

from flask import Blueprint, current_app, request

from . import db, payments, records
from .auth import bearer_token, same_secret
from .currencies import CRYPTO, CURRENCIES, market_prices, new_address
from .errors import (
    CROSS_EXCHANGE_NOT_FOUND,
    OPERATION_NOT_FOUND,
    TRANSACTION_NOT_FOUND,
    VOUCHER_NOT_FOUND,
    ApiError,
)
from .faults import MODES, Fault
from .money import format_units, parse_amount, to_units
from .records import EXPIRED, TX_CONFIRMED, TX_UNDEFINED
from .validation import BodyCheck, json_body

bp = Blueprint("control", __name__, url_prefix="/_control")

FAULT_METHODS = {"GET", "POST", "PUT"}
_BOOLEAN_FLAGS = (
    "application_banned",
    "company_banned",
    "withdrawals_allowed",
    "payment_gateways_available",
    "payment_gateway_fails",
)


@bp.before_request
def authenticate() -> None:
    token = bearer_token()
    config = current_app.config
    if not (same_secret(token, config["TOKEN"]) or same_secret(token, config["COMPANY_TOKEN"])):
        raise ApiError(2)
    has_body = bool(request.get_data(cache=True).strip())
    if request.method == "POST" and has_body and request.mimetype != "application/json":
        raise ApiError(10)
    payments.expire_due()


@bp.get("/requests")
def show_requests():
    """The API requests received, oldest first (the newest `REQUEST_LOG_SIZE`)."""
    return {"data": list(current_app.extensions["request_log"])}


@bp.delete("/requests")
def forget_requests():
    current_app.extensions["request_log"].clear()
    return "", 204


@bp.post("/operations/<operation_id>/transactions")
def receive_transaction(operation_id: str):
    operation = records.find("operations", operation_id, OPERATION_NOT_FOUND)
    body = json_body()
    check = BodyCheck(body)
    amount = check.amount("amount")
    tx_id = check.text("tx_id", required=False, max_length=128)
    status = body.get("status", "confirmed")
    if status not in ("confirmed", "undefined"):
        check.fail("status", "The status must be confirmed or undefined.")
    check.done()
    assert amount is not None  # done() refused the body otherwise
    status_code = TX_CONFIRMED if status == "confirmed" else TX_UNDEFINED
    tx = payments.receive_transaction(operation["id"], to_units(amount), tx_id, status_code)
    row = records.find("transactions", str(tx), TRANSACTION_NOT_FOUND)
    return {"data": records.transaction(row, with_operation=True)}, 201


@bp.post("/operations/<operation_id>/expire")
def expire_operation(operation_id: str):
    operation = records.find("operations", operation_id, OPERATION_NOT_FOUND)
    payments.end_operation(operation["id"], EXPIRED)
    return {"data": records.operation_by_id(operation_id)}


def _expire_now(table: str, column: str, record_id: int, condition: str) -> bool:
    with db.write() as connection:
        cursor = connection.execute(
            f"UPDATE {table} SET {column} = ? WHERE id = ? AND {condition}",  # noqa: S608
            (db.now_text(), record_id),
        )
        return cursor.rowcount == 1


@bp.post("/cross-exchanges/<cross_exchange_id>/expire")
def expire_cross_exchange(cross_exchange_id: str):
    row = records.find("cross_exchanges", cross_exchange_id, CROSS_EXCHANGE_NOT_FOUND)
    if not _expire_now("cross_exchanges", "expired_at", row["id"], "status = 'processed'"):
        raise ApiError(20)
    with db.write() as connection:
        connection.execute(
            "UPDATE operations SET expires_at = ? WHERE id = ?",
            (db.now_text(), row["operation_id"]),
        )
    payments.expire_due()
    return {
        "data": records.cross_exchange(
            records.find("cross_exchanges", cross_exchange_id, CROSS_EXCHANGE_NOT_FOUND)
        )
    }


@bp.post("/vouchers/<voucher_id>/expire")
def expire_voucher(voucher_id: str):
    row = records.find("vouchers", voucher_id, VOUCHER_NOT_FOUND)
    condition = f"status = {records.VOUCHER_SUCCESSFUL} AND type = 'issued'"
    if not _expire_now("vouchers", "expires_at", row["id"], condition):
        raise ApiError(16)
    payments.expire_due()
    return {"data": records.voucher(records.find("vouchers", voucher_id, VOUCHER_NOT_FOUND))}


@bp.get("/flags")
def show_flags():
    return {"data": db.flags()}


@bp.post("/flags")
def set_flags():
    body = json_body()
    check = BodyCheck(body)
    for name, value in body.items():
        if name in _BOOLEAN_FLAGS:
            if not isinstance(value, bool):
                check.fail(name, f"The {name} must be true or false.")
        elif name == "exchange_daily_limit":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                check.fail(name, f"The {name} must be a non-negative integer.")
        elif name == "unknown_invoice_redirect_url":
            if value is not None:
                check.url(name)
        else:
            check.fail(name, f"Unknown flag {name}.")
    check.done()
    with db.write() as connection:
        connection.executemany(
            "INSERT OR REPLACE INTO flags (name, value) VALUES (?, ?)",
            [(name, json.dumps(value)) for name, value in body.items()],
        )
    return {"data": db.flags()}


def _injector():
    return current_app.extensions["fault_injector"]


@bp.get("/faults")
def show_faults():
    return {"data": _injector().describe()}


@bp.post("/faults")
def set_faults():
    body = json_body()
    check = BodyCheck(body)
    fault = Fault()
    mode = body.get("mode", "none")
    if mode not in MODES:
        check.fail("mode", f"The mode must be one of: {', '.join(MODES)}.")
    delay = body.get("delay_ms", fault.delay_ms)
    if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= 600_000:
        check.fail("delay_ms", "The delay_ms must be an integer between 0 and 600000.")
    probability = body.get("probability", fault.probability)
    if (
        isinstance(probability, bool)
        or not isinstance(probability, int | float | Decimal)  # JSON numbers with a point
        or not (0 <= probability <= 1)
    ):
        check.fail("probability", "The probability must be a number between 0 and 1.")
    methods = body.get("methods", [])
    if not isinstance(methods, list) or not set(methods) <= FAULT_METHODS:
        check.fail("methods", "The methods must be a list of GET, POST and PUT.")
    check.done()
    _injector().configure(Fault(mode, delay, float(probability), tuple(methods)))
    return {"data": _injector().describe()}


def _wallets() -> list[dict]:
    rows = db.get().execute("SELECT * FROM wallets ORDER BY currency").fetchall()
    return [
        {
            "currency": row["currency"],
            "address": row["address"],
            "balance": format_units(row["balance"]),
        }
        for row in rows
    ]


@bp.get("/wallets")
def show_wallets():
    return {"data": _wallets()}


@bp.post("/wallets")
def set_wallet():
    body = json_body()
    check = BodyCheck(body)
    currency = check.currency("currency")
    if currency is not None and not CURRENCIES[currency].crypto:
        check.fail("currency", "Only crypto currencies have wallets.")
    balance = body.get("balance")
    units = None
    if balance is not None:
        try:
            units = to_units(parse_amount(balance, allow_zero=True))
        except ValueError as error:
            check.fail("balance", f"The balance {error}.")
    check.done()
    with db.write() as connection:
        if units is None:
            connection.execute("DELETE FROM wallets WHERE currency = ?", (currency,))
        else:
            connection.execute(
                "INSERT INTO wallets (currency, address, balance) VALUES (?, ?, ?) "
                "ON CONFLICT (currency) DO UPDATE SET balance = excluded.balance",
                (currency, new_address(currency), units),
            )
    return {"data": _wallets()}


def _market() -> dict:
    prices = market_prices()
    return {
        "frozen": bool(db.frozen_prices()),
        "prices": {code: format_units(to_units(price)) for code, price in prices.items()},
    }


@bp.get("/rates")
def show_market():
    return {"data": _market()}


def _named_prices(check: BodyCheck) -> dict[str, Decimal]:
    """The USD prices of `{"prices": {currency: "decimal"}}`; USD itself has none to set."""
    prices = check.body.get("prices")
    if not isinstance(prices, dict) or not prices:
        check.fail("prices", "The prices must be an object of USD prices by currency.")
        return {}
    named: dict[str, Decimal] = {}
    for code, price in prices.items():
        field = f"prices.{code}"
        if code not in CRYPTO:
            check.fail(field, f"{code} has no price to set: give one of {', '.join(CRYPTO)}.")
            continue
        try:
            named[code] = parse_amount(price)
        except ValueError as error:
            check.fail(field, f"The {field} {error}.")
    return named


@bp.post("/rates")
def freeze_market():
    """Hold the market still at the given USD prices, every other currency at its price now."""
    check = BodyCheck(json_body())
    named = _named_prices(check)
    check.done()
    with db.write() as connection:
        frozen = {**market_prices(connection), **named}
        connection.executemany(
            "INSERT OR REPLACE INTO frozen_prices (currency, usd_price) VALUES (?, ?)",
            [(code, to_units(price)) for code, price in frozen.items()],
        )
    return {"data": _market()}


@bp.delete("/rates")
def thaw_market():
    with db.write() as connection:
        connection.execute("DELETE FROM frozen_prices")
    return {"data": _market()}
