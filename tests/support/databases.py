"""The portal's databases for tests: SQLite files copied from one migrated per worker, and
PostgreSQL schemas of their own. `tests/app/test_database_migrations.py` still runs every
migration, down and up, on both."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from cryptography.fernet import Fernet
from flask import Flask

from tests.support.required import skip_unless

# One iteration keeps a sign-in at a fraction of a millisecond; production hashes with scrypt.
TEST_PASSWORD_HASH_METHOD = "pbkdf2:sha256:1"
SQLITE = "sqlite:///"


@functools.cache
def _migrated_template() -> Path:
    """A SQLite file made by the migrations, once per process (per xdist worker)."""
    from portal import create_app, schema
    from portal.extensions import db

    folder = tempfile.TemporaryDirectory(
        prefix="portal-migrated-", dir=os.environ.get("PYTEST_DEBUG_TEMPROOT")
    )
    atexit.register(folder.cleanup)
    template = Path(folder.name) / "migrated.sqlite3"
    app = create_app(
        {
            "TESTING": True,
            "SECRET_KEY": "template",
            "TOKEN_KEYS": Fernet.generate_key().decode(),
            "DATABASE_URL": f"{SQLITE}{template}",
        }
    )
    with app.app_context():
        schema.upgrade()
        db.engine.dispose()
    return template


def migrated(app: Flask) -> Flask:
    """Give `app` the schema of the migrations: a copy of the migrated file for a SQLite file not
    made yet, the migrations themselves for any other database. Flask-Migrate is bound to it,
    as `flask db` and the commands bind it, for the tests that migrate it themselves."""
    from portal import schema

    schema.bind(app)
    url = app.config["SQLALCHEMY_DATABASE_URI"]
    path = Path(url.removeprefix(SQLITE))
    if url.startswith(SQLITE) and not path.exists():
        shutil.copyfile(_migrated_template(), path)
    else:
        with app.app_context():
            schema.upgrade()
    return app


@contextlib.contextmanager
def postgres_schema(base: str | None = None) -> Iterator[str]:
    """A fresh schema in the database `base` (default PORTAL_TEST_DATABASE_URL), as a URL whose
    search path is that schema."""
    base = base or os.environ.get("PORTAL_TEST_DATABASE_URL", "")
    skip_unless(bool(base), "postgresql", "PORTAL_TEST_DATABASE_URL is not set")
    schema = f"portal_test_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(base)
    with engine.begin() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in base else "?"
    try:
        yield f"{base}{separator}options=-csearch_path%3D{schema}"
    finally:
        with engine.begin() as connection:
            connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()
