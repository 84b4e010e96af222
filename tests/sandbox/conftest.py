"""Fixtures of the sandbox contract tests: API helpers bound to running sandbox processes."""

from __future__ import annotations

import pytest

from tests.sandbox.contract import Api
from tests.support.sandbox_server import SandboxServer, run_sandbox


@pytest.fixture
def api(sandbox: SandboxServer) -> Api:
    """The sandbox prefix of a fresh, empty sandbox (one per test: change anything)."""
    return Api(sandbox)


@pytest.fixture(scope="session")
def seeded_api(seeded_sandbox: SandboxServer) -> Api:
    """The session's seeded sandbox: read only."""
    return Api(seeded_sandbox)


@pytest.fixture(scope="module")
def module_sandbox(tmp_path_factory) -> SandboxServer:
    """One sandbox per test module for tests that only add records of their own.

    Tests using it never touch flags and faults and never rely on totals they did not
    measure themselves.
    """
    database = tmp_path_factory.mktemp("module-sandbox") / "sandbox.db"
    with run_sandbox(database) as server:
        yield server


@pytest.fixture(scope="module")
def module_api(module_sandbox: SandboxServer) -> Api:
    return Api(module_sandbox)
