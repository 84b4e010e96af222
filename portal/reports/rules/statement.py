"""The statement of a period: per currency, the balance at its start, what moved the wallet
(by kind, summed by the database), and the balance at its end; and the same in the merchant's
reporting currency, with the revaluation that makes its sum hold.

A period runs from just after `since` to `until` included, as balances do: the opening is the
balance at `since` (`portal.money.rules.balances`), a movement belongs to the period when the
portal first saw it after `since` and at or before `until`, and the closing is the balance at
`until`. So opening + lines = closing, and a movement the portal sees late is booked in the
period it is seen, never in one already reported.

An opening balance entered inside the period replaces what the portal had derived before it:
its effect (shown with the adjustments) is the entered balance less what it replaced, which is
whatever makes opening + lines = closing hold. Without one inside the period the adjustments
line is the sum of the adjustments alone, and the balance rule holds by itself.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from portal.identity.models import Merchant
from portal.money.rules import ledger_totals
from portal.money.rules.balances import balances
from portal.money.rules.ledger import Kind, valuation
from portal.money.rules.ledger_totals import Sums
from portal.money.rules.rate_history import RateBook

ZERO = Decimal(0)


class Line(enum.StrEnum):
    """A line of the statement, in its order."""

    RECEIVED = "received"
    FEES = "fees"
    NET = "net"
    WITHDRAWALS = "withdrawals"
    WITHDRAWAL_FEES = "withdrawal_fees"
    EXCHANGES_IN = "exchanges_in"
    EXCHANGES_OUT = "exchanges_out"
    VOUCHERS_ISSUED = "vouchers_issued"
    VOUCHERS_RETURNED = "vouchers_returned"
    VOUCHERS_PAID_OFF = "vouchers_paid_off"
    REFUNDS = "refunds"
    ADJUSTMENTS = "adjustments"


LINE_WORDS = {
    Line.RECEIVED: "Received (gross)",
    Line.FEES: "Fees",
    Line.NET: "Net received",
    Line.WITHDRAWALS: "Withdrawals",
    Line.WITHDRAWAL_FEES: "Withdrawal network fees",
    Line.EXCHANGES_IN: "Exchanges in",
    Line.EXCHANGES_OUT: "Exchanges out",
    Line.VOUCHERS_ISSUED: "Vouchers issued",
    Line.VOUCHERS_RETURNED: "Vouchers returned",
    Line.VOUCHERS_PAID_OFF: "Vouchers paid off",
    Line.REFUNDS: "Refunds",
    Line.ADJUSTMENTS: "Adjustments",
}
# The ledger's kinds each line sums (a refund's network fee is among the withdrawals' fees). Net
# is a subtotal, not a line the balance adds.
LINE_KINDS: dict[Line, tuple[Kind, ...]] = {
    Line.RECEIVED: (Kind.PAYMENT,),
    Line.FEES: (Kind.FEE,),
    Line.WITHDRAWALS: (Kind.WITHDRAWAL,),
    Line.WITHDRAWAL_FEES: (Kind.NETWORK_FEE,),
    Line.EXCHANGES_IN: (Kind.EXCHANGE_BOUGHT,),
    Line.EXCHANGES_OUT: (Kind.EXCHANGE_SOLD,),
    Line.VOUCHERS_ISSUED: (Kind.VOUCHER,),
    Line.VOUCHERS_RETURNED: (Kind.VOUCHER_RETURNED,),
    Line.VOUCHERS_PAID_OFF: (Kind.VOUCHER_PAYOFF,),
    Line.REFUNDS: (Kind.REFUND,),
    Line.ADJUSTMENTS: (Kind.ADJUSTMENT,),
}
NET_OF = (Line.RECEIVED, Line.FEES)


@dataclass(frozen=True)
class Figure:
    """One line: its amount (signed, as it moved the wallet) and how many movements make it;
    `without_value`: in the reporting currency, how many had no rate and are left out."""

    line: Line
    amount: Decimal | None
    count: int
    without_value: int = 0

    @property
    def words(self) -> str:
        return LINE_WORDS[self.line]

    @property
    def subtotal(self) -> bool:
        """Net repeats received and fees: it is not added to the balance again."""
        return self.line is Line.NET


@dataclass(frozen=True)
class CurrencyStatement:
    """One currency's period: opening + every line but the subtotal = closing."""

    currency: str
    opening: Decimal
    lines: list[Figure]
    closing: Decimal


@dataclass(frozen=True)
class ReportingStatement:
    """Every currency together in the reporting currency: each line the sum of its movements'
    values at their own times' rates; opening and closing at the rates in force at the period's
    start and end (None: no rate for a currency held then); the revaluation is what the rates'
    changes made of the balances held (None when either has no rate)."""

    currency: str
    opening: Decimal | None
    lines: list[Figure]
    revaluation: Decimal | None
    closing: Decimal | None


@dataclass(frozen=True)
class Statement:
    since: datetime
    until: datetime
    currencies: list[CurrencyStatement]
    reporting: ReportingStatement


