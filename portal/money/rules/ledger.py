"""The ledger: each movement of a merchant's wallets, booked once, with its value in the
merchant's reporting currency (the money model's wallet movements).

A payment operation's wallet (its payment currency) moves by every change of the money the API
counts for it (`amount_paid`), and its fee leaves once, when it is first confirmed. Withdrawal
operations and the operations of cross exchanges are no sales: their money is booked elsewhere,
or goes past the wallets. Each movement has a key: booking what is already booked adds nothing,
so a full resync, or a sync begun again after a worker died, books nothing twice.

A movement's time is when the portal first saw it; the history that the mirror's first sync
reads happened before the portal watched, so it is dated as the API dates it. Its value is
taken at the rate of that time and kept; a change of reporting currency values everything again
(`revalue`).
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal

import sqlalchemy as sa

from portal.api import Operation
from portal.database import decimal_sum
from portal.extensions import db
from portal.money.models import CrossExchangeReference, LedgerEntry
from portal.money.rules.rate_history import RateBook
from portal.payments.rules.operation_money import WITHDRAWAL_CATEGORIES, OperationMoney

VALUE_PLACES = Decimal("1e-8")
LOOKUP_CHUNK = 500
REVALUE_CHUNK = 1000
ZERO = Decimal(0)


class Kind(enum.StrEnum):
    """What moved a wallet."""

    PAYMENT = "payment"  # money the API counts for an operation, by each change of it
    FEE = "fee"  # the operation's fee, once, at its first confirmation


class RateSource(enum.StrEnum):
    """Where the rate of a movement came from."""

    SAME_CURRENCY = "same currency"  # the money is in the reporting currency already
    OPERATION = "operation"  # one over the rate of an operation priced in the reporting currency
    MARKET = "market"  # the rates the portal recorded from `/v1/rates`


@dataclass(frozen=True)
class Valuation:
    """A movement's value in the reporting currency, and the rate it was taken at and where
    from (None: no rate was recorded fresh enough at its time)."""

    value: Decimal | None
    rate: Decimal | None
    rate_at: datetime | None
    source: RateSource | None = None


NO_RATE = Valuation(None, None, None)


def valuation(
    amount: Decimal,
    currency: str,
    reporting: str,
    at: datetime,
    rates: RateBook,
    *,
    priced_in: str | None = None,
    operation_rate: Decimal | None = None,
    operation_at: datetime | None = None,
) -> Valuation:
    """`amount` of `currency` in the `reporting` currency. Money of an operation priced in the
    reporting currency is worth what it paid at the operation's own rate (amount ÷ rate); any
    other at the market rate recorded at or before `at`."""
    if currency == reporting:
        return Valuation(amount, Decimal(1), at, RateSource.SAME_CURRENCY)
    if priced_in == reporting and operation_rate is not None and operation_rate > 0:
        return Valuation(
            _exact(amount / operation_rate),
            _exact(1 / operation_rate),
            operation_at or at,
            RateSource.OPERATION,
        )
    rate = rates.rate(currency, reporting, at)
    if rate is None:
        return NO_RATE
    return Valuation(_exact(amount * rate.price), rate.price, rate.at, RateSource.MARKET)


def book_operations(
    merchant_id: int,
    generation: int,
    reporting: str,
    moneys: Sequence[tuple[Operation, OperationMoney]],
    seen_at: datetime | None,
) -> int:
    """Book what changed in the money of these operations since the ledger last saw them: a
    payment movement by the change of the money counted, the fee at the first confirmation.
    `seen_at` is now; None books history, each movement at the API's time of it. How many
    movements were booked (added to the session; the caller commits)."""
    sales = [
        (operation, money)
        for operation, money in moneys
        if operation.category not in WITHDRAWAL_CATEGORIES and operation.currency_paid
    ]
    exchanges = _cross_exchange_operations(merchant_id, [o.id for o, _ in sales])
    sales = [(o, m) for o, m in sales if o.id not in exchanges]
    booked, counts, fees = _booked(merchant_id, generation, [o.id for o, _ in sales])
    entries = []
    for operation, money in sales:
        api_at = max([operation.updated_at, *(t.updated_at for t in operation.transactions)])
        at = seen_at or api_at
        common = {
            "merchant_id": merchant_id,
            "connection_generation": generation,
            "currency": money.currency,
            "operation_id": operation.id,
            "occurred_at": at,
            "api_at": api_at,
            "priced_in": operation.currency,
            "operation_rate": operation.rate,
        }
        change = money.received - booked[operation.id]
        if change:
            number = counts[operation.id] + 1
            key = f"payment:{operation.id}:{number}"
            entries.append(LedgerEntry(key=key, kind=Kind.PAYMENT, amount=change, **common))
        if money.fee and operation.id not in fees:
            key = f"fee:{operation.id}"
            entries.append(LedgerEntry(key=key, kind=Kind.FEE, amount=-money.fee, **common))
    _value(entries, reporting, RateBook(merchant_id, generation, (e.occurred_at for e in entries)))
    db.session.add_all(entries)
    return len(entries)


def revalue(merchant_id: int, generation: int, reporting: str) -> tuple[int, int]:
    """Value every movement of the connection again in `reporting` (the merchant chose another
    reporting currency), each at the rate recorded at its own time; how many were valued, and
    how many of them found no rate. Committed chunk by chunk."""
    valued = without_rate = 0
    last_id = 0
    while True:
        entries = list(
            db.session.scalars(
                sa.select(LedgerEntry)
                .where(
                    LedgerEntry.merchant_id == merchant_id,
                    LedgerEntry.connection_generation == generation,
                    LedgerEntry.id > last_id,
                )
                .order_by(LedgerEntry.id)
                .limit(REVALUE_CHUNK)
            )
        )
        if not entries:
            return valued, without_rate
        _value(
            entries, reporting, RateBook(merchant_id, generation, (e.occurred_at for e in entries))
        )
        db.session.commit()
        valued += len(entries)
        without_rate += sum(1 for entry in entries if entry.value is None)
        last_id = entries[-1].id


def _value(entries: Iterable[LedgerEntry], reporting: str, rates: RateBook) -> None:
    for entry in entries:
        found = valuation(
            entry.amount,
            entry.currency,
            reporting,
            entry.occurred_at,
            rates,
            priced_in=entry.priced_in,
            operation_rate=entry.operation_rate,
            operation_at=entry.api_at,
        )
        entry.value, entry.rate, entry.rate_at = found.value, found.rate, found.rate_at
        entry.value_currency = reporting


def _booked(
    merchant_id: int, generation: int, operation_ids: list[str]
) -> tuple[defaultdict[str, Decimal], defaultdict[str, int], set[str]]:
    """Of these operations: the payments booked (their sum and how many), and those whose fee
    is booked; a query per chunk of ids."""
    sums: defaultdict[str, Decimal] = defaultdict(Decimal)
    counts: defaultdict[str, int] = defaultdict(int)
    fees: set[str] = set()
    for start in range(0, len(operation_ids), LOOKUP_CHUNK):
        chunk = operation_ids[start : start + LOOKUP_CHUNK]
        rows = db.session.execute(
            sa.select(
                LedgerEntry.operation_id,
                LedgerEntry.kind,
                sa.func.count(),
                decimal_sum(LedgerEntry.amount),
            )
            .where(
                LedgerEntry.merchant_id == merchant_id,
                LedgerEntry.connection_generation == generation,
                LedgerEntry.operation_id.in_(chunk),
            )
            .group_by(LedgerEntry.operation_id, LedgerEntry.kind)
        )
        for operation_id, kind, count, total in rows:
            assert operation_id is not None  # asked for by id
            if kind == Kind.PAYMENT:
                sums[operation_id], counts[operation_id] = Decimal(total), count
            elif kind == Kind.FEE:
                fees.add(operation_id)
    return sums, counts, fees


def received_values(
    merchant_id: int, generation: int, reporting: str, received: Mapping[str, Decimal]
) -> dict[str, Decimal | None]:
    """What the money received for each of these operations (`received`, by id) is worth in
    `reporting`: the sum of its payments' booked values, a query per chunk of ids. None when
    nothing was received, the ledger has not booked all of it yet (a sync behind the API), or
    one of its payments has no value in `reporting` (no rate at its time)."""
    values: dict[str, Decimal | None] = dict.fromkeys(received)
    valued = sa.and_(LedgerEntry.value.is_not(None), LedgerEntry.value_currency == reporting)
    operation_ids = [operation_id for operation_id, amount in received.items() if amount]
    for start in range(0, len(operation_ids), LOOKUP_CHUNK):
        rows = db.session.execute(
            sa.select(
                LedgerEntry.operation_id,
                sa.func.count(),
                sa.func.count(sa.case((valued, 1))),
                decimal_sum(LedgerEntry.amount),
                decimal_sum(LedgerEntry.value),
            )
            .where(
                LedgerEntry.merchant_id == merchant_id,
                LedgerEntry.connection_generation == generation,
                LedgerEntry.kind == Kind.PAYMENT,
                LedgerEntry.operation_id.in_(operation_ids[start : start + LOOKUP_CHUNK]),
            )
            .group_by(LedgerEntry.operation_id)
        )
        for operation_id, count, valued_count, amount, value in rows:
            assert operation_id is not None  # asked for by id
            if valued_count == count and Decimal(amount) == received[operation_id]:
                values[operation_id] = Decimal(value)
    return values


def _cross_exchange_operations(merchant_id: int, operation_ids: list[str]) -> set[str]:
    """Which of these operations wait for the sold currency of a cross exchange."""
    found: set[str] = set()
    for start in range(0, len(operation_ids), LOOKUP_CHUNK):
        found.update(
            db.session.scalars(
                sa.select(CrossExchangeReference.operation_id).where(
                    CrossExchangeReference.merchant_id == merchant_id,
                    CrossExchangeReference.operation_id.in_(
                        operation_ids[start : start + LOOKUP_CHUNK]
                    ),
                )
            )
        )
    return found


def _exact(amount: Decimal) -> Decimal:
    return amount.quantize(VALUE_PLACES, ROUND_HALF_EVEN)
