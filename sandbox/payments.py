"""Operations and their blockchain transactions: creation, payment, link, reject, cancel, expiry."""

from __future__ import annotations

import secrets
import sqlite3
from decimal import ROUND_CEILING, Decimal

from flask import current_app

from . import db, wallets
from .currencies import CURRENCIES, market_rate, new_address
from .errors import TRANSACTION_NOT_FOUND, ApiError
from .money import from_units, to_units
from .records import (
    APPLICATION_ID,
    APPLICATION_NAME,
    CANCELED,
    CONFIRMED,
    EXPIRED,
    FAILED,
    NEW,
    TX_CONFIRMED,
    TX_REJECTED,
    VOUCHER_EXPIRED,
    VOUCHER_SUCCESSFUL,
    is_canonical_id,
)

FEE_RATE = Decimal("0.01")
# An operation's status -> its cross exchange's status before and after (paid, or unpaid again).
CROSS_EXCHANGE_FOLLOWS = {CONFIRMED: ("processed", "successful"), NEW: ("successful", "processed")}


def amount_due_units(operation: sqlite3.Row) -> int:
    """What the payer owes in the payment currency: amount x rate, rounded up."""
    due = from_units(operation["amount"]) * from_units(operation["rate"])
    return to_units(due, ROUND_CEILING)


def create_operation(
    amount: Decimal,
    currency: str,
    order_id: str,
    payment_currency: str | None,
    redirect_url: str | None,
) -> int:
    paid_in = payment_currency or currency
    if not CURRENCIES[paid_in].crypto:
        raise ApiError(7, message="Operation not created: USD cannot be paid on a blockchain")
    now = db.now_text()
    ttl = current_app.config["OPERATION_TTL_MINUTES"]
    with db.write() as connection:
        cursor = connection.execute(
            """INSERT INTO operations (application_id, application_name, category, order_id,
                   amount, fee, rate, currency, currency_paid, status, address, hosted_page,
                   redirect_url, created_at, updated_at, expires_at)
               VALUES (?, ?, 'application', ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)""",
            (
                APPLICATION_ID,
                APPLICATION_NAME,
                order_id,
                to_units(amount),
                to_units(amount * FEE_RATE),
                to_units(market_rate(currency, paid_in)),
                currency,
                paid_in,
                NEW,
                new_address(paid_in),
                redirect_url,
                now,
                now,
                db.later_text(minutes=ttl),
            ),
        )
        return db.inserted_id(cursor)


def confirmed_units(connection: sqlite3.Connection, operation_id: int) -> int:
    """The sum of the operation's confirmed transactions, in units of the payment currency."""
    return connection.execute(
        "SELECT COALESCE(SUM(amount), 0) FROM transactions WHERE operation_id = ? AND status = ?",
        (operation_id, TX_CONFIRMED),
    ).fetchone()[0]


def _paid_units(connection: sqlite3.Connection, operation_id: int) -> int:
    """What `amount_paid` says: once the merchant has linked transactions, the sum of the linked
    ones (as the API documents a link); before, the confirmed payments."""
    linked = connection.execute(
        "SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM transactions "
        "WHERE operation_id = ? AND linked = 1",
        (operation_id,),
    ).fetchone()
    return linked[1] if linked[0] else confirmed_units(connection, operation_id)


def _operation(connection: sqlite3.Connection, operation_id: int) -> sqlite3.Row:
    return connection.execute("SELECT * FROM operations WHERE id = ?", (operation_id,)).fetchone()


def _refresh_amount_paid(connection: sqlite3.Connection, operation_id: int, now: str) -> int:
    """Count the operation's payments again; its wallet moves by the change."""
    total = _paid_units(connection, operation_id)
    wallets.follow_amount_paid(connection, _operation(connection, operation_id), total)
    connection.execute(
        "UPDATE operations SET amount_paid = ?, updated_at = ? WHERE id = ?",
        (total, now, operation_id),
    )
    return total


def _set_status(connection: sqlite3.Connection, operation_id: int, status: int, now: str) -> None:
    """The operation's new status; its fee leaves the wallet at the first confirmation. A
    cross exchange follows its operation between awaiting payment (`processed`) and paid
    (`successful`)."""
    if status == CONFIRMED:
        wallets.charge_fee_once(connection, _operation(connection, operation_id), now)
    connection.execute(
        "UPDATE operations SET status = ?, updated_at = ? WHERE id = ?", (status, now, operation_id)
    )
    if status in CROSS_EXCHANGE_FOLLOWS:
        before, after = CROSS_EXCHANGE_FOLLOWS[status]
        connection.execute(
            "UPDATE cross_exchanges SET status = ?, updated_at = ? "
            "WHERE operation_id = ? AND status = ?",
            (after, now, operation_id, before),
        )


def receive_transaction(
    operation_id: int, amount_units: int, tx_id: str | None, status: int
) -> int:
    """A blockchain transaction arrives at the operation's address (sandbox control only)."""
    now = db.now_text()
    with db.write() as connection:
        operation = _operation(connection, operation_id)
        cursor = connection.execute(
            """INSERT INTO transactions (operation_id, tx_id, amount, status, linked,
                   created_at, updated_at) VALUES (?, ?, ?, ?, 0, ?, ?)""",
            (operation_id, tx_id or secrets.token_hex(32), amount_units, status, now, now),
        )
        if status == TX_CONFIRMED and operation["status"] == NEW:
            paid = _refresh_amount_paid(connection, operation_id, now)
            if paid >= amount_due_units(operation):
                _set_status(connection, operation_id, CONFIRMED, now)
        return db.inserted_id(cursor)


