"""The dashboard's figures for any period (SQL aggregates): money by when it arrived, from the
ledger, and operations by when they were created, from the mirror.

A period is a span of calendar days in the user's time zone (`portal.periods`); its bounds
become UTC instants once, and every figure is counted between them in the database: the money
from the ledger's totals by month and day (`portal.money.rules.ledger_totals`) and the sales by
state from the operations' (`portal.payments.rules.operation_totals`), so that the money and
the sales of a year cost about what a day's do. Sums are exact: amounts are stored as decimal
text, and the database adds them as decimals (PostgreSQL's NUMERIC; on SQLite an aggregate of
Python's `Decimal`), never as floats.

Sales are the operations customers pay: withdrawals (`WITHDRAWAL_CATEGORIES`) and the
operations that wait for a cross exchange's sold currency move the merchant's own money, so
they are counted apart. The ledger books neither (`portal.money.rules.ledger`).
"""

from __future__ import annotations

import enum
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

import sqlalchemy as sa

from portal import periods
from portal.database import decimal_sum
from portal.extensions import db
from portal.money.models import CrossExchangeReference
from portal.money.rules import ledger_totals
from portal.money.rules.ledger import Kind
from portal.money.rules.ledger_totals import Sums
from portal.payments.models import MirroredOperation
from portal.payments.rules import operation_totals
from portal.payments.rules.operation_money import WITHDRAWAL_CATEGORIES, State

CHART_WIDTH, CHART_HEIGHT, CHART_TOP = 600, 160, 10
# Up to this many days the chart has a bar per day; a longer period has one per month.
MOST_DAILY_BARS = 92
# Confirmed sales: the customer paid, exactly or not, and the payment service confirmed it.
PAID_STATES = (State.PAID, State.OVERPAID, State.UNDERPAID)
# The states a person looks into, each counted and linked to its list.
FOLLOWED_STATES = (State.UNDERPAID, State.OVERPAID, State.PAID_LATE, State.AWAITING_DECISION)
ZERO = Decimal(0)
SHARE_PLACES = Decimal("0.1")


@dataclass(frozen=True)
class Period(periods.Period):
    """A period as the chart draws it: a bar per day, or per month for a long one."""

    def buckets(self) -> list[tuple[date, date]]:
        """The chart's bars: first day and the day after, by day or, for long periods, by month."""
        if not self.monthly:
            return [
                (self.since + timedelta(days=n), self.since + timedelta(days=n + 1))
                for n in range(self.days)
            ]
        buckets, first = [], self.since
        while first <= self.until:
            following = (first.replace(day=1) + timedelta(days=32)).replace(day=1)
            buckets.append((first, min(following, self.until + timedelta(days=1))))
            first = following
        return buckets

    @property
    def monthly(self) -> bool:
        return self.days > MOST_DAILY_BARS


@dataclass(frozen=True)
class Money:
    """Money that arrived in a period, in the reporting currency: payments received (gross),
    the fees they cost (a positive amount) and how many payments had no rate to value them."""

    received: Decimal = ZERO
    fees: Decimal = ZERO
    without_rate: int = 0

    @property
    def net(self) -> Decimal:
        return self.received - self.fees


@dataclass(frozen=True)
class Wallet:
    """Money that arrived in a period in one wallet's currency, in its own units."""

    currency: str
    received: Decimal = ZERO
    fees: Decimal = ZERO

    @property
    def net(self) -> Decimal:
        return self.received - self.fees


@dataclass(frozen=True)
class Sales:
    """The sales created in a period, by state (None: a status the portal does not know)."""

    by_state: dict[str | None, int] = field(default_factory=dict)

    @property
    def created(self) -> int:
        return sum(self.by_state.values())

    @property
    def paid(self) -> int:
        return sum(self.by_state.get(state, 0) for state in PAID_STATES)

    @property
    def share_paid(self) -> Decimal | None:
        """The percentage of the created ones that were paid, to one decimal (None: none made)."""
        if not self.created:
            return None
        return (Decimal(100) * self.paid / self.created).quantize(SHARE_PLACES, ROUND_HALF_UP)

    def count(self, state: State) -> int:
        return self.by_state.get(state.value, 0)


class Apart(enum.StrEnum):
    """Operations that are no sales."""

    WITHDRAWAL = "withdrawal"
    CROSS_EXCHANGE = "cross_exchange"


@dataclass(frozen=True)
class Movement:
    """The operations of one kind that are no sales, in one currency, created in the period."""

    kind: Apart
    currency: str
    count: int
    amount: Decimal


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
    reporting: str
    money: Money
    previous: Money
    wallets: list[Wallet]
    sales: Sales
    apart: list[Movement]
    bars: list[Bar]
    peak: int


def summarise(merchant_id: int, generation: int, reporting: str, period: Period) -> Summary:
    """The money that arrived in `period` and in the period before (in the `reporting`
    currency and per wallet), the sales created in it by state, the operations that are no
    sales, and operations created per day."""
    now = _sales_money(merchant_id, generation, reporting, period.instants)
    before = _sales_money(merchant_id, generation, reporting, period.previous.instants)
    per_bucket = _counts_per_bucket(merchant_id, period)
    peak = max(per_bucket, default=0)
    crossed = _crossed(merchant_id, period)
    return Summary(
        period,
        reporting,
        _money(now),
        _money(before),
        _wallets(now),
        _sales(merchant_id, period, crossed),
        _apart(merchant_id, period, crossed),
        _bars(period, per_bucket, peak),
        peak,
    )


