"""Configuration: defaults for the embedded mode, `PORTAL_*` variables, production checks."""

from __future__ import annotations

import json
import os
import secrets
from datetime import timedelta
from pathlib import Path

from cryptography.fernet import Fernet
from flask import Flask

PRODUCTION = "production"
DEV_SECRETS_FILE = "dev-secrets.json"
DEFAULT_MAIL_FROM = "Merchant Portal <portal@localhost>"


class ConfigError(RuntimeError):
    """The configuration cannot run safely; the message says which variable to set."""


def load_config(app: Flask, test_config: dict | None) -> None:
    """Fill `app.config`: defaults, then `PORTAL_*` variables (or `test_config`), then derived."""
    app.config.from_mapping(
        ENV="development",
        SECRET_KEY=None,
        TOKEN_KEYS=None,
        DATABASE_URL=f"sqlite:///{Path(app.instance_path) / 'portal.sqlite3'}",
        PUBLIC_URL=None,
        TRUSTED_PROXIES=0,
        RATELIMIT_STORAGE_URI="memory://",
        RATELIMIT_HEADERS_ENABLED=False,
        # An unreachable store must not stop sign-ins or checkout pages: count in memory meanwhile.
        RATELIMIT_IN_MEMORY_FALLBACK_ENABLED=True,
        SIGN_IN_LIMIT_PER_ACCOUNT="5 per 15 minutes",
        SIGN_IN_LIMIT_PER_ADDRESS="20 per 15 minutes",
        CHECKOUT_LIMIT_PER_ADDRESS="120 per minute",
        CHECKOUT_LINK_DAYS=30,
        # How long an operation stays payable: the API gives no expiry, the operation page shows
        # one assumed from this (the sandbox's own lifetime).
        OPERATION_TTL_MINUTES=60,
        # werkzeug's default; the tests set a cheap one.
        PASSWORD_HASH_METHOD="scrypt",  # noqa: S106 (a method, not a password)
        SESSION_LIFETIME_HOURS=12,
        SESSION_IDLE_MINUTES=120,
        # Each connection attempt and each read of the API waits this long at most; a whole call
        # (connecting, GET retries, the whole answer) ends after both together, 18.05 s.
        API_TIMEOUT_CONNECT=3.05,
        API_TIMEOUT_READ=15.0,
        # An API answer longer than this is malformed, read no further (docs/operations.md).
        API_MAX_ANSWER_BYTES=2 * 1024 * 1024,
        # The largest request body accepted (a 413 page beyond): the portal's forms are small.
        MAX_CONTENT_LENGTH=1024 * 1024,
        API_ALLOWED_HOSTS="",
        SESSION_COOKIE_NAME="portal_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        # The server ends sessions (lifetime and idle time): re-signing the cookie on every
        # response would change nothing.
        SESSION_REFRESH_EACH_REQUEST=False,
        WTF_CSRF_TIME_LIMIT=None,
        SQLALCHEMY_ENGINE_OPTIONS={"pool_pre_ping": True},
        # The worker's queue (portal/live/worker/queue.py): empty means instance/queue.sqlite3.
        QUEUE_URL=None,
        # Portals that share one Redis keep their queues apart by name (default "portal").
        QUEUE_NAME=None,
        # How long a new address of the address book waits before money may go to it, unless
        # another owner approves it (docs/money-movements.md); 0 for development and tests.
        ADDRESS_COOLING_OFF_HOURS=24,
        # How often the worker syncs each merchant's mirror, in seconds.
        SYNC_SECONDS=10,
        # Rates read longer ago than this are forgotten (the worker's hourly housekeeping): a
        # sync records a row each time they changed, up to 8,640 a day per merchant. 400 days
        # keep last year's statements and entered balances valued at their own rates.
        RATE_HISTORY_DAYS=400,
        # After a request found the payment service unavailable, its pages read the mirror for
        # this long, then ask it again (0: every request asks; portal/settings/rules/api_down.py).
        API_DOWN_SECONDS=30,
        # `smtp://` or `smtps://user:pass@host:port`; empty means e-mail is off (docs/email.md).
        SMTP_URL=None,
        # The sender of every mail; production with e-mail on must set it.
        MAIL_FROM=None,
        SMTP_TIMEOUT=10.0,
        # How long a worker holds a message it sends; at least twice SMTP_TIMEOUT (checked).
        MAIL_LEASE_SECONDS=120.0,
        # A mail the SMTP server did not take is tried again after this, doubling up to an
        # hour, and given up a day after it was queued.
        MAIL_RETRY_SECONDS=30,
        RESET_LINK_LIMIT_PER_ACCOUNT="3 per hour",
        RESET_LINK_LIMIT_PER_ADDRESS="20 per hour",
        # Webhooks (docs/webhooks.md): a shop gets this long to answer; a failed delivery is
        # tried again after the backoff, doubled each time up to the cap, for the retry window.
        WEBHOOK_TIMEOUT_SECONDS=5.0,
        WEBHOOK_BACKOFF_SECONDS=30.0,
        WEBHOOK_BACKOFF_CAP_SECONDS=3600.0,
        WEBHOOK_RETRY_SECONDS=24 * 3600.0,
        # Well above the timeout (at least twice it, checked): a live sender never loses its
        # claim on a delivery.
        WEBHOOK_LEASE_SECONDS=60.0,
        # Test events and resends an owner may ask for, per endpoint.
        WEBHOOK_MANUAL_LIMIT="10 per minute",
        # Replays of a period's events an owner may ask for, per endpoint.
        WEBHOOK_REPLAY_LIMIT="3 per hour",
        WEBHOOK_ROTATION_SECONDS=24 * 3600.0,  # the previous secret keeps signing this long
        # Private and loopback webhook URLs: None allows them outside production only.
        WEBHOOK_ALLOW_PRIVATE=None,
        # Block explorer links per environment, currency and kind (docs/operations.md); none.
        EXPLORER_URLS={},
    )
    if test_config is None:
        app.config.from_prefixed_env("PORTAL")
    else:
        app.config.from_mapping(test_config)
    _derive(app)


