"""The SQL statements a request runs, for the tests that keep pages' queries few."""

from __future__ import annotations

import sqlalchemy as sa
from flask import Flask

from portal.extensions import db


def statements_of(app: Flask, client, path: str) -> list[str]:
    """The SQL statements that serving `path` to `client` runs (the answer must be a 200)."""
    statements: list[str] = []

    def record(_conn, _cursor, statement, *_args) -> None:
        statements.append(statement)

    with app.app_context():
        engine = db.engine
    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        assert client.get(path).status_code == 200
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    return statements
