"""Each user's time zone for reading timestamps (UTC unless they choose another).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("users") as batch:
        batch.add_column(
            sa.Column("time_zone", sa.String(length=64), nullable=False, server_default="UTC")
        )


def downgrade():
    with op.batch_alter_table("users") as batch:
        batch.drop_column("time_zone")
