"""The ledger: each movement of a merchant's wallets, booked once, with its value in the
merchant's reporting currency (the money model's wallet movements).

A payment operation's wallet (its payment currency) moves by every change of the money the API
counts for it (`amount_paid`), and its fee leaves once, when it is first confirmed. A withdrawal
takes its amount and its network fee. A voucher takes its amount when issued and gives it back
when cancelled or expired; one paid off through the portal gives its amount. An exchange made
through the portal takes what it sold and gives what it bought. The operations of cross
exchanges move nothing: their money goes past the wallets. Each movement has a key: booking
what is already booked adds nothing, so a full resync, or a sync begun again after a worker
died, books nothing twice.

A movement's time is when the portal first saw it; the history that the mirror's first sync
reads happened before the portal watched, so it is dated as the API dates it. Its value is
taken at the rate of that time and kept; a change of reporting currency values everything again
(`revalue`).
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from functools import partial
from typing import Any, TypeVar, cast

import sqlalchemy as sa

from portal.api import Operation, Voucher
from portal.database import decimal_sum
from portal.extensions import db
from portal.identity.models import Merchant
from portal.identity.rules import accounts
from portal.money.models import (
    ExchangeRecord,
    IntentState,
    LedgerEntry,
    Refund,
    WithdrawalIntent,
)
from portal.money.rules import cross_exchanges, idempotency, ledger_totals
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
    WITHDRAWAL = "withdrawal"  # the amount a withdrawal sent
    NETWORK_FEE = "network_fee"  # the network fee a withdrawal paid besides its amount
    REFUND = "refund"  # a withdrawal that sent an operation's money back to its customer
    VOUCHER = "voucher"  # a voucher's amount, taken when it is issued
    VOUCHER_RETURNED = "voucher_returned"  # given back when the voucher is cancelled or expires
    VOUCHER_PAYOFF = "voucher_payoff"  # given by a voucher paid off through the portal
    EXCHANGE_SOLD = "exchange_sold"  # what an exchange through the portal sold (its fee inside)
    EXCHANGE_BOUGHT = "exchange_bought"  # what it bought
    OPENING = "opening"  # the balance an owner entered, as of a moment (`balances`)
    ADJUSTMENT = "adjustment"  # a later entry's difference from the balance derived then


# Each kind in a person's words: movement lists, exports and statements say them alike.
KIND_WORDS = {
    Kind.PAYMENT: "Payment",
    Kind.FEE: "Fee",
    Kind.WITHDRAWAL: "Withdrawal",
    Kind.NETWORK_FEE: "Network fee",
    Kind.REFUND: "Refund",
    Kind.VOUCHER: "Voucher issued",
    Kind.VOUCHER_RETURNED: "Voucher returned",
    Kind.VOUCHER_PAYOFF: "Voucher paid off",
    Kind.EXCHANGE_SOLD: "Exchange, sold",
    Kind.EXCHANGE_BOUGHT: "Exchange, bought",
    Kind.OPENING: "Opening balance",
    Kind.ADJUSTMENT: "Adjustment",
}

# A voucher in these statuses gave its amount back to the wallet.
RETURNED_VOUCHER_STATUSES = frozenset({"cancelled", "expired"})


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
    moneys: Sequence[tuple[Operation, OperationMoney]],
    seen_at: datetime | None,
) -> int:
    """Book what changed in the money of these operations since the ledger last saw them: a
    payment movement by the change of the money counted, the fee at the first confirmation, a
    withdrawal and its network fee when first seen. `seen_at` is now; None books history, each
    movement at the API's time of it. How many movements were booked (added to the session; the
    caller commits)."""
    sales = [
        (operation, money)
        for operation, money in moneys
        if operation.category not in WITHDRAWAL_CATEGORIES and operation.currency_paid
    ]
    exchanges = cross_exchanges.paying_operations(merchant_id, [o for o, _ in sales])
    sales = [(o, m) for o, m in sales if o.id not in exchanges]
    booked, counts = _booked_payments(merchant_id, generation, [o.id for o, _ in sales])
    entry = partial(_entry, merchant_id, generation)
    entries = []
    for operation, money in sales:
        api_at = max([operation.updated_at, *(t.updated_at for t in operation.transactions)])
        at = seen_at or api_at
        of_operation = {
            "currency": money.currency,
            "occurred_at": at,
            "api_at": api_at,
            "operation_id": operation.id,
            "priced_in": operation.currency,
            "operation_rate": operation.rate,
        }
        change = money.received - booked[operation.id]
        if change:
            number = counts[operation.id] + 1
            subject = f"{operation.id}:{number}"
            entries.append(entry(Kind.PAYMENT, subject, amount=change, **of_operation))
        if money.fee:
            entries.append(entry(Kind.FEE, operation.id, amount=-money.fee, **of_operation))
    withdrawals = [o for o, _ in moneys if o.category in WITHDRAWAL_CATEGORIES]
    _recognize_lost_answers(merchant_id, generation, withdrawals)
    refunds = _refund_withdrawals(merchant_id, [o.id for o in withdrawals])
    _rebook_as_refunds(merchant_id, generation, refunds)
    for operation in withdrawals:
        if operation.id in refunds:
            sent = _withdrawal(entry, operation, seen_at, Kind.REFUND)
            for movement in sent:
                movement.operation_id = refunds[operation.id]  # the refund moves the sale's money
            entries += sent
        else:
            entries += _withdrawal(entry, operation, seen_at)
    return _book(merchant_id, generation, entries)


def book_vouchers(
    merchant_id: int,
    generation: int,
    vouchers: Iterable[Voucher],
    seen_at: datetime | None,
) -> int:
    """Book what these vouchers (read from the voucher list) moved and is not booked yet: the
    amount taken when issued, given back when cancelled or expired. A voucher paid off is no
    movement of its own here: a payoff through the portal is booked when it is made
    (`book_payoff`), and one made elsewhere moved nothing the portal can see. `seen_at` is now;
    None books history at the API's times. How many were booked (the caller commits)."""
    entry = partial(_entry, merchant_id, generation)
    entries = []
    for voucher in vouchers:
        common = {"currency": voucher.currency, "subject": voucher.id}
        entries.append(
            entry(
                Kind.VOUCHER,
                amount=-voucher.amount,
                occurred_at=seen_at or voucher.created_at,
                api_at=voucher.created_at,
                **common,
            )
        )
        if voucher.status in RETURNED_VOUCHER_STATUSES:
            entries.append(
                entry(
                    Kind.VOUCHER_RETURNED,
                    amount=voucher.amount,
                    occurred_at=seen_at or voucher.updated_at,
                    api_at=voucher.updated_at,
                    **common,
                )
            )
    return _book(merchant_id, generation, entries)


