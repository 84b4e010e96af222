"""Fixtures shared by every suite."""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import sqlalchemy as sa
from cryptography.fernet import Fernet

from tests.support.sandbox_server import SandboxServer, run_sandbox


@pytest.fixture(scope="session")
def seeded_sandbox(tmp_path_factory) -> SandboxServer:
    """One sandbox for the session, seeded with 300 operations; do not change its data."""
    database = tmp_path_factory.mktemp("seeded-sandbox") / "sandbox.db"
    with run_sandbox(database, seed=300, random_seed=7) as server:
        yield server


@pytest.fixture
def sandbox(tmp_path) -> SandboxServer:
    """A fresh, empty sandbox for one test: change anything."""
    with run_sandbox(tmp_path / "sandbox.db") as server:
        yield server


# --- The portal ------------------------------------------------------------------------------
# An application per test on its own SQLite file (or PostgreSQL schema), built by the migrations.

PASSWORD = "correct horse battery staple"
CSRF_FIELD = re.compile(r'name="csrf_token"[^>]*?value="([^"]+)"')


@pytest.fixture
def portal_config(tmp_path) -> dict:
    """The test_config of `create_app`; tests change it before asking for `app`."""
    return {
        "TESTING": True,
        "SECRET_KEY": "test-secret-key",
        "TOKEN_KEYS": Fernet.generate_key().decode(),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'portal.sqlite3'}",
    }


@pytest.fixture
def app(portal_config):
    """The portal with its schema made by the migrations."""
    import flask_migrate

    from portal import create_app
    from portal.extensions import db

    application = create_app(portal_config)
    with application.app_context():
        flask_migrate.upgrade()
    yield application
    with application.app_context():
        db.engine.dispose()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@dataclass
class Accounts:
    """Two merchants: Acme with one user per role, and Other with an owner."""

    owner: str = "owner@acme.test"
    operator: str = "operator@acme.test"
    accountant: str = "accountant@acme.test"
    other_owner: str = "owner@other.test"

    def by_role(self, role: str) -> str:
        return getattr(self, role)


@pytest.fixture
def accounts(app) -> Accounts:
    from portal.models import Role
    from portal.services import accounts as service

    made = Accounts()
    with app.app_context():
        acme = service.merchant_named("Acme", create=True)
        for role in Role:
            service.add_user(acme, made.by_role(role.value), role, PASSWORD)
        other = service.merchant_named("Other", create=True)
        service.add_user(other, made.other_owner, Role.OWNER, PASSWORD)
    return made


def csrf_token(client, path: str = "/login") -> str:
    """The CSRF token of the form on `path`, as a browser would have it ("" when CSRF is off)."""
    match = CSRF_FIELD.search(client.get(path).get_data(as_text=True))
    return match.group(1) if match else ""


def sign_in(client, email: str, password: str = PASSWORD, **extra: str):
    """Sign in through the form; returns the response of the POST."""
    data = {"email": email, "password": password, "csrf_token": csrf_token(client), **extra}
    return client.post("/login", data=data)


@contextlib.contextmanager
def postgres_schema() -> Iterator[str]:
    """A fresh schema in PORTAL_TEST_DATABASE_URL, as a URL whose search path is that schema."""
    base = os.environ.get("PORTAL_TEST_DATABASE_URL")
    if not base:
        pytest.skip("PORTAL_TEST_DATABASE_URL is not set: PostgreSQL tests skipped")
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


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh schema for one test, dropped afterwards."""
    with postgres_schema() as url:
        yield url


@dataclass
class RedisStore:
    url: str
    prefix: str


@pytest.fixture
def redis_store() -> RedisStore:
    """PORTAL_TEST_REDIS_URL and a key prefix of the test's own, deleted afterwards."""
    import redis

    url = os.environ.get("PORTAL_TEST_REDIS_URL")
    if not url:
        pytest.skip("PORTAL_TEST_REDIS_URL is not set: Redis tests skipped")
    store = RedisStore(url, f"portal-test-{uuid.uuid4().hex[:12]}")
    yield store
    connection = redis.Redis.from_url(url)
    for key in connection.scan_iter(f"*{store.prefix}*"):
        connection.delete(key)
    connection.close()
