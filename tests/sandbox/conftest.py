"""Fixtures of the sandbox contract tests: API helpers bound to running sandbox processes."""

from __future__ import annotations

import pytest

from tests.sandbox.contract import Api
from tests.support.sandbox_server import SandboxServer


@pytest.fixture
def api(sandbox: SandboxServer) -> Api:
    """The sandbox prefix of a fresh, empty sandbox (one per test: change anything)."""
    return Api(sandbox)


@pytest.fixture(scope="session")
def seeded_api(seeded_sandbox: SandboxServer) -> Api:
    """The session's seeded sandbox: read only."""
    return Api(seeded_sandbox)


@pytest.fixture(scope="module")
def module_api(module_sandbox: SandboxServer) -> Api:
    return Api(module_sandbox)
