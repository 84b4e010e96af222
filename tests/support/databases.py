"""The portal's databases for tests: SQLite files copied from one migrated per worker, and a
PostgreSQL schema migrated per worker and emptied for each test (or a fresh schema, for the tests
that need one). `tests/app/test_database_migrations.py` still runs every migration, down and up,
on both."""

from __future__ import annotations

import atexit
import contextlib
import functools
import graphlib
import os
import shutil
import tempfile
import urllib.parse
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
    from portal import schema
    from portal.extensions import db
    from tests.support import factories

    folder = tempfile.TemporaryDirectory(
        prefix="portal-migrated-", dir=os.environ.get("PYTEST_DEBUG_TEMPROOT")
    )
    atexit.register(folder.cleanup)
    template = Path(folder.name) / "migrated.sqlite3"
    if with_accounts:
        shutil.copyfile(_template(with_accounts=False), template)
    app = portal_on(f"{SQLITE}{template}")
    if with_accounts:
        factories.accounts(app)
    else:
        with app.app_context():
            schema.upgrade()
    with app.app_context():
        db.engine.dispose()
    return template


def portal_on(url: str) -> Flask:
    """The portal on the database at `url`, as it is (no migration, no user): to make a
    database other tests start from, or to read one a bench filled."""
    from portal import create_app

    return create_app(
        {
            "TESTING": True,
            "SECRET_KEY": "template",
            "TOKEN_KEYS": Fernet.generate_key().decode(),
            "DATABASE_URL": url,
            "PASSWORD_HASH_METHOD": TEST_PASSWORD_HASH_METHOD,
        }
    )


