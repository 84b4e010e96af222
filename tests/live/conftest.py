"""What the live tests share: the shop that receives webhooks, its owner signed in, and a
portal connected to a sandbox seeded with SEED operations."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.forms import sign_in
from tests.support.portal_app import connected_portal
from tests.support.sandbox_server import run_sandbox
from tests.support.shop import Shop, run_shop

SEED = 120


@pytest.fixture
def shop() -> Iterator[Shop]:
    """A shop on loopback; every body it receives must match its type's schema."""
    with run_shop() as running:
        yield running


@pytest.fixture
def owner(client, accounts):
    """A client signed in as Acme's owner."""
    sign_in(client, accounts.owner)
    return client


@pytest.fixture
def seeded(tmp_path):
    with run_sandbox(tmp_path / "sandbox.db", seed=SEED, random_seed=3) as server:
        yield server


@pytest.fixture
def seeded_portal(tmp_path, seeded):
    with connected_portal(tmp_path, seeded, SYNC_SECONDS=0) as app:
        yield app
