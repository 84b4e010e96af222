"""Changing the token key with no downtime, against the real sandbox; and every encrypted column
of the schema rotated, webhook secrets included.

Two portal applications on one SQLite file stand for two processes during a rolling restart:
one still configured with the old key A, one with `PORTAL_TOKEN_KEYS=B,A`. Tokens stored under A
keep working on both until `rotate-keys` (run as the operator runs it, in its own process)
re-encrypts them under B, after which B alone is enough. Tokens saved while the keys change stay
readable by every process when the steps of docs/operations.md are followed. The tokens are never
in clear in the database file.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from tests.support import factories
from tests.support.databases import TEST_PASSWORD_HASH_METHOD, migrated
from tests.support.forms import PASSWORD, csrf_token, signed_in
from tests.support.mirror_rows import operation_record
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
    from portal.identity.models import Role
    from portal.identity.rules import accounts

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
    from portal.settings.models import ApiConnection

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


def _assert_no_clear_token(folder: Path, sandbox: SandboxServer, *apps) -> None:
    """Neither token in clear in the SQLite file or beside it (journal, WAL). The `apps` on the
    file close their connections first: a process that closes any file it opened on the
    database drops SQLite's locks on it (POSIX), and another process's `rotate-keys` would then
    take the write-ahead log from under them."""
    from portal.extensions import db

    for app in apps:
        with app.app_context():
            db.engine.dispose()
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


@pytest.mark.slow  # `rotate-keys` in processes of its own, twice
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
    _assert_no_clear_token(tmp_path, sandbox, old_only)

    # The rollout: a restarted process reads "B,A" while another still runs with only A.
    both = _portal(tmp_path, f"{new},{old}")
    _assert_pages_work(both, label="B,A")
    _assert_pages_work(old_only, label="A (not yet restarted)")
    assert _stored_ciphertexts(both) == stored, "serving pages re-encrypts nothing"

    # Every process runs with "B,A": the operator rotates.
    result = _rotate_keys(tmp_path, f"{new},{old}")
    assert result.returncode == 0, result.stderr
    assert "Re-encrypted 1 value(s) of api_connections.token_encrypted" in result.stdout
    for token in (sandbox.token, sandbox.company_token):
        assert token not in result.stdout + result.stderr

    rotated = _stored_ciphertexts(both)
    assert all(after != before for after, before in zip(rotated, stored, strict=True))
    assert _decrypts_with([new], rotated, sandbox), "every token readable with B alone"
    assert not _decrypts_with([old], rotated, sandbox), "no token left under A"
    _assert_no_clear_token(tmp_path, sandbox, old_only, both)

    _assert_pages_work(both, label="B,A")
    new_only = _portal(tmp_path, new)
    _assert_pages_work(new_only, label="B")
    _assert_no_clear_token(tmp_path, sandbox, old_only, both, new_only)

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
    _assert_no_clear_token(tmp_path, sandbox, old_only, added, promoted, new_only)


# --- Every encrypted column of the schema ------------------------------------------------------


def _encrypted_columns() -> list:
    """Every column of the schema holding a secret, read from the models' metadata: the portal
    names each `*_encrypted` (test_every_encrypted_value_is_stored_in_a_column_named_so)."""
    from portal import database

    database.import_every_model()
    from portal.extensions import db

    return [
        column
        for table in db.metadata.sorted_tables
        for column in table.columns
        if column.name.endswith("_encrypted")
    ]


def _a_row_of_every_table_with_a_secret(app, shop_url: str) -> None:
    """The owner's two-factor secret, an API connection with both tokens, a webhook endpoint
    just rotated (current and previous secret), a refund's claim link: a row in each table that
    holds a secret."""
    from portal import crypto
    from portal.extensions import db
    from portal.identity.models import User
    from portal.live.models import WebhookEndpoint
    from portal.live.rules import webhooks

    with app.app_context():  # a secret stored, two-factor sign-in not turned on yet
        owner = db.session.scalars(db.select(User).where(User.email == OWNER)).one()
        owner.totp_secret_encrypted = crypto.encrypt("JBSWY3DPEHPK3PXP")
        db.session.commit()
    factories.api_connection(app, token="application-token", company_token="company-token")
    endpoint_id = factories.webhook_endpoint(app, shop_url)
    with app.app_context():
        webhooks.rotate_secret(db.session.get(WebhookEndpoint, endpoint_id))
        claim_token = crypto.encrypt("a-claim-token")
    factories.refund(app, OWNER, "op-refunded", token_encrypted=claim_token)


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_rotation_re_encrypts_every_encrypted_column_of_the_schema(
    request, portal_config, keys, database
):
    """Every value of every encrypted column, written under the old key A, reads with B alone
    after `rotate-keys` (on SQLite and on PostgreSQL, where production runs it): a column the
    rotation forgets fails here by its name."""
    from portal import create_app, crypto
    from portal.extensions import db
    from portal.identity.models import Role
    from portal.identity.rules import accounts
    from tests.support.portal_app import ready_portal

    old, new = keys
    columns = _encrypted_columns()
    names = {f"{column.table.name}.{column.name}" for column in columns}
    assert names >= {
        "users.totp_secret_encrypted",
        "api_connections.token_encrypted",
        "api_connections.company_token_encrypted",
        "webhook_endpoints.secret_encrypted",
        "webhook_endpoints.previous_secret_encrypted",
        "refunds.token_encrypted",
    }, "the schema's secrets are found by their name"

    if database == "postgresql":
        portal_config = {**portal_config, "DATABASE_URL": request.getfixturevalue("postgres_url")}
    under_old = ready_portal(create_app({**portal_config, "TOKEN_KEYS": old}))
    with under_old.app_context():
        accounts.add_user(accounts.merchant_named("Acme", create=True), OWNER, Role.OWNER, PASSWORD)
    _a_row_of_every_table_with_a_secret(under_old, "http://127.0.0.1:9/hooks")

    written = {}  # (column, primary key) -> the plaintext written under A
    with under_old.app_context():
        for column in columns:
            (key,) = column.table.primary_key.columns
            ids = db.session.scalars(db.select(key)).all()
            assert ids, f"give {column.table.name} a row in _a_row_of_every_table_with_a_secret"
            for id_ in ids:
                plain = f"{column.table.name}.{column.name}#{id_}"
                written[column, id_] = plain
                db.session.execute(
                    db.update(column.table)
                    .where(key == id_)
                    .values({column.name: crypto.encrypt(plain)})
                )
        db.session.commit()

    both = create_app({**portal_config, "TOKEN_KEYS": f"{new},{old}"})
    result = both.test_cli_runner().invoke(args=["rotate-keys"])
    assert result.exit_code == 0, result.output
    for name in names:
        assert f"of {name} under the newest key" in result.output

    new_only = create_app({**portal_config, "TOKEN_KEYS": new})
    with new_only.app_context():
        for (column, id_), plain in written.items():
            (key,) = column.table.primary_key.columns
            stored = db.session.scalar(db.select(column).where(key == id_))
            assert crypto.decrypt(stored) == plain, f"{column.table.name}.{column.name} rotated"
    for app in (under_old, both, new_only):
        with app.app_context():
            db.engine.dispose()


def test_after_rotation_without_the_old_key_notifications_open_and_deliveries_sign_alike(
    portal_config, keys
):
    """The webhook secrets rotate with the rest: with the old key dropped, the owner opens
    /settings/notifications and a due delivery is signed with the same secrets as before."""
    from portal import create_app
    from portal.extensions import db
    from portal.identity.models import Role
    from portal.identity.rules import accounts
    from portal.live.models import WebhookEndpoint
    from portal.live.rules import events, webhooks
    from tests.support.forms import sign_in
    from tests.support.portal_app import ready_portal
    from tests.support.shop import run_shop

    old, new = keys
    under_old = ready_portal(create_app({**portal_config, "TOKEN_KEYS": old}))
    with under_old.app_context():
        accounts.add_user(accounts.merchant_named("Acme", create=True), OWNER, Role.OWNER, PASSWORD)
    with run_shop() as shop:
        _a_row_of_every_table_with_a_secret(under_old, shop.url)
        with under_old.app_context():
            endpoint = db.session.scalars(db.select(WebhookEndpoint)).one()
            secrets = webhooks.signing_secrets(endpoint, webhooks.utcnow())
            assert len(secrets) == 2, "the current secret and the previous one, both signing"
            events.record(
                endpoint.merchant_id,
                events.EventType.OPERATION_CONFIRMED,
                dedup_key="confirmed:op-1",
                data=events.with_money(operation_record(id="op-1"), None),
                occurred_at=webhooks.utcnow(),
                operation_id="op-1",
            )
            db.session.commit()

        both = create_app({**portal_config, "TOKEN_KEYS": f"{new},{old}"})
        assert both.test_cli_runner().invoke(args=["rotate-keys"]).exit_code == 0

        new_only = create_app({**portal_config, "TOKEN_KEYS": new})
        owner = new_only.test_client()
        sign_in(owner, OWNER)
        assert owner.get("/settings/notifications").status_code == 200
        with new_only.app_context():
            assert webhooks.deliver_due() == 1
        (request,) = shop.wait_for(1)
        assert request.signed_by(secrets[0]) and request.signed_by(secrets[1])
        assert len(request.signatures()[1]) == 2
    for app in (under_old, both, new_only):
        with app.app_context():
            db.engine.dispose()


def test_every_encrypted_value_is_stored_in_a_column_named_so():
    """`rotate-keys` finds the secrets by their columns' `_encrypted` names: every value the
    portal encrypts goes to such a column (an attribute or a keyword named so), or to the
    browser session's setup key of a two-factor enrolment, which is not stored in the database
    and is dropped when no key reads it."""
    stored_in = []
    for path in (ROOT / "portal").rglob("*.py"):
        tree = ast.parse(path.read_text())
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "crypto.encrypt"):
                continue
            holder = parents[node]
            while isinstance(holder, ast.IfExp):
                holder = parents[holder]
            if isinstance(holder, ast.keyword):
                stored_in.append((path.name, holder.arg))
            elif isinstance(holder, ast.Assign):
                stored_in.extend((path.name, ast.unparse(target)) for target in holder.targets)
            else:
                stored_in.append((path.name, ast.unparse(holder)))
    assert len(stored_in) >= 5, "the walk finds the portal's calls"
    for module, name in stored_in:
        assert name.endswith("_encrypted") or (module, name) == ("enrolment.py", "session[SETUP]")
