"""A portal application whose merchant is connected to a running sandbox, for integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from flask import Flask
from jinja2.bccache import Bucket, BytecodeCache
from urllib3.util.retry import Retry

from tests.support import factories
from tests.support.databases import TEST_PASSWORD_HASH_METHOD, migrated
from tests.support.factories import MERCHANT
from tests.support.sandbox_server import SandboxServer


class _CompiledTemplates(BytecodeCache):
    """Templates compiled once per process, for the many portal applications tests create
    (Jinja checks each template's source against its checksum before using its code)."""

    def __init__(self) -> None:
        self.compiled: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        if bucket.key in self.compiled:
            bucket.bytecode_from_string(self.compiled[bucket.key])

    def dump_bytecode(self, bucket: Bucket) -> None:
        self.compiled[bucket.key] = bucket.bytecode_to_string()


COMPILED_TEMPLATES = _CompiledTemplates()

ROLES = ("owner", "operator", "accountant")


def email(role: str) -> str:
    return f"{role}@acme.test"


def ready_portal(app: Flask) -> Flask:
    """`app` with its schema (see `migrated`) and the process's compiled templates."""
    app.jinja_env.bytecode_cache = COMPILED_TEMPLATES
    return migrated(app)


@contextmanager
def connected_portal(folder: Path, sandbox: SandboxServer, **config: object) -> Iterator[Flask]:
    """The portal on its own SQLite file, one user per role, connected to `sandbox`."""
    from portal import create_app
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.settings.models import Environment
    from portal.settings.rules.connection import Credentials, connect

    app = ready_portal(
        create_app(
            {
                "TESTING": True,
                "SECRET_KEY": "integration-secret",
                "TOKEN_KEYS": Fernet.generate_key().decode(),
                "DATABASE_URL": f"sqlite:///{folder / 'portal.sqlite3'}",
                "PASSWORD_HASH_METHOD": TEST_PASSWORD_HASH_METHOD,
                **config,
            }
        )
    )
    for role in ROLES:
        factories.user(app, email(role), role)
    with app.app_context():
        connect(
            accounts.merchant_named(MERCHANT),
            Credentials(sandbox.base_url, Environment.SANDBOX, sandbox.token),
        )
    yield app
    with app.app_context():
        db.engine.dispose()


@contextmanager
def retries_without_pauses() -> Iterator[None]:
    """The portal's API calls retried as often as ever, but without the backoff in between.

    For tests of what a page shows once a fault used up the retries: each would otherwise wait
    the half second of the last retry. tests/api/test_transport.py checks the backoff.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Retry, "get_backoff_time", lambda _retry: 0.0)
        yield
