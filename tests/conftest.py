"""Fixtures shared by every suite."""

from __future__ import annotations

import gc
import os
import uuid
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from flask import Flask

from tests.support import factories
from tests.support.databases import (
    TEST_PASSWORD_HASH_METHOD,
    emptied_postgres_schema,
    postgres_schema,
)
from tests.support.module_servers import ModuleServers
from tests.support.portal_app import compile_url_rules_once, ready_portal
from tests.support.required import skip_unless
from tests.support.sandbox_server import ReusedSandbox, SandboxServer, run_sandbox
from tests.support.smtp import MailServer, running_mail_server

pytest_plugins = [
    "tests.support.browser",
    "tests.support.browser_portal",
    "tests.support.hostile_portal",
]

# The portal's and the sandboxes' SQLite files commit thousands of times: on a RAM disk no commit
# waits for the disk (no test is about surviving a power cut).
RAM_DISK = Path("/dev/shm")  # noqa: S108 (pytest makes its own numbered folders in it)
if RAM_DISK.is_dir() and os.access(RAM_DISK, os.W_OK):
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", str(RAM_DISK))


def pytest_configure(config: pytest.Config) -> None:
    compile_url_rules_once()


def pytest_collection_finish(session: pytest.Session) -> None:
    """The cyclic garbage collector took a fifth of a worker's CPU: every test makes an
    application, and with Python's thresholds (700 allocations) the collector ran thousands of
    times, walking the quarter million objects of the collected suite on each full pass. The
    objects present once the suite is collected stay for the whole run, so they are frozen out of
    its passes, and it runs after 50,000 allocations (young cycles are still freed)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown with `-p no:xdist`
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker per CPU this process may use, and two more, for `-n auto`: a worker spends
    part of its time waiting for its servers, its browser and the slow peers and silent shops
    of the security tests, which the extra workers fill. On 2 CPUs, with `--dist worksteal`,
    4 workers took 181-189 s and 3 workers 192-197 s, with the same CPU time (earlier, with fewer
    tests that wait, 3 workers were fastest); each worker collects the suite and starts its
    own Chromium, sandboxes and portals, so more workers than that only add work."""
    return len(os.sched_getaffinity(0)) + 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files holding a test marked `long` first, each file's tests kept together: xdist
    hands tests out in this order, and a long test handed out last would keep one worker busy
    long after the others ran out of work."""
    long_files = {item.path for item in items if item.get_closest_marker("long")}
    items.sort(key=lambda item: item.path not in long_files)  # a stable sort


@pytest.fixture(scope="session")
def seeded_sandbox(tmp_path_factory) -> SandboxServer:
    """One sandbox for the session, seeded with 300 operations; do not change its data."""
    database = tmp_path_factory.mktemp("seeded-sandbox") / "sandbox.db"
    with run_sandbox(database, seed=300, random_seed=7) as server:
        yield server


@pytest.fixture(scope="session")
def reused_sandbox(tmp_path_factory) -> Iterator[ReusedSandbox]:
    reused = ReusedSandbox(tmp_path_factory.mktemp("sandbox"))
    yield reused
    reused.close()


@pytest.fixture
def sandbox(reused_sandbox) -> SandboxServer:
    """An empty sandbox for one test, as just started: change anything, faults and flags too."""
    return reused_sandbox.fresh()


@pytest.fixture(scope="module")
def module_servers(request, tmp_path_factory) -> Iterator[ModuleServers]:
    """Starts sandboxes and portals for the whole test module (`tests/support/module_servers.py`):
    a module's fixture asks it for what its tests share, e.g. `module_servers.sandbox(seed=60)`."""
    servers = ModuleServers(request.module.__name__, tmp_path_factory)
    yield servers
    servers.close()


@pytest.fixture(scope="module")
def module_sandbox(module_servers) -> SandboxServer:
    """An empty sandbox shared by the test module's tests: each adds records of its own, puts
    back any flag or fault it sets, and relies on no total it did not measure itself."""
    return module_servers.sandbox()


