"""The ledger's months: what each kind of movement added to each currency in each calendar month
(UTC), so that a balance, a statement or the dashboard adds up the months it covers whole and
reads movements only for the parts of months at its ends, whatever the size of the ledger.

Every booking adds its movements to their months in the same transaction (`add`): a month's
total is never behind its movements, a movement dated in a past month (the history of a first
sync, a balance entered as of a past moment) included. The months' keys are written in one order,
so that two bookings at once never wait for each other in a circle. A change of reporting
currency values the movements again chunk by chunk, and moves each chunk's values from their
former currency's months to the new one's in the same transaction.

Moments are kept to the microsecond on both databases: what happened after `since` is what
happened from `since` plus a microsecond on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from portal.database import decimal_add, decimal_sum
from portal.extensions import db
from portal.money.models import LedgerEntry, LedgerMonth

MICROSECOND = timedelta(microseconds=1)
ZERO = Decimal(0)
KEY = ("merchant_id", "connection_generation", "month", "currency", "kind", "value_currency")


class Movement(Protocol):
    """What a month needs of a movement: a LedgerEntry, or one about to be inserted."""

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


def month_of(moment: datetime) -> date:
    """The first day of the UTC month `moment` is in."""
    moment = moment.astimezone(UTC)
    return date(moment.year, moment.month, 1)


def add(merchant_id: int, generation: int, movements: Iterable[Movement], sign: int = 1) -> None:
    """Add `movements`, just booked in the caller's transaction, to their months (`sign` -1:
    take them out, as they were before they were valued again): one statement, whatever their
    number. A month's first and last moments stay: its movements are still there."""
    totals: dict[tuple[date, str, str, str], list] = {}
    for movement in movements:
        key = (
            month_of(movement.occurred_at),
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
            zip(KEY, (merchant_id, generation, *key), strict=True),
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
    """Insert a month, or add to the one there."""
    dialect = postgresql if db.session.get_bind().dialect.name == "postgresql" else sqlite
    insert = dialect.insert(LedgerMonth)
    new, month = insert.excluded, LedgerMonth
    first_at = sa.case((new.first_at < month.first_at, new.first_at), else_=month.first_at)
    last_at = sa.case((new.last_at > month.last_at, new.last_at), else_=month.last_at)
    return insert.on_conflict_do_update(
        index_elements=list(KEY),
        set_={
            "amount": decimal_add(month.amount, new.amount),
            "count": month.count + new.count,
            "value": decimal_add(month.value, new.value),
            "valued": month.valued + new.valued,
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
    the stretch, and the movements of its ends."""
    whole_from = None if start is None else month_of(start)
    if start is not None and whole_from is not None and _start_of(whole_from) < start:
        whole_from = _next(whole_from)
    whole_until = None if end is None else month_of(end)
    if whole_from is not None and whole_until is not None and whole_from >= whole_until:
        return _of_movements(merchant_id, generation, reporting, [(start, end)], kinds, currencies)
    ends: list[tuple[datetime | None, datetime | None]] = []
    if start is not None and whole_from is not None and start < _start_of(whole_from):
        ends.append((start, _start_of(whole_from)))
    if end is not None and whole_until is not None and _start_of(whole_until) < end:
        ends.append((_start_of(whole_until), end))
    found = _of_months(
        merchant_id, generation, reporting, whole_from, whole_until, kinds, currencies
    )
    for key, moved in _of_movements(
        merchant_id, generation, reporting, ends, kinds, currencies
    ).items():
        found[key] = found[key] + moved if key in found else moved
    return found


def _of_months(
    merchant_id: int,
    generation: int,
    reporting: str,
    since: date | None,
    until: date | None,
    kinds: Sequence[str],
    currencies: Sequence[str],
) -> dict[tuple[str, str], Sums]:
    """The months from `since` to `until` (excluded), added up per currency and kind."""
    month = LedgerMonth
    in_reporting = month.value_currency == reporting
    query = (
        sa.select(
            month.currency,
            month.kind,
            decimal_sum(month.amount),
            sa.func.sum(month.count),
            decimal_sum(sa.case((in_reporting, month.value))),
            sa.func.sum(sa.case((in_reporting, month.valued), else_=0)),
            sa.func.min(month.first_at),
            sa.func.max(month.last_at),
        )
        .where(month.merchant_id == merchant_id, month.connection_generation == generation)
        .group_by(month.currency, month.kind)
    )
    if since is not None:
        query = query.where(month.month >= since)
    if until is not None:
        query = query.where(month.month < until)
    if kinds:
        query = query.where(month.kind.in_(kinds))
    if currencies:
        query = query.where(month.currency.in_(currencies))
    return {
        (currency, kind): Sums(Decimal(amount), count, Decimal(value), count - valued, first, last)
        for currency, kind, amount, count, value, valued, first, last in db.session.execute(query)
    }


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
    query = (
        sa.select(
            entry.currency,
            entry.kind,
            decimal_sum(entry.amount),
            sa.func.count(),
            decimal_sum(sa.case((valued, entry.value))),
            sa.func.count(sa.case((valued, None), else_=entry.id)),
            sa.func.min(entry.occurred_at),
            sa.func.max(entry.occurred_at),
        )
        .where(
            entry.merchant_id == merchant_id,
            entry.connection_generation == generation,
            sa.or_(*(_within(start, end) for start, end in stretches)),
        )
        .group_by(entry.currency, entry.kind)
    )
    if kinds:
        query = query.where(entry.kind.in_(kinds))
    if currencies:
        query = query.where(entry.currency.in_(currencies))
    return {
        (currency, kind): Sums(Decimal(amount), count, Decimal(value), without, first, last)
        for currency, kind, amount, count, value, without, first, last in db.session.execute(query)
    }


def _within(start: datetime | None, end: datetime | None) -> sa.ColumnElement[bool]:
    moment = LedgerEntry.occurred_at
    return sa.and_(
        sa.true() if start is None else moment >= start,
        sa.true() if end is None else moment < end,
    )


def _start_of(month: date) -> datetime:
    return datetime(month.year, month.month, 1, tzinfo=UTC)


def _next(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)
