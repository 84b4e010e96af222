"""The ledger's totals by month and day (`portal.money.rules.ledger_totals`): sums over any
stretch of time, and the balances derived from them, are what adding up every movement gives,
at month and day boundaries, a microsecond either side of them, with movements booked into the
past; and the totals kept as movements are booked, at once in several transactions too, and
valued again, are those counted from the movements (the migration's test is in
tests/app/test_database_migrations.py)."""

from __future__ import annotations

import random
import threading
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from tests.support import factories
from tests.support.ledger import Movement, book, totals_of
from tests.support.portal_app import MERCHANT

MICROSECOND = timedelta(microseconds=1)
KINDS = ("payment", "fee", "withdrawal", "voucher", "exchange_bought", "voucher_returned")
CURRENCIES = ("BTC", "ETH", "USDT")
# Month and day boundaries, a microsecond either side of them, and moments inside days.
MOMENTS = [
    datetime(2025, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 1, 1, tzinfo=UTC),
    datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    datetime(2026, 1, 16, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 1, 17, tzinfo=UTC),
    datetime(2026, 1, 17, 8, 30, tzinfo=UTC),
    datetime(2026, 1, 18, tzinfo=UTC),
    datetime(2026, 2, 1, tzinfo=UTC),
    datetime(2026, 2, 28, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 3, 1, tzinfo=UTC),
    datetime(2026, 3, 15, 12, tzinfo=UTC),
    datetime(2026, 4, 30, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 5, 1, tzinfo=UTC),
    datetime(2026, 5, 2, tzinfo=UTC),
]


@pytest.fixture
def ledger(each_database, app, accounts) -> list[Movement]:
    """Acme's ledger of 120 movements of several kinds and currencies, booked in random order
    (each into its month, past months too) at moments on and around month boundaries."""
    randomness = random.Random(5)
    movements = [
        (
            randomness.choice(KINDS),
            randomness.choice(CURRENCIES),
            Decimal(randomness.randint(-(10**9), 10**9)).scaleb(-8),
            randomness.choice(MOMENTS) + timedelta(seconds=randomness.choice((0, 0, 7))),
        )
        for _ in range(120)
    ]
    factories.api_connection(app)
    book(app, movements)
    return movements


def added_up(booked, start, end) -> dict[tuple[str, str], tuple[Decimal, int]]:
    """Every movement from `start` (included) to `end` (excluded), added up one by one."""
    found: dict[tuple[str, str], tuple[Decimal, int]] = {}
    for kind, currency, amount, at in booked:
        if (start is None or at >= start) and (end is None or at < end):
            total, count = found.get((currency, kind), (Decimal(0), 0))
            found[(currency, kind)] = (total + amount, count + 1)
    return found


def test_every_stretch_adds_up_to_its_movements(app, ledger):
    from portal.identity.rules import accounts
    from portal.money.rules import ledger_totals

    bounds = [None, *MOMENTS, *(m + MICROSECOND for m in MOMENTS)]
    stretches = [(a, b) for a in bounds for b in bounds if a is None or b is None or a < b]
    with app.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        generation = merchant.api_connection.generation
        for start, end in stretches:
            sums = ledger_totals.sums(merchant.id, generation, start, end)
            found = {key: (s.amount, s.count) for key, s in sums.items()}
            assert found == added_up(ledger, start, end), (start, end)


