"""The portal's column types (`portal/database.py`) as the database stores them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from portal.database import UtcDateTime

MOMENTS = [
    datetime(2024, 5, 1, 12, 3, 22, tzinfo=UTC),
    datetime(2024, 5, 1, 12, 3, 22, 5, tzinfo=UTC),
    datetime(2024, 12, 31, 23, 59, 59, 999999, tzinfo=timezone(timedelta(hours=-5))),
    datetime(999, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5, minutes=30))),
]


def test_a_timestamp_is_stored_on_sqlite_as_sqlalchemys_datetime_text_in_utc(tmp_path):
    """The rows already stored, and every value a query compares them with, are SQLAlchemy's
    DATETIME text in UTC: the one-step writer must make exactly that text, and read back the
    same instant."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'types.sqlite3'}")
    table = sa.Table(
        "moments",
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("at", UtcDateTime),
    )
    table.metadata.create_all(engine)
    dialect = sqlite.dialect()  # what the column's own type writes there, in two steps
    datetime_text = UtcDateTime().impl.dialect_impl(dialect).bind_processor(dialect)
    with engine.begin() as connection:
        connection.execute(sa.insert(table), [{"at": moment} for moment in [*MOMENTS, None]])
        stored = connection.execute(sa.text("SELECT at FROM moments ORDER BY id")).scalars().all()
        read = connection.execute(sa.select(table.c.at).order_by(table.c.id)).scalars().all()
    assert stored == [datetime_text(moment.astimezone(UTC)) for moment in MOMENTS] + [None]
    assert stored[:2] == ["2024-05-01 12:03:22.000000", "2024-05-01 12:03:22.000005"]
    assert stored[2] == "2025-01-01 04:59:59.999999"
    assert read == [*MOMENTS, None]
    assert [moment.tzinfo for moment in read[:-1]] == [UTC] * len(MOMENTS)
