"""Signed webhooks to the merchant's shop: endpoints, deliveries and their attempts.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op


revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def _reference(name: str, target: str, *, unique: bool = False) -> sa.Column:
    return sa.Column(
        name, sa.Integer(), sa.ForeignKey(target, ondelete="CASCADE"), nullable=False, unique=unique
    )


def upgrade():
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.Integer(), primary_key=True),
        _reference("merchant_id", "merchants.id", unique=True),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("event_types", sa.JSON(), nullable=False),
        sa.Column("secret_encrypted", sa.Text(), nullable=False),
        sa.Column("previous_secret_encrypted", sa.Text()),
        sa.Column("previous_secret_until", sa.DateTime(timezone=True)),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("since_event_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.Integer(), primary_key=True),
        _reference("endpoint_id", "webhook_endpoints.id"),
        _reference("event_id", "events.id"),
        sa.Column("operation_id", sa.String(64)),
        sa.Column(
            "state",
            sa.Enum(
                "pending",
                "delivered",
                "failed",
                name="deliverystate",
                native_enum=False,
                create_constraint=True,
                length=20,
            ),
            nullable=False,
        ),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("first_attempt_at", sa.DateTime(timezone=True)),
        sa.Column("lease_owner", sa.String(64)),
        sa.Column("lease_until", sa.DateTime(timezone=True)),
        sa.Column("manual", sa.Boolean(), nullable=False),
        sa.Column("last_status", sa.Integer()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("endpoint_id", "event_id"),
    )
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries", ["state", "next_attempt_at"])
    op.create_index(
        "ix_webhook_deliveries_operation",
        "webhook_deliveries",
        ["endpoint_id", "operation_id", "event_id"],
    )
    op.create_table(
        "webhook_attempts",
        sa.Column("id", sa.Integer(), primary_key=True),
        _reference("delivery_id", "webhook_deliveries.id"),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.Integer()),
        sa.Column("error", sa.String(255)),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("manual", sa.Boolean(), nullable=False),
    )
    op.create_index("ix_webhook_attempts_delivery", "webhook_attempts", ["delivery_id"])


def downgrade():
    op.drop_table("webhook_attempts")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhook_endpoints")
