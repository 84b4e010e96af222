"""Withdrawal intents, cross exchange references and the audit log.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "withdrawal_intents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("merchant_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("amount", sa.String(length=64), nullable=False),
        sa.Column("wallet", sa.String(length=16), nullable=False),
        sa.Column("address", sa.String(length=255), nullable=False),
        sa.Column(
            "state",
            sa.Enum(
                "pending", "sending", "sent", "refused", "unknown",
                name="intentstate", native_enum=False, create_constraint=True, length=20,
            ),
            nullable=False,
        ),
        sa.Column("operation_id", sa.String(length=64), nullable=True),
        sa.Column("operation_status", sa.String(length=32), nullable=True),
        sa.Column("error_code", sa.Integer(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key"),
    )
    op.create_index("ix_withdrawal_intents_merchant_id", "withdrawal_intents", ["merchant_id"])
    op.create_table(
        "cross_exchange_references",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("merchant_id", sa.Integer(), nullable=False),
        sa.Column("cross_exchange_id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("sell_currency", sa.String(length=16), nullable=False),
        sa.Column("buy_currency", sa.String(length=16), nullable=False),
        sa.Column("sell_amount", sa.String(length=64), nullable=False),
        sa.Column("buy_amount", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("merchant_id", "cross_exchange_id"),
    )
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("merchant_id", sa.Integer(), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("user_email", sa.String(length=254), nullable=True),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("parameters", sa.JSON(), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("error_code", sa.Integer(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("remote_address", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_audit_events_merchant_created", "audit_events", ["merchant_id", "created_at"]
    )


def downgrade():
    op.drop_index("ix_audit_events_merchant_created", table_name="audit_events")
    op.drop_table("audit_events")
    op.drop_table("cross_exchange_references")
    op.drop_index("ix_withdrawal_intents_merchant_id", table_name="withdrawal_intents")
    op.drop_table("withdrawal_intents")
