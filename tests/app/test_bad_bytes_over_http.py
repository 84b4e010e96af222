"""The same defences against the portal as deployed: gunicorn, over real HTTP."""

from __future__ import annotations

import socket
import sqlite3
import time
from urllib.parse import urlsplit

import pytest

from tests.support.portal_app import email

# The portal on gunicorn, as deployed.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sandbox(module_servers):
    return module_servers.sandbox()


@pytest.fixture(scope="module")
def portal(module_servers, sandbox):
    return module_servers.served_portal(sandbox, gunicorn=True)


def raw_post(url: str, path: str, declared_length: int, sent: bytes) -> tuple[bytes, float]:
    """POST that declares `declared_length` bytes but sends only `sent`; the answer and its time."""
    parts = urlsplit(url)
    started = time.monotonic()
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as connection:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {declared_length}\r\n\r\n"
        )
        connection.sendall(head.encode() + sent)
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    return answer, time.monotonic() - started


def test_a_huge_body_is_refused_with_413_before_it_is_read(portal):
    answer, seconds = raw_post(portal.url, "/login", 300 * 1024 * 1024, b"email=a" + b"a" * 1000)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert seconds < 5, "the portal waited for the 300 MB it was promised"
    assert b"Content-Security-Policy:" in answer and b"X-Frame-Options:" in answer


def test_a_body_just_under_the_limit_is_read(portal):
    session = portal.signed_in_session(email("owner"))
    answer = session.post(f"{portal.url}/login", data={"padding": "x" * 400_000}, timeout=10)
    assert answer.status_code == 400  # the CSRF refusal: the body was read
    assert "This form has expired" in answer.text


def operations_upstream(sandbox) -> int:
    with sqlite3.connect(f"file:{sandbox.database}?mode=ro", uri=True) as connection:
        return connection.execute("SELECT count(*) FROM operations").fetchone()[0]


def test_a_nul_byte_in_an_order_number_creates_nothing_anywhere(portal, sandbox):
    session = portal.signed_in_session(email("owner"))
    page = session.get(f"{portal.url}/operations/new", timeout=10).text
    token = page.split('name="csrf_token"')[1].split('value="')[1].split('"')[0]
    before = operations_upstream(sandbox)
    answer = session.post(
        f"{portal.url}/operations/new",
        data={"amount": "1", "currency": "BTC", "order_id": "A-1\x00B", "csrf_token": token},
        timeout=10,
    )
    assert answer.status_code == 422
    assert "The field “Order id” holds a control character" in answer.text
    assert "Content-Security-Policy" in answer.headers
    assert operations_upstream(sandbox) == before