def _derive(app: Flask) -> None:
    """Turn the raw settings into what Flask and the extensions read, or refuse to start."""
    config = app.config
    if config["ENV"] == PRODUCTION:
        missing = [name for name in ("SECRET_KEY", "TOKEN_KEYS") if not config.get(name)]
        if missing:
            names = " and ".join(f"PORTAL_{name}" for name in missing)
            raise ConfigError(f"PORTAL_ENV=production needs {names}; refusing to start.")
    elif not config.get("SECRET_KEY") or not config.get("TOKEN_KEYS"):
        dev = _dev_secrets(Path(app.instance_path))
        config["SECRET_KEY"] = config.get("SECRET_KEY") or dev["secret_key"]
        config["TOKEN_KEYS"] = config.get("TOKEN_KEYS") or dev["token_key"]
    config["TOKEN_KEYS"] = parse_token_keys(config["TOKEN_KEYS"])
    _check_mail(config)
    _check_leases(config)
    config["API_ALLOWED_HOSTS"] = parse_hosts(config["API_ALLOWED_HOSTS"])
    config["EXPLORER_URLS"] = parse_explorer_urls(config["EXPLORER_URLS"])
    config["SQLALCHEMY_DATABASE_URI"] = database_uri(config["DATABASE_URL"])
    public_url = config.get("PUBLIC_URL") or ""
    config["SESSION_COOKIE_SECURE"] = public_url.startswith("https://")
    if public_url.startswith("https://"):
        config["PREFERRED_URL_SCHEME"] = "https"
    if config["RATELIMIT_STORAGE_URI"].startswith(("redis://", "rediss://")):
        # Without timeouts a Redis that stopped answering would hold every sign-in forever.
        options = {"socket_connect_timeout": 2, "socket_timeout": 2}
        config["RATELIMIT_STORAGE_OPTIONS"] = options | config.get("RATELIMIT_STORAGE_OPTIONS", {})
    config["PERMANENT_SESSION_LIFETIME"] = timedelta(hours=float(config["SESSION_LIFETIME_HOURS"]))


def _check_mail(config: dict) -> None:
    """E-mail on needs a URL the sender understands; in production also a sender address and the
    public URL its links start with (a default would send mail nobody can answer or follow)."""
    url = config.get("SMTP_URL") or None
    config["SMTP_URL"] = url
    if url is None:
        return
    if not url.startswith(("smtp://", "smtps://")):
        raise ConfigError("PORTAL_SMTP_URL must start with smtp:// or smtps://.")
    if config["ENV"] == PRODUCTION:
        missing = [name for name in ("MAIL_FROM", "PUBLIC_URL") if not config.get(name)]
        if missing:
            names = " and ".join(f"PORTAL_{name}" for name in missing)
            raise ConfigError(f"PORTAL_SMTP_URL in production needs {names}; refusing to start.")
    config["MAIL_FROM"] = config.get("MAIL_FROM") or DEFAULT_MAIL_FROM


