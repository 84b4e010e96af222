"""API v1: one view per endpoint the API documents (docs/sandbox.md).

The blueprint is mounted twice, under `/v1` (production form) and `/sandbox/v1` (sandbox form).
Views stay thin: check the body or query, apply the rule in `payments` or `treasury`, render.
"""

from __future__ import annotations

from decimal import Decimal

from flask import Blueprint, Response, current_app, request

from . import db, payments, records, treasury
from .auth import bearer_token, same_secret
from .currencies import exchange_pairs, exchange_rate, market_pairs, market_prices, market_rate
from .errors import (
    CROSS_EXCHANGE_NOT_FOUND,
    OPERATION_NOT_FOUND,
    TRANSACTION_NOT_FOUND,
    VOUCHER_NOT_FOUND,
    ApiError,
)
from .lists import ListQuery
from .records import (
    OPERATION_CATEGORIES,
    OPERATION_STATUS,
    TRANSACTION_STATUS,
    VOUCHER_STATUS,
)
from .validation import BodyCheck, json_body

bp = Blueprint("api", __name__)

# The API documents that these two endpoints name their credential `company_token`.
COMPANY_TOKEN_ENDPOINTS = {"list_vouchers", "create_cross_exchange"}


@bp.before_request
def authenticate_and_check() -> None:
    """Token (2), bans (4, 3), content type (10), then lazy expiry, in the documented order."""
    token = bearer_token()
    view = (request.endpoint or "").rpartition(".")[2]
    if same_secret(token, current_app.config["TOKEN"]):
        credential = "application"
    elif view in COMPANY_TOKEN_ENDPOINTS and same_secret(
        token, current_app.config["COMPANY_TOKEN"]
    ):
        credential = "company"
    else:
        raise ApiError(2)
    flags = db.flags()
    if flags["company_banned"]:
        raise ApiError(4)
    if credential == "application" and flags["application_banned"]:
        raise ApiError(3)
    if request.method in ("POST", "PUT") and request.mimetype != "application/json":
        raise ApiError(10)
    payments.expire_due()


def _data(record: object, status: int = 200) -> tuple[dict, int]:
    return {"data": record}, status


def _rates_response(rates: dict[str, Decimal]) -> Response:
    """Rates are JSON numbers, written from Decimals without a float in between."""
    body = ", ".join(f'"{pair}": {format(rate.normalize(), "f")}' for pair, rate in rates.items())
    return Response("{" + body + "}", mimetype="application/json")


@bp.get("/ping")
def ping():
    return _data({"status": "ok"})


@bp.get("/operations")
def list_operations():
    query = ListQuery()
    query.ids("id", "id")
    query.choice("category", "category", OPERATION_CATEGORIES)
    query.texts("order_id", "order_id")
    for prefix in ("amount", "fee", "amount_paid"):
        query.decimal_range(prefix, prefix)
    query.currencies("currency", "currency")
    query.currencies("currency_paid", "currency_paid")
    query.statuses("status", "status", OPERATION_STATUS)
    query.equals("address", "address")
    query.date_range("created_at")
    query.sort(
        {
            **{name: name for name in ("id", "category", "order_id", "amount", "fee")},
            **{name: name for name in ("amount_paid", "rate", "currency", "currency_paid")},
            "created": "created_at",
            "updated": "updated_at",
        },
        default="created_at",
    )
    rows, page = query.page("operations", "operations_counting")
    return {"data": records.operations(rows), **page}


@bp.post("/operations")
def create_operation():
    check = BodyCheck(json_body())
    amount = check.amount("amount")
    currency = check.currency("currency")
    order_id = check.text("order_id")
    payment_currency = check.currency("payment_currency", required=False)
    redirect_url = check.url("redirect_url")
    check.done()
    operation_id = payments.create_operation(
        amount, currency, order_id, payment_currency, redirect_url
    )
    return _data(records.operation_by_id(str(operation_id)), 201)


@bp.get("/operations/<operation_id>")
def show_operation(operation_id: str):
    return _data(records.operation_by_id(operation_id))


@bp.put("/operations/<operation_id>/cancel")
def cancel_operation(operation_id: str):
    row = records.find("operations", operation_id, OPERATION_NOT_FOUND)
    json_body()  # no fields, but a body that is not JSON is still refused
    payments.end_operation(row["id"], records.CANCELED)
    return Response(status=204)


@bp.put("/operations/<operation_id>/link-transactions")
def link_transactions(operation_id: str):
    row = records.find("operations", operation_id, OPERATION_NOT_FOUND)
    check = BodyCheck(json_body())
    ids = check.id_list("tx_id")
    check.done()
    assert ids is not None  # done() refused the body otherwise
    payments.link_transactions(row["id"], ids)
    return _data(records.operation_by_id(operation_id))


@bp.put("/operations/<operation_id>/reject-transactions")
def reject_transactions(operation_id: str):
    row = records.find("operations", operation_id, OPERATION_NOT_FOUND)
    check = BodyCheck(json_body())
    ids = check.id_list("tx_id")
    reason = check.text("reason")
    check.done()
    assert ids is not None and reason is not None  # done() refused the body otherwise
    payments.reject_transactions(row["id"], ids, reason)
    return _data(records.operation_by_id(operation_id))


