"""The attention list on PostgreSQL reads its lists from indexes alone, as SQLite does.

Each group of the list takes its newest rows' ids from the index its count reads. SQLite's
indexes hold each row's id; PostgreSQL's did not, so each list visited the table for every row
of its group (3,060 for the undecided transactions at 100,000 operations) to sort them. On
PostgreSQL the four indexes now carry the id (`INCLUDE`), and the late transactions' index
their creation time too; SQLite's are unchanged.

Revision ID: 0030
Revises: 0028
Create Date: 2026-11-27
"""

from alembic import op

revision = "0030"
down_revision = "0028"
branch_labels = None
depends_on = None

# Each index: its table, its columns, what PostgreSQL now carries beside them.
INDEXES = {
    "ix_mirrored_operations_merchant_status": (
        "mirrored_operations",
        ["merchant_id", "status", "updated_at", "operation_id", "amount_paid"],
        ["id"],
    ),
    "ix_mirrored_operations_merchant_state": (
        "mirrored_operations",
        ["merchant_id", "state", "status", "updated_at", "operation_id", "amount_paid"],
        ["id"],
    ),
    "ix_mirrored_transactions_merchant_status": (
        "mirrored_transactions",
        ["merchant_id", "status", "linked", "operation_id", "created_at"],
        ["id"],
    ),
    "ix_mirrored_transactions_merchant_operation_status": (
        "mirrored_transactions",
        ["merchant_id", "operation_id", "status", "linked"],
        ["created_at", "id"],
    ),
}


def _recreate(carried: bool) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, (table, columns, include) in INDEXES.items():
        op.drop_index(name, table_name=table)
        op.create_index(name, table, columns, postgresql_include=include if carried else [])


def upgrade():
    _recreate(carried=True)


def downgrade():
    _recreate(carried=False)