def test_a_balance_is_its_opening_and_what_moved_after_it(app, ledger):
    """An opening entered as of a moment inside the ledger: what moved at or before it is
    inside it, what moved after it adds to it; before its moment, and for a currency without
    one, the balance adds up from zero (an opening entered later changes no earlier figure)."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.rules import balances

    opened_at = datetime(2026, 2, 1, tzinfo=UTC)
    with app.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        owner = merchant.users[0]
        balances.enter_balance(merchant, owner, "ETH", Decimal("2.5"), opened_at)
        db.session.commit()
        for at in [*MOMENTS, *(m + MICROSECOND for m in MOMENTS)]:
            found = {b.currency: b.amount for b in balances.balances(merchant, at)}
            for currency in CURRENCIES:
                moved = [
                    (amount, moment)
                    for _kind, code, amount, moment in ledger
                    if code == currency and moment <= at
                ]
                if currency == "ETH" and at >= opened_at:
                    moved = [(a, m) for a, m in moved if m > opened_at] + [(Decimal("2.5"), at)]
                assert found.get(currency, Decimal(0)) == sum(a for a, _ in moved), (currency, at)


def counted(app) -> list[tuple]:
    """The totals counted from the booked movements, one by one, as `totals_of` lists them."""
    from portal.extensions import db
    from portal.money.models import LedgerEntry

    found: dict[tuple, list] = {}
    with app.app_context():
        for e in db.session.scalars(sa.select(LedgerEntry)):
            day = e.occurred_at.date()
            for span, starts in (("month", day.replace(day=1)), ("day", day)):
                key = (e.merchant_id, e.connection_generation, span, starts, e.currency, e.kind)
                key += (e.value_currency or "",)
                total = found.setdefault(key, [Decimal(0), 0, Decimal(0), 0, e.occurred_at, None])
                total[0] += e.amount
                total[1] += 1
                total[2] += e.value or 0
                total[3] += e.value is not None
                total[4] = min(total[4], e.occurred_at)
                total[5] = max(total[5] or e.occurred_at, e.occurred_at)
    return sorted((*key, *total) for key, total in found.items())


def test_totals_kept_as_booked_are_the_totals_counted_from_the_movements(app, ledger):
    kept = totals_of(app)
    assert len(kept) > 40 and sum(total[8] for total in kept) == 2 * len(ledger)  # month, day
    assert kept == counted(app)


def test_a_change_of_reporting_currency_moves_the_totals_values_with_the_movements(app, ledger):
    """Valued again in EUR (at the rates recorded, here none: no value), every total's values
    leave its USD row for an EUR one, in the chunks the movements are valued in."""
    from portal.identity.rules import accounts
    from portal.money.rules import ledger as rules

    with app.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        rules.revalue(merchant.id, merchant.api_connection.generation, "EUR")
    kept = [total for total in totals_of(app) if total[8]]  # rows left empty hold nothing
    assert {total[6] for total in kept} == {"EUR"}
    assert kept == counted(app)
    assert all(total[9] == 0 for total in totals_of(app) if not total[8])


def test_balances_and_a_statement_read_movements_only_at_the_ends_of_their_stretches(app, ledger):
    """Every sum of movements they ask the database for is bounded on both sides (parts of
    days at a stretch's ends); what lies between is read from the totals."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.rules import balances
    from portal.reports.rules.statement import statement

    statements: list[str] = []

    def record(_conn, _cursor, text, *_args) -> None:
        statements.append(" ".join(text.split()))

    with app.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        balances.enter_balance(
            merchant, merchant.users[0], "ETH", Decimal(1), datetime(2026, 2, 10, tzinfo=UTC)
        )
        db.session.commit()
        sa.event.listen(db.engine, "before_cursor_execute", record)
        try:
            balances.balances(merchant, datetime(2026, 4, 20, tzinfo=UTC))
            balances.balances(merchant)
            statement(merchant, datetime(2026, 1, 5, tzinfo=UTC), datetime(2026, 4, 20, tzinfo=UTC))
        finally:
            sa.event.remove(db.engine, "before_cursor_execute", record)
    sums = [s for s in statements if "FROM ledger_entries" in s and "decimal_sum" in s]
    assert sums and all(
        "ledger_entries.occurred_at >=" in s and "ledger_entries.occurred_at <" in s for s in sums
    ), sums
    assert sum("FROM ledger_totals" in s for s in statements) >= 4


def test_bookings_at_once_into_the_same_totals_are_each_counted(each_database, app, accounts):
    """Four threads, each with its own connection and transaction, book 15 movements each into
    the same month and day at once: every one is in the totals (an upsert adds to the row
    another transaction holds, never replaces it)."""
    factories.api_connection(app)
    moment = datetime(2026, 3, 15, 12, tzinfo=UTC)
    batches = [[("payment", "BTC", Decimal("0.001"), moment)] * 15 for _ in range(4)]
    threads = [threading.Thread(target=book, args=(app, batch)) for batch in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    totals = {(total[2], total[3]): (total[7], total[8]) for total in totals_of(app)}
    assert totals == {
        ("month", date(2026, 3, 1)): (Decimal("0.060"), 60),
        ("day", date(2026, 3, 15)): (Decimal("0.060"), 60),
    }
    assert totals_of(app) == counted(app)
