"""The database's own column types, shared by every subsystem's models."""

from __future__ import annotations

import enum
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.sqlite.base import SQLiteCompiler
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import GenericFunction

from portal.periods import Whole

# A list counts its rows up to one more than this: past it, its heading says "More than 1,000"
# (a count of every row would cost each page what reading them all costs).
COUNTED = 1_000


def in_spans(
    span: sa.orm.QueryableAttribute[str],
    starts: sa.orm.QueryableAttribute[date],
    whole: list[Whole],
) -> sa.ColumnElement[bool]:
    """Totals kept by month and day (their `span` and first day, `starts`) that make up the
    spans of `whole` (`portal.periods.covered`)."""
    return sa.or_(
        *(
            sa.and_(
                span == kind.value,
                sa.true() if first is None else starts >= first,
                sa.true() if until is None else starts < until,
            )
            for kind, first, until in whole
        )
    )


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


def iso_utc(moment: datetime) -> str:
    """`moment` as webhooks and events carry it: UTC, to the second, with its `Z`."""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class UtcDateTime(sa.TypeDecorator):
    """A timestamp stored in UTC that always comes back timezone-aware (SQLite drops the zone)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        return value.astimezone(UTC) if value is not None else None

    def bind_processor(self, dialect: sa.Dialect) -> Callable[[datetime | None], Any] | None:
        """On SQLite, the text SQLAlchemy's DATETIME writes there (`2024-05-01 12:03:22.000000`,
        in UTC), made in one step instead of two: a first sync binds about 19 timestamps an
        operation, and the two steps cost 3 % of its instructions."""
        if dialect.name != "sqlite":
            return super().bind_processor(dialect)

        def utc_text(value: datetime | None) -> str | None:
            if value is None:
                return None
            return value.astimezone(UTC).isoformat(" ", "microseconds")[:26]

        return utc_text

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class DecimalText(sa.TypeDecorator):
    """An exact decimal amount stored as its text: no float on any database."""

    impl = sa.String(64)
    cache_ok = True

    def process_bind_param(self, value: Decimal | None, dialect: sa.Dialect) -> str | None:
        return None if value is None else format(Decimal(value), "f")

    def process_result_value(self, value: str | None, dialect: sa.Dialect) -> Decimal | None:
        return None if value is None else Decimal(value)


def enum_column(enum_class: type[enum.StrEnum]) -> sa.Enum:
    return sa.Enum(
        enum_class,
        native_enum=False,
        create_constraint=True,
        length=20,
        values_callable=lambda members: [member.value for member in members],
    )


def import_every_model() -> None:
    """Put every table in the metadata, read by this process or not: migrations and key
    rotation walk the whole schema. Every subsystem's `models` module is found by its place
    (`portal/<subsystem>/models.py`), so a new subsystem needs no list here."""
    portal = importlib.import_module("portal")
    for subsystem in pkgutil.iter_modules(portal.__path__, "portal."):
        if subsystem.ispkg and importlib.util.find_spec(f"{subsystem.name}.models"):
            importlib.import_module(f"{subsystem.name}.models")


class decimal_sum(GenericFunction[str]):
    """The exact sum of a column of decimal text, as text ("0" over no rows): PostgreSQL adds
    them as NUMERIC; SQLite, which has no exact decimal type, with Python's `Decimal`
    (`portal.extensions.DecimalSum`, given to every SQLite connection). Never a float."""

    type = sa.String()
    inherit_cache = True


@compiles(decimal_sum, "postgresql")
def _numeric_sum(element: decimal_sum, compiler: SQLCompiler, **kw: Any) -> str:
    column = compiler.process(element.clauses, **kw)
    return f"COALESCE(CAST(sum(CAST({column} AS NUMERIC)) AS TEXT), '0')"


class decimal_add(GenericFunction[str]):
    """The exact sum of two decimal texts, as text: PostgreSQL adds them as NUMERIC, SQLite
    with Python's `Decimal` (`portal.extensions.decimal_add`, given to every SQLite connection),
    as `decimal_sum` does for a column."""

    type = sa.String()
    inherit_cache = True


@compiles(decimal_add, "postgresql")
def _numeric_add(element: decimal_add, compiler: SQLCompiler, **kw: Any) -> str:
    left, right = (compiler.process(clause, **kw) for clause in element.clauses)
    return f"CAST(CAST({left} AS NUMERIC) + CAST({right} AS NUMERIC) AS TEXT)"


def _sqlite_from_hint(
    _compiler: SQLCompiler, _table: sa.FromClause, text: str | None
) -> str | None:
    """SQLite's hints follow the table they are about (`Select.with_hint(table, "INDEXED BY
    ix_...", "sqlite")`): SQLAlchemy's SQLite dialect would leave them out."""
    return text


SQLiteCompiler.get_from_hint_text = _sqlite_from_hint  # type: ignore[method-assign, assignment]
