"""The embedded SQLite database lets pages read while the worker writes."""

from __future__ import annotations

import contextlib
import sqlite3

from tests.support.forms import signed_in


def test_a_page_reads_while_another_process_holds_a_write_transaction(app, accounts):
    """A sync's page of writes larger than SQLite's page cache holds the database exclusively
    until its commit; in the write-ahead log's mode that stops other writers only, so an
    accountant's page still answers instead of waiting and failing with "database is locked"."""
    client = signed_in(app, accounts.accountant)
    client.get("/attention")  # a first visit writes that the time zone was asked: not tested here
    path = app.config["DATABASE_URL"].removeprefix("sqlite:///")
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as worker:
        worker.execute("BEGIN EXCLUSIVE")
        worker.execute("DELETE FROM mirrored_operations")
        try:
            response = client.get("/attention")
        finally:
            worker.execute("ROLLBACK")
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    assert "Needs attention" in response.get_data(as_text=True)
    with contextlib.closing(sqlite3.connect(path)) as reading:
        assert reading.execute("PRAGMA journal_mode").fetchone() == ("wal",)
