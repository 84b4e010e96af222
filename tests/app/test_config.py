"""Configuration: embedded defaults with nothing set, PORTAL_* variables, production refusals."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from portal import create_app
from portal.config import ConfigError, database_uri


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No PORTAL_* variable but an instance folder of the test's own."""
    import os

    for name in list(os.environ):
        if name.startswith("PORTAL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PORTAL_INSTANCE_PATH", str(tmp_path / "instance"))
    return tmp_path / "instance"


def test_defaults_work_with_nothing_set(clean_env):
    app = create_app()
    assert app.config["SQLALCHEMY_DATABASE_URI"] == f"sqlite:///{clean_env / 'portal.sqlite3'}"
    assert app.config["RATELIMIT_STORAGE_URI"] == "memory://"
    assert app.config["SECRET_KEY"]
    assert len(app.config["TOKEN_KEYS"]) == 1
    assert app.config["SESSION_COOKIE_SECURE"] is False
    assert app.config["SESSION_COOKIE_HTTPONLY"] is True
    assert app.config["SESSION_COOKIE_SAMESITE"] == "Lax"
    assert app.config["API_ALLOWED_HOSTS"] == (), "any host"
    assert (clean_env / "dev-secrets.json").stat().st_mode & 0o077 == 0


def test_development_keys_survive_a_restart(clean_env):
    first, second = create_app(), create_app()
    assert first.config["SECRET_KEY"] == second.config["SECRET_KEY"]
    assert first.config["TOKEN_KEYS"] == second.config["TOKEN_KEYS"]


def test_portal_variables_are_read(clean_env, monkeypatch):
    keys = [Fernet.generate_key().decode() for _ in range(2)]
    monkeypatch.setenv("PORTAL_SECRET_KEY", "from-the-environment")
    monkeypatch.setenv("PORTAL_TOKEN_KEYS", f"{keys[0]}, {keys[1]}")
    monkeypatch.setenv("PORTAL_DATABASE_URL", "postgresql://portal@db.internal/portal")
    monkeypatch.setenv("PORTAL_PUBLIC_URL", "https://portal.example.com")
    monkeypatch.setenv("PORTAL_RATELIMIT_STORAGE_URI", "redis://cache.internal:6379/0")
    monkeypatch.setenv("PORTAL_API_ALLOWED_HOSTS", " API.example.com, [::1] ,")
    app = create_app()
    assert app.config["SECRET_KEY"] == "from-the-environment"
    assert app.config["TOKEN_KEYS"] == keys
    assert app.config["SQLALCHEMY_DATABASE_URI"] == "postgresql+psycopg://portal@db.internal/portal"
    assert app.config["SESSION_COOKIE_SECURE"] is True
    assert app.config["RATELIMIT_STORAGE_URI"] == "redis://cache.internal:6379/0"
    assert app.config["API_ALLOWED_HOSTS"] == ("api.example.com", "::1")
    assert not (clean_env / "dev-secrets.json").exists()


@pytest.mark.parametrize("missing", ["PORTAL_SECRET_KEY", "PORTAL_TOKEN_KEYS"])
def test_production_refuses_to_start_without_keys(clean_env, monkeypatch, missing):
    monkeypatch.setenv("PORTAL_ENV", "production")
    monkeypatch.setenv("PORTAL_SECRET_KEY", "a production secret")
    monkeypatch.setenv("PORTAL_TOKEN_KEYS", Fernet.generate_key().decode())
    monkeypatch.delenv(missing)
    with pytest.raises(ConfigError, match=missing):
        create_app()
    assert not (clean_env / "dev-secrets.json").exists()


def test_a_token_key_that_is_not_a_fernet_key_is_refused(clean_env, monkeypatch):
    monkeypatch.setenv("PORTAL_TOKEN_KEYS", f"{Fernet.generate_key().decode()},not-a-key")
    with pytest.raises(ConfigError, match="key 2 is not a Fernet key"):
        create_app()


def test_the_cli_refuses_to_start_in_production_without_keys(clean_env, monkeypatch):
    from click.testing import CliRunner
    from flask.cli import FlaskGroup

    monkeypatch.setenv("PORTAL_ENV", "production")
    cli = FlaskGroup(create_app=create_app)
    result = CliRunner().invoke(cli, ["rotate-keys"])
    assert result.exit_code != 0


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgres://u@h/d", "postgresql+psycopg://u@h/d"),
        ("postgresql://u@h/d", "postgresql+psycopg://u@h/d"),
        ("postgresql+psycopg://u@h/d", "postgresql+psycopg://u@h/d"),
        ("sqlite:///x.db", "sqlite:///x.db"),
    ],
)
def test_database_urls(url, expected):
    assert database_uri(url) == expected


def test_passwords_are_hashed_with_scrypt_unless_a_method_is_set(clean_env, monkeypatch):
    from portal.identity.models import User

    user = User()
    with create_app().app_context():
        user.set_password("a long enough password")
    assert user.password_hash.startswith("scrypt:")
    monkeypatch.setenv("PORTAL_PASSWORD_HASH_METHOD", "pbkdf2:sha256:1")
    with create_app().app_context():
        user.set_password("a long enough password")
    assert user.password_hash.startswith("pbkdf2:sha256:1$")
    assert user.check_password("a long enough password")


def test_e_mail_is_off_by_default_and_has_a_sender_when_on(clean_env, monkeypatch):
    assert create_app().config["SMTP_URL"] is None
    monkeypatch.setenv("PORTAL_SMTP_URL", "smtp://relay.internal:25")
    assert create_app().config["MAIL_FROM"] == "Merchant Portal <portal@localhost>"
    monkeypatch.setenv("PORTAL_SMTP_URL", "mail.internal:25")
    with pytest.raises(ConfigError, match="smtp:// or smtps://"):
        create_app()


@pytest.mark.parametrize("missing", ["PORTAL_MAIL_FROM", "PORTAL_PUBLIC_URL"])
def test_production_with_e_mail_needs_a_sender_and_the_public_url(clean_env, monkeypatch, missing):
    monkeypatch.setenv("PORTAL_ENV", "production")
    monkeypatch.setenv("PORTAL_SECRET_KEY", "a production secret")
    monkeypatch.setenv("PORTAL_TOKEN_KEYS", Fernet.generate_key().decode())
    monkeypatch.setenv("PORTAL_SMTP_URL", "smtps://portal:s3cret@mail.example.com:465")
    monkeypatch.setenv("PORTAL_MAIL_FROM", "Acme payments <payments@example.com>")
    monkeypatch.setenv("PORTAL_PUBLIC_URL", "https://portal.example.com")
    monkeypatch.delenv(missing)
    with pytest.raises(ConfigError, match=missing) as refusal:
        create_app()
    assert "s3cret" not in str(refusal.value)


@pytest.mark.parametrize(
    "urls",
    [
        "not json",
        '{"staging": {"BTC": {"tx": "https://x.example/tx/{}"}}}',
        '{"production": {"BTC": {"block": "https://x.example/b/{}"}}}',
        '{"production": {"BTC": {"tx": "https://x.example/tx/"}}}',
        '{"production": {"BTC": {"tx": "javascript:alert({})"}}}',
    ],
)
def test_explorer_urls_are_off_by_default_and_refused_when_malformed(clean_env, monkeypatch, urls):
    assert create_app().config["EXPLORER_URLS"] == {}
    monkeypatch.setenv("PORTAL_EXPLORER_URLS", urls)
    with pytest.raises(ConfigError, match="PORTAL_EXPLORER_URLS"):
        create_app()
