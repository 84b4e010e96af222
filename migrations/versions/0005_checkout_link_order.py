"""Checkout links remember the order number, to find an operation whose creation went unanswered.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("checkout_links") as batch:
        batch.add_column(sa.Column("order_id", sa.String(length=255), nullable=True))


def downgrade():
    with op.batch_alter_table("checkout_links") as batch:
        batch.drop_column("order_id")
