"""Money truth: each mirrored operation's money state, the merchant's payment tolerance, and
what people decided on the attention list.

- `merchants.payment_tolerance_percent`: a difference between received and due of at most this
  share of the due counts as none (0 by default: every difference shows).
- `mirrored_operations.state` and `difference`: what the money amounts to as of the last sync
  (the lists' state filter and the attention list read them); `ended_status` remembers that an
  operation had ended, so that money linked afterwards reads as late. Rows mirrored before this
  migration get their state at their next change, quietly.
- `mirror_states.first_sync_at`: the attention list shows money that arrived since;
  `decided_at`: when someone last decided on an item (the menu's count is counted again).
- `decisions`: an item handled through the portal (hidden until the next sync) or settled by
  hand with a note.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op


revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column(
        "merchants",
        sa.Column("payment_tolerance_percent", sa.String(64), nullable=False, server_default="0"),
    )
    op.add_column("mirrored_operations", sa.Column("state", sa.String(32)))
    op.add_column("mirrored_operations", sa.Column("difference", sa.String(64)))
    op.add_column("mirrored_operations", sa.Column("ended_status", sa.String(32)))
    op.create_index(
        "ix_mirrored_operations_merchant_state",
        "mirrored_operations",
        ["merchant_id", "state", "updated_at"],
    )
    op.add_column("mirror_states", sa.Column("first_sync_at", sa.DateTime(timezone=True)))
    op.execute("UPDATE mirror_states SET first_sync_at = last_full_sync_at")
    op.add_column("mirror_states", sa.Column("decided_at", sa.DateTime(timezone=True)))
    op.create_table(
        "decisions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "merchant_id",
            sa.Integer(),
            sa.ForeignKey("merchants.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("connection_generation", sa.Integer(), nullable=False),
        sa.Column(
            "kind",
            sa.Enum(
                "handled",
                "settled",
                name="decisionkind",
                native_enum=False,
                length=20,
                create_constraint=True,
            ),
            nullable=False,
        ),
        sa.Column("operation_id", sa.String(64), nullable=False),
        sa.Column("transaction_id", sa.String(64)),
        sa.Column("received", sa.String(64)),
        sa.Column("note", sa.Text()),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL")),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_decisions_merchant_operation", "decisions", ["merchant_id", "operation_id"])


def downgrade():
    op.drop_table("decisions")
    op.drop_column("mirror_states", "decided_at")
    op.drop_column("mirror_states", "first_sync_at")
    op.drop_index("ix_mirrored_operations_merchant_state", table_name="mirrored_operations")
    op.drop_column("mirrored_operations", "ended_status")
    op.drop_column("mirrored_operations", "difference")
    op.drop_column("mirrored_operations", "state")
    op.drop_column("merchants", "payment_tolerance_percent")
