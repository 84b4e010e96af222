"""Point 8: no secret in any response, log line, error page or the database file.

Extends tests/settings/test_api_connection_pages.py (the application token on the settings
pages) to every secret the portal holds (application and company tokens, the token keys, the
SECRET_KEY, the webhook signing secret), in every encoding (plain, URL-encoded, hex, base64 at
every alignment), over every GET route for every visitor, as page and htmx, every kind of error
page, the settings refusals and the exports, with every log record at DEBUG.
"""

from __future__ import annotations

import logging

import pytest

from tests.support.attack import VISITORS, encodings, get_urls, leaks
from tests.support.htmx import HTMX
from tests.support.money import post


def secrets_of(world) -> dict[str, str]:
    secrets = {
        "application token": world.sandbox.token,
        "company token": world.sandbox.company_token,
        "SECRET_KEY": world.app.config["SECRET_KEY"],
        "webhook signing secret": _webhook_secret(world),
    }
    for number, key in enumerate(world.app.config["TOKEN_KEYS"]):
        secrets[f"token key {number}"] = key
    return secrets


def _webhook_secret(world) -> str:
    """Acme's: shown masked on every page, revealed only by a POST with a fresh second factor."""
    from portal.extensions import db
    from portal.live.models import WebhookEndpoint
    from portal.live.rules import webhooks

    with world.app.app_context():
        endpoint = db.session.scalars(db.select(WebhookEndpoint).order_by(WebhookEndpoint.id))
        return webhooks.secret_of(endpoint.first())


class Transcript:
    """Everything an attacker could read: bodies, status lines and headers (cookies too), and
    the log records of the test."""

    def __init__(self, secrets: dict[str, str], caplog) -> None:
        self.secrets = secrets
        self.caplog = caplog
        self.texts: list[tuple[str, str]] = []

    def add(self, what: str, response) -> None:
        body = response.get_data(as_text=True)
        self.texts.append((what, f"{response.status}\n{response.headers}\n{body}"))

    def assert_no_secret(self) -> None:
        """No secret in what was read, nor in a log line so far; both were not empty."""
        assert self.texts, "nothing was looked at"
        found = [(what, hit) for what, text in self.texts if (hit := leaks(text, self.secrets))]
        assert found == []
        records = self.caplog.get_records("setup") + self.caplog.get_records("call")
        assert records, "the check needs log lines to look at"
        assert leaks(_log_text(records), self.secrets) == [], "a secret in the log"