def migrated(app: Flask, *, with_accounts: bool = False) -> Flask:
    """Give `app` the schema of the migrations: a copy of the migrated file for a SQLite file not
    made yet, nothing for the worker's emptied PostgreSQL schema (`emptied_postgres_schema`),
    the migrations themselves for any other database; and, if asked, the users of
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
    if url not in _MIGRATED_SCHEMAS:
        with app.app_context():
            schema.upgrade()
    if with_accounts:
        factories.accounts(app)
    return app


def _postgres_base(base: str | None) -> str:
    base = base or os.environ.get("PORTAL_TEST_DATABASE_URL", "")
    skip_unless(bool(base), "postgresql", "PORTAL_TEST_DATABASE_URL is not set")
    return base


def _schema_url(base: str, schema: str, **parameters: str) -> str:
    """`base` with `schema` as its search path (and any other connection `parameters`)."""
    query = urllib.parse.urlencode({"options": f"-csearch_path={schema}", **parameters})
    return f"{base}{'&' if '?' in base else '?'}{query}"


@contextlib.contextmanager
def postgres_schema(base: str | None = None, *, keep: bool = False) -> Iterator[str]:
    """A fresh schema in the database `base` (default PORTAL_TEST_DATABASE_URL), as a URL whose
    search path is that schema: for the tests that run migrations themselves or hand the URL to
    another process. Dropped at the end unless `keep` (a bench's rows, to read plans on)."""
    base = _postgres_base(base)
    schema = f"portal_test_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(base)
    with engine.begin() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield _schema_url(base, schema)
    finally:
        if not keep:
            with engine.begin() as connection:
                connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


def emptied_postgres_schema() -> str:
    """The URL of this process's migrated schema in PORTAL_TEST_DATABASE_URL, every table but
    alembic_version emptied and every sequence back at 1: what a fresh schema holds, whatever the
    previous test did or left open. Migrating a schema per test took ~0.3 CPU-s of the worker;
    emptying this one takes ~1.5 ms of its CPU."""
    return _worker_schema().emptied()


# The URLs of schemas the migrations already made, which `migrated` leaves as they are.
_MIGRATED_SCHEMAS: set[str] = set()
WORKER_SCHEMA_PREFIX = "portal_test_worker_"


@functools.cache
def _worker_schema() -> _WorkerSchema:
    schema = _WorkerSchema(_postgres_base(None))
    atexit.register(schema.drop)
    return schema


class _WorkerSchema:
    """A schema of one process, made by the migrations once and emptied for each test.

    Its applications' connections carry the schema's name as their application_name: emptying
    first ends those a previous test left (a transaction open in a thread, an application never
    disposed of). A session lock on the name, held by this process's connection, tells other
    processes the schema is in use: a schema of the prefix left unlocked (its process was killed
    before `atexit`) is dropped by the next process that makes one."""

    def __init__(self, base: str) -> None:
        self.base = base
        engine = sa.create_engine(base, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
        self.connection = engine.connect()
        self.connection.execute(sa.text("SET lock_timeout = '10s'"))
        self._drop_abandoned()
        self._make()

    def _run(self, statement: str, **parameters: str) -> sa.CursorResult:
        return self.connection.execute(sa.text(statement), parameters)

    def _drop_abandoned(self) -> None:
        names = self._run(
            "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, :prefix)",
            prefix=WORKER_SCHEMA_PREFIX,
        ).scalars()
        for name in list(names):
            if self._run("SELECT pg_try_advisory_lock(hashtext(:name))", name=name).scalar():
                self._run(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
                self._run("SELECT pg_advisory_unlock(hashtext(:name))", name=name)

    def _make(self) -> None:
        """A new schema, migrated, and the statement that empties it."""
        self.name = f"{WORKER_SCHEMA_PREFIX}{uuid.uuid4().hex[:12]}"
        self._run("SELECT pg_advisory_lock(hashtext(:name))", name=self.name)  # before it exists
        self._run(f'CREATE SCHEMA "{self.name}"')
        # The schema's trigger functions name its tables unqualified (as the portal's own
        # connections find them): emptying runs them, so it looks in the schema too.
        self._run(f'SET search_path TO "{self.name}"')
        self.url = _schema_url(self.base, self.name, application_name=self.name)
        self._migrate()
        tables = self._tables()
        counts = (f'(SELECT count(*) FROM "{self.name}"."{table}")' for table in tables)  # noqa: S608
        if self._run("SELECT " + " + ".join(counts)).scalar():
            raise AssertionError("a migration stores rows: emptying the schema must keep them")
        self.emptying = self._emptying_statement(tables)
        _MIGRATED_SCHEMAS.add(self.url)

    def _migrate(self) -> None:
        from portal import schema
        from portal.extensions import db

        app = portal_on(self.url)
        with app.app_context():
            schema.upgrade()
            db.engine.dispose()

    def _tables(self) -> list[str]:
        """The schema's tables but alembic_version, each before the tables it refers to."""
        tables = self._run(
            "SELECT tablename FROM pg_tables WHERE schemaname = :schema", schema=self.name
        ).scalars()
        references = self._run(
            "SELECT referring.relname, referred.relname FROM pg_constraint"
            " JOIN pg_class referring ON referring.oid = conrelid"
            " JOIN pg_class referred ON referred.oid = confrelid"
            " WHERE contype = 'f' AND connamespace = to_regnamespace(:schema)",
            schema=self.name,
        )
        order = graphlib.TopologicalSorter({table: set() for table in tables})
        for referring, referred in references:
            if referring != referred:
                order.add(referred, referring)
        return [table for table in order.static_order() if table != "alembic_version"]

    def _emptying_statement(self, tables: list[str]) -> str:
        """One statement, one round trip: a DELETE of each table, referring tables first, and
        every sequence back at 1; an error if a test moved alembic_version (then `emptied` makes
        a new schema). TRUNCATE ... RESTART IDENTITY CASCADE took ~700 ms of wall time and 65 ms
        of the server's CPU on a loaded machine (new files for 36 tables and their indexes);
        these DELETEs of a test's few rows took ~10 ms and 3.5 ms."""
        version = f'SELECT version_num FROM "{self.name}".alembic_version'  # noqa: S608
        head = self._run(version).scalar_one()
        deletes = " ".join(f'DELETE FROM "{self.name}"."{table}";' for table in tables)  # noqa: S608
        return (
            f"DO $$ BEGIN IF ({version}) IS DISTINCT FROM '{head}' THEN"
            " RAISE 'the schema is not at the head of the migrations'; END IF;"
            f" {deletes}"
            " PERFORM setval(oid, 1, false) FROM pg_class"
            f" WHERE relnamespace = '\"{self.name}\"'::regnamespace AND relkind = 'S';"
            " END $$"
        )

    def _end_connections(self) -> None:
        """Ends the connections of the schema's applications (not this one), and waits."""
        self._run(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
            " WHERE application_name = :name AND pid <> pg_backend_pid()",
            name=self.name,
        )

    def emptied(self) -> str:
        self._end_connections()
        try:
            self._run(self.emptying)
        except sa.exc.DBAPIError:  # a test changed the schema itself: a new one
            self.drop()
            self._make()
        return self.url

    def drop(self) -> None:
        self._end_connections()
        self._run(f'DROP SCHEMA IF EXISTS "{self.name}" CASCADE')
        self._run("SELECT pg_advisory_unlock(hashtext(:name))", name=self.name)
        _MIGRATED_SCHEMAS.discard(self.url)
