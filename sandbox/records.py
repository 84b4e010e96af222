"""Database rows to the API's JSON records (docs/sandbox.md, "Records on the wire")."""

from __future__ import annotations

import re
import sqlite3

from flask import request

from .db import get
from .errors import OPERATION_NOT_FOUND, ApiError
from .money import format_units

APPLICATION_ID = "1"
APPLICATION_NAME = "Sandbox application"

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
OPERATION_CATEGORIES = ("application", "manual", "transfer", "internal_transfer")

NEW, CONFIRMED, FAILED, EXPIRED, CANCELED, PROCESSED = 0, 1, 2, 3, 4, 5
TX_CONFIRMED, TX_UNDEFINED, TX_REJECTED = 1, 2, 4
VOUCHER_SUCCESSFUL, VOUCHER_CANCELLED, VOUCHER_EXPIRED = 1, 2, 3


def payment_url(operation_id: int) -> str:
    return f"{request.host_url}pay/{operation_id}"


def transaction(row: sqlite3.Row, *, with_operation: bool) -> dict:
    """`operation_id` only in the transaction endpoints' answers, not in an operation's."""
    operation = {"operation_id": str(row["operation_id"])} if with_operation else {}
    record = {
        "id": str(row["id"]),
        "tx_id": row["tx_id"],
        **operation,
        "amount": format_units(row["amount"]),
        "status": TRANSACTION_STATUS.get(row["status"], str(row["status"])),
        "linked": bool(row["linked"]),
        "reject_reason": row["reject_reason"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }
    return record


def operation(row: sqlite3.Row, transactions: list[sqlite3.Row]) -> dict:
    return {
        "id": str(row["id"]),
        "application_id": row["application_id"],
        "application_name": row["application_name"],
        "category": row["category"],
        "order_id": row["order_id"],
        "amount": format_units(row["amount"]),
        "fee": format_units(row["fee"]),
        "amount_paid": format_units(row["amount_paid"]),
        "rate": format_units(row["rate"]),
        "currency": row["currency"],
        "currency_paid": row["currency_paid"],
        "status": OPERATION_STATUS.get(row["status"], str(row["status"])),
        "address": row["address"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "payment_url": payment_url(row["id"]) if row["hosted_page"] else None,
        "redirect_url": row["redirect_url"],
        "transactions": [transaction(tx, with_operation=False) for tx in transactions],
    }


def operations(rows: list[sqlite3.Row]) -> list[dict]:
    """Several operations with their transactions, fetched in one query."""
    ids = [row["id"] for row in rows]
    by_operation: dict[int, list[sqlite3.Row]] = {operation_id: [] for operation_id in ids}
    if ids:
        placeholders = ",".join("?" * len(ids))
        sql = f"SELECT * FROM transactions WHERE operation_id IN ({placeholders}) ORDER BY id"  # noqa: S608
        for tx in get().execute(sql, ids):
            by_operation[tx["operation_id"]].append(tx)
    return [operation(row, by_operation[row["id"]]) for row in rows]


def operation_by_id(operation_id: str) -> dict:
    return operations([find("operations", operation_id, OPERATION_NOT_FOUND)])[0]


_CANONICAL_ID = re.compile(r"[1-9][0-9]{0,17}")


def is_canonical_id(value: str) -> bool:
    """Ids are written `42`: ASCII digits, no leading zero, within SQLite's integers."""
    return bool(_CANONICAL_ID.fullmatch(value))


def find(table: str, record_id: str, not_found_code: int) -> sqlite3.Row:
    """The row with this API id, or the resource's not-found error."""
    if not is_canonical_id(record_id):
        raise ApiError(not_found_code)
    row = get().execute(f"SELECT * FROM {table} WHERE id = ?", (int(record_id),)).fetchone()  # noqa: S608
    if row is None:
        raise ApiError(not_found_code)
    return row


def voucher(row: sqlite3.Row) -> dict:
    return {
        "id": str(row["id"]),
        "amount": format_units(row["amount"]),
        "currency": row["currency"],
        "code": row["code"],
        "status": VOUCHER_STATUS.get(row["status"], str(row["status"])),
        "type": row["type"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def exchange(row: sqlite3.Row) -> dict:
    return {
        "id": str(row["id"]),
        "sell_currency": row["sell_currency"],
        "buy_currency": row["buy_currency"],
        "sell_amount": format_units(row["sell_amount"]),
        "buy_amount": format_units(row["buy_amount"]),
        "rate": format_units(row["rate"]),
        "fee": format_units(row["fee"]),
        "status": row["status"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def cross_exchange(row: sqlite3.Row) -> dict:
    return {
        "id": str(row["id"]),
        "operation_id": str(row["operation_id"]),
        "sell_currency": row["sell_currency"],
        "buy_currency": row["buy_currency"],
        "sell_amount": format_units(row["sell_amount"]),
        "buy_amount": format_units(row["buy_amount"]),
        "fee": format_units(row["fee"]),
        "rate": format_units(row["rate"]),
        "invoice_address": row["invoice_address"],
        "status": row["status"],
        "expired_at": row["expired_at"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }
