"""The mirror of each merchant's operations and transactions, its state, and the events table.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op


revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def _merchant() -> sa.Column:
    return sa.Column(
        "merchant_id",
        sa.Integer(),
        sa.ForeignKey("merchants.id", ondelete="CASCADE"),
        nullable=False,
    )


def upgrade():
    op.create_table(
        "mirrored_operations",
        sa.Column("id", sa.Integer(), primary_key=True),
        _merchant(),
        sa.Column("operation_id", sa.String(64), nullable=False),
        sa.Column("order_id", sa.String(255)),
        sa.Column("category", sa.String(32), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("amount", sa.String(64), nullable=False),
        sa.Column("amount_paid", sa.String(64)),
        sa.Column("currency", sa.String(16), nullable=False),
        sa.Column("currency_paid", sa.String(16)),
        sa.Column("address", sa.String(255)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("mirrored_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("merchant_id", "operation_id"),
    )
    op.create_index(
        "ix_mirrored_operations_merchant_updated",
        "mirrored_operations",
        ["merchant_id", "updated_at"],
    )
    op.create_index(
        "ix_mirrored_operations_merchant_created",
        "mirrored_operations",
        ["merchant_id", "created_at"],
    )
    op.create_table(
        "mirrored_transactions",
        sa.Column("id", sa.Integer(), primary_key=True),
        _merchant(),
        sa.Column("transaction_id", sa.String(64), nullable=False),
        sa.Column("operation_id", sa.String(64)),
        sa.Column("tx_id", sa.String(255)),
        sa.Column("amount", sa.String(64), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("linked", sa.Boolean(), nullable=False),
        sa.Column("reject_reason", sa.Text()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("mirrored_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("merchant_id", "transaction_id"),
    )
    op.create_index(
        "ix_mirrored_transactions_merchant_operation",
        "mirrored_transactions",
        ["merchant_id", "operation_id"],
    )
    op.create_index(
        "ix_mirrored_transactions_merchant_updated",
        "mirrored_transactions",
        ["merchant_id", "updated_at"],
    )
    op.create_table(
        "mirror_states",
        sa.Column(
            "merchant_id",
            sa.Integer(),
            sa.ForeignKey("merchants.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("operations_watermark", sa.DateTime(timezone=True)),
        sa.Column("transactions_watermark", sa.DateTime(timezone=True)),
        sa.Column("last_sync_at", sa.DateTime(timezone=True)),
        sa.Column("last_full_sync_at", sa.DateTime(timezone=True)),
        sa.Column("full_sync_requested_at", sa.DateTime(timezone=True)),
        sa.Column("last_error", sa.Text()),
        sa.Column("lease_owner", sa.String(64)),
        sa.Column("lease_until", sa.DateTime(timezone=True)),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("public_id", sa.String(40), nullable=False, unique=True),
        _merchant(),
        sa.Column("type", sa.String(48), nullable=False),
        sa.Column("operation_id", sa.String(64)),
        sa.Column("transaction_id", sa.String(64)),
        sa.Column("dedup_key", sa.String(255), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("notify", sa.Boolean(), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("merchant_id", "dedup_key"),
    )
    op.create_index("ix_events_merchant_operation", "events", ["merchant_id", "operation_id"])
    op.create_index("ix_events_merchant_id", "events", ["merchant_id", "id"])


def downgrade():
    op.drop_table("events")
    op.drop_table("mirror_states")
    op.drop_table("mirrored_transactions")
    op.drop_table("mirrored_operations")
