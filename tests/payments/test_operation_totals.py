"""The operations' totals (`OperationTotal`, kept by migration 0032's triggers): whatever writes
the mirror (inserts one by one or in bulk, changes of state through the session or in one
UPDATE, deletes of some rows or of a whole merchant), the totals are those counted from the
operations; and `operation_totals.counts` over any stretch, at month and day boundaries and a
microsecond either side, is what counting every operation gives (the migration's count of the
operations mirrored before it is in tests/app/test_database_migrations.py)."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from tests.support.mirror_rows import operation_columns, operation_record, operation_totals_of
from tests.support.portal_app import MERCHANT

MICROSECOND = timedelta(microseconds=1)
CATEGORIES = ("application", "application", "transfer", "internal_transfer")
STATES = ("paid", "partly_paid", "overpaid", None)
MOMENTS = [
    datetime(2025, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 1, 1, tzinfo=UTC),
    datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    datetime(2026, 1, 16, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 1, 17, 8, 30, tzinfo=UTC),
    datetime(2026, 1, 18, tzinfo=UTC),
    datetime(2026, 2, 28, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 3, 1, tzinfo=UTC),
    datetime(2026, 3, 15, 12, tzinfo=UTC),
]


def mirrored(app, merchant: str, count: int, randomness: random.Random) -> None:
    """`count` operations of `merchant`, of random categories, states and creation moments,
    inserted in one statement (as a first sync inserts a page)."""
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.payments.models import MirroredOperation

    with app.app_context():
        merchant_id = merchant_named(merchant).id
        rows = []
        for _ in range(count):
            moment = randomness.choice(MOMENTS) + timedelta(seconds=randomness.choice((0, 0, 9)))
            record = operation_record(
                category=randomness.choice(CATEGORIES),
                created_at=moment.isoformat().replace("+00:00", "Z"),
                updated_at=moment.isoformat().replace("+00:00", "Z"),
            )
            rows.append({**operation_columns(merchant_id, record), "state": None})
        db.session.execute(sa.insert(MirroredOperation), rows)
        db.session.commit()


def counted_from_operations(app) -> Counter:
    """Every merchant's operations by month and day, category and state, counted one by one."""
    from portal.extensions import db
    from portal.payments.models import MirroredOperation as Operation

    found: Counter = Counter()
    with app.app_context():
        rows = db.session.execute(
            sa.select(
                Operation.merchant_id, Operation.created_at, Operation.category, Operation.state
            )
        )
        for merchant_id, created, category, state in rows:
            month = created.date().replace(day=1)
            found[(merchant_id, "month", month, category, state or "")] += 1
            found[(merchant_id, "day", created.date(), category, state or "")] += 1
    return found


@pytest.fixture
def operations(each_database, app, accounts) -> random.Random:
    """Acme's and Other's mirrors of 150 and 40 operations; the randomness that made them."""
    randomness = random.Random(3)
    mirrored(app, MERCHANT, 150, randomness)
    mirrored(app, "Other", 40, randomness)
    return randomness


def test_the_totals_follow_every_write_of_the_mirror(app, operations):
    from portal.extensions import db
    from portal.identity.models import Merchant
    from portal.identity.rules.accounts import merchant_named
    from portal.payments.models import MirroredOperation as Operation

    assert operation_totals_of(app) == counted_from_operations(app)
    with app.app_context():
        acme = merchant_named(MERCHANT).id
        rows = db.session.scalars(sa.select(Operation).where(Operation.merchant_id == acme)).all()
        for row in operations.sample(rows, 60):  # through the session, one row at a time
            row.state = operations.choice(STATES)
        operations.choice(rows).category = "transfer"
        operations.choice(rows).created_at = datetime(2026, 4, 1, tzinfo=UTC)
        db.session.commit()
    assert operation_totals_of(app) == counted_from_operations(app)
    with app.app_context():  # in one statement each
        db.session.execute(sa.update(Operation).where(Operation.id % 3 == 0).values(state="paid"))
        db.session.execute(sa.update(Operation).where(Operation.id % 7 == 0).values(state="paid"))
        db.session.execute(sa.delete(Operation).where(Operation.id % 5 == 0))
        db.session.commit()
    assert operation_totals_of(app) == counted_from_operations(app)
    with app.app_context():  # a merchant and, by cascade, its mirror
        db.session.delete(db.session.get(Merchant, merchant_named("Other").id))
        db.session.commit()
    kept = operation_totals_of(app)
    assert kept == counted_from_operations(app)
    assert {key[0] for key in kept} == {acme}


def test_every_stretch_counts_its_operations(app, operations):
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.payments.models import MirroredOperation as Operation
    from portal.payments.rules import operation_totals

    with app.app_context():
        acme = merchant_named(MERCHANT).id
        rows = db.session.scalars(sa.select(Operation).where(Operation.merchant_id == acme)).all()
        for row in operations.sample(rows, 50):
            row.state = operations.choice(STATES)
        db.session.commit()
        created = [(row.created_at, row.category, row.state) for row in rows]
        bounds = [*MOMENTS, *(moment + MICROSECOND for moment in MOMENTS)]
        for start in bounds:
            for end in (bound for bound in bounds if bound > start):
                expected = Counter(
                    (category, state) for at, category, state in created if start <= at < end
                )
                assert operation_totals.counts(acme, start, end) == expected, (start, end)