@bp.get("/transactions")
def list_transactions():
    query = ListQuery()
    query.ids("id", "id")
    query.ids("operation_id", "operation_id")
    query.equals("tx_id", "tx_id")
    query.decimal_range("amount", "amount")
    query.statuses("status", "status", TRANSACTION_STATUS)
    query.zero_or_one("linked", "linked")
    query.equals("reject_reason", "reject_reason")
    query.date_range("created_at")
    query.sort(
        {
            **{name: name for name in ("id", "amount", "linked", "reject_reason")},
            "operation": "operation_id",
            "created_at": "created_at",
            "updated_at": "updated_at",
        },
        default="created_at",
    )
    rows, page = query.page("transactions", "transactions_counting")
    return {"data": [records.transaction(row, with_operation=True) for row in rows], **page}


@bp.get("/transactions/<transaction_id>")
def show_transaction(transaction_id: str):
    row = records.find("transactions", transaction_id, TRANSACTION_NOT_FOUND)
    return _data(records.transaction(row, with_operation=True))


@bp.get("/rates")
def rates():
    prices = market_prices()
    return _rates_response({f"{b}:{q}": market_rate(b, q, prices) for b, q in market_pairs()})


@bp.post("/withdraw")
def withdraw():
    check = BodyCheck(json_body())
    amount = check.amount("amount")
    wallet = check.currency("wallet")
    address = check.address("address", wallet)
    check.done()
    operation_id = treasury.withdraw(amount, wallet, address)
    return _data(records.operation_by_id(str(operation_id)))


@bp.get("/vouchers")
def list_vouchers():
    query = ListQuery()
    query.decimal_range("amount", "amount")
    query.currencies("currency", "currency")
    query.statuses("status", "status", VOUCHER_STATUS)
    query.date_range("created_at")
    query.sort(
        {"amount": "amount", "status": "status", "created": "created_at", "updated": "updated_at"},
        default="created_at",
    )
    rows, page = query.page("vouchers", "vouchers_counting")
    return {"data": [records.voucher(row) for row in rows], **page}


@bp.get("/vouchers/<voucher_id>")
def show_voucher(voucher_id: str):
    return _data(records.voucher(records.find("vouchers", voucher_id, VOUCHER_NOT_FOUND)))


@bp.post("/vouchers")
def create_voucher():
    check = BodyCheck(json_body())
    amount = check.amount("amount")
    currency = check.currency("currency")
    check.done()
    voucher_id = treasury.create_voucher(amount, currency)
    return _data(records.voucher(records.find("vouchers", str(voucher_id), VOUCHER_NOT_FOUND)), 201)


@bp.put("/vouchers/<voucher_id>/cancel")
def cancel_voucher(voucher_id: str):
    row = records.find("vouchers", voucher_id, VOUCHER_NOT_FOUND)
    json_body()  # no fields, but a body that is not JSON is still refused
    treasury.cancel_voucher(row["id"])
    return _data(records.voucher(records.find("vouchers", voucher_id, VOUCHER_NOT_FOUND)))


@bp.post("/vouchers/payoff")
def pay_off_voucher():
    check = BodyCheck(json_body())
    code = check.text("code", max_length=64)
    check.done()
    voucher_id = treasury.pay_off_voucher(code)
    return _data(records.voucher(records.find("vouchers", str(voucher_id), VOUCHER_NOT_FOUND)))


def _exchange_fields(check: BodyCheck) -> tuple:
    sell = check.currency("sell_currency")
    buy = check.currency("buy_currency")
    sell_amount, buy_amount = check.one_amount_of("sell_amount", "buy_amount")
    return sell, buy, sell_amount, buy_amount


@bp.post("/exchange")
def create_exchange():
    check = BodyCheck(json_body())
    fields = _exchange_fields(check)
    check.done()
    exchange_id = treasury.create_exchange(*fields)
    row = db.get().execute("SELECT * FROM exchanges WHERE id = ?", (exchange_id,)).fetchone()
    return _data(records.exchange(row), 201)


@bp.get("/exchange/rates")
def exchange_rates():
    prices = market_prices()
    return _rates_response({f"{s}:{b}": exchange_rate(s, b, prices) for s, b in exchange_pairs()})


@bp.post("/cross-exchanges")
def create_cross_exchange():
    check = BodyCheck(json_body())
    sell, buy, sell_amount, buy_amount = _exchange_fields(check)
    sell_address = check.address("sell_address", sell)
    buy_address = check.address("buy_address", buy)
    check.done()
    cross_exchange_id = treasury.create_cross_exchange(
        sell, buy, sell_amount, buy_amount, sell_address, buy_address
    )
    row = records.find("cross_exchanges", str(cross_exchange_id), CROSS_EXCHANGE_NOT_FOUND)
    return _data(records.cross_exchange(row), 201)


@bp.get("/cross-exchanges/<cross_exchange_id>")
def show_cross_exchange(cross_exchange_id: str):
    return _data(
        records.cross_exchange(
            records.find("cross_exchanges", cross_exchange_id, CROSS_EXCHANGE_NOT_FOUND)
        )
    )


@bp.put("/cross-exchanges/<cross_exchange_id>/cancel")
def cancel_cross_exchange(cross_exchange_id: str):
    row = records.find("cross_exchanges", cross_exchange_id, CROSS_EXCHANGE_NOT_FOUND)
    json_body()  # no fields, but a body that is not JSON is still refused
    treasury.cancel_cross_exchange(row["id"])
    return _data(
        records.cross_exchange(
            records.find("cross_exchanges", cross_exchange_id, CROSS_EXCHANGE_NOT_FOUND)
        )
    )
