"""The dashboard's figures for any period, from the mirror of the operations (SQL aggregates).

A period is a span of calendar days in the user's time zone; its bounds become UTC instants
once, and every figure is counted between them in the database, so the page costs the same at
100,000 mirrored operations as at 100. Sums are exact: amounts are stored as decimal text, and
the database adds them as decimals (PostgreSQL's NUMERIC; on SQLite an aggregate of Python's
`Decimal`), never as floats.
"""

from __future__ import annotations

import enum
import functools
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from decimal import Decimal

import sqlalchemy as sa

from portal.api import OPERATION_STATUSES, Operation
from portal.api.records import parse_record
from portal.database import decimal_sum
from portal.extensions import db
from portal.payments.models import MirroredOperation
from portal.payments.rules.operation_money import State, operation_money

CHART_WIDTH, CHART_HEIGHT, CHART_TOP = 600, 160, 10
# Up to this many days the chart has a bar per day; a longer period has one per month.
MOST_DAILY_BARS = 92
STATUS_ORDER = {text: code for code, text in OPERATION_STATUSES.items()}
# A `new` operation's states in the order its money comes (unpaid first).
STATE_ORDER = [
    State.AWAITING_PAYMENT,
    State.AWAITING_DECISION,
    State.PARTLY_PAID,
    State.PAID_UNCONFIRMED,
    State.OVERPAID,
]
GroupKey = tuple[str, str, State | None]


class Preset(enum.StrEnum):
    """The periods one click away; each is relative to the day it is asked for."""

    TODAY = "today"
    SEVEN_DAYS = "7-days"
    THIRTY_DAYS = "30-days"
    THIS_MONTH = "this-month"
    LAST_MONTH = "last-month"


DEFAULT_PRESET = Preset.THIRTY_DAYS


def preset_days(preset: Preset, today: date) -> tuple[date, date]:
    """The first and last day (both included) of `preset`, as seen on `today`."""
    if preset is Preset.TODAY:
        return today, today
    if preset is Preset.SEVEN_DAYS:
        return today - timedelta(days=6), today
    if preset is Preset.THIRTY_DAYS:
        return today - timedelta(days=29), today
    if preset is Preset.THIS_MONTH:
        return today.replace(day=1), today
    last_day = today.replace(day=1) - timedelta(days=1)
    return last_day.replace(day=1), last_day


@dataclass(frozen=True)
class Period:
    """Calendar days `since` to `until`, both included, in `zone`."""

    since: date
    until: date
    zone: tzinfo

    def start(self, day: date) -> datetime:
        """The UTC instant at which `day` begins in the period's zone."""
        return datetime.combine(day, time(), tzinfo=self.zone).astimezone(UTC)

    def buckets(self) -> list[tuple[date, date]]:
        """The chart's bars: first day and the day after, by day or, for long periods, by month."""
        days = (self.until - self.since).days + 1
        if days <= MOST_DAILY_BARS:
            return [
                (self.since + timedelta(days=n), self.since + timedelta(days=n + 1))
                for n in range(days)
            ]
        buckets, first = [], self.since
        while first <= self.until:
            following = (first.replace(day=1) + timedelta(days=32)).replace(day=1)
            buckets.append((first, min(following, self.until + timedelta(days=1))))
            first = following
        return buckets

    @property
    def monthly(self) -> bool:
        return (self.until - self.since).days + 1 > MOST_DAILY_BARS


@dataclass(frozen=True)
class Group:
    """Operations of one status in one currency; `new` ones that received money apart, by how
    far they are paid."""

    status: str
    currency: str
    count: int
    amount: Decimal
    state: State | None = None


@dataclass(frozen=True)
class Bar:
    """One day (or month) of the chart, with its geometry in the SVG's coordinates."""

    start: date
    count: int
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Summary:
    period: Period
    total: int
    groups: list[Group]
    bars: list[Bar]
    peak: int


