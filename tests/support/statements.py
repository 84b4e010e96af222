"""The SQL statements a request runs, for the tests that keep pages' queries few."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import sqlalchemy as sa
from flask import Flask

from portal.extensions import db


@contextlib.contextmanager
def recorded_statements(app: Flask) -> Iterator[list[str]]:
    """The SQL statements `app` runs while the block runs (a streamed download's too, when the
    block reads it)."""
    statements: list[str] = []
    with _recording(app, lambda statement, _parameters: statements.append(statement)):
        yield statements


@contextlib.contextmanager
def recorded_queries(app: Flask) -> Iterator[list[tuple[str, object]]]:
    """The SQL statements `app` runs while the block runs, each with its parameters: for the
    tests that check what a statement names, not only that it runs."""
    queries: list[tuple[str, object]] = []
    with _recording(app, lambda statement, parameters: queries.append((statement, parameters))):
        yield queries


@contextlib.contextmanager
def _recording(app: Flask, record: Callable[[str, object], None]) -> Iterator[None]:
    """`record(statement, parameters)` called for each statement `app` runs in the block."""

    def listener(_conn, _cursor, statement, parameters, *_args) -> None:
        record(statement, parameters)

    with app.app_context():
        engine = db.engine
    sa.event.listen(engine, "before_cursor_execute", listener)
    try:
        yield
    finally:
        sa.event.remove(engine, "before_cursor_execute", listener)


def statements_of(app: Flask, client, path: str) -> list[str]:
    """The SQL statements that serving `path` to `client` runs (the answer must be a 200)."""
    with recorded_statements(app) as statements:
        assert client.get(path).status_code == 200
    return statements
