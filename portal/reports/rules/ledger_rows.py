"""The ledger of a period as rows an accountant sums: one row per movement, in time order.

Each movement of the merchant's current connection in [since, until) is one row, so no column
repeats an operation's amount on several rows: a payment, its fee and a later top-up are three
rows. `net` is the signed amount (money in positive): the sum of a currency's nets is its
closing balance less its opening. `gross` holds what came in (payments, exchanges bought,
vouchers returned or paid off, openings and adjustments), `fee` what the payment service or the
network charged (positive: the fee; its `net` is its negative); withdrawals, vouchers issued and
exchanges sold move `net` alone. `balance_after` is the currency's balance at the period's start
(`portal.money.rules.balances.balances`) plus the nets of the rows so far, added up in the order
the rows are read, never by reading rows again.

Before a currency's opening its balance is derived from zero (as `balances` counts it), and the
opening's row moves it by the opening's effect: the entered balance less the balance it
replaces. Other movements dated at the opening's very moment are inside it (as `balances`
counts them) and are not rows of their own. The transaction hash is given for a payment of an
operation that has exactly one transaction; with several, the mirror cannot tell which of them
a movement is, so the cell stays empty. Rows are read in chunks (keyset on the time and id), so
a year of movements takes the memory of one chunk.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from operator import attrgetter
from typing import IO, Any

import sqlalchemy as sa

from portal.database import decimal_sum
from portal.extensions import db
from portal.identity.models import Merchant
from portal.money.models import LedgerEntry
from portal.money.rules.balances import balances
from portal.money.rules.ledger import KIND_WORDS, Kind
from portal.payments.models import MirroredOperation
from portal.reports.rules.csv_rows import Column, TimeZone
from portal.reports.rules.workbook import Workbook

CHUNK = 500
ZERO = Decimal(0)
# Money in: the `gross` column; money the service or the network charged: the `fee` column.
GROSS_KINDS = frozenset(
    {
        Kind.PAYMENT,
        Kind.EXCHANGE_BOUGHT,
        Kind.VOUCHER_RETURNED,
        Kind.VOUCHER_PAYOFF,
        Kind.OPENING,
        Kind.ADJUSTMENT,
    }
)
FEE_KINDS = frozenset({Kind.FEE, Kind.NETWORK_FEE})
# Just before a moment: the ledger's times are kept to the microsecond.
INSTANT = timedelta(microseconds=1)


@dataclass(frozen=True)
class LedgerRow:
    """One movement as a row of the ledger's export."""

    id: int
    type: str
    occurred_at: datetime
    operation_id: str | None
    order_id: str | None
    tx_hash: str | None
    currency: str
    gross: Decimal | None
    fee: Decimal | None
    net: Decimal
    balance_after: Decimal
    value: Decimal | None
    rate: Decimal | None
    rate_at: datetime | None


@dataclass(frozen=True)
class CurrencySummary:
    """A currency's figures over the period: opening + net = closing."""

    currency: str
    opening: Decimal
    gross: Decimal
    fee: Decimal
    net: Decimal
    closing: Decimal


def ledger_columns(reporting: str) -> tuple[Column, ...]:
    """The ledger export's columns; the reporting currency named in the value's and rate's."""
    field = attrgetter
    code = reporting.lower()
    return (
        Column("id", "text", field("id")),
        Column("type", "text", field("type")),
        Column("time", "utc", field("occurred_at")),
        Column("local_time", "timestamp", field("occurred_at")),
        Column("operation_id", "text", field("operation_id")),
        Column("order_id", "text", field("order_id")),
        Column("tx_hash", "text", field("tx_hash")),
        Column("currency", "text", field("currency")),
        Column("gross", "decimal", field("gross")),
        Column("fee", "decimal", field("fee")),
        Column("net", "decimal", field("net")),
        Column("balance_after", "decimal", field("balance_after")),
        Column(f"value_{code}", "decimal", field("value")),
        Column(f"rate_{code}", "decimal", field("rate")),
        Column("rate_at", "utc", field("rate_at")),
    )


SUMMARY_COLUMNS = tuple(
    Column(name, "text" if name == "currency" else "decimal", attrgetter(name))
    for name in ("currency", "opening", "gross", "fee", "net", "closing")
)
SUMMARY_SHEET = "Summary"


def write_workbook(
    file: IO[bytes], merchant: Merchant, since: datetime, until: datetime, zone: TimeZone
) -> None:
    """The period's ledger as an `.xlsx` in `file`: the Summary sheet first, then a sheet per
    currency of its rows (`TooManyRows` for a currency with more than a sheet holds). A
    currency is the API's text: its sheet is named as a spreadsheet allows (`sheet_name`: a
    name like `US[D]`, `summary` or longer than 31 characters is changed, never refused), and
    its rows' cells hold it as it is."""
    book = Workbook(file)
    figures = summaries(merchant, since, until)
    book.sheet(SUMMARY_SHEET, SUMMARY_COLUMNS, zone).add_all(figures)
    columns = ledger_columns(merchant.reporting_currency)
    sheets = {summary.currency: book.sheet(summary.currency, columns, zone) for summary in figures}
    for row in ledger_rows(merchant, since, until):
        sheets[row.currency].add(row)
    book.close()


def openings(merchant: Merchant, since: datetime) -> dict[str, Decimal]:
    """Each currency's balance as the period starts: everything before `since`."""
    return {balance.currency: balance.amount for balance in balances(merchant, since - INSTANT)}


