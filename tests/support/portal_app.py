"""A portal application whose merchant is connected to a running sandbox, for integration tests."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType
from typing import NamedTuple

import pytest
from cryptography.fernet import Fernet
from flask import Flask
from jinja2.bccache import Bucket, BytecodeCache
from urllib3.util.retry import Retry
from werkzeug.routing import BaseConverter, Map, Rule
from werkzeug.routing.rules import RulePart

from tests.support import factories
from tests.support.databases import TEST_PASSWORD_HASH_METHOD, migrated
from tests.support.factories import MERCHANT
from tests.support.money import book_usual_addresses
from tests.support.sandbox_server import SandboxServer


class _CompiledTemplates(BytecodeCache):
    """Templates compiled once per process, for the many portal applications tests create:
    each template's code object, used while the template's source has the same checksum. Kept
    as the object rather than as the marshalled bytes a bytecode cache stores, which every new
    application would load again."""

    def __init__(self) -> None:
        self.compiled: dict[str, tuple[str, CodeType]] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        checksum, code = self.compiled.get(bucket.key, (None, None))
        if checksum == bucket.checksum:
            bucket.code = code

    def dump_bytecode(self, bucket: Bucket) -> None:
        if bucket.code is not None:
            self.compiled[bucket.key] = (bucket.checksum, bucket.code)


COMPILED_TEMPLATES = _CompiledTemplates()


class _StatementsAcrossEngines(dict):
    """SQLAlchemy keeps the SQL it compiled for a statement in its engine, keyed by the dialect
    object too: each of the suite's applications has its own engine, so each compiled every
    statement again (an eighth of a worker's CPU). The engines of one process on one kind of
    database compile alike, so they share this cache, the dialect in each key standing for
    its class and server version (in the production process, one engine compiles each
    statement once in the same way)."""

    @staticmethod
    def _shared(key: tuple) -> tuple:
        dialect, *rest = key
        return (type(dialect), dialect.server_version_info, *rest)

    def get(self, key: tuple, default: object = None) -> object:
        return super().get(self._shared(key), default)

    def __setitem__(self, key: tuple, compiled: object) -> None:
        super().__setitem__(self._shared(key), compiled)


COMPILED_STATEMENTS = _StatementsAcrossEngines()


class _CompiledRule(NamedTuple):
    """What werkzeug compiled for a rule, less its map."""

    parts: list[RulePart]  # only ever read, by the matcher
    trace: list[tuple[bool, str]]
    converters: dict[str, BaseConverter]
    build: Callable[..., tuple[str, str]]
    build_unknown: Callable[..., tuple[str, str]]


class _CompiledRules:
    """Werkzeug compiles every URL rule when an application registers it (parses its text into
    the parts its matcher walks, and compiles two URL builders): 2 of the 6 ms of CPU that
    `create_app` took, for each of the suite's two thousand applications. What it compiles
    depends only on the rule (its class, text, host or subdomain, slash merging and defaults)
    and on the converter classes its map names, so every application of this process shares
    the first compilation of each rule; each rule still gets converters of its own map."""

    def __init__(self) -> None:
        self.compiled: dict[tuple, _CompiledRule] = {}

    def compile(self, rule: Rule) -> None:
        url_map = rule.map
        key = (
            type(rule),
            rule.rule,
            rule.host if url_map.host_matching else rule.subdomain,
            rule.merge_slashes,
            tuple(sorted((rule.defaults or {}).items())),
            tuple(url_map.converters.items()),
        )
        compiled = self.compiled.get(key)
        if compiled is None:
            WERKZEUG_COMPILE(rule)
            self.compiled[key] = _CompiledRule(
                rule._parts,
                rule._trace,
                {name: _bound(converter, None) for name, converter in rule._converters.items()},
                rule._build.__func__,  # type: ignore[attr-defined]
                rule._build_unknown.__func__,  # type: ignore[attr-defined]
            )
            return
        rule._parts = list(compiled.parts)
        rule._trace = list(compiled.trace)
        rule._converters = {
            name: _bound(converter, url_map) for name, converter in compiled.converters.items()
        }
        rule.arguments.update(rule._converters)
        rule._build = compiled.build.__get__(rule)  # type: ignore[attr-defined]
        rule._build_unknown = compiled.build_unknown.__get__(rule)  # type: ignore[attr-defined]


def _bound(converter: BaseConverter, url_map: Map | None) -> BaseConverter:
    """A copy of `converter` for a rule of `url_map`."""
    bound = copy.copy(converter)
    bound.map = url_map  # type: ignore[assignment]
    return bound


WERKZEUG_COMPILE = Rule.compile
COMPILED_RULES = _CompiledRules()


def compile_url_rules_once() -> None:
    """Every application of this process compiles each URL rule once (`_CompiledRules`)."""

    def compile_once(rule: Rule) -> None:
        COMPILED_RULES.compile(rule)

    Rule.compile = compile_once  # type: ignore[method-assign]


ROLES = ("owner", "operator", "accountant")


def email(role: str) -> str:
    return f"{role}@acme.test"


def ready_portal(app: Flask, *, with_accounts: bool = False) -> Flask:
    """`app` with its schema (see `migrated`), the users of `factories.Accounts` if asked, and
    the process's compiled templates and statements."""
    from portal.extensions import db

    app.jinja_env.bytecode_cache = COMPILED_TEMPLATES
    with app.app_context():
        db.engine.update_execution_options(compiled_cache=COMPILED_STATEMENTS)
    return migrated(app, with_accounts=with_accounts)


@contextmanager
def connected_portal(folder: Path, sandbox: SandboxServer, **config: object) -> Iterator[Flask]:
    """The portal on its own SQLite file, one user per role, connected to `sandbox`.

    Many tests share it, some with the sandbox's faults: unless `config` says otherwise, a page
    that finds the API down does not keep the next test's pages read-only (API_DOWN_SECONDS 0).
    """
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
                "API_DOWN_SECONDS": 0,
                "ADDRESS_COOLING_OFF_HOURS": 0,
                **config,
            }
        )
    )
    for role in ROLES:
        factories.user(app, email(role), role)
    book_usual_addresses(app)
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
