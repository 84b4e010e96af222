"""A checkout link belongs to the API connection it was made under (`connection_generation`),
as refunds do since 0040: operation ids are the account's own, so after a switch to another
account a customer's link must neither show nor send them to pay the new account's operation
of the same id. Links stored before are given the generation of their merchant's connection
now.

Revision ID: 0042
Revises: 0041
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0042"
down_revision = "0041"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("checkout_links") as batch:
        batch.add_column(
            sa.Column("connection_generation", sa.Integer(), nullable=False, server_default="1")
        )
    op.execute(
        sa.text(
            "UPDATE checkout_links SET connection_generation = COALESCE((SELECT generation FROM "
            "api_connections WHERE api_connections.merchant_id = checkout_links.merchant_id), 1)"
        )
    )


def downgrade():
    with op.batch_alter_table("checkout_links") as batch:
        batch.drop_column("connection_generation")
