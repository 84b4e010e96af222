"""The checkout page: a support e-mail per merchant, and the amount each link asks for.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("merchants") as batch:
        batch.add_column(sa.Column("support_email", sa.String(length=254), nullable=True))
    with op.batch_alter_table("checkout_links") as batch:
        batch.add_column(sa.Column("amount", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("currency", sa.String(length=16), nullable=True))


def downgrade():
    with op.batch_alter_table("checkout_links") as batch:
        batch.drop_column("currency")
        batch.drop_column("amount")
    with op.batch_alter_table("merchants") as batch:
        batch.drop_column("support_email")