def _own_transactions(
    connection: sqlite3.Connection, operation_id: int, ids: list[str]
) -> list[int]:
    """Row ids of the listed transactions of this operation (API ids or chain hashes).

    Any id that is not a transaction of this operation is code 6, and nothing changes."""
    found: list[int] = []
    for given in ids:
        row = connection.execute(
            "SELECT id FROM transactions WHERE operation_id = ? AND (id = ? OR tx_id = ?)",
            (operation_id, int(given) if is_canonical_id(given) else None, given),
        ).fetchone()
        if row is None:
            raise ApiError(TRANSACTION_NOT_FOUND)
        found.append(row["id"])
    return found


def link_transactions(operation_id: int, ids: list[str]) -> None:
    now = db.now_text()
    with db.write() as connection:
        for row_id in _own_transactions(connection, operation_id, ids):
            connection.execute(
                "UPDATE transactions SET status = ?, linked = 1, reject_reason = NULL, "
                "updated_at = ? WHERE id = ?",
                (TX_CONFIRMED, now, row_id),
            )
        _refresh_amount_paid(connection, operation_id, now)
        _set_status(connection, operation_id, CONFIRMED, now)


def reject_transactions(operation_id: int, ids: list[str], reason: str) -> None:
    now = db.now_text()
    with db.write() as connection:
        for row_id in _own_transactions(connection, operation_id, ids):
            connection.execute(
                "UPDATE transactions SET status = ?, linked = 0, reject_reason = ?, "
                "updated_at = ? WHERE id = ?",
                (TX_REJECTED, reason, now, row_id),
            )
        _refresh_amount_paid(connection, operation_id, now)
        if _paid_by_nothing_now(connection, operation_id):
            _set_status(connection, operation_id, NEW, now)


def _paid_by_nothing_now(connection: sqlite3.Connection, operation_id: int) -> bool:
    """A `confirmed` operation whose every transaction is rejected: nothing pays it any more, so
    it is `new` again, as the API documents it after a reject."""
    return bool(
        connection.execute(
            """SELECT status = :confirmed AND NOT EXISTS(
                   SELECT 1 FROM transactions WHERE operation_id = :id AND status != :rejected)
               FROM operations WHERE id = :id""",
            {"confirmed": CONFIRMED, "rejected": TX_REJECTED, "id": operation_id},
        ).fetchone()[0]
    )


def end_operation(operation_id: int, status: int) -> None:
    """Move a `new` operation to canceled, expired or failed; anything else is refused."""
    now = db.now_text()
    with db.write() as connection:
        cursor = connection.execute(
            "UPDATE operations SET status = ?, updated_at = ? WHERE id = ? AND status = ?",
            (status, now, operation_id, NEW),
        )
        if cursor.rowcount == 0:
            raise ApiError(8)
        ending = {CANCELED: "canceled", EXPIRED: "expired", FAILED: "failed"}[status]
        connection.execute(
            "UPDATE cross_exchanges SET status = ?, updated_at = ? "
            "WHERE operation_id = ? AND status = 'processed'",
            (ending, now, operation_id),
        )


def expire_due() -> None:
    """Lazy expiry of operations, vouchers and cross exchanges whose time has come.

    A cheap read decides whether anything is due, so most requests take no write lock.
    """
    connection = db.get()
    now = db.now_text()
    due = connection.execute(
        """SELECT EXISTS(SELECT 1 FROM operations WHERE status = ? AND expires_at <= ?)
              OR EXISTS(SELECT 1 FROM vouchers WHERE status = ? AND type = 'issued'
                        AND expires_at <= ?)
              OR EXISTS(SELECT 1 FROM cross_exchanges WHERE status = 'processed'
                        AND expired_at <= ?)""",
        (NEW, now, VOUCHER_SUCCESSFUL, now, now),
    ).fetchone()[0]
    if not due:
        return
    with db.write() as connection:
        connection.execute(
            """UPDATE cross_exchanges SET updated_at = :now, status = CASE WHEN EXISTS(
                   SELECT 1 FROM operations o WHERE o.id = operation_id AND o.amount_paid > 0)
                   THEN 'failed' ELSE 'expired' END
               WHERE status = 'processed' AND expired_at <= :now""",
            {"now": now},
        )
        connection.execute(
            "UPDATE operations SET status = ?, updated_at = ? WHERE status = ? AND expires_at <= ?",
            (EXPIRED, now, NEW, now),
        )
        expired_vouchers = connection.execute(
            "SELECT id, currency, amount FROM vouchers WHERE status = ? AND type = 'issued' "
            "AND expires_at <= ?",
            (VOUCHER_SUCCESSFUL, now),
        ).fetchall()
        for voucher in expired_vouchers:
            connection.execute(
                "UPDATE vouchers SET status = ?, updated_at = ? WHERE id = ?",
                (VOUCHER_EXPIRED, now, voucher["id"]),
            )
            wallets.move(connection, voucher["currency"], voucher["amount"])
