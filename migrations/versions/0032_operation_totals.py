"""The operations' totals: how many of a merchant's mirrored operations were created in each UTC
month and day, by category and money state, kept by the database itself.

The dashboard counted the sales of a period by state by reading every operation created in it:
at 100,000 operations on SQLite, 18.5 ms of CPU for 30 days and 51 ms for a year, growing with
the merchant. Triggers on `mirrored_operations` now add each operation to its month and day as
it is inserted, move it when its state (or category, or creation) changes and take it out when
it is deleted: every path that writes the mirror keeps the totals, the first sync's bulk inserts
and a connection's purge included. `portal.payments.rules.operation_totals` adds them up. The
withdrawals of a period, which the dashboard shows apart with their amounts, are read through an
index of their own (by category) instead of among every operation of the period.

The totals of the operations mirrored so far are counted here.

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

KEY = ("merchant_id", "span", "starts", "category", "state")
WITHDRAWALS_INDEX = "ix_mirrored_operations_merchant_category_created"

# The first day of an operation's UTC month and its UTC day, as each database writes them.
SQLITE_STARTS = {"month": "date({row}.created_at, 'start of month')", "day": "date({row}.created_at)"}
POSTGRESQL_STARTS = {
    "month": "date_trunc('month', {row}.created_at AT TIME ZONE 'UTC')::date",
    "day": "({row}.created_at AT TIME ZONE 'UTC')::date",
}


def _take_out(starts: dict[str, str]) -> str:
    """The statements that take the OLD row out of its month's and day's totals (by their whole
    key: one row each)."""
    return "".join(
        "UPDATE operation_totals SET count = count - 1"
        f" WHERE merchant_id = OLD.merchant_id AND span = '{span}'"
        f" AND starts = {expression.format(row='OLD')}"
        " AND category = OLD.category AND state = coalesce(OLD.state, '');\n"
        for span, expression in starts.items()
    )


def _add(starts: dict[str, str]) -> str:
    """The statement that adds the NEW row to its month's and day's totals."""
    values = ", ".join(
        f"(NEW.merchant_id, '{span}', {expression.format(row='NEW')}, NEW.category,"
        " coalesce(NEW.state, ''), 1)"
        for span, expression in starts.items()
    )
    return (
        f"INSERT INTO operation_totals ({', '.join(KEY)}, count) VALUES {values}"
        f" ON CONFLICT ({', '.join(KEY)}) DO UPDATE SET count = operation_totals.count + 1;\n"
    )


CHANGED = ("merchant_id", "created_at", "category", "state")


def upgrade():
    op.create_table(
        "operation_totals",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "merchant_id",
            sa.Integer(),
            sa.ForeignKey("merchants.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("span", sa.String(8), nullable=False),
        sa.Column("starts", sa.Date(), nullable=False),
        sa.Column("category", sa.String(32), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.UniqueConstraint(*KEY),
    )
    op.create_index(
        WITHDRAWALS_INDEX,
        "mirrored_operations",
        ["merchant_id", "category", "created_at", "currency", "amount"],
    )
    postgresql = op.get_bind().dialect.name == "postgresql"
    starts = POSTGRESQL_STARTS if postgresql else SQLITE_STARTS
    for span, expression in starts.items():
        op.execute(
            f"INSERT INTO operation_totals ({', '.join(KEY)}, count)"
            f" SELECT merchant_id, '{span}', {expression.format(row='mirrored_operations')},"
            " category, coalesce(state, ''), count(*) FROM mirrored_operations"
            " GROUP BY 1, 3, 4, 5"
        )
    changed_columns = ", ".join(CHANGED)
    if postgresql:
        distinct = " OR ".join(f"OLD.{name} IS DISTINCT FROM NEW.{name}" for name in CHANGED)
        op.execute(
            "CREATE FUNCTION operation_totals_count() RETURNS trigger LANGUAGE plpgsql AS $$\n"
            "BEGIN\n"
            f"IF TG_OP <> 'INSERT' THEN\n{_take_out(starts)}END IF;\n"
            f"IF TG_OP <> 'DELETE' THEN\n{_add(starts)}END IF;\n"
            "RETURN NULL;\n"
            "END $$"
        )
        op.execute(
            "CREATE TRIGGER operation_totals_insert_delete AFTER INSERT OR DELETE"
            " ON mirrored_operations FOR EACH ROW EXECUTE FUNCTION operation_totals_count()"
        )
        op.execute(
            f"CREATE TRIGGER operation_totals_update AFTER UPDATE OF {changed_columns}"
            f" ON mirrored_operations FOR EACH ROW WHEN ({distinct})"
            " EXECUTE FUNCTION operation_totals_count()"
        )
        return
    distinct = " OR ".join(f"OLD.{name} IS NOT NEW.{name}" for name in CHANGED)
    op.execute(
        "CREATE TRIGGER operation_totals_insert AFTER INSERT ON mirrored_operations"
        f" BEGIN\n{_add(starts)}END"
    )
    op.execute(
        "CREATE TRIGGER operation_totals_delete AFTER DELETE ON mirrored_operations"
        f" BEGIN\n{_take_out(starts)}END"
    )
    op.execute(
        f"CREATE TRIGGER operation_totals_update AFTER UPDATE OF {changed_columns}"
        f" ON mirrored_operations WHEN {distinct}"
        f" BEGIN\n{_take_out(starts)}{_add(starts)}END"
    )


def downgrade():
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER operation_totals_update ON mirrored_operations")
        op.execute("DROP TRIGGER operation_totals_insert_delete ON mirrored_operations")
        op.execute("DROP FUNCTION operation_totals_count()")
    else:
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER operation_totals_{trigger}")
    op.drop_index(WITHDRAWALS_INDEX, "mirrored_operations")
    op.drop_table("operation_totals")
