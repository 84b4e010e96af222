"""No secret in any response, log line, error page or the database file.

Extends tests/settings/test_api_connection_pages.py (the application token on the settings
pages) to every secret the portal holds (application and company tokens, the token keys, the
SECRET_KEY, the webhook signing secret), in every encoding (plain, URL-encoded, hex, base64 at
every alignment), in every kind of error page, the settings refusals and the exports, with
every log record at DEBUG. Every answer of every route to every visitor is searched by the walk
of tests/app/test_every_answer.py.
"""

from __future__ import annotations

import logging

import pytest

from tests.support.attack import Transcript, encodings, leaks, log_text, secrets_of, transcript_of
from tests.support.money import post


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
    return transcript_of(hostile, caplog)


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
    assert token not in log_text(caplog.records)
    assert "Bearer ••••" in log_text(caplog.records)


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
