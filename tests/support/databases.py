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
def _template(*, with_accounts: bool) -> Path:
    """A SQLite file made by the migrations, once per process (per xdist worker); with the
    users of `factories.Accounts` stored too, for the many tests that sign them in (storing
    them took most of such a test's set-up)."""
    from portal import create_app, schema
    from portal.extensions import db
    from tests.support import factories

    folder = tempfile.TemporaryDirectory(
        prefix="portal-migrated-", dir=os.environ.get("PYTEST_DEBUG_TEMPROOT")
    )
    atexit.register(folder.cleanup)
    template = Path(folder.name) / "migrated.sqlite3"
    if with_accounts:
        shutil.copyfile(_template(with_accounts=False), template)
    app = create_app(
        {
            "TESTING": True,
            "SECRET_KEY": "template",
            "TOKEN_KEYS": Fernet.generate_key().decode(),
            "DATABASE_URL": f"{SQLITE}{template}",
            "PASSWORD_HASH_METHOD": TEST_PASSWORD_HASH_METHOD,
        }
    )
    if with_accounts:
        factories.accounts(app)
    else:
        with app.app_context():
            schema.upgrade()
    with app.app_context():
        db.engine.dispose()
    return template


def migrated(app: Flask, *, with_accounts: bool = False) -> Flask:
    """Give `app` the schema of the migrations: a copy of the migrated file for a SQLite file not
    made yet, the migrations themselves for any other database; and, if asked, the users of
    `factories.Accounts`. Flask-Migrate is bound to it, as `flask db` and the commands bind it,
    for the tests that migrate it themselves."""
    from portal import schema
    from tests.support import factories

    schema.bind(app)
    url = app.config["SQLALCHEMY_DATABASE_URI"]
    path = Path(url.removeprefix(SQLITE))
    if url.startswith(SQLITE) and not path.exists():
        shutil.copyfile(_template(with_accounts=with_accounts), path)
        return app
    with app.app_context():
        schema.upgrade()
    if with_accounts:
        factories.accounts(app)
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
