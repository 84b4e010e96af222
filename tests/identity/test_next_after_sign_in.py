"""`next` after sign-in goes to a page of this site only, whatever the encoding."""

from __future__ import annotations

import pytest

from portal.web.security import safe_next
from tests.support.forms import sign_in

SAFE = ["/", "/settings/users", "/operations?status=1&page=2", "/a%20b"]
UNSAFE = [
    None,
    "",
    "//evil.example",
    "///evil.example",
    "/\\evil.example",
    "\\\\evil.example",
    "https://evil.example/",
    "http:evil.example",
    "https:/evil.example",
    "javascript:alert(1)",
    "evil.example",
    "/%2Fevil.example",
    "%2F%2Fevil.example",
    "/%5Cevil.example",
    "/%252F%252Fevil.example",
    "/%09/evil.example",
    "/\t/evil.example",
    "/\n/evil.example",
]


@pytest.mark.parametrize("target", SAFE)
def test_local_paths_are_kept(target):
    assert safe_next(target) == target


@pytest.mark.parametrize("target", UNSAFE)
def test_everything_else_is_refused(target):
    assert safe_next(target) is None


@pytest.mark.parametrize(
    "target", ["//evil.example", "/%2F%2Fevil.example", "https://evil.example"]
)
def test_sign_in_ignores_a_foreign_next(client, accounts, target):
    response = sign_in(client, accounts.owner, next=target)
    assert response.status_code == 302
    assert response.location == "/"


def test_sign_in_follows_a_local_next(client, accounts):
    response = sign_in(client, accounts.owner, next="/settings/users")
    assert response.location == "/settings/users"