def summarise(merchant_id: int, period: Period) -> Summary:
    """Counts and exact sums by status and currency, and operations per day, over `period`.

    `new` operations that money reached are few (they expire within the hour): those are read
    one by one and told apart by how far they are paid; all others are counted by the database.
    """
    op = MirroredOperation
    start, end = period.start(period.since), period.start(period.until + timedelta(days=1))
    within = sa.and_(op.merchant_id == merchant_id, op.created_at >= start, op.created_at < end)
    money_on_new = sa.and_(op.status == "new", op.amount_paid.is_not(None))
    paid_new = sa.case((money_on_new, 1), else_=0)
    counts: Counter[GroupKey] = Counter()
    sums: defaultdict[GroupKey, Decimal] = defaultdict(Decimal)
    grouped = sa.select(op.status, op.currency, paid_new, sa.func.count(), decimal_sum(op.amount))
    paid_new_seen = False
    for status, currency, paid, count, amount in db.session.execute(
        grouped.where(within).group_by(op.status, op.currency, paid_new)
    ):
        if paid:  # told apart below, one by one
            paid_new_seen = True
            continue
        counts[status, currency, None] += count
        sums[status, currency, None] += Decimal(amount)
    if paid_new_seen:  # a second pass only when there is something to tell apart
        for record in db.session.scalars(sa.select(op.record).where(within, money_on_new)):
            operation = parse_record(Operation, record)
            key = (operation.status, operation.currency, operation_money(operation).state)
            counts[key] += 1
            sums[key] += operation.amount
    groups = [
        Group(key[0], key[1], counts[key], sums[key], key[2])
        for key in sorted(counts, key=_group_order)
    ]
    per_bucket = _counts_per_bucket(merchant_id, period)
    peak = max(per_bucket, default=0)
    return Summary(period, sum(counts.values()), groups, _bars(period, per_bucket, peak), peak)


def _counts_per_bucket(merchant_id: int, period: Period) -> list[int]:
    """Operations created in each bar's span, in one query (one index range per bar)."""
    buckets = period.buckets()
    bounds: dict[str, object] = {"merchant_id": merchant_id}
    for number, (first, after) in enumerate(buckets):
        bounds[f"start_{number}"] = period.start(first)
        bounds[f"end_{number}"] = period.start(after)
    row = db.session.execute(_counts_statement(len(buckets)), bounds).one()
    return [int(count) for count in row]


@functools.cache
def _counts_statement(bars: int) -> sa.Select:
    """The count of each of `bars` spans, their bounds bound at execution: the same statement
    for every page with that many bars (up to 92), built and compiled once, not per page."""
    op = MirroredOperation
    return sa.select(
        *[
            sa.select(sa.func.count())
            .where(
                op.merchant_id == sa.bindparam("merchant_id"),
                op.created_at >= sa.bindparam(f"start_{number}"),
                op.created_at < sa.bindparam(f"end_{number}"),
            )
            .scalar_subquery()
            for number in range(bars)
        ]
    )


def _group_order(key: GroupKey) -> tuple[int, str, str, int]:
    """By status as the API numbers them, then currency; `new` ones unpaid before paid ones."""
    status, currency, paid = key
    rank = -1 if paid is None else _rank(paid)
    return (STATUS_ORDER.get(status, len(STATUS_ORDER)), status, currency, rank)


def _bars(period: Period, counts: list[int], peak: int) -> list[Bar]:
    buckets = period.buckets()
    slot = CHART_WIDTH / len(buckets)
    gap = min(2.0, slot / 5)  # bars of a long period stay visible
    bars = []
    for index, ((first, _after), count) in enumerate(zip(buckets, counts, strict=True)):
        height = (CHART_HEIGHT - CHART_TOP) * count / peak if peak else 0
        bars.append(
            Bar(
                first,
                count,
                x=round(index * slot + gap / 2, 2),
                y=round(CHART_HEIGHT - height, 2),
                width=round(slot - gap, 2),
                height=round(height, 2),
            )
        )
    return bars


def _rank(state: State) -> int:
    return STATE_ORDER.index(state) if state in STATE_ORDER else len(STATE_ORDER)