def vouchers_booked_until(merchant_id: int, generation: int) -> datetime | None:
    """The API's time of the newest voucher movement booked from the voucher list (None: none
    yet): the list changed after it may hold movements still to book. A payoff through the
    portal is booked when it is made, whatever the list says: counted, it would pass over a
    voucher canceled before it that no sync had read yet."""
    return db.session.scalar(
        sa.select(sa.func.max(LedgerEntry.api_at)).where(
            LedgerEntry.merchant_id == merchant_id,
            LedgerEntry.connection_generation == generation,
            LedgerEntry.kind.in_((Kind.VOUCHER, Kind.VOUCHER_RETURNED)),
        )
    )


def book_payoff(merchant: Merchant, voucher: Voucher, at: datetime) -> None:
    """Book the amount a voucher paid off through the portal gave to its currency's wallet, at
    `at`; added to the caller's transaction, with what else it records of the payoff."""
    generation = _generation(merchant)
    payoff = _entry(
        merchant.id,
        generation,
        Kind.VOUCHER_PAYOFF,
        voucher.id,
        currency=voucher.currency,
        amount=voucher.amount,
        occurred_at=at,
        api_at=voucher.updated_at,
    )
    _book(merchant.id, generation, [payoff])


def book_exchange(merchant: Merchant, exchange: ExchangeRecord, at: datetime) -> None:
    """Book an exchange made through the portal, at `at` (when the API answered): the sold
    amount leaves its wallet, the bought one enters its own; a side the API did not tell is not
    booked. Added to the caller's transaction, with the ExchangeRecord."""
    generation = _generation(merchant)
    entry = partial(
        _entry,
        merchant.id,
        generation,
        subject=exchange.exchange_id,
        occurred_at=at,
        api_at=exchange.created_at,
    )
    sold = exchange.sell_amount
    sides = (
        (Kind.EXCHANGE_SOLD, exchange.sell_currency, None if sold is None else -sold),
        (Kind.EXCHANGE_BOUGHT, exchange.buy_currency, exchange.buy_amount),
    )
    entries = [
        entry(kind, currency=currency, amount=amount)
        for kind, currency, amount in sides
        if amount is not None
    ]
    _book(merchant.id, generation, entries)


