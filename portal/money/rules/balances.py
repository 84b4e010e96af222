"""Balances: what each wallet holds, derived from the ledger, since the API tells no balance.

An owner enters a currency's balance as of a moment: the first entry is its opening (a movement
of kind `opening`, whose amount is the balance entered); each later one books the difference
from the balance derived at its moment as an `adjustment`, so that what the portal cannot see
(an exchange made elsewhere) is reconciled in the open. A currency's balance at a moment is its
opening plus every movement after the opening's moment up to that one. Movements dated at or
before the opening are inside it: the first sync books the history at the API's times, before
the owner could enter anything. A currency without an opening is derived from zero since its
first movement. Every sum is the database's, of the ledger's totals by month and day and of
the movements of the parts of days at a stretch's ends (`ledger_totals`), and everything
belongs to the merchant's current connection.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal

import sqlalchemy as sa

from portal.database import utcnow
from portal.extensions import db
from portal.identity.models import Merchant, User
from portal.identity.rules import audit
from portal.live.models import StatementMail
from portal.money.models import LedgerEntry
from portal.money.rules import ledger, ledger_totals, rate_history
from portal.money.rules.currencies import WITHDRAWAL_WALLETS, least_decimals
from portal.money.rules.ledger import VALUE_PLACES, Kind
from portal.periods import Period, zone_named

ZERO = Decimal(0)
ENTERED = (Kind.OPENING, Kind.ADJUSTMENT)


@dataclass(frozen=True)
class Balance:
    """One currency's derived balance, and its value at the latest recorded rates."""

    currency: str
    amount: Decimal
    since: datetime | None  # the opening's moment; None: derived from zero
    first_movement_at: datetime | None  # without an opening: since when it is derived
    value: Decimal | None  # in the reporting currency; None: no rate recorded for it
    value_currency: str
    rate_at: datetime | None  # when the portal last read that rate

    @property
    def negative(self) -> bool:
        """More left the wallet than the portal saw enter it: an opening or an adjustment is
        missing, or something moved where the portal cannot see."""
        return self.amount < 0


class Refusal(enum.StrEnum):
    """Why an entered balance was not booked."""

    NOT_CONNECTED = "not_connected"  # no connection, so no ledger to book it in
    FUTURE = "future"  # a balance as of a moment that has not come yet
    NOT_AFTER_LAST = "not_after_last"  # at or before the currency's last entered balance
    IN_MAILED_PERIOD = "in_mailed_period"  # inside a statement period already mailed


class BalanceRefused(Exception):
    """An entered balance the ledger cannot take; `last` is the moment of the currency's last
    entered balance (for `NOT_AFTER_LAST`) or the end of the last mailed statement period (for
    `IN_MAILED_PERIOD`)."""

    def __init__(self, reason: Refusal, last: datetime | None = None) -> None:
        super().__init__(reason.value)
        self.reason = reason
        self.last = last


@dataclass(frozen=True)
class Booked:
    """What an entered balance booked: its opening, or the adjustment from the balance the
    portal had derived at that moment (`derived`, None for an opening)."""

    kind: Kind
    currency: str
    entered: Decimal
    amount: Decimal
    derived: Decimal | None
    as_of: datetime


def balances(merchant: Merchant, at: datetime | None = None) -> list[Balance]:
    """Each wallet currency's balance at `at` (now when None; a moment at or after its last
    entered balance), then those of any other currency the ledger has moved, by code."""
    connection = merchant.api_connection
    if connection is None:
        return []
    sums = {row.currency: row for row in _sums(merchant.id, connection.generation, at)}
    currencies = [*WITHDRAWAL_WALLETS, *sorted(sums.keys() - set(WITHDRAWAL_WALLETS))]
    rates = rate_history.latest(merchant.id, connection.generation)
    reporting = merchant.reporting_currency
    found = []
    for currency in currencies:
        row = sums.get(currency)
        amount = row.total if row else ZERO
        price = _price(rates, currency, reporting)
        found.append(
            Balance(
                currency=currency,
                amount=amount,
                since=row.opened_at if row else None,
                first_movement_at=row.first_at if row and row.opened_at is None else None,
                value=_in(reporting, amount * price) if price is not None else None,
                value_currency=reporting,
                rate_at=rates.last_seen_at if rates and price is not None else None,
            )
        )
    return found


def balance_of(merchant: Merchant, currency: str) -> Balance | None:
    """One currency's balance now; None when the page has no balance of it to show."""
    return next((b for b in balances(merchant) if b.currency == currency), None)


def enter_balance(
    merchant: Merchant, user: User, currency: str, amount: Decimal, as_of: datetime
) -> Booked:
    """Book the balance `user` entered for `currency` as of `as_of`: the opening when it has
    none, else the adjustment from the balance derived then. Refused (BalanceRefused, nothing
    booked) for a moment in the future, at or before the currency's last entered balance,
    which a later one would contradict, or inside a statement period already mailed. Audited
    either way."""
    parameters = {"currency": currency, "amount": amount, "as_of": as_of.isoformat()}
    try:
        booked = _book(merchant, currency, amount, as_of)
    except BalanceRefused as refusal:
        audit.record("balance.enter", parameters=parameters, error=refusal.reason.value, user=user)
        raise
    parameters |= {"kind": booked.kind.value, "booked": booked.amount}
    audit.record("balance.enter", parameters=parameters, user=user)  # commits the movement too
    return booked


