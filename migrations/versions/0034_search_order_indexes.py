"""Search on SQLite finds its rows' order without reading them.

The FTS5 trigram index answers which rows hold a fragment, of every merchant; search then keeps
the merchant's and shows the newest 50. Reading each match's row for its merchant and creation
time read the large rows themselves, scattered through the file: a four-digit piece of an
operation id matched about 4,900 rows at 2 × 1,000,000 operations, 150 ms of wall time when
they were not in memory (60 ms of CPU). An index of (id, merchant_id, created_at) answers the
same from a few compact pages: 16 ms, cold or warm (14 ms of CPU). PostgreSQL's trigram indexes
recheck each match in its row anyway, so the index is SQLite's only, like the FTS tables.

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-06
"""

from alembic import op

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None

TABLES = ("mirrored_operations", "mirrored_transactions")


def upgrade():
    if op.get_bind().dialect.name == "sqlite":
        for table in TABLES:
            op.create_index(f"ix_{table}_search_order", table, ["id", "merchant_id", "created_at"])


def downgrade():
    if op.get_bind().dialect.name == "sqlite":
        for table in TABLES:
            op.drop_index(f"ix_{table}_search_order", table_name=table)