def ledger_rows(merchant: Merchant, since: datetime, until: datetime) -> Iterator[LedgerRow]:
    """The period's movements, oldest first, each with its currency's balance after it."""
    running = openings(merchant, since)
    reporting = merchant.reporting_currency
    query = _movements(merchant, since, until)
    after: tuple[datetime, int] | None = None
    while True:
        page = query
        if after is not None:
            # One comparison of the pair: both databases seek it in the index of the order.
            page = query.where(sa.tuple_(LedgerEntry.occurred_at, LedgerEntry.id) > after)
        chunk = db.session.execute(page.limit(CHUNK)).all()
        for entry, order_id, transactions in chunk:
            before = running.get(entry.currency, ZERO)
            net = entry.amount - before if entry.kind == Kind.OPENING else entry.amount
            running[entry.currency] = before + net
            yield _row(entry, order_id, transactions, net, before + net, reporting)
        if len(chunk) < CHUNK:
            return
        after = (chunk[-1][0].occurred_at, chunk[-1][0].id)


def summaries(merchant: Merchant, since: datetime, until: datetime) -> list[CurrencySummary]:
    """Per currency with a balance or a movement: its opening, the period's totals of gross,
    fee and net (the database's exact sums; an opening entered in the period adds its effect,
    what makes them reach the closing balance `balances` derives) and its closing, opening +
    net."""
    opening = openings(merchant, since)
    closing = openings(merchant, until)  # the balances as the next period starts
    totals = {
        row.currency: row
        for row in db.session.execute(
            _in_period(
                sa.select(
                    LedgerEntry.currency,
                    decimal_sum(_when(GROSS_KINDS - {Kind.OPENING})).label("gross"),
                    decimal_sum(_when(FEE_KINDS)).label("fee"),
                    decimal_sum(_when(frozenset(Kind) - {Kind.OPENING})).label("net"),
                    sa.func.count().filter(LedgerEntry.kind == Kind.OPENING).label("openings"),
                ),
                merchant,
                since,
                until,
            ).group_by(LedgerEntry.currency)
        )
    }
    found = []
    for currency in [*opening, *sorted(totals.keys() - opening.keys())]:
        row = totals.get(currency)
        start = opening.get(currency, ZERO)
        net, gross = (Decimal(row.net or 0), Decimal(row.gross or 0)) if row else (ZERO, ZERO)
        if row and row.openings:
            effect = closing.get(currency, ZERO) - start - net
            net, gross = net + effect, gross + effect
        found.append(
            CurrencySummary(
                currency=currency,
                opening=start,
                gross=gross,
                fee=-Decimal(row.fee or 0) if row else ZERO,
                net=net,
                closing=start + net,
            )
        )
    return found


def _when(kinds: frozenset[Kind]) -> sa.ColumnElement[Any]:
    return sa.case((LedgerEntry.kind.in_(kinds), LedgerEntry.amount), else_=sa.null())


def _row(
    entry: LedgerEntry,
    order_id: str | None,
    transactions: Any,
    net: Decimal,
    balance_after: Decimal,
    reporting: str,
) -> LedgerRow:
    """The movement as a row; its value and rate only when given in the reporting currency the
    header names (a movement left in another, until `ledger.revalue` ran, has none)."""
    kind = entry.kind
    valued = entry.value_currency == reporting
    only_one = isinstance(transactions, list) and len(transactions) == 1
    return LedgerRow(
        id=entry.id,
        type=KIND_WORDS.get(kind, kind),  # type: ignore[call-overload]
        occurred_at=entry.occurred_at,
        operation_id=entry.operation_id,
        order_id=order_id,
        tx_hash=transactions[0].get("tx_id") if only_one and kind == Kind.PAYMENT else None,
        currency=entry.currency,
        gross=net if kind in GROSS_KINDS else None,
        fee=-net if kind in FEE_KINDS else None,
        net=net,
        balance_after=balance_after,
        value=entry.value if valued else None,
        rate=entry.rate if valued else None,
        rate_at=entry.rate_at if valued else None,
    )


def _movements(merchant: Merchant, since: datetime, until: datetime) -> sa.Select:
    """The period's movements with each one's order number and its operation's transactions,
    from the mirror."""
    query = sa.select(
        LedgerEntry, MirroredOperation.order_id, MirroredOperation.record["transactions"]
    ).outerjoin(
        MirroredOperation,
        sa.and_(
            MirroredOperation.merchant_id == merchant.id,
            MirroredOperation.operation_id == LedgerEntry.operation_id,
        ),
    )
    return _in_period(query, merchant, since, until).order_by(
        LedgerEntry.occurred_at, LedgerEntry.id
    )


def _in_period(query: sa.Select, merchant: Merchant, since: datetime, until: datetime) -> sa.Select:
    """`query` kept to the movements of the current connection in [since, until), but those
    inside a currency's opening (dated at its very moment), as `balances` counts them."""
    connection = merchant.api_connection
    generation = connection.generation if connection else -1  # no connection: none
    of_merchant = (
        LedgerEntry.merchant_id == merchant.id,
        LedgerEntry.connection_generation == generation,
    )
    opening = (
        sa.select(LedgerEntry.currency, LedgerEntry.occurred_at.label("at"))
        .where(*of_merchant, LedgerEntry.kind == Kind.OPENING)
        .subquery()
    )
    return query.outerjoin(opening, opening.c.currency == LedgerEntry.currency).where(
        *of_merchant,
        LedgerEntry.occurred_at >= since,
        LedgerEntry.occurred_at < until,
        sa.or_(
            opening.c.at.is_(None),
            LedgerEntry.kind == Kind.OPENING,
            LedgerEntry.occurred_at != opening.c.at,
        ),
    )
