"""Whether each user was asked once for the time zone their pages show times in.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("users") as batch:
        batch.add_column(
            sa.Column("time_zone_asked", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    # A zone other than the default was chosen: nobody asks again.
    op.execute(sa.text("UPDATE users SET time_zone_asked = true WHERE time_zone <> 'UTC'"))


def downgrade():
    with op.batch_alter_table("users") as batch:
        batch.drop_column("time_zone_asked")
