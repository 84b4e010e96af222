"""The ledger's totals: what each kind of movement added to each currency in each calendar
month and each day (UTC), so that a balance, a statement or the dashboard adds up the months a
stretch of time covers whole, then the days of the rest, and reads movements only for the parts
of days at its ends (`portal.periods.covered`), whatever the size of the ledger.

Every booking adds its movements to their month and day in the same transaction (`add`): a
total is never behind its movements, a movement dated in the past (the history of a first sync,
a balance entered as of a past moment) included. The totals' keys are written in one order, so
that two bookings at once lock their rows in the same order. A change of reporting currency
values the movements again chunk by chunk, and moves each chunk's values from their former
currency's totals to the new one's in the same transaction.

Moments are kept to the microsecond on both databases: what happened after `since` is what
happened from `since` plus a microsecond on.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from portal import periods
from portal.database import decimal_add, decimal_sum, in_spans
from portal.extensions import db
from portal.money.models import LEDGER_TOTAL_KEY, LedgerEntry, LedgerTotal

MICROSECOND = timedelta(microseconds=1)
ZERO = Decimal(0)


class Movement(Protocol):
    """What a total needs of a movement: a LedgerEntry, or one about to be inserted."""

    @property
    def currency(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def amount(self) -> Decimal: ...
    @property
    def occurred_at(self) -> datetime: ...
    @property
    def value(self) -> Decimal | None: ...
    @property
    def value_currency(self) -> str | None: ...


@dataclass(frozen=True)
class Sums:
    """What one kind of movement added to one currency over a stretch of time: `value` is the
    sum of the values in the reporting currency, `without_value` how many have none in it."""

    amount: Decimal
    count: int
    value: Decimal
    without_value: int
    first_at: datetime
    last_at: datetime

    def __add__(self, other: Sums) -> Sums:
        return Sums(
            self.amount + other.amount,
            self.count + other.count,
            self.value + other.value,
            self.without_value + other.without_value,
            min(self.first_at, other.first_at),
            max(self.last_at, other.last_at),
        )


def add(merchant_id: int, generation: int, movements: Iterable[Movement], sign: int = 1) -> None:
    """Add `movements`, just booked in the caller's transaction, to their months and days
    (`sign` -1: take them out, as they were before they were valued again): one statement,
    whatever their number. A total's first and last moments stay: its movements are still
    there."""
    totals: dict[tuple[str, date, str, str, str], list] = {}
    for movement, span in itertools.product(movements, periods.Span):
        key = (
            span.value,
            span.starts(movement.occurred_at),
            movement.currency,
            str(movement.kind),
            movement.value_currency or "",
        )
        total = totals.get(key)
        if total is None:
            totals[key] = total = [ZERO, 0, ZERO, 0, movement.occurred_at, movement.occurred_at]
        total[0] += sign * movement.amount
        total[1] += sign
        if movement.value is not None:
            total[2] += sign * movement.value
            total[3] += sign
        total[4] = min(total[4], movement.occurred_at)
        total[5] = max(total[5], movement.occurred_at)
    if not totals:
        return
    rows = [
        dict(
            zip(LEDGER_TOTAL_KEY, (merchant_id, generation, *key), strict=True),
            amount=amount,
            count=count,
            value=value,
            valued=valued,
            first_at=first_at,
            last_at=last_at,
        )
        for key, (amount, count, value, valued, first_at, last_at) in sorted(totals.items())
    ]
    db.session.execute(_upsert(), rows)


def _upsert() -> sa.Insert:
    """Insert a total, or add to the one there."""
    dialect = postgresql if db.session.get_bind().dialect.name == "postgresql" else sqlite
    insert = dialect.insert(LedgerTotal)
    new, total = insert.excluded, LedgerTotal
    first_at = sa.case((new.first_at < total.first_at, new.first_at), else_=total.first_at)
    last_at = sa.case((new.last_at > total.last_at, new.last_at), else_=total.last_at)
    return insert.on_conflict_do_update(
        index_elements=list(LEDGER_TOTAL_KEY),
        set_={
            "amount": decimal_add(total.amount, new.amount),
            "count": total.count + new.count,
            "value": decimal_add(total.value, new.value),
            "valued": total.valued + new.valued,
            "first_at": first_at,
            "last_at": last_at,
        },
    )


def sums(
    merchant_id: int,
    generation: int,
    start: datetime | None,
    end: datetime | None,
    *,
    reporting: str = "",
    kinds: Sequence[str] = (),
    currencies: Sequence[str] = (),
) -> dict[tuple[str, str], Sums]:
    """Per currency and kind: what the movements from `start` (included; None: the first) to
    `end` (excluded; None: the last) added up to, of these `kinds` and `currencies` (empty:
    all), their values in `reporting` (none when not asked). Two queries: the months inside
    the stretch and the days inside the rest of it, then the movements of the parts of days at
    its ends."""
    whole, stretches = periods.covered(start, end)
    found = _of_totals(merchant_id, generation, reporting, whole, kinds, currencies)
    moved = _of_movements(merchant_id, generation, reporting, stretches, kinds, currencies)
    for key, sums in moved.items():
        found[key] = found[key] + sums if key in found else sums
    return found


def _of_totals(
    merchant_id: int,
    generation: int,
    reporting: str,
    whole: list[periods.Whole],
    kinds: Sequence[str],
    currencies: Sequence[str],
) -> dict[tuple[str, str], Sums]:
    """The totals of these spans, each from its first (included) to its last (excluded), added
    up per currency and kind."""
    if not whole:
        return {}
    total = LedgerTotal
    in_reporting = total.value_currency == reporting
    count = sa.func.sum(total.count)
    query = sa.select(
        total.currency,
        total.kind,
        decimal_sum(total.amount),
        count,
        decimal_sum(sa.case((in_reporting, total.value))),
        count - sa.func.sum(sa.case((in_reporting, total.valued), else_=0)),
        sa.func.min(total.first_at),
        sa.func.max(total.last_at),
    ).where(
        total.merchant_id == merchant_id,
        total.connection_generation == generation,
        in_spans(total.span, total.starts, whole),
    )
    return _per_currency_and_kind(query, total, kinds, currencies)


def _of_movements(
    merchant_id: int,
    generation: int,
    reporting: str,
    stretches: Sequence[tuple[datetime | None, datetime | None]],
    kinds: Sequence[str],
    currencies: Sequence[str],
) -> dict[tuple[str, str], Sums]:
    """The movements of these stretches (each from its start, included, to its end, excluded),
    added up per currency and kind."""
    if not stretches:
        return {}
    entry = LedgerEntry
    valued = sa.and_(entry.value.is_not(None), entry.value_currency == reporting)
    query = sa.select(
        entry.currency,
        entry.kind,
        decimal_sum(entry.amount),
        sa.func.count(),
        decimal_sum(sa.case((valued, entry.value))),
        sa.func.count(sa.case((valued, None), else_=entry.id)),
        sa.func.min(entry.occurred_at),
        sa.func.max(entry.occurred_at),
    ).where(
        entry.merchant_id == merchant_id,
        entry.connection_generation == generation,
        sa.or_(*(_within(start, end) for start, end in stretches)),
    )
    return _per_currency_and_kind(query, entry, kinds, currencies)


def _per_currency_and_kind(
    query: sa.Select,
    table: type[LedgerEntry] | type[LedgerTotal],
    kinds: Sequence[str],
    currencies: Sequence[str],
) -> dict[tuple[str, str], Sums]:
    """`query`'s sums (amount, count, value, without value, first and last moments) grouped by
    currency and kind, of these `kinds` and `currencies` (empty: all)."""
    if kinds:
        query = query.where(table.kind.in_(kinds))
    if currencies:
        query = query.where(table.currency.in_(currencies))
    return {
        (currency, kind): Sums(Decimal(amount), count, Decimal(value), without, first, last)
        for currency, kind, amount, count, value, without, first, last in db.session.execute(
            query.group_by(table.currency, table.kind)
        )
    }


def _within(start: datetime | None, end: datetime | None) -> sa.ColumnElement[bool]:
    moment = LedgerEntry.occurred_at
    return sa.and_(
        sa.true() if start is None else moment >= start,
        sa.true() if end is None else moment < end,
    )
