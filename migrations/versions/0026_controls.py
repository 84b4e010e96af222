"""Controls no owner relaxes alone.

- `merchants.address_cooling_off_hours`: the merchant's own cooling-off of new addresses
  (None: the `PORTAL_ADDRESS_COOLING_OFF_HOURS` setting).
- `approvals.voucher_intent_id`, kind `voucher`: a voucher above the limits waits for another
  owner's approval as a withdrawal does, its form's idempotency key held `pending`.
- `control_changes`: a raised or removed limit, a new owner or a shorter cooling-off, waiting
  for another owner's approval or, with a single owner, for its time.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


OLD_KINDS = ("withdrawal", "refund")
NEW_KINDS = (*OLD_KINDS, "voucher")


def _kinds(values):
    return sa.Enum(
        *values, name="approvalkind", native_enum=False, create_constraint=True, length=20
    )


def upgrade():
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("voucher_intent_id", sa.Integer(), nullable=True))
        batch.create_unique_constraint("uq_approvals_voucher_intent_id", ["voucher_intent_id"])
        batch.create_foreign_key(
            "fk_approvals_voucher_intent_id",
            "form_intents",
            ["voucher_intent_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch.alter_column(
            "kind", existing_type=_kinds(OLD_KINDS), type_=_kinds(NEW_KINDS), nullable=False
        )
    op.add_column(
        "merchants", sa.Column("address_cooling_off_hours", sa.String(64), nullable=True)
    )
    op.create_table(
        "control_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("merchant_id", sa.Integer(), nullable=False),
        sa.Column(
            "kind",
            sa.Enum(
                "limits", "own_limits", "owner", "cooling_off",
                name="controlkind", native_enum=False, create_constraint=True, length=20,
            ),
            nullable=False,
        ),
        sa.Column("currency", sa.String(length=16), nullable=True),
        sa.Column("per_withdrawal", sa.String(length=64), nullable=True),
        sa.Column("per_day", sa.String(length=64), nullable=True),
        sa.Column("hours", sa.String(length=64), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("before", sa.String(length=255), nullable=False),
        sa.Column("after", sa.String(length=255), nullable=False),
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
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["requested_by_id"], ["users.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["decided_by_id"], ["users.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_control_changes_merchant_state", "control_changes", ["merchant_id", "state"]
    )


def downgrade():
    op.execute(sa.text("DELETE FROM approvals WHERE kind = 'voucher'"))
    with op.batch_alter_table("approvals") as batch:
        batch.alter_column(
            "kind", existing_type=_kinds(NEW_KINDS), type_=_kinds(OLD_KINDS), nullable=False
        )
        batch.drop_constraint("fk_approvals_voucher_intent_id", type_="foreignkey")
        batch.drop_constraint("uq_approvals_voucher_intent_id", type_="unique")
        batch.drop_column("voucher_intent_id")
    op.drop_index("ix_control_changes_merchant_state", table_name="control_changes")
    op.drop_table("control_changes")
    op.drop_column("merchants", "address_cooling_off_hours")
