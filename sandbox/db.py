"""The sandbox's SQLite database: schema, one connection per request, serialized write transactions.

Reads run concurrently (WAL). Every change runs inside `write()`: a process-wide lock plus
`BEGIN IMMEDIATE`, so two requests that touch the same operation never interleave and no update
is lost.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from flask import current_app, g

from .money import from_units

SCHEMA = """
CREATE TABLE IF NOT EXISTS operations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    application_id TEXT,
    application_name TEXT,
    category TEXT NOT NULL,
    order_id TEXT,
    amount INTEGER NOT NULL,
    fee INTEGER NOT NULL,
    amount_paid INTEGER,
    rate INTEGER NOT NULL,
    currency TEXT NOT NULL,
    currency_paid TEXT NOT NULL,
    status INTEGER NOT NULL,
    address TEXT NOT NULL,
    hosted_page INTEGER NOT NULL DEFAULT 0,
    redirect_url TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    expires_at TEXT
);
CREATE TABLE IF NOT EXISTS transactions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    operation_id INTEGER NOT NULL REFERENCES operations(id),
    tx_id TEXT NOT NULL,
    amount INTEGER NOT NULL,
    status INTEGER NOT NULL,
    linked INTEGER NOT NULL DEFAULT 0,
    reject_reason TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS vouchers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    amount INTEGER NOT NULL,
    currency TEXT NOT NULL,
    code TEXT NOT NULL UNIQUE,
    status INTEGER NOT NULL,
    type TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS wallets (
    currency TEXT PRIMARY KEY,
    address TEXT NOT NULL,
    balance INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS exchanges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sell_currency TEXT NOT NULL,
    buy_currency TEXT NOT NULL,
    sell_amount INTEGER NOT NULL,
    buy_amount INTEGER NOT NULL,
    rate INTEGER NOT NULL,
    fee INTEGER NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cross_exchanges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    operation_id INTEGER NOT NULL REFERENCES operations(id),
    sell_currency TEXT NOT NULL,
    buy_currency TEXT NOT NULL,
    sell_amount INTEGER NOT NULL,
    buy_amount INTEGER NOT NULL,
    fee INTEGER NOT NULL,
    rate INTEGER NOT NULL,
    invoice_address TEXT NOT NULL,
    sell_address TEXT NOT NULL,
    buy_address TEXT NOT NULL,
    status TEXT NOT NULL,
    expired_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
-- The fee each payment operation has had taken from its wallet, once, at its first
-- confirmation (a table of its own, so that a database file made before it opens unchanged).
CREATE TABLE IF NOT EXISTS charged_fees (
    operation_id INTEGER PRIMARY KEY REFERENCES operations(id),
    amount INTEGER NOT NULL,
    charged_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS flags (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS frozen_prices (
    currency TEXT PRIMARY KEY,
    usd_price INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS table_versions (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL
);
"""

# Tables read by the list endpoints: each change to one draws a new random version in
# `table_versions`, so a list page can tell whether what it remembers of the table still holds
# (`seek`). Random rather than counted: a database file restored from a copy and changed again
# never comes back to a version it had before.
LISTED_TABLES = ("operations", "transactions", "vouchers")
CHANGES = ("INSERT", "UPDATE", "DELETE")
VERSION_TRIGGER = """
CREATE TRIGGER IF NOT EXISTS {table}_{change}_versioned AFTER {change} ON {table}
BEGIN
    UPDATE table_versions SET version = random() WHERE name = '{table}';
END;
"""

# Narrow covering indexes for counting broad filters (see `lists.ListQuery.page`).
COUNTING_INDEXES = {
    "operations_counting": (
        "status",
        "currency",
        "currency_paid",
        "category",
        "amount",
        "fee",
        "amount_paid",
        "created_at",
    ),
    "transactions_counting": ("status", "linked", "amount", "created_at"),
    "vouchers_counting": ("status", "currency", "amount", "created_at"),
}

# Created after bulk seeding, which is much faster than maintaining them row by row.
INDEXES = """
CREATE INDEX IF NOT EXISTS operations_created ON operations (created_at, id);
CREATE INDEX IF NOT EXISTS operations_updated ON operations (updated_at, id);
CREATE INDEX IF NOT EXISTS operations_amount ON operations (amount, id);
CREATE INDEX IF NOT EXISTS operations_fee ON operations (fee, id);
CREATE INDEX IF NOT EXISTS operations_amount_paid ON operations (amount_paid, id);
CREATE INDEX IF NOT EXISTS operations_rate ON operations (rate, id);
CREATE INDEX IF NOT EXISTS operations_order ON operations (order_id, id);
CREATE INDEX IF NOT EXISTS operations_category ON operations (category, id);
CREATE INDEX IF NOT EXISTS operations_currency ON operations (currency, id);
CREATE INDEX IF NOT EXISTS operations_currency_paid ON operations (currency_paid, id);
CREATE INDEX IF NOT EXISTS operations_status ON operations (status, expires_at);
CREATE INDEX IF NOT EXISTS operations_address ON operations (address);
CREATE INDEX IF NOT EXISTS transactions_operation ON transactions (operation_id, id);
CREATE INDEX IF NOT EXISTS transactions_created ON transactions (created_at, id);
CREATE INDEX IF NOT EXISTS transactions_updated ON transactions (updated_at, id);
CREATE INDEX IF NOT EXISTS transactions_amount ON transactions (amount, id);
CREATE INDEX IF NOT EXISTS transactions_tx ON transactions (tx_id);
CREATE INDEX IF NOT EXISTS vouchers_created ON vouchers (created_at, id);
CREATE INDEX IF NOT EXISTS vouchers_due ON vouchers (status, type, expires_at);
CREATE INDEX IF NOT EXISTS exchanges_created ON exchanges (created_at);
CREATE INDEX IF NOT EXISTS cross_exchanges_status ON cross_exchanges (status, expired_at);
"""

DEFAULT_FLAGS: dict[str, object] = {
    "application_banned": False,
    "company_banned": False,
    "withdrawals_allowed": True,
    "payment_gateways_available": True,
    "payment_gateway_fails": False,
    "exchange_daily_limit": 20,
    "unknown_invoice_redirect_url": None,
}

_write_lock = threading.Lock()


def utcnow() -> datetime:
    return datetime.now(UTC)


def timestamp(moment: datetime) -> str:
    """ISO 8601 in UTC with microseconds and `Z`: sorts as text in time order."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_text() -> str:
    return timestamp(utcnow())


def later_text(**delta: float) -> str:
    return timestamp(utcnow() + timedelta(**delta))


def connect(path: str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    connection.row_factory = sqlite3.Row
    connection.execute("PRAGMA busy_timeout = 30000")
    connection.execute("PRAGMA foreign_keys = ON")
    return connection


def initialise(path: str) -> None:
    """Create the schema and the default flags; idempotent, so a restart keeps every record."""
    connection = connect(path)
    try:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.executescript(SCHEMA)
        connection.executemany(
            "INSERT OR IGNORE INTO table_versions (name, version) VALUES (?, random())",
            [(table,) for table in LISTED_TABLES],
        )
        version_changes(connection)
        connection.executemany(
            "INSERT OR IGNORE INTO flags (name, value) VALUES (?, ?)",
            [(name, json.dumps(value)) for name, value in DEFAULT_FLAGS.items()],
        )
        create_indexes(connection)
    finally:
        connection.close()


def version_changes(connection: sqlite3.Connection) -> None:
    """The triggers that draw a new version of a listed table on each change to it."""
    for table in LISTED_TABLES:
        for change in CHANGES:
            connection.executescript(VERSION_TRIGGER.format(table=table, change=change))


@contextmanager
def unversioned_changes(connection: sqlite3.Connection) -> Iterator[None]:
    """Bulk changes without a trigger per row (seeding 100,000 operations took twice as long),
    on a database no server reads yet; every listed table has a new version afterwards."""
    for table in LISTED_TABLES:
        for change in CHANGES:
            connection.execute(f"DROP TRIGGER IF EXISTS {table}_{change}_versioned")
    try:
        yield
    finally:
        version_changes(connection)
        connection.execute("UPDATE table_versions SET version = random()")


def create_indexes(connection: sqlite3.Connection) -> None:
    connection.executescript(INDEXES)
    for name, columns in COUNTING_INDEXES.items():
        table = name.removesuffix("_counting")
        connection.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({', '.join(columns)})")
    connection.execute("ANALYZE")


MAX_IDLE_CONNECTIONS = 8
_idle: dict[str, list[sqlite3.Connection]] = {}
_idle_lock = threading.Lock()


def get() -> sqlite3.Connection:
    """The request's connection, on first use, given back at teardown.

    Connections are kept open between requests: a new one starts with an empty page cache and
    reads every page it needs from the file again, which costs more the larger the database
    (half the time of a list page at 100,000 operations). SQLite notices another connection's
    changes by itself, so a kept connection reads the same as a new one.
    """
    if "db" not in g:
        path = current_app.config["DATABASE"]
        with _idle_lock:
            idle = _idle.get(path)
            kept = idle.pop() if idle else None
        g.db = kept or connect(path)
    return g.db


def close(_error: BaseException | None = None) -> None:
    """Keep the request's connection for a later one, with no transaction left open."""
    connection = g.pop("db", None)
    if connection is None:
        return
    if connection.in_transaction:
        connection.execute("ROLLBACK")
    with _idle_lock:
        idle = _idle.setdefault(current_app.config["DATABASE"], [])
        if len(idle) < MAX_IDLE_CONNECTIONS:
            idle.append(connection)
            return
    connection.close()


@contextmanager
def write() -> Iterator[sqlite3.Connection]:
    """One atomic, serialized write transaction; rolled back entirely on any error."""
    connection = get()
    with _write_lock:
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")


def inserted_id(cursor: sqlite3.Cursor) -> int:
    """The id of the row the cursor's INSERT added (typed as possibly None by sqlite3)."""
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def table_version(connection: sqlite3.Connection, table: str) -> int:
    """The version of `table`'s rows, new with each change; read in the same transaction as
    what depends on it."""
    found = connection.execute("SELECT version FROM table_versions WHERE name = ?", (table,))
    return found.fetchone()[0]


_nullable: dict[str, frozenset[str]] = {}


def nullable_columns(connection: sqlite3.Connection, table: str) -> frozenset[str]:
    """The columns of `table` that may hold NULL. The schema is this module's, the same in
    every database, so the first answer holds for all."""
    if table not in _nullable:
        columns = connection.execute(f"PRAGMA table_info({table})").fetchall()
        _nullable[table] = frozenset(
            column["name"] for column in columns if not column["notnull"] and not column["pk"]
        )
    return _nullable[table]


def flags() -> dict[str, object]:
    rows = get().execute("SELECT name, value FROM flags").fetchall()
    return {**DEFAULT_FLAGS, **{row["name"]: json.loads(row["value"]) for row in rows}}


def frozen_prices(connection: sqlite3.Connection | None = None) -> dict[str, Decimal]:
    """The USD price of every currency while a tester holds the market still (in 10^-8 units
    on disk), none while it drifts. Read from the database so that every server process agrees."""
    rows = (connection or get()).execute("SELECT currency, usd_price FROM frozen_prices")
    return {row["currency"]: from_units(row["usd_price"]) for row in rows}


def flag(name: str) -> Any:  # a JSON value: its type is the flag's own
    row = get().execute("SELECT value FROM flags WHERE name = ?", (name,)).fetchone()
    return json.loads(row["value"]) if row else DEFAULT_FLAGS[name]
