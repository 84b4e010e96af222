"""The public checkout page: random references to operations, the merchant's name and shop URL.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("merchants") as batch:
        batch.add_column(sa.Column("display_name", sa.String(length=120), nullable=True))
        batch.add_column(sa.Column("shop_url", sa.String(length=2048), nullable=True))
    op.create_table(
        "checkout_links",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column("merchant_id", sa.Integer(), nullable=False),
        sa.Column("operation_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token"),
    )
    op.create_index("ix_checkout_links_merchant_id", "checkout_links", ["merchant_id"])


def downgrade():
    op.drop_index("ix_checkout_links_merchant_id", table_name="checkout_links")
    op.drop_table("checkout_links")
    with op.batch_alter_table("merchants") as batch:
        batch.drop_column("shop_url")
        batch.drop_column("display_name")