def _money(sums: dict[tuple[str, str], Sums]) -> Money:
    """The payments and fees of a period in the reporting currency, and how many payments have
    no value in it (no rate, or valued in a currency the merchant no longer reports in, until
    `revalue` has run)."""
    received, fees, without_rate = ZERO, ZERO, 0
    for (_currency, kind), moved in sums.items():
        if kind == Kind.PAYMENT:
            received += moved.value
            without_rate += moved.without_value
        else:
            fees -= moved.value
    return Money(received, fees, without_rate)


def _wallets(sums: dict[tuple[str, str], Sums]) -> list[Wallet]:
    """The payments and fees of a period per wallet, in its own units, signed as `_money`
    counts them: money a link left out after it arrived is taken off what was received."""
    wallets: defaultdict[str, dict[str, Decimal]] = defaultdict(dict)
    for (currency, kind), moved in sorted(sums.items()):
        if kind == Kind.PAYMENT:
            wallets[currency]["received"] = moved.amount
        else:
            wallets[currency]["fees"] = -moved.amount
    return [Wallet(currency, **amounts) for currency, amounts in wallets.items()]


def _sales(merchant_id: int, period: Period, crossed: list[sa.Row]) -> Sales:
    """The sales created in `period`, counted by state: the operations' totals but withdrawals
    and the operations of cross exchanges (`crossed`)."""
    by_state: Counter[str | None] = Counter()
    for (category, state), count in operation_totals.counts(merchant_id, *period.instants).items():
        if category not in WITHDRAWAL_CATEGORIES:
            by_state[state] += count
    for state, _currency, count, _amount in crossed:
        by_state[state] -= count
    return Sales({state: count for state, count in by_state.items() if count})


def _crossed(merchant_id: int, period: Period) -> list[sa.Row]:
    """The operations created in `period` that wait for a cross exchange's sold currency (and
    are no withdrawals), by state and currency, with their amounts: read from the portal's
    references to them, a few."""
    op, reference = MirroredOperation, CrossExchangeReference
    referred = (
        sa.select(reference.operation_id)
        .where(reference.merchant_id == merchant_id, reference.operation_id.is_not(None))
        .distinct()
        .subquery()
    )
    return list(
        db.session.execute(
            sa.select(op.state, op.currency, sa.func.count(), decimal_sum(op.amount))
            .select_from(referred)
            .join(op, op.operation_id == referred.c.operation_id)
            .where(*_created_in(merchant_id, period), op.category.not_in(WITHDRAWAL_CATEGORIES))
            .group_by(op.state, op.currency)
        )
    )


def _apart(merchant_id: int, period: Period, crossed: list[sa.Row]) -> list[Movement]:
    """Withdrawals (read through their own index) and cross exchanges' operations (`crossed`)
    created in `period`, per currency."""
    op = MirroredOperation
    withdrawals = db.session.execute(
        sa.select(op.currency, sa.func.count(), decimal_sum(op.amount))
        .where(*_created_in(merchant_id, period), op.category.in_(WITHDRAWAL_CATEGORIES))
        .group_by(op.currency)
    )
    exchanged: defaultdict[str, list] = defaultdict(lambda: [0, ZERO])
    for _state, currency, count, amount in crossed:
        exchanged[currency][0] += count
        exchanged[currency][1] += Decimal(amount)
    movements = [
        Movement(Apart.WITHDRAWAL, currency, count, Decimal(amount))
        for currency, count, amount in withdrawals
    ]
    movements += [
        Movement(Apart.CROSS_EXCHANGE, currency, count, amount)
        for currency, (count, amount) in exchanged.items()
    ]
    return sorted(movements, key=lambda movement: (movement.kind.value, movement.currency))


def _sales_money(
    merchant_id: int, generation: int, reporting: str, span: tuple[datetime, datetime]
) -> dict[tuple[str, str], Sums]:
    """The ledger's payments and fees of the merchant's connection in `span`: the money of
    sales, not withdrawals, vouchers or exchanges."""
    begins, ends = span
    kinds = (Kind.PAYMENT, Kind.FEE)
    return ledger_totals.sums(
        merchant_id, generation, begins, ends, reporting=reporting, kinds=kinds
    )


def _created_in(merchant_id: int, period: Period) -> tuple[sa.ColumnElement[bool], ...]:
    begins, ends = period.instants
    op = MirroredOperation
    return (op.merchant_id == merchant_id, op.created_at >= begins, op.created_at < ends)


def _counts_per_bucket(merchant_id: int, period: Period) -> list[int]:
    """Operations created in each bar's span (`operation_totals.created_in_each`): counting
    each bar's operations in the index read the whole period's, 161 ms for a year of 1,000,000
    operations on PostgreSQL."""
    bars = [(period.start(first), period.start(after)) for first, after in period.buckets()]
    return operation_totals.created_in_each(merchant_id, bars)


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