def revalue(merchant_id: int, generation: int, reporting: str) -> tuple[int, int]:
    """Value every movement of the connection again in `reporting` (the merchant chose another
    reporting currency), each at the rate recorded at its own time, its months with it; how
    many were valued, and how many of them found no rate. Committed chunk by chunk."""
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
        former = [_Movement(**_columns(entry)) for entry in entries]
        _value(
            entries, reporting, RateBook(merchant_id, generation, (e.occurred_at for e in entries))
        )
        ledger_totals.add(merchant_id, generation, former, sign=-1)
        ledger_totals.add(merchant_id, generation, entries)
        db.session.commit()
        valued += len(entries)
        without_rate += sum(1 for entry in entries if entry.value is None)
        last_id = entries[-1].id


def _value(entries: Iterable[LedgerEntry | _Movement], reporting: str, rates: RateBook) -> None:
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


def book_entered(
    merchant: Merchant, kind: Kind, subject: str, currency: str, amount: Decimal, at: datetime
) -> None:
    """Book a balance an owner entered (`portal.money.rules.balances`): its opening, or the
    adjustment from the balance derived at `at`. Added to the caller's transaction."""
    generation = _generation(merchant)
    movement = _entry(
        merchant.id, generation, kind, subject, currency=currency, amount=amount, occurred_at=at
    )
    _book(merchant.id, generation, [movement])


def _generation(merchant: Merchant) -> int:
    """The generation of the connection a movement made through the portal went through."""
    assert merchant.api_connection is not None  # the API was called through it
    return merchant.api_connection.generation


def book_refund(merchant: Merchant, refund: Refund, withdrawal: Operation, at: datetime) -> None:
    """Book the withdrawal that sent a refund, at `at` (when the API answered), under the keys
    the mirror books it by when it sees the withdrawal later: booked once. Added to the
    caller's transaction, with the refund's outcome."""
    generation = _generation(merchant)
    entry = partial(_entry, merchant.id, generation)
    entries = _withdrawal(entry, withdrawal, at, Kind.REFUND)
    for booked in entries:
        booked.operation_id = refund.operation_id  # the refund moves the sale's money
    _rebook_as_refunds(merchant.id, generation, {withdrawal.id: refund.operation_id})
    _book(merchant.id, generation, entries)


def _rebook_as_refunds(merchant_id: int, generation: int, sales: Mapping[str, str]) -> None:
    """The withdrawals among `sales` (withdrawal id -> the refunded sale) that were booked as
    plain withdrawals, the mirror having seen them before the portal knew they sent a refund
    (its answer awaited, or lost): each becomes the refund's movement, never a second one."""
    if not sales:
        return
    keys = {f"{Kind.WITHDRAWAL.value}:{withdrawal}": withdrawal for withdrawal in sales}
    booked = list(
        db.session.scalars(
            sa.select(LedgerEntry).where(
                LedgerEntry.merchant_id == merchant_id,
                LedgerEntry.connection_generation == generation,
                LedgerEntry.key.in_(list(keys)),
            )
        )
    )
    if not booked:
        return
    ledger_totals.add(merchant_id, generation, [_Movement(**_columns(e)) for e in booked], -1)
    for entry in booked:
        withdrawal = keys[entry.key]
        entry.kind, entry.key = Kind.REFUND, f"{Kind.REFUND.value}:{withdrawal}"
        entry.operation_id = sales[withdrawal]
    ledger_totals.add(merchant_id, generation, booked)
    db.session.flush()  # read by the booking that follows (a sync books without autoflush)


Lost = TypeVar("Lost", WithdrawalIntent, Refund)


