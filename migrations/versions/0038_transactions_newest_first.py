"""Search reads a merchant's newest transactions first.

A text in many rows (the "ORD-" every order number starts with, the "tb1q" of every testnet
address) was found by listing every row that holds it, then sorting them: 5.3 s on PostgreSQL
for "ORD-" among 2 x 1,000,000 operations. Search now looks for the text in the merchant's
newest rows first (`portal.payments.rules.search`), which needs them in that order: the
operations have it in the dashboard's index, the transactions get this one.

Revision ID: 0038
Revises: 0037
Create Date: 2026-12-06
"""

from alembic import op

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None

TABLE, INDEX = "mirrored_transactions", "ix_mirrored_transactions_merchant_created"


def upgrade():
    op.create_index(INDEX, TABLE, ["merchant_id", "created_at", "id"])


def downgrade():
    op.drop_index(INDEX, table_name=TABLE)