# --- The portal ------------------------------------------------------------------------------
# An application per test on its own SQLite file (a copy of one the migrations made for this
# worker), or on the worker's PostgreSQL schema that the migrations made, emptied for the test.


@pytest.fixture
def portal_config(tmp_path) -> dict:
    """The test_config of `create_app`; tests change it before asking for `app`."""
    return {
        "TESTING": True,
        "SECRET_KEY": "test-secret-key",
        "TOKEN_KEYS": Fernet.generate_key().decode(),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'portal.sqlite3'}",
        "PASSWORD_HASH_METHOD": TEST_PASSWORD_HASH_METHOD,
        "ADDRESS_COOLING_OFF_HOURS": 0,
        # A queue in memory: a test event's call to the worker goes nowhere (tests deliver).
        "QUEUE_URL": "memory://",
    }


@pytest.fixture(params=["sqlite", "postgresql"])
def each_database(request, portal_config) -> dict:
    """The test on SQLite, then on PostgreSQL (`postgres_url`): `portal_config` pointed at each
    (name it before `app`, or whatever makes the application)."""
    if request.param == "postgresql":
        portal_config["DATABASE_URL"] = request.getfixturevalue("postgres_url")
    return portal_config


@pytest.fixture
def app(request, portal_config):
    """The portal with its schema made by the migrations, and the users of `accounts` when the
    test uses them (stored with the schema: see `tests/support/databases.py`)."""
    from portal import create_app
    from portal.extensions import db

    with_accounts = "accounts" in request.fixturenames
    application = ready_portal(create_app(portal_config), with_accounts=with_accounts)
    if with_accounts:
        _APPS_WITH_ACCOUNTS.add(application)
    yield application
    with application.app_context():
        db.engine.dispose()


@pytest.fixture
def worker_of_this_portal(app, monkeypatch):
    """The worker's tasks run in this test's portal (the process's worker is another's)."""
    from portal.live.worker import queue

    monkeypatch.setattr(queue, "_application", [app])


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


# The applications `app` made with the users of `accounts` already stored.
_APPS_WITH_ACCOUNTS: weakref.WeakSet[Flask] = weakref.WeakSet()


@pytest.fixture
def accounts(app) -> factories.Accounts:
    """Acme's users, one per role, and Other's owner (`tests/support/factories.py`); stored by
    `app` when the test named this fixture, by the factory when it asked for it on the way."""
    return factories.Accounts() if app in _APPS_WITH_ACCOUNTS else factories.accounts(app)


@pytest.fixture
def postgres_url() -> str:
    """The worker's PostgreSQL schema, migrated and emptied for this test: no row, every id
    sequence at 1 (`tests/support/databases.py`). `app` leaves its schema as it is."""
    return emptied_postgres_schema()


@pytest.fixture
def fresh_postgres_url() -> Iterator[str]:
    """A PostgreSQL schema of the test's own (which `app` migrates), dropped afterwards: for
    the tests that run migrations down and up or hand the URL to another process."""
    with postgres_schema() as url:
        yield url


@pytest.fixture
def mail_server() -> Iterator[MailServer]:
    """A real SMTP server on loopback that keeps what it receives (`tests/support/smtp.py`)."""
    with running_mail_server() as server:
        yield server


@dataclass
class RedisStore:
    url: str
    prefix: str


@pytest.fixture
def redis_store() -> RedisStore:
    """PORTAL_TEST_REDIS_URL and a key prefix of the test's own, deleted afterwards."""
    import redis

    url = os.environ.get("PORTAL_TEST_REDIS_URL", "")
    skip_unless(bool(url), "redis", "PORTAL_TEST_REDIS_URL is not set")
    store = RedisStore(url, f"portal-test-{uuid.uuid4().hex[:12]}")
    yield store
    connection = redis.Redis.from_url(url)
    for key in connection.scan_iter(f"*{store.prefix}*"):
        connection.delete(key)
    connection.close()
