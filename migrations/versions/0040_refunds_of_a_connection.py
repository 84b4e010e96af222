"""A refund belongs to the API connection it was asked through (`connection_generation`), as
the mirror, the ledger and the events do: operation ids are the account's own, so after a
switch to another account a refund must neither be sent from the new account's wallet nor be
counted against its operations of the same ids. Refunds stored before are given the
generation of their merchant's connection now.

Revision ID: 0040
Revises: 0039
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0040"
down_revision = "0039"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("refunds") as batch:
        batch.add_column(
            sa.Column("connection_generation", sa.Integer(), nullable=False, server_default="1")
        )
    op.execute(
        sa.text(
            "UPDATE refunds SET connection_generation = COALESCE((SELECT generation FROM "
            "api_connections WHERE api_connections.merchant_id = refunds.merchant_id), 1)"
        )
    )


def downgrade():
    with op.batch_alter_table("refunds") as batch:
        batch.drop_column("connection_generation")
