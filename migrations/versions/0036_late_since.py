"""The attention list finds the newest late transactions among a few operations.

Money that reached an expired or canceled operation is found from the operations it waits on,
then each one's transactions; the list's newest 10 were the end of a sort of all of them:
37.7 ms of CPU on SQLite for 25,063 such transactions at 1,000,000 operations. The mirror now
keeps on each of those operations when its newest waiting transaction was created
(`late_since`), in a partial index of them: the newest 10 transactions belong to the 10
operations with the newest `late_since`, so the list sorts those operations' transactions only.

Revision ID: 0036
Revises: 0035
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None

TABLE, INDEX = "mirrored_operations", "ix_mirrored_operations_merchant_late_since"


def upgrade():
    op.add_column(TABLE, sa.Column("late_since", sa.DateTime(timezone=True)))
    op.execute(
        "UPDATE mirrored_operations SET late_since = (SELECT max(t.created_at) "
        "FROM mirrored_transactions AS t "
        "WHERE t.merchant_id = mirrored_operations.merchant_id "
        "AND t.operation_id = mirrored_operations.operation_id "
        "AND t.status <> 'rejected' AND NOT t.linked) "
        "WHERE late_transactions IS NOT NULL"
    )
    present = sa.text("late_transactions IS NOT NULL")
    op.create_index(
        INDEX,
        TABLE,
        ["merchant_id", "late_since", "operation_id"],
        sqlite_where=present,
        postgresql_where=present,
        postgresql_include=["id"],
    )


def downgrade():
    op.drop_index(INDEX, table_name=TABLE)
    op.drop_column(TABLE, "late_since")
