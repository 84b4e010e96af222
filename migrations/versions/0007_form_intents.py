"""Idempotency keys of the forms that move money: exchanges, vouchers, cross exchanges, operations.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "form_intents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("merchant_id", sa.Integer(), nullable=False),
        sa.Column(
            "kind",
            sa.Enum(
                "exchange", "voucher", "cross_exchange", "operation",
                name="intentkind", native_enum=False, create_constraint=True, length=20,
            ),
            nullable=False,
        ),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("parameters", sa.JSON(), nullable=False),
        sa.Column(
            "state",
            sa.Enum(
                "pending", "sending", "sent", "refused", "unknown",
                name="intentstate", native_enum=False, create_constraint=True, length=20,
            ),
            nullable=False,
        ),
        sa.Column("record_id", sa.String(length=64), nullable=True),
        sa.Column("error_code", sa.Integer(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("merchant_id", "kind", "key"),
    )


def downgrade():
    op.drop_table("form_intents")
