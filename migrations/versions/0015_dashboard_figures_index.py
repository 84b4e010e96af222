"""The dashboard's figures read an index alone: the operations of a period by status and
currency, with their amounts.

The figures of 30 days at 100,000 mirrored operations read some 33,000 rows through the index
on (merchant, created); each row was then fetched from the table for its status, currency and
amounts, beside its large `record` (SQLite: 88 ms, most of it those reads). This index holds
every column the figures read, so the table is not read at all (38 ms, of which 18 ms are the
exact decimal sums SQLite makes in Python). It replaces the index on (merchant, created), whose
columns it starts with.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24
"""

from alembic import op


revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

FIGURES = ["merchant_id", "created_at", "status", "currency", "amount", "amount_paid"]


def upgrade():
    op.create_index("ix_mirrored_operations_merchant_created_figures", "mirrored_operations", FIGURES)
    op.drop_index("ix_mirrored_operations_merchant_created", "mirrored_operations")


def downgrade():
    op.create_index(
        "ix_mirrored_operations_merchant_created", "mirrored_operations", ["merchant_id", "created_at"]
    )
    op.drop_index("ix_mirrored_operations_merchant_created_figures", "mirrored_operations")