def movements(merchant: Merchant, currency: str) -> sa.Select[LedgerEntry]:
    """The movements of `currency`, newest first (a page pages it)."""
    connection = merchant.api_connection
    generation = connection.generation if connection else -1  # no connection: none
    return (
        sa.select(LedgerEntry)
        .where(*_of(merchant.id, generation, currency))
        .order_by(LedgerEntry.occurred_at.desc(), LedgerEntry.id.desc())
    )


def _book(merchant: Merchant, currency: str, amount: Decimal, as_of: datetime) -> Booked:
    connection = merchant.api_connection
    if connection is None:
        raise BalanceRefused(Refusal.NOT_CONNECTED)
    if as_of > utcnow():
        raise BalanceRefused(Refusal.FUTURE)
    mailed_until = _mailed_until(merchant.id)
    if mailed_until is not None and as_of < mailed_until:
        raise BalanceRefused(Refusal.IN_MAILED_PERIOD, mailed_until)
    generation = connection.generation
    last = db.session.scalar(
        sa.select(sa.func.max(LedgerEntry.occurred_at)).where(
            *_of(merchant.id, generation, currency), LedgerEntry.kind.in_(ENTERED)
        )
    )
    if last is not None and as_of <= last:
        raise BalanceRefused(Refusal.NOT_AFTER_LAST, last)
    if last is None:
        booked = Booked(Kind.OPENING, currency, amount, amount, None, as_of)
        subject = currency
    else:
        derived = next((row.total for row in _sums(merchant.id, generation, as_of, currency)), ZERO)
        booked = Booked(Kind.ADJUSTMENT, currency, amount, amount - derived, derived, as_of)
        subject = f"{currency}:{as_of.isoformat()}"
    ledger.book_entered(merchant, booked.kind, subject, currency, booked.amount, as_of)
    return booked


def _mailed_until(merchant_id: int) -> datetime | None:
    """When the latest statement period mailed to one of the merchant's users ended: a period
    sent never changes, so nothing may be booked before then (later corrections are booked
    when they are seen)."""
    latest = sa.func.max(StatementMail.period_end)
    rows = db.session.execute(
        sa.select(latest, User.time_zone)
        .join(User, User.id == StatementMail.user_id)
        .where(User.merchant_id == merchant_id)
        .group_by(User.id, User.time_zone)
    )
    ends = [Period(end, end, zone_named(name)).instants[1] for end, name in rows if end is not None]
    return max(ends, default=None)


@dataclass(frozen=True)
class _Derived:
    """A currency's balance at a moment, its opening's moment and, without an opening, its
    first movement's."""

    currency: str
    total: Decimal
    opened_at: datetime | None
    first_at: datetime | None


def _sums(
    merchant_id: int, generation: int, at: datetime | None, currency: str | None = None
) -> list[_Derived]:
    """Per currency that has a balance at `at`: the opening and what moved after its moment,
    or everything, up to `at`. Before its opening's moment a currency's balance is derived
    from zero, as the portal read it then: an opening entered later changes no figure of an
    earlier moment (its effect is booked at its own). The ledger's totals add up the
    stretches (`ledger_totals.sums`): an opening costs two sums more, of what moved up to its
    moment."""
    currencies = () if currency is None else (currency,)
    openings = {
        row.currency: row
        for row in db.session.execute(
            sa.select(LedgerEntry.currency, LedgerEntry.occurred_at, LedgerEntry.amount).where(
                LedgerEntry.merchant_id == merchant_id,
                LedgerEntry.connection_generation == generation,
                LedgerEntry.kind == Kind.OPENING,
                *((LedgerEntry.currency == currency,) if currency else ()),
            )
        )
    }
    end = None if at is None else at + ledger_totals.MICROSECOND
    moved = _moved_until(merchant_id, generation, end, currencies)
    found = []
    for code, (total, first_at) in sorted(moved.items()):
        opening = openings.get(code)
        if opening is None or (at is not None and opening.occurred_at > at):
            found.append(_Derived(code, total, None, first_at))
        else:
            after = opening.occurred_at + ledger_totals.MICROSECOND
            before, _ = _moved_until(merchant_id, generation, after, (code,))[code]
            found.append(_Derived(code, opening.amount + total - before, opening.occurred_at, None))
    return found


def _moved_until(
    merchant_id: int, generation: int, end: datetime | None, currencies: tuple[str, ...]
) -> dict[str, tuple[Decimal, datetime]]:
    """What moved each currency before `end` (None: ever), and its first movement."""
    found: dict[str, tuple[Decimal, datetime]] = {}
    sums = ledger_totals.sums(merchant_id, generation, None, end, currencies=currencies)
    for (code, _kind), moved in sums.items():
        total, first_at = found.get(code, (ZERO, moved.first_at))
        found[code] = (total + moved.amount, min(first_at, moved.first_at))
    return found


def _of(merchant_id: int, generation: int, currency: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (
        LedgerEntry.merchant_id == merchant_id,
        LedgerEntry.connection_generation == generation,
        LedgerEntry.currency == currency,
    )


def _price(rates: rate_history.RateRecord | None, currency: str, reporting: str) -> Decimal | None:
    if currency == reporting:
        return Decimal(1)
    return rate_history.price_of(rates.rates, currency, reporting) if rates else None


def _in(currency: str, amount: Decimal) -> Decimal:
    """An amount to the decimals `currency` is written with: a fiat one's cents, else the
    ledger's values' places."""
    places = least_decimals(currency)
    return amount.quantize(Decimal(1).scaleb(-places) if places else VALUE_PLACES, ROUND_HALF_EVEN)