def _recognize_lost_answers(
    merchant_id: int, generation: int, withdrawals: Sequence[Operation]
) -> None:
    """Tie each withdrawal or refund whose answer was lost to the withdrawal the mirror now
    sees it made: same currency, address and amount, made once it was asked, and tied to no
    other. A refund is then booked as one, and the daily limits count each once (they count
    what the ledger booked, and a lost answer until the mirror sees its operation)."""
    if not withdrawals:
        return
    intents = _lost(WithdrawalIntent, WithdrawalIntent.operation_id, merchant_id)
    # A refund of another account's connection: these withdrawals are not its own.
    refunds = _lost(
        Refund, Refund.withdrawal_id, merchant_id, Refund.connection_generation == generation
    )
    if not (intents or refunds):  # nearly always: no query more for a sync's page
        return
    ids = [operation.id for operation in withdrawals]
    taken = {
        *_tied(WithdrawalIntent.operation_id, merchant_id, ids),
        *_tied(Refund.withdrawal_id, merchant_id, ids),
    }
    oldest_first = sorted(withdrawals, key=lambda withdrawal: withdrawal.created_at)
    for intent in intents:
        intent.operation_id = _made(intent, intent.wallet, oldest_first, taken)
    for refund in refunds:
        refund.withdrawal_id = _made(refund, refund.currency, oldest_first, taken)
    db.session.flush()  # the refunds' withdrawals are read next (a sync books without autoflush)


def _tied(
    column: sa.orm.InstrumentedAttribute[str | None], merchant_id: int, ids: list[str]
) -> set[str]:
    owner = column.class_
    return {
        tied
        for tied in db.session.scalars(
            sa.select(column).where(owner.merchant_id == merchant_id, column.in_(ids))
        )
        if tied is not None
    }


def _lost(
    model: type[Lost],
    tie: sa.orm.InstrumentedAttribute[str | None],
    merchant_id: int,
    *criteria: sa.ColumnElement[bool],
) -> list[Lost]:
    """The merchant's requests of `model` whose answer was lost, tied to no operation yet (and
    meeting `criteria`)."""
    return list(
        db.session.scalars(
            sa.select(model).where(
                model.merchant_id == merchant_id,
                model.state == IntentState.UNKNOWN,
                tie.is_(None),
                *criteria,
            )
        )
    )


def _made(
    request: WithdrawalIntent | Refund,
    currency: str,
    withdrawals: Sequence[Operation],
    taken: set[str],
) -> str | None:
    """The id of the withdrawal `request` made among `withdrawals` (oldest first; then
    taken), or None: the earliest made while it was under way."""
    for operation in withdrawals:
        if (
            operation.id not in taken
            and operation.currency == currency
            and operation.address == request.address
            and operation.amount == request.amount
            and idempotency.while_under_way(request, operation.created_at)
        ):
            taken.add(operation.id)
            return operation.id
    return None


def _refund_withdrawals(merchant_id: int, operation_ids: list[str]) -> dict[str, str]:
    """Which of these withdrawals sent a refund, each with the sale it refunded."""
    found: dict[str, str] = {}
    for start in range(0, len(operation_ids), LOOKUP_CHUNK):
        found.update(
            (withdrawal_id, sale)
            for withdrawal_id, sale in db.session.execute(
                sa.select(Refund.withdrawal_id, Refund.operation_id).where(
                    Refund.merchant_id == merchant_id,
                    Refund.withdrawal_id.in_(operation_ids[start : start + LOOKUP_CHUNK]),
                )
            )
            if withdrawal_id is not None
        )
    return found


def _withdrawal(
    entry: Callable[..., _Movement],
    operation: Operation,
    seen_at: datetime | None,
    kind: Kind = Kind.WITHDRAWAL,
) -> list[_Movement]:
    """A withdrawal's amount out of its wallet (`kind`: a refund's is a refund), and its network
    fee if it paid one (an internal transfer does not)."""
    common = {
        "subject": operation.id,
        "currency": operation.currency,
        "occurred_at": seen_at or operation.created_at,
        "api_at": operation.created_at,
        "operation_id": operation.id,
    }
    entries = [entry(kind, amount=-operation.amount, **common)]
    if operation.fee:
        entries.append(entry(Kind.NETWORK_FEE, amount=-operation.fee, **common))
    return entries


