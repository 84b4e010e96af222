"""The SQL statements a request runs, for the tests that keep pages' queries few."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sqlalchemy as sa
from flask import Flask

from portal.extensions import db


@contextlib.contextmanager
def recorded_statements(app: Flask) -> Iterator[list[str]]:
    """The SQL statements `app` runs while the block runs (a streamed download's too, when the
    block reads it), in the list yielded once the block ends."""
    statements: list[str] = []
    with recorded_queries(app) as queries:
        yield statements
        statements.extend(statement for statement, _ in queries)


@contextlib.contextmanager
def recorded_queries(app: Flask) -> Iterator[list[tuple[str, object]]]:
    """The SQL statements `app` runs while the block runs, each with its parameters: for the
    tests that check what a statement names, not only that it runs."""
    queries: list[tuple[str, object]] = []

    def record(_conn, _cursor, statement, parameters, *_args) -> None:
        queries.append((statement, parameters))

    with app.app_context():
        engine = db.engine
    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield queries
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)


def statements_of(app: Flask, client, path: str) -> list[str]:
    """The SQL statements that serving `path` to `client` runs (the answer must be a 200)."""
    with recorded_statements(app) as statements:
        assert client.get(path).status_code == 200
    return statements
