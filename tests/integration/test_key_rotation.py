"""Changing the token key with no downtime, against the real sandbox.

Two portal applications on one SQLite file stand for two processes during a rolling restart:
one still configured with the old key A, one with `PORTAL_TOKEN_KEYS=B,A`. Tokens stored under A
keep working on both until `rotate-keys` (run as the operator runs it, in its own process)
re-encrypts them under B, after which B alone is enough. Tokens saved while the keys change stay
readable by every process when the steps of docs/operations.md are followed. The tokens are never
in clear in the database file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from tests.support.databases import TEST_PASSWORD_HASH_METHOD, migrated
from tests.support.forms import PASSWORD, csrf_token
from tests.support.money import signed_in
from tests.support.sandbox_server import ROOT, SandboxServer

OWNER = "owner@acme.test"
ACCOUNTANT = "accountant@acme.test"
SECRET_KEY = "key-rotation-secret"
API_PAGES = ("/rates", "/vouchers")  # the voucher list needs the company token


def _portal(folder: Path, keys: str):
    """A portal instance on the SQLite file in `folder`, configured with `keys`."""
    from portal import create_app

    return create_app(
        {
            "TESTING": True,
            "SECRET_KEY": SECRET_KEY,
            "TOKEN_KEYS": keys,
            "DATABASE_URL": f"sqlite:///{folder / 'portal.sqlite3'}",
            "PASSWORD_HASH_METHOD": TEST_PASSWORD_HASH_METHOD,
        }
    )


def _set_up(app, sandbox: SandboxServer) -> None:
    """Users of Acme, then the owner connects the API (both tokens) at /settings/api."""
    from portal.models import Role
    from portal.rules import accounts

    with migrated(app).app_context():
        acme = accounts.merchant_named("Acme", create=True)
        accounts.add_user(acme, OWNER, Role.OWNER, PASSWORD)
        accounts.add_user(acme, ACCOUNTANT, Role.ACCOUNTANT, PASSWORD)
    _save_api_settings(app, sandbox)


def _save_api_settings(app, sandbox: SandboxServer) -> None:
    """The owner saves both tokens at /settings/api; the portal encrypts them."""
    owner = signed_in(app, OWNER)
    form = {
        "base_url": sandbox.base_url,
        "environment": "sandbox",
        "token": sandbox.token,
        "company_token": sandbox.company_token,
        "csrf_token": csrf_token(owner, "/settings/api"),
    }
    assert owner.post("/settings/api", data=form).status_code == 302


def _stored_ciphertexts(app) -> list[str]:
    """Every encrypted token in the database: application and company tokens."""
    from portal.extensions import db
    from portal.models import ApiConnection

    with app.app_context():
        connections = db.session.scalars(db.select(ApiConnection)).all()
        assert len(connections) == 1
        return [
            text
            for connection in connections
            for text in (connection.token_encrypted, connection.company_token_encrypted)
        ]


def _decrypts_with(keys: list[str], ciphertexts: list[str], sandbox: SandboxServer) -> bool:
    """Whether a MultiFernet of exactly `keys` turns the ciphertexts into the sandbox's tokens."""
    cipher = MultiFernet([Fernet(key) for key in keys])
    try:
        plain = [cipher.decrypt(text.encode()).decode() for text in ciphertexts]
    except InvalidToken:
        return False
    assert plain == [sandbox.token, sandbox.company_token]
    return True


def _assert_pages_work(app, *, label: str) -> None:
    client = signed_in(app, ACCOUNTANT)
    for path in API_PAGES:
        response = client.get(path)
        assert response.status_code == 200, f"{path} on the {label} instance"


def _assert_no_clear_token(folder: Path, sandbox: SandboxServer) -> None:
    """Neither token in clear in the SQLite file or beside it (journal, WAL)."""
    files = list(folder.glob("portal.sqlite3*"))
    assert files, "the database file"
    for path in files:
        content = path.read_bytes()
        for token in (sandbox.token, sandbox.company_token):
            assert token.encode() not in content, f"a token in clear in {path.name}"