@dataclass
class _Movement:
    """A movement to book: the LedgerEntry row `_book` inserts. A plain object, since a first
    sync makes one or two for each operation, and an ORM object costs more than the rest of
    their booking."""

    merchant_id: int
    connection_generation: int
    key: str
    kind: str
    currency: str
    amount: Decimal
    occurred_at: datetime
    api_at: datetime | None = None
    operation_id: str | None = None
    priced_in: str | None = None
    operation_rate: Decimal | None = None
    value: Decimal | None = None
    value_currency: str | None = None
    rate: Decimal | None = None
    rate_at: datetime | None = None


def _columns(entry: LedgerEntry) -> dict[str, Any]:
    """A booked movement's columns, as `_Movement` holds them."""
    return {field.name: getattr(entry, field.name) for field in fields(_Movement)}


def _entry(
    merchant_id: int, generation: int, kind: Kind, subject: str, **columns: Any
) -> _Movement:
    """A movement of `kind` under its key: the kind and what it moved for (an operation, a
    voucher, an exchange; a payment adds its number)."""
    return _Movement(
        merchant_id=merchant_id,
        connection_generation=generation,
        key=f"{kind.value}:{subject}",
        kind=kind,
        **columns,
    )


def _book(merchant_id: int, generation: int, entries: list[_Movement]) -> int:
    """Insert the entries whose key is not booked yet, valued at their own time in the
    reporting currency, in one statement (a sync books a page's movements at once: the
    session's unit of work would take longer than the rest of their booking); how many.

    The reporting currency is read with the merchant's row locked until the commit: a change
    of currency, which values the booked movements again, then comes wholly before or after
    these. Read when a sync began, minutes before, it left a page booked during a change
    valued in the old currency for good."""
    entries = _unbooked(merchant_id, generation, entries)
    if not entries:
        return 0
    accounts.lock_merchant(merchant_id)
    reporting = db.session.scalar(
        sa.select(Merchant.reporting_currency).where(Merchant.id == merchant_id)
    )
    assert reporting is not None  # the merchant's row, locked above
    _value(entries, reporting, RateBook(merchant_id, generation, (e.occurred_at for e in entries)))
    db.session.execute(
        sa.insert(cast(sa.Table, LedgerEntry.__table__)), [vars(entry) for entry in entries]
    )
    ledger_totals.add(merchant_id, generation, entries)
    return len(entries)


def _unbooked(merchant_id: int, generation: int, entries: list[_Movement]) -> list[_Movement]:
    """The entries whose key is neither booked nor earlier in the list; a query per chunk."""
    by_key = {entry.key: entry for entry in reversed(entries)}
    keys = list(by_key)
    for start in range(0, len(keys), LOOKUP_CHUNK):
        for key in db.session.scalars(
            sa.select(LedgerEntry.key).where(
                LedgerEntry.merchant_id == merchant_id,
                LedgerEntry.connection_generation == generation,
                LedgerEntry.key.in_(keys[start : start + LOOKUP_CHUNK]),
            )
        ):
            del by_key[key]
    return [entry for entry in entries if by_key.get(entry.key) is entry]


def _booked_payments(
    merchant_id: int, generation: int, operation_ids: list[str]
) -> tuple[defaultdict[str, Decimal], defaultdict[str, int]]:
    """Of these operations: the payments booked, their sum and how many; a query per chunk."""
    sums: defaultdict[str, Decimal] = defaultdict(Decimal)
    counts: defaultdict[str, int] = defaultdict(int)
    for start in range(0, len(operation_ids), LOOKUP_CHUNK):
        chunk = operation_ids[start : start + LOOKUP_CHUNK]
        rows = db.session.execute(
            sa.select(
                LedgerEntry.operation_id,
                sa.func.count(),
                decimal_sum(LedgerEntry.amount),
            )
            .where(
                LedgerEntry.merchant_id == merchant_id,
                LedgerEntry.connection_generation == generation,
                LedgerEntry.kind == Kind.PAYMENT,
                LedgerEntry.operation_id.in_(chunk),
            )
            .group_by(LedgerEntry.operation_id)
        )
        for operation_id, count, total in rows:
            assert operation_id is not None  # asked for by id
            sums[operation_id], counts[operation_id] = Decimal(total), count
    return sums, counts


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


def _exact(amount: Decimal) -> Decimal:
    return amount.quantize(VALUE_PLACES, ROUND_HALF_EVEN)