# A lease and the deadline of the send it covers (docs/operations.md, "The worker").
LEASES = (
    ("WEBHOOK_LEASE_SECONDS", "WEBHOOK_TIMEOUT_SECONDS"),
    ("MAIL_LEASE_SECONDS", "SMTP_TIMEOUT"),
)


def _check_leases(config: dict) -> None:
    """Each lease outlives the longest send it covers, with as long again to spare (resolving
    the host, opening the connection, writing the outcome down): a lease that ran out mid-send
    would let another worker send the same event, or the same mail, a second time."""
    for lease, deadline in LEASES:
        if float(config[lease]) < 2 * float(config[deadline]):
            raise ConfigError(
                f"PORTAL_{lease} ({float(config[lease]):g} s) must be at least twice "
                f"PORTAL_{deadline} ({float(config[deadline]):g} s): a lease that runs out "
                "before its send ends lets another worker send the same thing again."
            )


def parse_token_keys(value: str | list[str]) -> list[str]:
    """Split `PORTAL_TOKEN_KEYS` (comma separated, newest first) and check each is a Fernet key."""
    keys = value.split(",") if isinstance(value, str) else list(value)
    keys = [key.strip() for key in keys if key.strip()]
    if not keys:
        raise ConfigError("PORTAL_TOKEN_KEYS holds no key.")
    for position, key in enumerate(keys, start=1):
        try:
            Fernet(key)
        except ValueError as error:
            raise ConfigError(
                f"PORTAL_TOKEN_KEYS: key {position} is not a Fernet key (32 url-safe base64 bytes)."
            ) from error
    return keys


def parse_hosts(value: str | list[str]) -> tuple[str, ...]:
    """Split `PORTAL_API_ALLOWED_HOSTS` (comma separated) into host names as `urlsplit` reads
    them: lower case, IPv6 addresses without brackets. Empty means any host."""
    hosts = value.split(",") if isinstance(value, str) else list(value)
    return tuple(host.strip().strip("[]").lower() for host in hosts if host.strip())


def database_uri(url: str) -> str:
    """Use psycopg 3 for PostgreSQL URLs that name no driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


def _dev_secrets(instance: Path) -> dict[str, str]:
    """Development keys, kept in instance/ so that sessions and stored tokens survive restarts."""
    path = instance / DEV_SECRETS_FILE
    instance.mkdir(parents=True, exist_ok=True)
    fresh = {"secret_key": secrets.token_hex(32), "token_key": Fernet.generate_key().decode()}
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return json.loads(path.read_text())
    with os.fdopen(descriptor, "w") as file:
        json.dump(fresh, file)
    return fresh


def parse_explorer_urls(value: object) -> dict[str, dict[str, dict[str, str]]]:
    """`PORTAL_EXPLORER_URLS` (JSON, or already parsed by `from_prefixed_env`) checked: an
    environment (sandbox, production) to currencies, each to `tx` and/or `address` templates,
    http(s) URLs with one `{}` for the hash or address."""
    problem = "PORTAL_EXPLORER_URLS must map sandbox or production to currencies, each to"
    problem += ' "tx" and/or "address" URLs with one {}, such as '
    problem += '{"production": {"BTC": {"tx": "https://mempool.space/tx/{}"}}}.'
    try:
        urls = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        raise ConfigError(problem) from None
    if not isinstance(urls, dict) or not set(urls) <= {"sandbox", "production"}:
        raise ConfigError(problem)
    for currencies in urls.values():
        if not isinstance(currencies, dict):
            raise ConfigError(problem)
        for templates in currencies.values():
            if not isinstance(templates, dict) or not set(templates) <= {"tx", "address"}:
                raise ConfigError(problem)
            for template in templates.values():
                fine = isinstance(template, str) and template.count("{}") == 1
                if not fine or not template.startswith(("https://", "http://")):
                    raise ConfigError(problem)
    return urls
