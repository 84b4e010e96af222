"""What moves money between the merchant's wallets: withdrawals, vouchers, exchanges, cross
exchanges. Every rule runs inside one write transaction, so none takes more than the balance."""

from __future__ import annotations

import secrets
import sqlite3
from datetime import UTC, datetime
from decimal import ROUND_CEILING, Decimal

from . import db
from .currencies import CURRENCIES, exchange_pairs, exchange_rate, new_address
from .errors import ApiError
from .money import from_units, quantize, to_units
from .records import (
    APPLICATION_ID,
    APPLICATION_NAME,
    CANCELED,
    NEW,
    PROCESSED,
    VOUCHER_CANCELLED,
    VOUCHER_SUCCESSFUL,
)
from .wallets import move

EXCHANGE_FEE_RATE = Decimal("0.002")
VOUCHER_DAYS = 30
CROSS_EXCHANGE_MINUTES = 30
_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def open_wallets(connection: sqlite3.Connection) -> None:
    """Give each crypto currency its wallet and opening balance, once."""
    for currency in CURRENCIES.values():
        if currency.crypto:
            connection.execute(
                "INSERT OR IGNORE INTO wallets (currency, address, balance) VALUES (?, ?, ?)",
                (currency.code, new_address(currency.code), to_units(currency.opening_balance)),
            )


def _wallet(connection: sqlite3.Connection, currency: str) -> sqlite3.Row | None:
    return connection.execute("SELECT * FROM wallets WHERE currency = ?", (currency,)).fetchone()


def _start_of_day() -> str:
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return db.timestamp(today)


def _is_sandbox_address(connection: sqlite3.Connection, address: str) -> bool:
    """A wallet's or a payment's address; a withdrawal's destination is someone else's."""
    return bool(
        connection.execute(
            "SELECT EXISTS(SELECT 1 FROM wallets WHERE address = ?) "
            "OR EXISTS(SELECT 1 FROM operations WHERE address = ? "
            "AND category IN ('application', 'manual'))",
            (address, address),
        ).fetchone()[0]
    )


