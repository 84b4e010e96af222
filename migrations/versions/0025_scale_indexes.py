"""The attention list at any size: each of its counts read from an index alone, and the menu's
count kept on the mirror's state instead of counted by the pages.

- `mirrored_operations.late_transactions`: how many of an expired or canceled operation's
  transactions are neither linked nor rejected, None when none (the mirror keeps it with the
  state): the operations that late money waits on are the few in an index of them alone.
- The indexes of the operations by money state, and of the transactions by status, hold every
  column the attention list filters on and sorts by.
- `mirror_states.attention_count`: the menu's count, written by each sync and each decision;
  it replaces `decided_at`, which told the pages to count again. Until a merchant's next sync
  it is 0.

Revision ID: 0025
Revises: 0022
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("mirrored_operations", sa.Column("late_transactions", sa.Integer()))
    late = (
        "FROM mirrored_transactions AS t "
        "WHERE t.merchant_id = mirrored_operations.merchant_id "
        "AND t.operation_id = mirrored_operations.operation_id "
        "AND t.status <> 'rejected' AND NOT t.linked"
    )
    op.execute(
        f"UPDATE mirrored_operations SET late_transactions = (SELECT count(*) {late}) "
        f"WHERE status IN ('expired', 'canceled') AND EXISTS (SELECT 1 {late})"
    )
    present = sa.text("late_transactions IS NOT NULL")
    op.create_index(
        "ix_mirrored_operations_merchant_late",
        "mirrored_operations",
        ["merchant_id", "operation_id"],
        sqlite_where=present,
        postgresql_where=present,
    )
    if op.get_bind().dialect.name == "postgresql":
        # The planner learns at once how few operations the new column names.
        op.execute("ANALYZE mirrored_operations")
    op.drop_index("ix_mirrored_operations_merchant_state", table_name="mirrored_operations")
    op.create_index(
        "ix_mirrored_operations_merchant_state",
        "mirrored_operations",
        ["merchant_id", "state", "status", "updated_at", "operation_id", "amount_paid"],
    )
    op.drop_index("ix_mirrored_transactions_merchant_status", table_name="mirrored_transactions")
    op.create_index(
        "ix_mirrored_transactions_merchant_status",
        "mirrored_transactions",
        ["merchant_id", "status", "linked", "operation_id", "created_at"],
    )
    with op.batch_alter_table("mirror_states") as batch:
        batch.add_column(
            sa.Column("attention_count", sa.Integer(), nullable=False, server_default="0")
        )
        batch.drop_column("decided_at")


def downgrade():
    with op.batch_alter_table("mirror_states") as batch:
        batch.add_column(sa.Column("decided_at", sa.DateTime(timezone=True)))
        batch.drop_column("attention_count")
    op.drop_index("ix_mirrored_transactions_merchant_status", table_name="mirrored_transactions")
    op.create_index(
        "ix_mirrored_transactions_merchant_status",
        "mirrored_transactions",
        ["merchant_id", "status", "linked", "operation_id"],
    )
    op.drop_index("ix_mirrored_operations_merchant_state", table_name="mirrored_operations")
    op.create_index(
        "ix_mirrored_operations_merchant_state",
        "mirrored_operations",
        ["merchant_id", "state", "updated_at"],
    )
    op.drop_index("ix_mirrored_operations_merchant_late", table_name="mirrored_operations")
    op.drop_column("mirrored_operations", "late_transactions")
