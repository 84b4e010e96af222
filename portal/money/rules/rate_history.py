"""The rates of the payment service as the portal recorded them, and the rate a movement is
valued at.

The API tells the rates of now only (`/v1/rates`), so the mirror records them at each sync: a
row each time a rate changed, whose span (`recorded_at` to `last_seen_at`) grows while the same
rates are read again. A movement is valued at the latest recorded rate at or before its time,
no older than `FRESH_FOR`; otherwise it has no rate, and totals say how many they leave out.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

import sqlalchemy as sa
from flask import current_app

from portal.api import Rates
from portal.database import utcnow
from portal.extensions import db, rows_changed
from portal.identity.models import Merchant
from portal.money.models import RateRecord

# A rate read longer ago than this before a movement is not its rate.
FRESH_FOR = timedelta(minutes=15)
# Moments looked up by one query of `RateBook.in_force_at`: a page of an export's payments.
MOMENTS_PER_QUERY = 100
ONE = Decimal(1)


@dataclass(frozen=True)
class Rate:
    """The price of one unit of a currency in another, and the moment the portal last read it
    at or before the movement it values."""

    price: Decimal
    at: datetime


def record(merchant_id: int, generation: int, rates: Rates, at: datetime) -> None:
    """Keep `rates` as read at `at`: a new row when any rate differs from the last row's, else
    the last row's span grows to `at`. Committed by the caller."""
    texts = {f"{base}:{quote}": format(price, "f") for (base, quote), price in rates.items()}
    last = db.session.scalars(
        _of(merchant_id, generation).order_by(RateRecord.recorded_at.desc()).limit(1)
    ).first()
    if last is not None and last.rates == texts and last.recorded_at <= at:
        last.last_seen_at = max(last.last_seen_at, at)
        return
    db.session.add(
        RateRecord(
            merchant_id=merchant_id,
            connection_generation=generation,
            recorded_at=at,
            last_seen_at=at,
            rates=texts,
        )
    )


def forget_old() -> int:
    """Drop the rates last read more than `PORTAL_RATE_HISTORY_DAYS` ago; how many. A merchant
    at a time, through the index of its records. The latest record of a connection that still
    syncs is read again at each sync, so it is never that old."""
    cutoff = utcnow() - timedelta(days=float(current_app.config["RATE_HISTORY_DAYS"]))
    dropped = 0
    for merchant_id in db.session.scalars(sa.select(Merchant.id)).all():
        dropped += rows_changed(
            sa.delete(RateRecord).where(
                RateRecord.merchant_id == merchant_id,
                RateRecord.recorded_at < cutoff,
                RateRecord.last_seen_at < cutoff,
            )
        )
        db.session.commit()
    return dropped


class RateBook:
    """The recorded rates of one merchant's connection over a span of time, read once, to value
    many movements without a query each."""

    def __init__(self, merchant_id: int, generation: int, moments: Iterable[datetime]) -> None:
        moments = list(moments)
        self.records: list[RateRecord] = []
        if moments:
            first, last = min(moments), max(moments)
            # The record in force at `first` began before it: the latest one at or before it.
            start = db.session.scalar(
                sa.select(sa.func.max(RateRecord.recorded_at)).where(
                    RateRecord.merchant_id == merchant_id,
                    RateRecord.connection_generation == generation,
                    RateRecord.recorded_at <= first,
                )
            )
            self.records = list(
                db.session.scalars(
                    _of(merchant_id, generation)
                    .where(RateRecord.recorded_at >= (start or first))
                    .where(RateRecord.recorded_at <= last)
                    .order_by(RateRecord.recorded_at)
                )
            )
        self.starts = [record.recorded_at for record in self.records]

    @classmethod
    def in_force_at(
        cls, merchant_id: int, generation: int, moments: Iterable[datetime]
    ) -> RateBook:
        """A book of the records in force at `moments` alone, the latest at or before each:
        for moments that may lie far apart (an export sorted by amount), whose span may hold
        more records than memory should. A query per `MOMENTS_PER_QUERY` distinct moments."""
        book = cls(merchant_id, generation, ())
        distinct = sorted(set(moments))
        found: dict[int, RateRecord] = {}
        for first in range(0, len(distinct), MOMENTS_PER_QUERY):
            batch = distinct[first : first + MOMENTS_PER_QUERY]
            # The query's moments are all given: the batch's last one fills the places left.
            given = {f"moment_{n}": batch[min(n, len(batch) - 1)] for n in range(MOMENTS_PER_QUERY)}
            records = db.session.scalars(
                _IN_FORCE, {"merchant_id": merchant_id, "generation": generation, **given}
            )
            found.update((record.id, record) for record in records)
        book.records = sorted(found.values(), key=lambda record: record.recorded_at)
        book.starts = [record.recorded_at for record in book.records]
        return book

    def rate(self, base: str, quote: str, at: datetime) -> Rate | None:
        """The price of one `base` in `quote` at `at`; None when no fresh rate was recorded
        (none at or before `at`, the last one older than `FRESH_FOR`, or no such pair)."""
        if base == quote:
            return Rate(ONE, at)
        index = bisect.bisect_right(self.starts, at) - 1
        if index < 0:
            return None
        record = self.records[index]
        if at - record.last_seen_at > FRESH_FOR:
            return None
        price = price_of(record.rates, base, quote)
        return Rate(price, min(at, record.last_seen_at)) if price is not None else None


def _of_connection() -> sa.ColumnElement[bool]:
    return sa.and_(
        RateRecord.merchant_id == sa.bindparam("merchant_id"),
        RateRecord.connection_generation == sa.bindparam("generation"),
    )


# The records in force at `MOMENTS_PER_QUERY` moments, one statement built once: it is compiled
# once, where statements of as many moments as each page has would be built and compiled anew.
_IN_FORCE = sa.select(RateRecord).where(
    _of_connection(),
    RateRecord.recorded_at.in_(
        sa.union(
            *(
                sa.select(sa.func.max(RateRecord.recorded_at)).where(
                    _of_connection(), RateRecord.recorded_at <= sa.bindparam(f"moment_{n}")
                )
                for n in range(MOMENTS_PER_QUERY)
            )
        )
    ),
)


def price_of(rates: dict[str, str], base: str, quote: str) -> Decimal | None:
    """The price of one `base` in `quote` from recorded rates: the pair itself, or one over
    the reverse pair (to 8 decimals) when only that one is quoted."""
    if (direct := rates.get(f"{base}:{quote}")) is not None:
        return Decimal(direct)
    reverse = rates.get(f"{quote}:{base}")
    if reverse is None or Decimal(reverse) <= 0:
        return None
    return (ONE / Decimal(reverse)).quantize(Decimal("1e-8"))


def latest(merchant_id: int, generation: int) -> RateRecord | None:
    """The rates last recorded for the merchant's connection."""
    return db.session.scalars(
        _of(merchant_id, generation).order_by(RateRecord.recorded_at.desc()).limit(1)
    ).first()


def _of(merchant_id: int, generation: int) -> sa.Select[RateRecord]:
    return sa.select(RateRecord).where(
        RateRecord.merchant_id == merchant_id, RateRecord.connection_generation == generation
    )
