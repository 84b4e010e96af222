"""Limits and approvals by a second owner.

- `merchants.limit_per_withdrawal`, `merchants.limit_per_day`: the limits in the reporting
  currency above which money waits for another owner's approval; `approvals_waiting`, how many
  wait (the menu's count, read with the signed-in session).
- `withdrawal_limits.per_withdrawal`: a currency's own limit per withdrawal, beside its daily
  one (now optional).
- `approvals`: a withdrawal or refund held for an owner other than the one who asked.
- `address_book`: the named addresses money may go to, each usable after its cooling-off.
- `users.owner_since`, `users.owner_by_id`: when and by whom an owner was added or promoted
  through the portal (such an owner approves nothing for 24 hours, nor what its maker asked).

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade():
    # Not in a batch: on SQLite a batch copies the table, and dropping the old merchants table
    # would delete every row that refers to it.
    op.add_column("merchants", sa.Column("limit_per_withdrawal", sa.String(64), nullable=True))
    op.add_column("merchants", sa.Column("limit_per_day", sa.String(64), nullable=True))
    op.add_column(
        "merchants",
        sa.Column("approvals_waiting", sa.Integer(), server_default="0", nullable=False),
    )
    with op.batch_alter_table("withdrawal_limits") as batch:
        batch.add_column(sa.Column("per_withdrawal", sa.String(length=64), nullable=True))
        batch.alter_column("daily_limit", existing_type=sa.String(length=64), nullable=True)
    op.create_table(
        "approvals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("merchant_id", sa.Integer(), nullable=False),
        sa.Column(
            "kind",
            sa.Enum(
                "withdrawal", "refund",
                name="approvalkind", native_enum=False, create_constraint=True, length=20,
            ),
            nullable=False,
        ),
        sa.Column("withdrawal_intent_id", sa.Integer(), nullable=True),
        sa.Column("refund_id", sa.Integer(), nullable=True),
        sa.Column("amount", sa.String(length=64), nullable=False),
        sa.Column("currency", sa.String(length=16), nullable=False),
        sa.Column("address", sa.String(length=255), nullable=True),
        sa.Column("value", sa.String(length=64), nullable=True),
        sa.Column("value_currency", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column(
            "state",
            sa.Enum(
                "waiting", "approved", "rejected", "withdrawn", "expired",
                name="approvalstate", native_enum=False, create_constraint=True, length=20,
            ),
            nullable=False,
        ),
        sa.Column("requested_by_id", sa.Integer(), nullable=True),
        sa.Column("decided_by_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["withdrawal_intent_id"], ["withdrawal_intents.id"], ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["refund_id"], ["refunds.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["requested_by_id"], ["users.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["decided_by_id"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("withdrawal_intent_id"),
        sa.UniqueConstraint("refund_id"),
    )
    op.create_index("ix_approvals_merchant_state", "approvals", ["merchant_id", "state"])
    op.add_column("users", sa.Column("owner_since", sa.DateTime(timezone=True), nullable=True))
    op.add_column("users", sa.Column("owner_by_id", sa.Integer(), nullable=True))
    op.create_table(
        "address_book",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("merchant_id", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(length=16), nullable=False),
        sa.Column("address", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("added_by_id", sa.Integer(), nullable=True),
        sa.Column("approved_by_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("usable_from", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["added_by_id"], ["users.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["approved_by_id"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("merchant_id", "currency", "address"),
    )


def downgrade():
    op.drop_column("users", "owner_by_id")
    op.drop_column("users", "owner_since")
    op.drop_table("address_book")
    op.drop_index("ix_approvals_merchant_state", table_name="approvals")
    op.drop_table("approvals")
    op.execute(sa.text("DELETE FROM withdrawal_limits WHERE daily_limit IS NULL"))
    with op.batch_alter_table("withdrawal_limits") as batch:
        batch.drop_column("per_withdrawal")
        batch.alter_column("daily_limit", existing_type=sa.String(length=64), nullable=False)
    op.drop_column("merchants", "approvals_waiting")
    op.drop_column("merchants", "limit_per_day")
    op.drop_column("merchants", "limit_per_withdrawal")
