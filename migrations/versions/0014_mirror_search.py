"""Search and the attention list over the mirror: substring indexes and the lists' indexes.

Search finds any fragment (3 characters or more) of an order number, id, address or hash. A
plain LIKE '%…%' reads every row of a merchant's mirror (about 80 ms at 100,000 operations), so:

- SQLite: FTS5 tables with the trigram tokenizer (case-insensitive), one per mirrored table,
  filled by triggers, so the mirror's sync needs to know nothing of them;
- PostgreSQL: GIN trigram indexes (pg_trgm) on the lower-cased columns, which `LIKE` uses;
  without the extension (not installed, or not allowed) search reads the rows instead. GIN keeps
  new rows in a pending list that every search reads until it is merged: with the default
  4 MB limit a search after a first sync read 28,000 unmerged rows (25 ms of 50 at 100,000
  operations); 256 kB keeps searches fast and writes in batches still (no pending list at
  all made the first sync's writes three times slower).

The attention list counts on every page: undecided transactions, operations by status, and the
transactions of closed operations (indexes that hold every column these counts read, so the
rows themselves, with their large `record`, are not read).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op


revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# table -> its FTS table (SQLite) and the columns searched
SEARCHED = {
    "mirrored_operations": ("mirrored_operations_search", ("order_id", "operation_id", "address")),
    "mirrored_transactions": ("mirrored_transactions_search", ("tx_id", "transaction_id")),
}


def upgrade():
    op.create_index(
        "ix_mirrored_operations_merchant_status",
        "mirrored_operations",
        ["merchant_id", "status", "updated_at", "operation_id", "amount_paid"],
    )
    op.create_index(
        "ix_mirrored_transactions_merchant_status",
        "mirrored_transactions",
        ["merchant_id", "status", "linked", "operation_id"],
    )
    op.create_index(
        "ix_mirrored_transactions_merchant_operation_status",
        "mirrored_transactions",
        ["merchant_id", "operation_id", "status", "linked"],
    )
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for table, (search, columns) in SEARCHED.items():
            _sqlite_search(table, search, columns)
    elif bind.dialect.name == "postgresql":
        schema = _trigram_schema(bind)
        if schema is not None:
            for table, (_search, columns) in SEARCHED.items():
                for column in columns:
                    op.execute(
                        f"CREATE INDEX ix_{table}_{column}_trigram ON {table} "
                        f'USING gin (lower({column}) "{schema}".gin_trgm_ops) '
                        "WITH (gin_pending_list_limit = 256)"
                    )


def _sqlite_search(table: str, search: str, columns: tuple[str, ...]) -> None:
    """An external-content FTS5 table over `columns` of `table`, kept by triggers."""
    names = ", ".join(columns)
    new = ", ".join(f"new.{column}" for column in columns)
    old = ", ".join(f"old.{column}" for column in columns)
    op.execute(
        f"CREATE VIRTUAL TABLE {search} USING fts5({names}, content='{table}', "
        "content_rowid='id', tokenize='trigram')"
    )
    op.execute(f"INSERT INTO {search}(rowid, {names}) SELECT id, {names} FROM {table}")
    op.execute(
        f"CREATE TRIGGER {search}_insert AFTER INSERT ON {table} BEGIN "
        f"INSERT INTO {search}(rowid, {names}) VALUES (new.id, {new}); END"
    )
    op.execute(
        f"CREATE TRIGGER {search}_delete AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {search}({search}, rowid, {names}) VALUES ('delete', old.id, {old}); END"
    )
    op.execute(
        f"CREATE TRIGGER {search}_update AFTER UPDATE OF {names} ON {table} BEGIN "
        f"INSERT INTO {search}({search}, rowid, {names}) VALUES ('delete', old.id, {old}); "
        f"INSERT INTO {search}(rowid, {names}) VALUES (new.id, {new}); END"
    )


def _trigram_schema(bind) -> str | None:
    """The schema of pg_trgm, installed into `public` if it is available and allowed; None
    when it cannot be had (search then reads the rows, more slowly)."""
    installed = sa.text(
        "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'"
    )
    schema = bind.execute(installed).scalar()
    if schema is not None:
        return schema
    available = sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")
    if bind.execute(available).scalar() is None:
        return None
    try:
        with bind.begin_nested():
            bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public"))
    except sa.exc.DBAPIError:  # no privilege, or another process installed it meanwhile
        pass
    return bind.execute(installed).scalar()


def downgrade():
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for search, _columns in SEARCHED.values():
            for trigger in ("insert", "delete", "update"):
                op.execute(f"DROP TRIGGER IF EXISTS {search}_{trigger}")
            op.execute(f"DROP TABLE IF EXISTS {search}")
    elif bind.dialect.name == "postgresql":
        for table, (_search, columns) in SEARCHED.items():
            for column in columns:
                op.execute(f"DROP INDEX IF EXISTS ix_{table}_{column}_trigram")
    op.drop_index("ix_mirrored_transactions_merchant_operation_status", "mirrored_transactions")
    op.drop_index("ix_mirrored_transactions_merchant_status", "mirrored_transactions")
    op.drop_index("ix_mirrored_operations_merchant_status", "mirrored_operations")
