"""Exchanges made through the portal, and the network fee of a sent withdrawal.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "exchange_records",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("merchant_id", sa.Integer(), nullable=False),
        sa.Column("exchange_id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("sell_currency", sa.String(length=16), nullable=False),
        sa.Column("buy_currency", sa.String(length=16), nullable=False),
        sa.Column("sell_amount", sa.String(length=64), nullable=True),
        sa.Column("buy_amount", sa.String(length=64), nullable=True),
        sa.Column("rate", sa.String(length=64), nullable=True),
        sa.Column("fee", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("merchant_id", "exchange_id"),
    )
    with op.batch_alter_table("withdrawal_intents") as batch:
        batch.add_column(sa.Column("fee", sa.String(length=64), nullable=True))


def downgrade():
    with op.batch_alter_table("withdrawal_intents") as batch:
        batch.drop_column("fee")
    op.drop_table("exchange_records")
