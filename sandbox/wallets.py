"""How records move the merchant's wallets (docs/sandbox.md, "Wallets"): the money model that
the portal's balances are checked against, so each movement happens in the write transaction
of the change that causes it."""

from __future__ import annotations

import sqlite3
from decimal import ROUND_FLOOR

from .money import from_units, to_units

# Operations paid by customers; withdrawals (`transfer`, `internal_transfer`) move their
# wallet once, when they are made.
PAYMENT_CATEGORIES = ("application", "manual")


def move(connection: sqlite3.Connection, currency: str, units: int) -> None:
    """Add `units` to the currency's wallet; a currency without a wallet moves nothing."""
    connection.execute(
        "UPDATE wallets SET balance = balance + ? WHERE currency = ?", (units, currency)
    )


def fee_paid_units(fee: int, rate: int, currency: str, currency_paid: str) -> int:
    """The fee (in the operation's `currency`) in the payment currency: fee x rate, rounded
    down to 8 decimals, as the portal values it."""
    if currency == currency_paid:
        return fee
    return to_units(from_units(fee) * from_units(rate), ROUND_FLOOR)


def _is_payment(connection: sqlite3.Connection, operation: sqlite3.Row) -> bool:
    """A payment the merchant keeps: not a withdrawal, and not a cross exchange's invoice,
    whose money goes on to the exchange's `buy_address`."""
    return (
        operation["category"] in PAYMENT_CATEGORIES
        and not connection.execute(
            "SELECT EXISTS(SELECT 1 FROM cross_exchanges WHERE operation_id = ?)",
            (operation["id"],),
        ).fetchone()[0]
    )


def follow_amount_paid(
    connection: sqlite3.Connection, operation: sqlite3.Row, amount_paid: int
) -> None:
    """Move the payment's wallet by the change from `operation`'s `amount_paid` to the new one."""
    change = amount_paid - (operation["amount_paid"] or 0)
    if change and _is_payment(connection, operation):
        move(connection, operation["currency_paid"], change)


def charge_fee_once(connection: sqlite3.Connection, operation: sqlite3.Row, now: str) -> None:
    """Take the operation's fee from its wallet at its first confirmation; a later one (after
    a reject made it `new` again) takes nothing."""
    if not _is_payment(connection, operation):
        return
    fee = fee_paid_units(
        operation["fee"], operation["rate"], operation["currency"], operation["currency_paid"]
    )
    charged = connection.execute(
        "INSERT OR IGNORE INTO charged_fees (operation_id, amount, charged_at) VALUES (?, ?, ?)",
        (operation["id"], fee, now),
    )
    if charged.rowcount:
        move(connection, operation["currency_paid"], -fee)
