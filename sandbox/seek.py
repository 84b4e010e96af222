"""Deep list pages without walking every row before them: keyset seeks from remembered boundaries.

`LIMIT ? OFFSET ?` makes SQLite step over every row before the page, so page 1,000 of 100,000
costs a thousand times page 1. Each answered page remembers the sort key of its last row (and
of the row before it): the next page, or the same page again, then starts with an index seek
just past that key, or skips from the nearest boundary below it. A remembered key belongs to
one version of its table (`db.LISTED_TABLES`: triggers draw a new one on every insert, update
and delete), so after any change the page is read with OFFSET again and is always exactly what
a plain OFFSET query answers. Either way only ids and sort keys are walked (an index-only scan
where the sort's index covers the filters), then the page's rows are read by id.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

MAX_QUERIES = 256  # list queries whose boundaries are kept, least recently used dropped first
MAX_BOUNDARIES = 4096  # per query: a full read of 400,000 rows at 100 a page


@dataclass(frozen=True)
class Order:
    """`ORDER BY column, id` in one direction."""

    column: str
    descending: bool
    nullable: bool

    def sql(self) -> str:
        way = "DESC" if self.descending else "ASC"
        return f"{self.column} {way}, id {way}" if self.column != "id" else f"id {way}"

    def after(self, key: tuple) -> tuple[str, list[object]]:
        """The condition for rows after `key` (its value and id) in this order.

        SQLite puts NULL first in ascending order, so NULLs come after every value only when
        descending, and a NULL key is followed by the other NULLs by id, then (ascending) by
        every value.
        """
        value, row_id = key
        if self.column == "id":
            return ("id < ?" if self.descending else "id > ?"), [row_id]
        operator = "<" if self.descending else ">"
        if value is None:
            tail = "" if self.descending else f" OR {self.column} IS NOT NULL"
            return f"({self.column} IS NULL AND id {operator} ?{tail})", [row_id]
        seek = f"({self.column}, id) {operator} (?, ?)"
        if self.descending and self.nullable:
            return f"({seek} OR {self.column} IS NULL)", [value, row_id]
        return seek, [value, row_id]


@dataclass(frozen=True)
class ListSql:
    """One list query of one database: what a remembered total or boundary belongs to."""

    database: str
    table: str
    where: str  # "" or the conditions joined by AND; values are in `params`
    params: tuple[object, ...]
    order: Order


@dataclass
class _Known:
    """What one version of a table told about one list query."""

    version: int
    total: int | None = None
    boundaries: dict[int, tuple] = field(default_factory=dict)  # position -> key before it


class _Memory:
    """What is known of every list query, each for one version of its table."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.queries: OrderedDict[ListSql, _Known] = OrderedDict()

    def _known(self, query: ListSql, version: int) -> _Known:
        """The entry of `query` for this version, a new one if the table changed (under lock)."""
        known = self.queries.get(query)
        if known is None or known.version != version:
            known = self.queries[query] = _Known(version)
        self.queries.move_to_end(query)
        while len(self.queries) > MAX_QUERIES:
            self.queries.popitem(last=False)
        return known

    def total(self, query: ListSql, version: int) -> int | None:
        with self.lock:
            return self._known(query, version).total

    def remember_total(self, query: ListSql, version: int, total: int) -> None:
        with self.lock:
            self._known(query, version).total = total

    def nearest(self, query: ListSql, version: int, position: int) -> tuple[int, tuple | None]:
        """The remembered position closest to `position` from below and the key just before
        it; (0, None) when there is none for this version of the table."""
        with self.lock:
            keys = self._known(query, version).boundaries
            if position in keys:
                return position, keys[position]
            below = max((known for known in keys if known < position), default=0)
            return below, keys.get(below)

    def remember(self, query: ListSql, version: int, position: int, key: tuple) -> None:
        """`key` is that of the row just before `position` (0-based) in this version."""
        with self.lock:
            keys = self._known(query, version).boundaries
            if len(keys) >= MAX_BOUNDARIES:
                keys.clear()
            keys[position] = key


_memory = _Memory()


def total(connection: sqlite3.Connection, query: ListSql, version: int, count_sql: str) -> int:
    """How many rows `query` selects: counted once per version of the table (a count walks
    every matching index entry, 10 ms for 60,000 rows)."""
    known = _memory.total(query, version)
    if known is None:
        known = connection.execute(count_sql, query.params).fetchone()[0]
        _memory.remember_total(query, version, known)
    return known


def page_rows(
    connection: sqlite3.Connection, query: ListSql, version: int, offset: int, limit: int
) -> list[sqlite3.Row]:
    """The rows `LIMIT limit OFFSET offset` of `query` answers, read inside the caller's
    transaction, which saw `version` of the table."""
    start, key = _memory.nearest(query, version, offset)
    conditions, values = ([query.where] if query.where else []), list(query.params)
    if key is not None:
        condition, key_values = query.order.after(key)
        conditions.append(condition)
        values.extend(key_values)
    skip = offset - start
    # One row more in front when rows are skipped: its key is this page's boundary next time.
    with_boundary = skip > 0
    filters = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    keys_sql = (
        f"SELECT {query.order.column}, id FROM {query.table} {filters} "  # noqa: S608
        f"ORDER BY {query.order.sql()} LIMIT ? OFFSET ?"
    )
    keys = [
        tuple(found)
        for found in connection.execute(
            keys_sql, [*values, limit + with_boundary, skip - with_boundary]
        )
    ]
    if with_boundary and keys:
        _memory.remember(query, version, offset, keys.pop(0))
    if len(keys) == limit:
        _memory.remember(query, version, offset + limit, keys[-1])
    return _rows_by_id(connection, query.table, [row_id for _, row_id in keys])


def _rows_by_id(connection: sqlite3.Connection, table: str, ids: list[int]) -> list[sqlite3.Row]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    found = connection.execute(f"SELECT * FROM {table} WHERE id IN ({marks})", ids)  # noqa: S608
    by_id = {row["id"]: row for row in found}
    return [by_id[row_id] for row_id in ids]