def _log_text(records) -> str:
    """The records as a handler writes them (the message, then the traceback if any)."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return "\n".join(formatter.format(record) for record in records)


def test_the_encodings_find_what_they_look_for():
    """The search is not vacuous: a secret hidden in each encoding is found."""
    import base64
    from urllib.parse import quote

    secret = "sandbox-app-token-0123456789"
    for text in (
        f"x{quote(secret, safe='')}y",
        base64.b64encode(b"prefix:" + secret.encode()).decode(),
        base64.urlsafe_b64encode(b'{"t": "' + secret.encode() + b'"}').decode(),
        secret.encode().hex(),
    ):
        assert leaks(text, {"token": secret}) == ["token"], text
    assert len(encodings(secret)) >= 5


@pytest.fixture
def transcript(world, caplog) -> Transcript:
    caplog.set_level(logging.DEBUG)
    return Transcript(secrets_of(world), caplog)


@pytest.mark.parametrize("visitor", VISITORS)
def test_every_page_and_fragment(world, transcript, visitor):
    client = world.client(visitor)
    for _endpoint, url in get_urls(world.app, world.ids):
        for headers in ({}, HTMX):
            transcript.add(f"{visitor} {url} {headers}", client.get(url, headers=headers))
    transcript.assert_no_secret()


def test_error_pages(world, transcript, monkeypatch):
    owner = world.client("owner")
    for method, path in (("GET", "/no-such-page"), ("GET", "/logout"), ("POST", "/settings/api")):
        transcript.add(f"{method} {path}", owner.open(path, method=method))
    transcript.add("403", world.client("accountant").get("/settings/api"))
    for mode in ("error500", "malformed", "reset"):
        world.sandbox.control("POST", "faults", {"mode": mode})
        try:
            for path in ("/operations", "/settings/api", "/operations/export.csv", "/vouchers"):
                transcript.add(f"{mode} {path}", owner.get(path))
        finally:
            world.sandbox.reset()

    monkeypatch.setitem(world.app.config, "PROPAGATE_EXCEPTIONS", False)
    from cryptography.fernet import Fernet

    with monkeypatch.context() as patch:
        patch.setitem(world.app.config, "TOKEN_KEYS", [Fernet.generate_key().decode()])
        transcript.add("token key error", owner.get("/operations"))

    def broken(*_args, **_kwargs):
        raise RuntimeError(f"a bug while holding {world.app.config['TOKEN_KEYS'][0][:4]}...")

    with monkeypatch.context() as patch:
        patch.setitem(world.app.view_functions, "rates.index", broken)
        transcript.add("unexpected exception", owner.get("/rates"))
    transcript.assert_no_secret()


def test_timeouts(world, transcript, monkeypatch):
    monkeypatch.setitem(world.app.config, "API_TIMEOUT_READ", 0.2)
    world.sandbox.control("POST", "faults", {"mode": "slow", "delay_ms": 600})
    try:
        transcript.add("timeout", world.client("owner").get("/rates"))
    finally:
        world.sandbox.reset()
    transcript.assert_no_secret()


@pytest.mark.parametrize(
    ("case", "form", "flags"),
    [
        ("wrong token", {"token": "wrong-token-0123456789"}, {}),
        ("wrong company token", {"company_token": "wrong-company-0123456789"}, {}),
        ("banned application", {}, {"application_banned": True}),
        ("banned company", {}, {"company_banned": True}),
        ("unreachable", {"base_url": "http://127.0.0.1:9"}, {}),
        ("token with a line break", {"token": "{token}\n"}, {}),
        ("token with a space", {"token": " {token}"}, {}),
        ("saved again", {"token": "{token}", "company_token": "{company}"}, {}),
    ],
)
def test_settings_refusals_and_saving(world, transcript, monkeypatch, case, form, flags):
    """The settings page, its refusals and a save: the tokens appear masked, or not at all."""
    monkeypatch.setitem(world.app.config, "PROPAGATE_EXCEPTIONS", False)  # as in production
    owner = world.client("owner")
    sandbox = world.sandbox
    data = {"base_url": sandbox.base_url, "environment": "sandbox", "token": sandbox.token}
    data.update(
        {
            name: value.format(token=sandbox.token, company=sandbox.company_token)
            for name, value in form.items()
        }
    )
    if flags:
        sandbox.control("POST", "flags", flags)
    try:
        transcript.add(case, post(owner, "/settings/api", data))
        transcript.add(f"{case}, then the page", owner.get("/settings/api"))
    finally:
        sandbox.reset()
    transcript.assert_no_secret()
    assert owner.get("/operations").status_code == 200, "still connected"


def test_a_token_with_a_line_break_is_refused_in_words(world, monkeypatch):
    """Inside the token it is a pasting mistake, said in words; around it, it is dropped."""
    monkeypatch.setitem(world.app.config, "PROPAGATE_EXCEPTIONS", False)
    sandbox, owner = world.sandbox, world.client("owner")
    data = {"base_url": sandbox.base_url, "environment": "sandbox"}
    middle = len(sandbox.token) // 2
    broken = sandbox.token[:middle] + "\n" + sandbox.token[middle:]
    response = post(owner, "/settings/api", {**data, "token": broken})
    assert response.status_code == 422
    assert "no spaces or line breaks" in response.get_data(as_text=True)
    response = post(owner, "/settings/api", {**data, "token": f" {sandbox.token}\r\n"})
    assert response.status_code == 302


@pytest.mark.parametrize("logger_name", ["app", "portal.api.client"])
def test_the_log_filter_masks_bearer_credentials_in_tracebacks(world, caplog, logger_name):
    """Unit check of the defence in portal/errors.py, with the exception http.client raises,
    on the application's logger and on the API client's (a logger filters its own records only).
    """
    token = world.sandbox.token
    logger = world.app.logger if logger_name == "app" else logging.getLogger(logger_name)
    try:
        raise ValueError(f"Invalid header value b'Bearer {token}\\n'")
    except ValueError:
        logger.exception("Exception on /settings/api [POST] (Bearer %s)", token)
    assert token not in _log_text(caplog.records)
    assert "Bearer ••••" in _log_text(caplog.records)


def test_exports(world, transcript):
    for visitor in ("owner", "accountant"):
        for path in ("/operations/export.csv", "/transactions/export.csv", "/audit/export.csv"):
            transcript.add(f"{visitor} {path}", world.client(visitor).get(path))
    transcript.assert_no_secret()


def test_the_database_file(world):
    """Tokens are encrypted; the keys and the SECRET_KEY are never stored."""
    files = [world.database, *world.database.parent.glob(world.database.name + "-*")]
    content = b"".join(path.read_bytes() for path in files).decode("latin-1")
    assert leaks(content, secrets_of(world)) == []