def withdraw(amount: Decimal, wallet_currency: str, address: str) -> int:
    """Send funds out: an operation `processed`, `internal_transfer` to a sandbox address."""
    now = db.now_text()
    with db.write() as connection:
        if not db.flag("withdrawals_allowed"):
            raise ApiError(11)
        wallet = _wallet(connection, wallet_currency)
        if wallet is None:
            raise ApiError(13)
        currency = CURRENCIES[wallet_currency]
        internal = _is_sandbox_address(connection, address)
        fee = Decimal(0) if internal else currency.network_fee
        if to_units(amount + fee) > wallet["balance"]:
            raise ApiError(12, message="Withdrawal limit: the amount and fee exceed the balance")
        withdrawn_today = connection.execute(
            "SELECT COALESCE(SUM(amount), 0) FROM operations WHERE currency = ? AND "
            "category IN ('transfer', 'internal_transfer') AND created_at >= ?",
            (wallet_currency, _start_of_day()),
        ).fetchone()[0]
        if from_units(withdrawn_today) + amount > currency.withdrawal_daily_limit:
            raise ApiError(12, message="Withdrawal limit: the daily limit would be exceeded")
        cursor = connection.execute(
            """INSERT INTO operations (category, amount, fee, amount_paid, rate, currency,
                   currency_paid, status, address, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                "internal_transfer" if internal else "transfer",
                to_units(amount),
                to_units(fee),
                to_units(amount),
                to_units(Decimal(1)),
                wallet_currency,
                wallet_currency,
                PROCESSED,
                address,
                now,
                now,
            ),
        )
        move(connection, wallet_currency, -to_units(amount + fee))
        return db.inserted_id(cursor)


def _voucher_code() -> str:
    raw = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(16))
    return "-".join(raw[i : i + 4] for i in range(0, 16, 4))


def create_voucher(amount: Decimal, currency: str) -> int:
    now = db.now_text()
    with db.write() as connection:
        wallet = _wallet(connection, currency)
        if wallet is None or wallet["balance"] < to_units(amount):
            raise ApiError(15, message="Voucher not created: not enough funds in the wallet")
        cursor = connection.execute(
            """INSERT INTO vouchers (amount, currency, code, status, type, created_at, updated_at,
                   expires_at) VALUES (?, ?, ?, ?, 'issued', ?, ?, ?)""",
            (
                to_units(amount),
                currency,
                _voucher_code(),
                VOUCHER_SUCCESSFUL,
                now,
                now,
                db.later_text(days=VOUCHER_DAYS),
            ),
        )
        move(connection, currency, -to_units(amount))
        return db.inserted_id(cursor)


def _redeemable(voucher: sqlite3.Row | None) -> bool:
    return (
        voucher is not None
        and voucher["status"] == VOUCHER_SUCCESSFUL
        and voucher["type"] == "issued"
    )


def cancel_voucher(voucher_id: int) -> None:
    now = db.now_text()
    with db.write() as connection:
        voucher = connection.execute(
            "SELECT * FROM vouchers WHERE id = ?", (voucher_id,)
        ).fetchone()
        if not _redeemable(voucher):
            raise ApiError(16)
        connection.execute(
            "UPDATE vouchers SET status = ?, updated_at = ? WHERE id = ?",
            (VOUCHER_CANCELLED, now, voucher_id),
        )
        move(connection, voucher["currency"], voucher["amount"])


def pay_off_voucher(code: str) -> int:
    now = db.now_text()
    with db.write() as connection:
        voucher = connection.execute("SELECT * FROM vouchers WHERE code = ?", (code,)).fetchone()
        if not _redeemable(voucher):
            raise ApiError(17)
        connection.execute(
            "UPDATE vouchers SET type = 'paid off', updated_at = ? WHERE id = ?",
            (now, voucher["id"]),
        )
        move(connection, voucher["currency"], voucher["amount"])
        return voucher["id"]


def _quote(
    sell: str, buy: str, sell_amount: Decimal | None, buy_amount: Decimal | None
) -> tuple[Decimal, Decimal, Decimal, Decimal]:
    """Sell amount, buy amount, rate and fee (in the sell currency) of an exchange."""
    rate = exchange_rate(sell, buy)
    if sell_amount is None:
        assert buy_amount is not None  # the body check asks for one of the two
        net = buy_amount / rate
        sell_amount = quantize(net / (1 - EXCHANGE_FEE_RATE), ROUND_CEILING)
    else:
        buy_amount = None
    fee = quantize(sell_amount * EXCHANGE_FEE_RATE)
    if buy_amount is None:
        buy_amount = quantize((sell_amount - fee) * rate)
    return sell_amount, buy_amount, rate, fee


def _check_exchange(
    connection: sqlite3.Connection, sell: str, buy: str, sell_amount: Decimal
) -> None:
    """Rules shared by exchanges and cross exchanges after the pair check: codes 24, 22, 23."""
    if _wallet(connection, sell) is None or _wallet(connection, buy) is None:
        raise ApiError(24)
    start = _start_of_day()
    done_today = connection.execute(
        "SELECT (SELECT COUNT(*) FROM exchanges WHERE created_at >= ?) + "
        "(SELECT COUNT(*) FROM cross_exchanges WHERE created_at >= ?)",
        (start, start),
    ).fetchone()[0]
    if done_today >= int(db.flag("exchange_daily_limit")):
        raise ApiError(22)
    if sell_amount > CURRENCIES[sell].exchange_limit:
        raise ApiError(23)


def create_exchange(
    sell: str, buy: str, sell_amount: Decimal | None, buy_amount: Decimal | None
) -> int:
    now = db.now_text()
    with db.write() as connection:
        if (sell, buy) not in exchange_pairs():
            raise ApiError(21)
        sell_amount, buy_amount, rate, fee = _quote(sell, buy, sell_amount, buy_amount)
        _check_exchange(connection, sell, buy, sell_amount)
        wallet = _wallet(connection, sell)
        assert wallet is not None  # _check_exchange refused a missing wallet
        if sell_amount < CURRENCIES[sell].exchange_minimum or buy_amount <= 0:
            raise ApiError(25, message="Exchange not created: the amount is below the minimum")
        if wallet["balance"] < to_units(sell_amount):
            raise ApiError(25, message="Exchange not created: not enough funds in the wallet")
        cursor = connection.execute(
            """INSERT INTO exchanges (sell_currency, buy_currency, sell_amount, buy_amount, rate,
                   fee, status, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, 'successful', ?, ?)""",
            (
                sell,
                buy,
                to_units(sell_amount),
                to_units(buy_amount),
                to_units(rate),
                to_units(fee),
                now,
                now,
            ),
        )
        move(connection, sell, -to_units(sell_amount))
        move(connection, buy, to_units(buy_amount))
        return db.inserted_id(cursor)


def create_cross_exchange(
    sell: str,
    buy: str,
    sell_amount: Decimal | None,
    buy_amount: Decimal | None,
    sell_address: str,
    buy_address: str,
) -> int:
    """A cross exchange waits for the sold currency at its invoice address (an operation)."""
    now = db.now_text()
    expires = db.later_text(minutes=CROSS_EXCHANGE_MINUTES)
    with db.write() as connection:
        if (sell, buy) not in exchange_pairs():
            raise ApiError(21)
        sell_amount, buy_amount, rate, fee = _quote(sell, buy, sell_amount, buy_amount)
        _check_exchange(connection, sell, buy, sell_amount)
        if sell_amount < CURRENCIES[sell].exchange_minimum or buy_amount <= 0:
            raise ApiError(
                19, message="Cross Exchange not created: the amount is below the minimum"
            )
        invoice_address = new_address(sell)
        operation = connection.execute(
            """INSERT INTO operations (application_id, application_name, category, order_id,
                   amount, fee, rate, currency, currency_paid, status, address, created_at,
                   updated_at, expires_at)
               VALUES (?, ?, 'manual', NULL, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                APPLICATION_ID,
                APPLICATION_NAME,
                to_units(sell_amount),
                to_units(Decimal(1)),
                sell,
                sell,
                NEW,
                invoice_address,
                now,
                now,
                expires,
            ),
        ).lastrowid
        cursor = connection.execute(
            """INSERT INTO cross_exchanges (operation_id, sell_currency, buy_currency, sell_amount,
                   buy_amount, fee, rate, invoice_address, sell_address, buy_address, status,
                   expired_at, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'processed', ?, ?, ?)""",
            (
                operation,
                sell,
                buy,
                to_units(sell_amount),
                to_units(buy_amount),
                to_units(fee),
                to_units(rate),
                invoice_address,
                sell_address,
                buy_address,
                expires,
                now,
                now,
            ),
        )
        connection.execute(
            "UPDATE operations SET order_id = ? WHERE id = ?",
            (f"cross-exchange-{cursor.lastrowid}", operation),
        )
        return db.inserted_id(cursor)


def cancel_cross_exchange(cross_exchange_id: int) -> None:
    now = db.now_text()
    with db.write() as connection:
        row = connection.execute(
            "SELECT * FROM cross_exchanges WHERE id = ?", (cross_exchange_id,)
        ).fetchone()
        if row["status"] != "processed":
            raise ApiError(20)
        connection.execute(
            "UPDATE cross_exchanges SET status = 'canceled', updated_at = ? WHERE id = ?",
            (now, cross_exchange_id),
        )
        connection.execute(
            "UPDATE operations SET status = ?, updated_at = ? WHERE id = ? AND status = ?",
            (CANCELED, now, row["operation_id"], NEW),
        )
