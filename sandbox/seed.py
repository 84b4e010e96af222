"""Realistic demo data: 90 days of operations with transactions, withdrawals and vouchers.

The history moves the wallets as the same records made through the API would: the wallets'
opening balances are theirs before the first seeded record (docs/sandbox.md, "Wallets").

Deterministic for a given random seed (the records are the same; their timestamps are relative to
the moment of seeding).
"""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from datetime import timedelta
from decimal import ROUND_CEILING, Decimal

from .currencies import CRYPTO, market_prices, market_rate, new_address
from .db import create_indexes, timestamp, unversioned_changes, utcnow
from .money import to_units
from .records import (
    APPLICATION_ID,
    APPLICATION_NAME,
    CANCELED,
    CONFIRMED,
    EXPIRED,
    FAILED,
    NEW,
    PROCESSED,
    TX_CONFIRMED,
    TX_REJECTED,
    TX_UNDEFINED,
    VOUCHER_CANCELLED,
    VOUCHER_EXPIRED,
    VOUCHER_SUCCESSFUL,
)
from .wallets import fee_paid_units

SPAN = timedelta(days=90)
# (low, high, decimal places) of a typical invoice in each currency.
TYPICAL_AMOUNTS = {
    "BTC": (Decimal("0.0005"), Decimal("0.8"), 8),
    "ETH": (Decimal("0.005"), Decimal("6"), 6),
    "USDT": (Decimal(5), Decimal(5000), 2),
    "USD": (Decimal(5), Decimal(5000), 2),
}
REJECT_REASONS = (
    "Paid to a wrong invoice",
    "Duplicate payment",
    "Amount does not match",
    "Refunded",
)