def _rotate_keys(folder: Path, keys: str) -> subprocess.CompletedProcess:
    """`flask --app portal rotate-keys` in its own process, configured by the environment."""
    env = {
        **os.environ,
        "PORTAL_INSTANCE_PATH": str(folder),
        "PORTAL_DATABASE_URL": f"sqlite:///{folder / 'portal.sqlite3'}",
        "PORTAL_SECRET_KEY": SECRET_KEY,
        "PORTAL_TOKEN_KEYS": keys,
    }
    return subprocess.run(
        [sys.executable, "-m", "flask", "--app", "portal", "rotate-keys"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def keys() -> tuple[str, str]:
    """The old key A and the new key B."""
    return Fernet.generate_key().decode(), Fernet.generate_key().decode()


def test_tokens_under_the_old_key_work_during_the_rollout_and_rotate_to_the_new_key(
    tmp_path, sandbox, keys
):
    from portal.extensions import db

    old, new = keys
    old_only = _portal(tmp_path, old)
    _set_up(old_only, sandbox)
    stored = _stored_ciphertexts(old_only)
    assert _decrypts_with([old], stored, sandbox)
    assert not _decrypts_with([new], stored, sandbox)
    _assert_no_clear_token(tmp_path, sandbox)

    # The rollout: a restarted process reads "B,A" while another still runs with only A.
    both = _portal(tmp_path, f"{new},{old}")
    _assert_pages_work(both, label="B,A")
    _assert_pages_work(old_only, label="A (not yet restarted)")
    assert _stored_ciphertexts(both) == stored, "serving pages re-encrypts nothing"

    # Every process runs with "B,A": the operator rotates.
    result = _rotate_keys(tmp_path, f"{new},{old}")
    assert result.returncode == 0, result.stderr
    assert "Re-encrypted the API tokens of 1 merchant(s)" in result.stdout
    for token in (sandbox.token, sandbox.company_token):
        assert token not in result.stdout + result.stderr

    rotated = _stored_ciphertexts(both)
    assert all(after != before for after, before in zip(rotated, stored, strict=True))
    assert _decrypts_with([new], rotated, sandbox), "every token readable with B alone"
    assert not _decrypts_with([old], rotated, sandbox), "no token left under A"
    _assert_no_clear_token(tmp_path, sandbox)

    _assert_pages_work(both, label="B,A")
    new_only = _portal(tmp_path, new)
    _assert_pages_work(new_only, label="B")
    _assert_no_clear_token(tmp_path, sandbox)

    # Rotating again is harmless: the tokens stay readable with B alone.
    assert _rotate_keys(tmp_path, new).returncode == 0
    assert _decrypts_with([new], _stored_ciphertexts(new_only), sandbox)

    for app in (old_only, both, new_only):
        with app.app_context():
            db.engine.dispose()


def test_tokens_saved_during_the_rollout_stay_readable_by_every_process(tmp_path, sandbox, keys):
    """An owner may save the API settings on any process while the keys change.

    A process that has only A cannot read a token encrypted under B, so the new key is first
    added last ("A,B") everywhere, and only then put first ("B,A"), as docs/operations.md says.
    """
    from portal.extensions import db

    old, new = keys
    old_only = _portal(tmp_path, old)
    _set_up(old_only, sandbox)

    # Step 1, rolling: "A" and "A,B" side by side; "A,B" still encrypts under A.
    added = _portal(tmp_path, f"{old},{new}")
    _save_api_settings(added, sandbox)
    assert _decrypts_with([old], _stored_ciphertexts(added), sandbox)
    _assert_pages_work(old_only, label="A (not yet restarted)")
    _assert_pages_work(added, label="A,B")

    # Step 2, rolling: "A,B" and "B,A" side by side; "B,A" encrypts under B, both read it.
    promoted = _portal(tmp_path, f"{new},{old}")
    _save_api_settings(promoted, sandbox)
    assert _decrypts_with([new], _stored_ciphertexts(promoted), sandbox)
    _assert_pages_work(added, label="A,B (not yet restarted)")
    _assert_pages_work(promoted, label="B,A")
    assert old_only.test_client().get("/healthz").status_code == 200
    assert signed_in(old_only, ACCOUNTANT).get("/rates").status_code == 500, (
        "why step 1 comes first: a process with only A cannot read a token saved under B"
    )

    # Step 3: rotate; step 4: B alone.
    assert _rotate_keys(tmp_path, f"{new},{old}").returncode == 0
    new_only = _portal(tmp_path, new)
    _assert_pages_work(new_only, label="B")
    _assert_no_clear_token(tmp_path, sandbox)
    for app in (old_only, added, promoted, new_only):
        with app.app_context():
            db.engine.dispose()
