"""The dashboard's figures read indexes alone at any size: the ledger's payments and fees of a
period with their amounts and values, and the operations of a period with their category and
state. The ledger's export reads its movements in the order of an index.

At 50,000 operations a year (SQLite, `bench/million.py`'s fill) the dashboard's queries for a
year took 443 ms of CPU, for 30 days 75 ms: the payments' and fees' amounts and values, and the
operations' category, state and id, were read from the tables row by row, through indexes that
held only what the queries filter on. These two indexes hold every column those queries read,
and replace the two they begin with (the same columns first): 138 ms and 25 ms.

The ledger's export reads the period's movements 500 at a time in the order of their moment
and id; no index had that order, so each chunk sorted every movement of the period after the
last one read: the chunks of 250,000 movements cost more than 10 minutes. The index of the
merchant's movements by moment and id gives each chunk from where the last one stopped.

Revision ID: 0028
Revises: 0026
Create Date: 2026-11-27
"""

from alembic import op

revision = "0028"
down_revision = "0026"
branch_labels = None
depends_on = None

LEDGER = "ix_ledger_entries_merchant_kind_occurred"
LEDGER_FILTERS = ["merchant_id", "connection_generation", "kind", "occurred_at"]
LEDGER_READ = ["currency", "amount", "value", "value_currency"]
FIGURES = "ix_mirrored_operations_merchant_created_figures"
FIGURES_BEFORE = ["merchant_id", "created_at", "status", "currency", "amount", "amount_paid"]
FIGURES_ADDED = ["category", "state", "operation_id"]
LEDGER_ORDER = "ix_ledger_entries_merchant_occurred"


def upgrade():
    op.create_index(
        LEDGER_ORDER, "ledger_entries", ["merchant_id", "connection_generation", "occurred_at", "id"]
    )
    op.drop_index(LEDGER, "ledger_entries")
    op.create_index(LEDGER, "ledger_entries", LEDGER_FILTERS + LEDGER_READ)
    op.drop_index(FIGURES, "mirrored_operations")
    op.create_index(FIGURES, "mirrored_operations", FIGURES_BEFORE + FIGURES_ADDED)


def downgrade():
    op.drop_index(FIGURES, "mirrored_operations")
    op.create_index(FIGURES, "mirrored_operations", FIGURES_BEFORE)
    op.drop_index(LEDGER, "ledger_entries")
    op.create_index(LEDGER, "ledger_entries", LEDGER_FILTERS)
    op.drop_index(LEDGER_ORDER, "ledger_entries")