class Seeder:
    def __init__(self, connection: sqlite3.Connection, random_seed: int, ttl_minutes: int) -> None:
        self.connection = connection
        self.rng = random.Random(random_seed)
        self.now = utcnow()
        self.prices = market_prices(connection)
        self.ttl = timedelta(minutes=ttl_minutes)
        self.operations: list[tuple] = []
        self.transactions: list[tuple] = []
        self.charged_fees: list[tuple] = []
        self.movements: Counter[str] = Counter()

    def _amount(self, currency: str) -> Decimal:
        low, high, places = TYPICAL_AMOUNTS[currency]
        value = Decimal(str(self.rng.uniform(float(low), float(high))))
        return value.quantize(Decimal(1).scaleb(-places))

    def _address(self, currency: str) -> str:
        return new_address(currency, chooser=self.rng.choice)

    def _tx_hash(self) -> str:
        return f"{self.rng.getrandbits(256):064x}"

    def _status(self, age: timedelta) -> int:
        if age < self.ttl and self.rng.random() < 0.7:
            return NEW
        return self.rng.choices((CONFIRMED, EXPIRED, CANCELED, FAILED), weights=(62, 22, 11, 5))[0]

    def _transactions(self, operation_id: int, status: int, due: int, created) -> int | None:
        """Add the operation's transactions; returns its amount_paid in units."""
        moment = timestamp(created + timedelta(minutes=self.rng.randint(1, 50)))
        paid = None
        if status == CONFIRMED:
            parts = self.rng.choice((1, 1, 1, 2))
            first = due if parts == 1 else due // 2
            linked = self.rng.random() < 0.15
            for amount in (first, due - first)[:parts]:
                self.transactions.append(
                    (
                        operation_id,
                        self._tx_hash(),
                        amount,
                        TX_CONFIRMED,
                        int(linked),
                        None,
                        moment,
                        moment,
                    )
                )
            paid = due
        elif status in (EXPIRED, FAILED) and self.rng.random() < 0.35:
            amount = max(due // self.rng.randint(2, 5), 1)
            if self.rng.random() < 0.5:
                reason = self.rng.choice(REJECT_REASONS)
                self.transactions.append(
                    (operation_id, self._tx_hash(), amount, TX_REJECTED, 0, reason, moment, moment)
                )
                paid = 0
            else:
                self.transactions.append(
                    (operation_id, self._tx_hash(), amount, TX_UNDEFINED, 0, None, moment, moment)
                )
        return paid

    def operation(self, operation_id: int, created) -> None:
        rng = self.rng
        currency = rng.choices(("BTC", "ETH", "USDT", "USD"), weights=(30, 25, 30, 15))[0]
        paid_in = currency if currency in CRYPTO and rng.random() < 0.8 else rng.choice(CRYPTO)
        amount = self._amount(currency)
        rate = market_rate(currency, paid_in, self.prices)
        status = self._status(self.now - created)
        due = to_units(amount * rate, ROUND_CEILING)
        paid = self._transactions(operation_id, status, due, created)
        category = "manual" if rng.random() < 0.1 else "application"
        order_id = f"ORD-{100000 + operation_id}"
        redirect_url = (
            f"https://shop.example/orders/{order_id}/return" if rng.random() < 0.6 else None
        )
        updated = timestamp(
            max(created, min(created + timedelta(minutes=rng.randint(0, 55)), self.now))
        )
        fee = to_units(amount / 100)
        self.movements[paid_in] += paid or 0
        if status == CONFIRMED:
            charged = fee_paid_units(fee, to_units(rate), currency, paid_in)
            self.charged_fees.append((operation_id, charged, updated))
            self.movements[paid_in] -= charged
        self.operations.append(
            (
                operation_id,
                APPLICATION_ID,
                APPLICATION_NAME,
                category,
                order_id,
                to_units(amount),
                fee,
                paid,
                to_units(rate),
                currency,
                paid_in,
                status,
                self._address(paid_in),
                int(category == "application"),
                redirect_url,
                timestamp(created),
                updated,
                timestamp(created + self.ttl),
            )
        )

    def withdrawal(self, operation_id: int, created) -> None:
        currency = self.rng.choice(CRYPTO)
        amount = self._amount(currency)
        internal = self.rng.random() < 0.25
        fee = 0 if internal else to_units(amount / 1000)
        self.movements[currency] -= to_units(amount) + fee
        self.operations.append(
            (
                operation_id,
                None,
                None,
                "internal_transfer" if internal else "transfer",
                None,
                to_units(amount),
                fee,
                to_units(amount),
                to_units(Decimal(1)),
                currency,
                currency,
                PROCESSED,
                self._address(currency),
                0,
                None,
                timestamp(created),
                timestamp(created),
                None,
            )
        )

    def vouchers(self, count: int) -> list[tuple]:
        rows = []
        for _ in range(count):
            created = self.now - SPAN * self.rng.random()
            currency = self.rng.choice(CRYPTO)
            status, kind = self.rng.choice(
                (
                    (VOUCHER_SUCCESSFUL, "issued"),
                    (VOUCHER_SUCCESSFUL, "paid off"),
                    (VOUCHER_CANCELLED, "issued"),
                    (VOUCHER_EXPIRED, "issued"),
                )
            )
            if status == VOUCHER_SUCCESSFUL and kind == "issued":
                created = self.now - timedelta(days=self.rng.uniform(0, 25))
            code = "-".join(f"{self.rng.getrandbits(20):05X}"[:4] for _ in range(4))
            amount = to_units(self._amount(currency))
            if status == VOUCHER_SUCCESSFUL and kind == "issued":
                self.movements[currency] -= amount  # the others were given back or paid off
            rows.append(
                (
                    amount,
                    currency,
                    code,
                    status,
                    kind,
                    timestamp(created),
                    timestamp(created),
                    timestamp(created + timedelta(days=30)),
                )
            )
        return rows

    def run(self, count: int) -> None:
        ages = sorted((SPAN * self.rng.random() for _ in range(count)), reverse=True)
        for index, age in enumerate(ages, start=1):
            created = self.now - age
            if self.rng.random() < 0.05:
                self.withdrawal(index, created)
            else:
                self.operation(index, created)
        self.connection.execute("BEGIN")
        self.connection.executemany(
            """INSERT INTO operations (id, application_id, application_name, category, order_id,
                   amount, fee, amount_paid, rate, currency, currency_paid, status, address,
                   hosted_page, redirect_url, created_at, updated_at, expires_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            self.operations,
        )
        self.connection.executemany(
            """INSERT INTO transactions (operation_id, tx_id, amount, status, linked,
                   reject_reason, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
            self.transactions,
        )
        self.connection.executemany(
            """INSERT OR IGNORE INTO vouchers (amount, currency, code, status, type, created_at,
                   updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
            self.vouchers(max(count // 10, 1)),
        )
        self.connection.executemany(
            "INSERT INTO charged_fees (operation_id, amount, charged_at) VALUES (?, ?, ?)",
            self.charged_fees,
        )
        self.connection.executemany(
            "UPDATE wallets SET balance = balance + ? WHERE currency = ?",
            [(units, currency) for currency, units in self.movements.items()],
        )
        self.connection.execute("COMMIT")


def seed(connection: sqlite3.Connection, count: int, random_seed: int, ttl_minutes: int) -> bool:
    """Seed `count` operations into an empty database; returns False when data already exists."""
    if count <= 0 or connection.execute("SELECT EXISTS(SELECT 1 FROM operations)").fetchone()[0]:
        return False
    with unversioned_changes(connection):
        Seeder(connection, random_seed, ttl_minutes).run(count)
    create_indexes(connection)
    return True
