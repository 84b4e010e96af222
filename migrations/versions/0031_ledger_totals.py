"""The ledger's totals: what each kind of movement added to each currency in each UTC month and day.

A balance was the sum of every movement since its currency's opening, a statement's openings
and closings two such sums, and the dashboard's year the sum of a year of payments: at 200,000
operations (248,450 movements) on SQLite, 338 ms of CPU for the balances and 509 ms for a year's
money. Each booking now adds its movements to their month and day
(`portal.money.rules.ledger_totals`), and those sums add up the months a stretch covers whole,
the days of the rest, and read movements only for the parts of days at its ends. The totals of
the movements booked so far are counted here, 5,000 movements at a time.

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-27
"""

from datetime import UTC, date
from decimal import Decimal

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

KEY = ("merchant_id", "connection_generation", "span", "starts", "currency", "kind", "value_currency")
CHUNK = 5000


def upgrade():
    table = op.create_table(
        "ledger_totals",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "merchant_id",
            sa.Integer(),
            sa.ForeignKey("merchants.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("connection_generation", sa.Integer(), nullable=False),
        sa.Column("span", sa.String(8), nullable=False),
        sa.Column("starts", sa.Date(), nullable=False),
        sa.Column("currency", sa.String(16), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("value_currency", sa.String(16), nullable=False),
        sa.Column("amount", sa.String(64), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("value", sa.String(64), nullable=False),
        sa.Column("valued", sa.Integer(), nullable=False),
        sa.Column("first_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint(*KEY),
    )
    entries = sa.table(
        "ledger_entries",
        *(sa.column(name) for name in ("merchant_id", "connection_generation", "currency")),
        *(sa.column(name) for name in ("kind", "value_currency", "amount", "value")),
        sa.column("occurred_at", sa.DateTime(timezone=True)),
    )
    totals: dict[tuple, list] = {}
    rows = op.get_bind().execute(
        sa.select(entries).execution_options(yield_per=CHUNK, stream_results=True)
    )
    for row in rows:
        # SQLite gives the moment without its zone: it is stored in UTC.
        at = row.occurred_at if row.occurred_at.tzinfo else row.occurred_at.replace(tzinfo=UTC)
        at = at.astimezone(UTC)
        for span, starts in (("month", date(at.year, at.month, 1)), ("day", at.date())):
            key = (
                row.merchant_id,
                row.connection_generation,
                span,
                starts,
                row.currency,
                row.kind,
                row.value_currency or "",
            )
            total = totals.setdefault(key, [Decimal(0), 0, Decimal(0), 0, at, at])
            total[0] += Decimal(row.amount)
            total[1] += 1
            if row.value is not None:
                total[2] += Decimal(row.value)
                total[3] += 1
            total[4], total[5] = min(total[4], at), max(total[5], at)
    found = [
        dict(
            zip(KEY, key, strict=True),
            amount=format(amount, "f"),
            count=count,
            value=format(value, "f"),
            valued=valued,
            first_at=first_at,
            last_at=last_at,
        )
        for key, (amount, count, value, valued, first_at, last_at) in totals.items()
    ]
    for start in range(0, len(found), CHUNK):
        op.bulk_insert(table, found[start : start + CHUNK])


def downgrade():
    op.drop_table("ledger_totals")
