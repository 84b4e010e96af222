"""Refunds: money of an operation sent back to its customer, once, to an address the customer
gives on a claim link (or an owner approves).

- `refunds`: one refund of one operation (numbered per operation, so that two requests racing
  for the same money store one), its claim link's token hash, the address, where it stands and
  the withdrawal that sent it.
- `merchants.refund_link_days`: how long an unclaimed link waits (14 days by default).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op


revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column(
        "merchants",
        sa.Column("refund_link_days", sa.Integer(), server_default="14", nullable=False),
    )
    op.create_table(
        "refunds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("merchant_id", sa.Integer(), nullable=False),
        sa.Column("operation_id", sa.String(length=64), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("currency", sa.String(length=16), nullable=False),
        sa.Column("amount", sa.String(length=64), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=True),
        sa.Column("customer_email", sa.String(length=254), nullable=True),
        sa.Column("address", sa.String(length=255), nullable=True),
        sa.Column("typed_by_staff", sa.Boolean(), nullable=False),
        sa.Column("approved_by_id", sa.Integer(), nullable=True),
        sa.Column(
            "stage",
            sa.Enum(
                "requested", "awaiting_approval", "ready", "canceled", "expired",
                name="refundstage", native_enum=False, create_constraint=True, length=20,
            ),
            nullable=False,
        ),
        sa.Column(
            "state",
            sa.Enum(
                "pending", "sending", "sent", "refused", "unknown",
                name="intentstate", native_enum=False, create_constraint=True, length=20,
            ),
            nullable=True,
        ),
        sa.Column("withdrawal_id", sa.String(length=64), nullable=True),
        sa.Column("fee", sa.String(length=64), nullable=True),
        sa.Column("error_code", sa.Integer(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["approved_by_id"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("merchant_id", "operation_id", "number"),
        sa.UniqueConstraint("token_hash"),
    )


def downgrade():
    op.drop_table("refunds")
    op.drop_column("merchants", "refund_link_days")
