"""The operator's commands: no prompts, clear messages, non-zero exits on failure."""

from __future__ import annotations

import subprocess
import sys

import pytest
from cryptography.fernet import Fernet

from tests.support import factories
from tests.support.forms import PASSWORD
from tests.support.sandbox_server import ROOT


def test_create_user_creates_the_merchant(runner, client):
    result = runner.invoke(
        args=["create-user", "Ann@Shop.test", "--merchant", "Shop", "--role", "owner",
              "--password", PASSWORD]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Created ann@shop.test, owner of Shop." in result.output
    from tests.support.forms import sign_in

    assert sign_in(client, "ann@shop.test").status_code == 302


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["x@shop.test", "--merchant", "Shop", "--role", "boss", "--password", PASSWORD], "boss"),
        (["x@shop.test", "--merchant", "Shop", "--role", "owner", "--password", "short"],
         "at least 10 characters"),
        (["not-an-email", "--merchant", "Shop", "--role", "owner", "--password", PASSWORD],
         "is not an email address"),
        (["x@shop.test", "--role", "owner", "--password", PASSWORD], "--merchant"),
        (["x@shop.test", "--merchant", "Shop", "--role", "owner"], "--password"),
    ],
)  # fmt: skip
def test_create_user_refusals(runner, args, message):
    result = runner.invoke(args=["create-user", *args], input="")
    assert result.exit_code != 0
    assert message in result.output


def test_duplicate_user(runner, accounts):
    args = ["create-user", accounts.owner, "--merchant", "Acme", "--role", "owner",
            "--password", PASSWORD]  # fmt: skip
    result = runner.invoke(args=args)
    assert result.exit_code == 1
    assert "owner@acme.test is already a user of Acme." in result.output


def test_create_user_on_a_database_without_tables(portal_config, tmp_path):
    from portal import create_app

    portal_config["DATABASE_URL"] = f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    runner = create_app(portal_config).test_cli_runner()
    args = ["create-user", "a@b.test", "--merchant", "B", "--role", "owner", "--password", PASSWORD]
    assert runner.invoke(args=args).exit_code == 0


def test_flask_db_migrates_a_database_without_tables(portal_config, tmp_path):
    """`flask db` runs Flask-Migrate's commands, imported only when it runs."""
    import sqlalchemy as sa

    from portal import create_app
    from portal.extensions import db

    portal_config["DATABASE_URL"] = f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    app = create_app(portal_config)
    assert app.test_cli_runner().invoke(args=["db", "upgrade"]).exit_code == 0
    with app.app_context():
        assert {"alembic_version", "users"} <= set(sa.inspect(db.engine).get_table_names())
        db.engine.dispose()


def test_a_process_that_serves_pages_imports_neither_alembic_nor_webauthn(portal_config):
    """Migrating is for `flask db` and the commands, passkeys for their ceremonies: gunicorn's
    workers, `flask run` and the worker start without the third of a CPU-second that importing
    Alembic and py_webauthn costs."""
    script = (
        "import sys; from portal import create_app; "
        f"create_app({portal_config!r}).test_client().get('/login'); "
        "print(sorted({'alembic', 'flask_migrate', 'webauthn'} & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_connect_api_needs_an_existing_merchant(runner):
    result = runner.invoke(
        args=["connect-api", "--merchant", "Nobody", "--base-url", "http://127.0.0.1:9",
              "--environment", "sandbox", "--token", "a-token-of-some-length"]
    )  # fmt: skip
    assert result.exit_code == 1
    assert "No merchant is named 'Nobody'" in result.output


def test_connect_api_checks_the_url(runner, accounts):
    result = runner.invoke(
        args=["connect-api", "--merchant", "Acme", "--base-url", "ftp://x/sandbox/v1",
              "--environment", "sandbox", "--token", "a-token-of-some-length"]
    )  # fmt: skip
    assert result.exit_code == 1
    assert "--base-url: Enter an address starting with http:// or https://." in result.output


def test_rotate_keys_re_encrypts_under_the_newest_key(app, accounts, portal_config):
    from portal import create_app, crypto
    from portal.extensions import db
    from portal.settings.models import ApiConnection

    old_key = portal_config["TOKEN_KEYS"]
    factories.api_connection(app, token="the-application-token", company_token="the-company-token")

    new_key = Fernet.generate_key().decode()
    rotated = create_app({**portal_config, "TOKEN_KEYS": f"{new_key},{old_key}"})
    result = rotated.test_cli_runner().invoke(args=["rotate-keys"])
    assert result.exit_code == 0, result.output
    assert "Re-encrypted 1 value(s) of api_connections.company_token_encrypted" in result.output

    only_new = create_app({**portal_config, "TOKEN_KEYS": new_key})
    with only_new.app_context():
        stored = db.session.scalars(db.select(ApiConnection)).one()
        assert crypto.decrypt(stored.token_encrypted) == "the-application-token"
        assert crypto.decrypt(stored.company_token_encrypted) == "the-company-token"

    unrelated = create_app({**portal_config, "TOKEN_KEYS": Fernet.generate_key().decode()})
    result = unrelated.test_cli_runner().invoke(args=["rotate-keys"])
    assert result.exit_code == 1
    assert "cannot be decrypted" in result.output
