"""What the webhook tests share: the shop that receives them, and its owner signed in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.forms import sign_in
from tests.support.shop import Shop, run_shop


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
