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
    block reads it)."""
    statements: list[str] = []

    def record(_conn, _cursor, statement, *_args) -> None:
        statements.append(statement)

    with app.app_context():
        engine = db.engine
    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)


def statements_of(app: Flask, client, path: str) -> list[str]:
    """The SQL statements that serving `path` to `client` runs (the answer must be a 200)."""
    with recorded_statements(app) as statements:
        assert client.get(path).status_code == 200
    return statements
