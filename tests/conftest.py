"""Fixtures shared by every suite."""

from __future__ import annotations

import pytest

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
