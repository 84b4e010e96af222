"""List endpoints: query-string filters and sorts turned into SQL, and the pagination envelope.

Every filter is validated before anything runs; all malformed parameters are reported together
as one code 9 error naming each parameter.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import date, timedelta
from urllib.parse import urlencode

from flask import current_app, request

from . import money, seek
from .currencies import CURRENCIES
from .db import COUNTING_INDEXES, get, nullable_columns, table_version
from .errors import ApiError
from .seek import ListSql, Order

DEFAULT_PER_PAGE = 50
MAX_PER_PAGE = 100
MAX_PAGE = 2_147_483_647
MAX_ID = 2**63 - 1
_DIGITS = re.compile(r"[0-9]+")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
COVERED = {name: set(columns) for name, columns in COUNTING_INDEXES.items()}


class ListQuery:
    """Collects WHERE conditions, ORDER BY and the page window from the request's query string."""

    def __init__(self) -> None:
        self.args = request.args
        self.errors: dict[str, list[str]] = {}
        self.where: list[str] = []
        self.params: list[object] = []
        self.columns: set[str] = set()
        self.sorted_by: tuple[str, bool] | None = None  # the column, and whether descending

    def _value(self, name: str) -> str | None:
        value = self.args.get(name)
        return None if value is None or value.strip() == "" else value.strip()

    def _items(self, name: str) -> list[str] | None:
        value = self._value(name)
        if value is None:
            return None
        items = [item.strip() for item in value.split(",") if item.strip()]
        if not items:
            self._fail(name, f"The {name} must be a comma-separated list.")
            return None
        return items

    def _fail(self, name: str, message: str) -> None:
        self.errors.setdefault(name, []).append(message)

    def _condition(self, column: str, sql: str, *params: object) -> None:
        self.columns.add(column)
        self.where.append(sql)
        self.params.extend(params)

    def _in(self, column: str, values: list) -> None:
        self._condition(column, f"{column} IN ({','.join('?' * len(values))})", *values)

    def ids(self, name: str, column: str) -> None:
        items = self._items(name)
        if items is None:
            return
        if not all(_DIGITS.fullmatch(item) for item in items):
            self._fail(name, f"Each {name} must be an integer id.")
            return
        # An id beyond SQLite's integers matches nothing; `IN (NULL)` says so.
        self._in(column, [int(item) if int(item) <= MAX_ID else None for item in items])

    def texts(self, name: str, column: str) -> None:
        items = self._items(name)
        if items is not None:
            self._in(column, items)

    def currencies(self, name: str, column: str) -> None:
        items = self._items(name)
        if items is None:
            return
        unknown = [item for item in items if item not in CURRENCIES]
        if unknown:
            self._fail(name, f"The selected {name} is invalid: {', '.join(unknown)[:100]}.")
            return
        self._in(column, items)

    def statuses(self, name: str, column: str, codes: dict[int, str]) -> None:
        items = self._items(name)
        if items is None:
            return
        if not all(_DIGITS.fullmatch(item) and int(item) in codes for item in items):
            allowed = ", ".join(str(code) for code in codes)
            self._fail(name, f"The {name} must be a list of status codes ({allowed}).")
            return
        self._in(column, [int(item) for item in items])

    def decimal_range(self, prefix: str, column: str) -> None:
        for suffix, operator, to_units in (
            ("from", ">=", money.lower_bound_units),
            ("to", "<=", money.upper_bound_units),
        ):
            name = f"{prefix}_{suffix}"
            value = self._value(name)
            if value is None:
                continue
            try:
                bound = money.parse_bound(value)
            except ValueError as error:
                self._fail(name, f"The {name} {error}.")
                continue
            self._condition(column, f"{column} {operator} ?", to_units(bound))

    def date_range(self, column: str) -> None:
        for name, operator, shift in (("created_from", ">=", 0), ("created_to", "<", 1)):
            value = self._value(name)
            if value is None:
                continue
            try:
                if not _DATE.fullmatch(value):
                    raise ValueError
                day = date.fromisoformat(value)
            except ValueError:
                self._fail(name, f"The {name} must be a date in the form YYYY-MM-DD.")
                continue
            if shift and day == date.max:
                continue  # every timestamp is on or before the last representable day
            bound = day + timedelta(days=shift)
            self._condition(column, f"{column} {operator} ?", bound.isoformat())

    def equals(self, name: str, column: str) -> None:
        value = self._value(name)
        if value is not None:
            self._condition(column, f"{column} = ?", value)

    def choice(self, name: str, column: str, choices: tuple[str, ...]) -> None:
        value = self._value(name)
        if value is None:
            return
        if value not in choices:
            self._fail(name, f"The selected {name} is invalid.")
            return
        self._condition(column, f"{column} = ?", value)

    def zero_or_one(self, name: str, column: str) -> None:
        value = self._value(name)
        if value is None:
            return
        if value not in ("0", "1"):
            self._fail(name, f"The {name} must be 0 or 1.")
            return
        self._condition(column, f"{column} = ?", int(value))

    def sort(self, columns: dict[str, str], default: str) -> None:
        """`sort` picks the column, `sort_type` the direction; ties go by id the same way.
        Without `sort`, the `default` column descending."""
        field = self._value("sort")
        direction = self._value("sort_type")
        if direction is not None and direction.lower() not in ("asc", "desc"):
            self._fail("sort_type", "The sort_type must be asc or desc.")
            direction = None
        if field is None:
            column, descending = default, True
        elif field not in columns:
            self._fail("sort", f"The sort must be one of: {', '.join(columns)}.")
            return
        else:
            column, descending = columns[field], (direction or "asc").lower() == "desc"
        self.sorted_by = column, descending

    def _positive_int(self, name: str, default: int) -> int:
        value = self._value(name)
        if value is None:
            return default
        if not _DIGITS.fullmatch(value) or not 1 <= int(value) <= MAX_PAGE:
            self._fail(name, f"The {name} must be an integer between 1 and {MAX_PAGE}.")
            return default
        return int(value)

    def page(self, table: str, counting_index: str | None = None) -> tuple[list[sqlite3.Row], dict]:
        """Run the query for the requested page; returns the rows and the envelope around them.

        The table's version, the count and the rows are read in one transaction, so they agree
        with each other; the count is remembered for that version and a deep page seeks from a
        boundary remembered for it (`seek`). Counting a broad filter through a range index costs
        a table lookup per row; when every filtered column is in the table's narrow covering
        index, the count scans that instead.
        """
        page = self._positive_int("page", 1)
        per_page = min(self._positive_int("per_page", DEFAULT_PER_PAGE), MAX_PER_PAGE)
        if self.errors:
            raise ApiError(9, errors=self.errors)
        assert self.sorted_by is not None  # sort() ran, and refused nothing
        where = " AND ".join(self.where)
        connection = get()
        column, descending = self.sorted_by
        order = Order(column, descending, nullable=column in nullable_columns(connection, table))
        # Table and column names come from the views' constants, values go in as parameters.
        covered = counting_index and self.columns and self.columns <= COVERED[counting_index]
        source = f"{table} INDEXED BY {counting_index}" if covered else table
        count_sql = f"SELECT COUNT(*) FROM {source} {f'WHERE {where}' if where else ''}"  # noqa: S608
        query = ListSql(current_app.config["DATABASE"], table, where, tuple(self.params), order)
        connection.execute("BEGIN")
        try:
            version = table_version(connection, table)
            total = seek.total(connection, query, version, count_sql)
            rows = seek.page_rows(connection, query, version, (page - 1) * per_page, per_page)
        finally:
            connection.execute("COMMIT")
        return rows, envelope(page, per_page, total, len(rows))


def envelope(page: int, per_page: int, total: int, count: int) -> dict:
    """`links` and `meta` of a page: absolute URLs keeping the request's other parameters."""
    path = request.base_url
    last_page = max(1, -(-total // per_page))
    kept = [(key, value) for key, value in request.args.items(multi=True) if key != "page"]

    def link(number: int) -> str:
        return f"{path}?{urlencode([*kept, ('page', number)])}"

    first_position = (page - 1) * per_page + 1
    return {
        "links": {
            "first": link(1),
            "last": link(last_page),
            "prev": link(page - 1) if page > 1 else None,
            "next": link(page + 1) if page < last_page else None,
        },
        "meta": {
            "current_page": page,
            "from": first_position if count else None,
            "last_page": last_page,
            "path": path,
            "per_page": per_page,
            "to": first_position + count - 1 if count else None,
            "total": total,
        },
    }
