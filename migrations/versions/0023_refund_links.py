"""Refunds keep their claim link readable by staff while it is unclaimed, and the rate an
amount typed in another currency was converted at.

- `refunds.token_encrypted`: the claim link's token under `PORTAL_TOKEN_KEYS` (lookups stay by
  `token_hash`); links made before keep working but are not shown: sending one again shows it.
- `refunds.basis`, `entered_amount`, `entered_currency`, `rate`, `rate_at`: what was typed and
  the rate that made it the amount sent.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

COLUMNS = (
    ("token_encrypted", sa.Text()),
    ("basis", sa.String(length=16)),
    ("entered_amount", sa.String(length=64)),
    ("entered_currency", sa.String(length=16)),
    ("rate", sa.String(length=64)),
    ("rate_at", sa.DateTime(timezone=True)),
)


def upgrade():
    with op.batch_alter_table("refunds") as batch:
        for name, type_ in COLUMNS:
            batch.add_column(sa.Column(name, type_, nullable=True))


def downgrade():
    with op.batch_alter_table("refunds") as batch:
        for name, _type in reversed(COLUMNS):
            batch.drop_column(name)
