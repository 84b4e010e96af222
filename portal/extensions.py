"""Extensions, created once here and bound to the application in `create_app`."""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from typing import TYPE_CHECKING

import sqlalchemy as sa
from flask_babel import Babel
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_login import LoginManager
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect
from htmx_flask import Htmx
from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    """Declarative base of the portal's typed models."""


db = SQLAlchemy(model_class=Base)
if TYPE_CHECKING:
    # `db.Model` is a class built at run time from Base's body (plus Flask-SQLAlchemy's bind
    # and naming mixins), which a type checker cannot use as a base: it checks Base instead.
    Model = Base
else:
    Model = db.Model
login_manager = LoginManager()
csrf = CSRFProtect()
htmx = Htmx()
limiter = Limiter(key_func=get_remote_address)
babel = Babel()


def rows_changed(statement: sa.Executable) -> int:
    """Execute an UPDATE or DELETE; how many rows it changed. SQLAlchemy types the result of
    `Session.execute` as a plain `Result`, which has no row count."""
    result = db.session.execute(statement)
    assert isinstance(result, sa.CursorResult)
    return result.rowcount


class DecimalSum:
    """`portal.database.decimal_sum` as an SQLite aggregate: exact, with Python's `Decimal`."""

    def __init__(self) -> None:
        self.total = Decimal(0)

    def step(self, value: str | None) -> None:
        if value is not None:
            self.total += Decimal(value)

    def finalize(self) -> str:
        return format(self.total, "f")


def decimal_add(left: str, right: str) -> str:
    """`portal.database.decimal_add` as an SQLite function: exact, with Python's `Decimal`."""
    return format(Decimal(left) + Decimal(right), "f")


@sa.event.listens_for(sa.Engine, "connect")
def _sqlite_connection(dbapi_connection: object, _record: object) -> None:
    """SQLite enforces foreign keys (and so ON DELETE CASCADE) only when asked, per connection;
    its exact sums of decimal text (`portal.database.decimal_sum`, `decimal_add`) are given per
    connection too. The file keeps a write-ahead log: pages read while the worker's sync writes
    (a rollback journal locks readers out while a large transaction commits), and a commit
    appends to the log, which checkpoints copy into the file, instead of writing a journal and
    the file. `synchronous` stays FULL: a commit that moves money (an idempotency key, a
    withdrawal) survives a power cut."""
    if isinstance(dbapi_connection, sqlite3.Connection):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()
        dbapi_connection.create_aggregate("decimal_sum", 1, DecimalSum)  # type: ignore[arg-type]
        dbapi_connection.create_function("decimal_add", 2, decimal_add, deterministic=True)