def statement(merchant: Merchant, since: datetime, until: datetime) -> Statement:
    """The statement of what moved each currency from `since` (included) to `until` (not:
    the next period's first moment), as the ledger's export and the dashboard count it."""
    connection = merchant.api_connection
    generation = connection.generation if connection else -1  # no connection: no movement
    reporting = merchant.reporting_currency
    sums = _sums(merchant.id, generation, reporting, since, until)
    openings = {b.currency: b.amount for b in balances(merchant, since - ledger_totals.MICROSECOND)}
    closings = {b.currency: b.amount for b in balances(merchant, until - ledger_totals.MICROSECOND)}
    # The moment of each opening entered in the period (one at most per currency).
    opened = {
        currency: kinds[Kind.OPENING].last_at
        for currency, kinds in sums.items()
        if Kind.OPENING in kinds
    }
    book = RateBook.in_force_at(merchant.id, generation, [since, until, *opened.values()])
    currencies, effects = [], []
    for currency, closing in closings.items():
        opening = openings.get(currency, ZERO)
        lines = _lines(sums.get(currency, {}), _amount)
        if (opened_at := opened.get(currency)) is not None:
            effect = closing - opening - (_moved(lines) or ZERO)  # amounts are all known
            effects.append(valuation(effect, currency, reporting, opened_at, book).value)
            lines = _with_effect(lines, effect, 1)
        currencies.append(CurrencyStatement(currency, opening, lines, closing))
    return Statement(
        since,
        until,
        currencies,
        _in_reporting(reporting, sums, openings, closings, effects, book, since, until),
    )


def _sums(
    merchant_id: int, generation: int, reporting: str, since: datetime, until: datetime
) -> dict[str, dict[Kind, Sums]]:
    """Per currency and kind: amount, count, value in `reporting`, how many have no value and
    the latest moment, from the ledger's totals (`ledger_totals.sums`)."""
    found: dict[str, dict[Kind, Sums]] = {}
    for (currency, kind), sums in ledger_totals.sums(
        merchant_id, generation, since, until, reporting=reporting
    ).items():
        found.setdefault(currency, {})[Kind(kind)] = sums
    return found


def _amount(sums: Sums) -> Decimal:
    return sums.amount


def _value(sums: Sums) -> Decimal:
    return sums.value


def _moved(lines: list[Figure]) -> Decimal | None:
    """What the lines add to the balance (None: one has no value)."""
    return _total(f.amount for f in lines if not f.subtotal)


def _lines(kinds: Mapping[Kind, Sums], measure: Callable[[Sums], Decimal]) -> list[Figure]:
    """Every line, in order, from the sums of its kinds (`measure`: amount or value)."""
    figures: dict[Line, Figure] = {}
    for line, line_kinds in LINE_KINDS.items():
        found = [kinds[kind] for kind in line_kinds if kind in kinds]
        figures[line] = _together(
            line, [Figure(line, measure(s), s.count, s.without_value) for s in found]
        )
    figures[Line.NET] = _together(Line.NET, [figures[line] for line in NET_OF])
    return [figures[line] for line in Line]


def _together(line: Line, figures: Iterable[Figure]) -> Figure:
    """One line adding up `figures` (of the line's kinds, or of several currencies)."""
    figures = list(figures)
    return Figure(
        line,
        _total(f.amount for f in figures),
        sum(f.count for f in figures),
        sum(f.without_value for f in figures),
    )


def _with_effect(lines: list[Figure], effect: Decimal | None, openings: int) -> list[Figure]:
    """The lines with the effect of `openings` entered in the period among the adjustments."""
    return [
        _together(f.line, [f, Figure(f.line, effect, openings)])
        if f.line is Line.ADJUSTMENTS
        else f
        for f in lines
    ]


def _in_reporting(
    reporting: str,
    sums: dict[str, dict[Kind, Sums]],
    openings: dict[str, Decimal],
    closings: dict[str, Decimal],
    effects: list[Decimal | None],
    book: RateBook,
    since: datetime,
    until: datetime,
) -> ReportingStatement:
    """The lines' values added up over the currencies (a handful of sums, not rows)."""
    per_currency = [_lines(kinds, _value) for kinds in sums.values()] or [_lines({}, _value)]
    lines = [_together(fs[0].line, fs) for fs in zip(*per_currency, strict=True)]
    if effects:
        lines = _with_effect(lines, _total(effects), len(effects))
    opening = _worth(openings, reporting, since, book)
    closing = _worth(closings, reporting, until, book)
    moved = _moved(lines)
    revaluation = None
    if opening is not None and closing is not None and moved is not None:
        revaluation = closing - opening - moved
    return ReportingStatement(reporting, opening, lines, revaluation, closing)


def _worth(
    amounts: dict[str, Decimal], reporting: str, at: datetime, book: RateBook
) -> Decimal | None:
    """What the balances held at `at` were worth at the rates in force then; None when one
    held has no rate (a currency not held needs none)."""
    return _total(
        valuation(amount, currency, reporting, at, book).value
        for currency, amount in amounts.items()
        if amount != ZERO
    )


def _total(amounts: Iterable[Decimal | None]) -> Decimal | None:
    """The sum of a few figures already summed (None when one is unknown)."""
    known = list(amounts)
    return None if None in known else sum((a for a in known if a is not None), ZERO)
