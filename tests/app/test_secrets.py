"""No secret in any response, log line, error page or the database file.

Extends tests/settings/test_api_connection_pages.py (the application token on the settings
pages) to every secret the portal holds (application and company tokens, the token keys, the
SECRET_KEY, the webhook signing secret), in every encoding (plain, URL-encoded, hex, base64 at
every alignment), over every GET route for every visitor, as page and htmx, every kind of error
page, the settings refusals and the exports, with every log record at DEBUG.
"""

from __future__ import annotations

import io
import logging
import zipfile

import pytest

from tests.support.attack import VISITORS, encodings, get_urls, leaks
from tests.support.htmx import HTMX
from tests.support.money import post


def secrets_of(hostile) -> dict[str, str]:
    secrets = {
        "application token": hostile.sandbox.token,
        "company token": hostile.sandbox.company_token,
        "SECRET_KEY": hostile.app.config["SECRET_KEY"],
        "webhook signing secret": _webhook_secret(hostile),
    }
    for number, key in enumerate(hostile.app.config["TOKEN_KEYS"]):
        secrets[f"token key {number}"] = key
    return secrets


def _webhook_secret(hostile) -> str:
    """Acme's: shown masked on every page, revealed only by a POST with a fresh second factor."""
    from portal.extensions import db
    from portal.live.models import WebhookEndpoint
    from portal.live.rules import webhooks

    with hostile.app.app_context():
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
        body = _workbook_text(response) or response.get_data(as_text=True)
        self.texts.append((what, f"{response.status}\n{response.headers}\n{body}"))

    def assert_no_secret(self) -> None:
        """No secret in what was read, nor in a log line so far; both were not empty."""
        assert self.texts, "nothing was looked at"
        found = [(what, hit) for what, text in self.texts if (hit := leaks(text, self.secrets))]
        assert found == []
        records = self.caplog.get_records("setup") + self.caplog.get_records("call")
        assert records, "the check needs log lines to look at"
        assert leaks(_log_text(records), self.secrets) == [], "a secret in the log"


def _workbook_text(response) -> str | None:
    """Every part of a workbook (`.xlsx`: zipped XML), as text; None for any other answer."""
    if not response.mimetype.endswith("spreadsheetml.sheet"):
        return None
    with zipfile.ZipFile(io.BytesIO(response.get_data())) as book:
        return "\n".join(book.read(name).decode() for name in book.namelist())


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
def transcript(hostile, caplog) -> Transcript:
    caplog.set_level(logging.DEBUG)
    return Transcript(secrets_of(hostile), caplog)


@pytest.mark.slow  # every page and fragment for every visitor
@pytest.mark.parametrize("visitor", VISITORS)
def test_every_page_and_fragment(hostile, transcript, visitor):
    client = hostile.client(visitor)
    for _endpoint, url in get_urls(hostile.app, hostile.ids):
        for headers in ({}, HTMX):
            transcript.add(f"{visitor} {url} {headers}", client.get(url, headers=headers))
    transcript.assert_no_secret()


def test_error_pages(hostile, transcript, monkeypatch):
    owner = hostile.client("owner")
    for method, path in (("GET", "/no-such-page"), ("GET", "/logout"), ("POST", "/settings/api")):
        transcript.add(f"{method} {path}", owner.open(path, method=method))
    transcript.add("403", hostile.client("accountant").get("/settings/api"))
    for mode in ("error500", "malformed", "reset"):
        hostile.sandbox.control("POST", "faults", {"mode": mode})
        try:
            for path in ("/operations", "/settings/api", "/operations/export.csv", "/vouchers"):
                transcript.add(f"{mode} {path}", owner.get(path))
        finally:
            hostile.sandbox.reset()

    monkeypatch.setitem(hostile.app.config, "PROPAGATE_EXCEPTIONS", False)
    from cryptography.fernet import Fernet

    with monkeypatch.context() as patch:
        patch.setitem(hostile.app.config, "TOKEN_KEYS", [Fernet.generate_key().decode()])
        transcript.add("token key error", owner.get("/operations"))

    def broken(*_args, **_kwargs):
        raise RuntimeError(f"a bug while holding {hostile.app.config['TOKEN_KEYS'][0][:4]}...")

    with monkeypatch.context() as patch:
        patch.setitem(hostile.app.view_functions, "rates.index", broken)
        transcript.add("unexpected exception", owner.get("/rates"))
    transcript.assert_no_secret()


def test_timeouts(hostile, transcript, monkeypatch):
    monkeypatch.setitem(hostile.app.config, "API_TIMEOUT_READ", 0.2)
    hostile.sandbox.control("POST", "faults", {"mode": "slow", "delay_ms": 600})
    try:
        transcript.add("timeout", hostile.client("owner").get("/rates"))
    finally:
        hostile.sandbox.reset()
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
def test_settings_refusals_and_saving(hostile, transcript, monkeypatch, case, form, flags):
    """The settings page, its refusals and a save: the tokens appear masked, or not at all."""
    monkeypatch.setitem(hostile.app.config, "PROPAGATE_EXCEPTIONS", False)  # as in production
    owner = hostile.client("owner")
    sandbox = hostile.sandbox
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


def test_a_token_with_a_line_break_is_refused_in_words(hostile, monkeypatch):
    """Inside the token it is a pasting mistake, said in words; around it, it is dropped."""
    monkeypatch.setitem(hostile.app.config, "PROPAGATE_EXCEPTIONS", False)
    sandbox, owner = hostile.sandbox, hostile.client("owner")
    data = {"base_url": sandbox.base_url, "environment": "sandbox"}
    middle = len(sandbox.token) // 2
    broken = sandbox.token[:middle] + "\n" + sandbox.token[middle:]
    response = post(owner, "/settings/api", {**data, "token": broken})
    assert response.status_code == 422
    assert "no spaces or line breaks" in response.get_data(as_text=True)
    response = post(owner, "/settings/api", {**data, "token": f" {sandbox.token}\r\n"})
    assert response.status_code == 302


@pytest.mark.parametrize("logger_name", ["app", "portal.api.client"])
def test_the_log_filter_masks_bearer_credentials_in_tracebacks(hostile, caplog, logger_name):
    """Unit check of the defence in portal/errors.py, with the exception http.client raises,
    on the application's logger and on the API client's (a logger filters its own records only).
    """
    token = hostile.sandbox.token
    logger = hostile.app.logger if logger_name == "app" else logging.getLogger(logger_name)
    try:
        raise ValueError(f"Invalid header value b'Bearer {token}\\n'")
    except ValueError:
        logger.exception("Exception on /settings/api [POST] (Bearer %s)", token)
    assert token not in _log_text(caplog.records)
    assert "Bearer ••••" in _log_text(caplog.records)


def test_exports(hostile, transcript):
    for visitor in ("owner", "accountant"):
        for path in (
            "/operations/export.csv",
            "/operations/export.xlsx",
            "/transactions/export.csv",
            "/audit/export.csv",
            "/balances/ledger.xlsx",
        ):
            transcript.add(f"{visitor} {path}", hostile.client(visitor).get(path))
    transcript.assert_no_secret()


def test_the_database_file(hostile):
    """Tokens are encrypted; the keys and the SECRET_KEY are never stored."""
    files = [hostile.database, *hostile.database.parent.glob(hostile.database.name + "-*")]
    content = b"".join(path.read_bytes() for path in files).decode("latin-1")
    assert leaks(content, secrets_of(hostile)) == []
