"""/settings/api and `connect-api` against the real sandbox over HTTP: every refusal in words,
nothing saved half-way, and the token never in clear anywhere."""

from __future__ import annotations

import re

import pytest
import requests

from tests.support import factories
from tests.support.fake_api import Answer, FakeApi
from tests.support.forms import CSRF_FIELD, csrf_token, sign_in
from tests.support.portal_app import email
from tests.support.portal_server import run_portal
from tests.support.sandbox_server import free_port, run_sandbox


@pytest.fixture
def owner(client, accounts):
    sign_in(client, accounts.owner)
    return client


def _save(client, base_url: str, token: str, **extra: str):
    data = {"base_url": base_url, "environment": "sandbox", "token": token, **extra}
    return client.post(
        "/settings/api", data={**data, "csrf_token": csrf_token(client, "/settings/api")}
    )


def _connection(app):
    from portal.extensions import db
    from portal.settings.models import ApiConnection

    with app.app_context():
        return db.session.scalars(db.select(ApiConnection)).one_or_none()


def test_connect_and_show_only_masked_tokens(app, owner, sandbox):
    response = _save(
        owner, sandbox.base_url + "/", sandbox.token, company_token=sandbox.company_token
    )
    assert response.status_code == 302
    page = owner.get("/settings/api").get_data(as_text=True)
    assert "••••" + sandbox.token[-4:] in page
    assert "••••" + sandbox.company_token[-4:] in page
    assert sandbox.token not in page
    assert "Sandbox</strong>" in page, "the sandbox banner"
    connection = _connection(app)
    assert connection.base_url == sandbox.base_url
    assert sandbox.token not in connection.token_encrypted


def test_an_empty_token_field_keeps_the_stored_token(app, owner, sandbox):
    _save(owner, sandbox.base_url, sandbox.token)
    assert _save(owner, sandbox.base_url, "").status_code == 302


def test_the_company_token_can_be_removed_and_the_app_token_stays(app, owner, sandbox):
    _save(owner, sandbox.base_url, sandbox.token, company_token=sandbox.company_token)
    assert _connection(app).company_token_encrypted is not None
    assert _save(owner, sandbox.base_url, "", remove_company_token="y").status_code == 302
    connection = _connection(app)
    assert connection.company_token_encrypted is None
    assert connection.token_encrypted is not None
    page = owner.get("/settings/api").get_data(as_text=True)
    assert "••••" + sandbox.token[-4:] in page
    assert "••••" + sandbox.company_token[-4:] not in page


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("unreachable", "could not be reached"),
        ("wrong url", "No Merchant API answered at this base URL"),
        ("api path", "without /sandbox or /v1"),
        ("rejected token", "rejected the application token (error 2"),
        ("rejected company token", "rejected the company token"),
        ("banned application", "application is banned (error 3)"),
        ("banned company", "company is banned (error 4)"),
        ("no token", "Enter the application token."),
    ],
)
def test_refusals_say_what_failed_and_save_nothing(app, owner, sandbox, case, message):
    base_url, token, extra = sandbox.base_url, sandbox.token, {}
    if case == "unreachable":
        base_url = f"http://127.0.0.1:{free_port()}"
    elif case == "wrong url":
        base_url = sandbox.base_url + "/somewhere-else"
    elif case == "api path":
        base_url = sandbox.base_url + "/sandbox/v1"
    elif case == "rejected token":
        token = "not-the-application-token"
    elif case == "rejected company token":
        extra["company_token"] = "not-the-company-token"
    elif case == "banned application":
        sandbox.control("POST", "flags", {"application_banned": True})
    elif case == "banned company":
        sandbox.control("POST", "flags", {"company_banned": True})
    elif case == "no token":
        token = ""
    response = _save(owner, base_url, token, **extra)
    assert response.status_code == 422
    assert message in response.get_data(as_text=True)
    assert _connection(app) is None


def test_a_refused_change_keeps_the_working_connection(app, owner, sandbox):
    _save(owner, sandbox.base_url, sandbox.token)
    response = _save(owner, sandbox.base_url, "not-the-application-token")
    assert response.status_code == 422
    from portal import crypto

    with app.app_context():
        assert crypto.decrypt(_connection(app).token_encrypted) == sandbox.token


def test_fresh_tokens_reconnect_when_the_stored_key_was_removed(app, runner, accounts, sandbox):
    """A key removed before `rotate-keys` leaves stored tokens nobody can read: `connect-api`
    with fresh ones is the way out, and starts a new mirror (the stored ones cannot be
    compared)."""
    from cryptography.fernet import Fernet

    args = ["connect-api", "--merchant", "Acme", "--base-url", sandbox.base_url,
            "--environment", "sandbox", "--token", sandbox.token,
            "--company-token", sandbox.company_token]  # fmt: skip
    assert runner.invoke(args=args).exit_code == 0
    generation = _connection(app).generation
    app.config["TOKEN_KEYS"] = [Fernet.generate_key().decode()]
    result = runner.invoke(args=args)
    assert result.exit_code == 0, result.output
    assert _connection(app).generation == generation + 1


def test_connect_api_command(app, runner, accounts, sandbox):
    args = ["connect-api", "--merchant", "Acme", "--base-url", sandbox.base_url,
            "--environment", "sandbox"]  # fmt: skip
    refused = runner.invoke(args=[*args, "--token", "not-the-application-token"])
    assert refused.exit_code == 1
    assert "rejected the application token" in refused.output
    assert _connection(app) is None
    done = runner.invoke(args=[*args, "--token", sandbox.token])
    assert done.exit_code == 0, done.output
    assert sandbox.token not in done.output


# --- Stored tokens go only where they were saved ----------------------------------------------

RETYPE = "Type the application token again"
RETYPE_COMPANY = "Type the company token again, or remove it"
APP_STORED = "stored-app-token-kept-in-the-portal"
COMPANY_STORED = "stored-company-token-kept-in-the-portal"


@pytest.fixture
def recorder():
    """A server on loopback that records every request it gets, headers included (404s)."""
    with FakeApi() as fake:
        yield fake


def _errors_of(html: str, field_id: str) -> str:
    """The errors shown next to a field of the form."""
    match = re.search(rf'<ul class="errors" id="{field_id}-errors">(.*?)</ul>', html, re.S)
    return match.group(1) if match else ""


def _store(app, base_url: str, environment: str = "sandbox") -> None:
    """Acme's connection as an earlier, checked save left it, with both tokens."""
    factories.api_connection(
        app,
        base_url=base_url,
        environment=environment,
        token=APP_STORED,
        company_token=COMPANY_STORED,
    )


def _where(app) -> tuple[str, str, str]:
    from portal import crypto

    connection = _connection(app)
    with app.app_context():
        token = crypto.decrypt(connection.token_encrypted)
    return connection.base_url, connection.environment.value, token


@pytest.mark.parametrize("change", ["base URL", "environment"])
def test_a_new_base_url_or_environment_needs_the_tokens_typed_again(app, owner, recorder, change):
    """An owner's session (a stolen cookie will do) cannot have the stored tokens sent to a
    server of its own: with the token fields empty, nothing at all is sent."""
    _store(app, recorder.base_url)
    data = {"base_url": recorder.base_url, "environment": "sandbox"}
    if change == "base URL":
        data["base_url"] = recorder.base_url + "/collector"
    else:
        data["environment"] = "production"
    response = _save(owner, token="", **data)
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert RETYPE in _errors_of(page, "token")
    assert RETYPE_COMPANY in _errors_of(page, "company_token")
    assert "only sent to the base URL and environment they were saved with" in page
    assert recorder.received == [], "no request leaves"
    assert _where(app) == (recorder.base_url, "sandbox", APP_STORED)


def test_a_new_base_url_with_the_tokens_typed_is_saved(app, owner, sandbox, tmp_path):
    _save(owner, sandbox.base_url, sandbox.token, company_token=sandbox.company_token)
    with run_sandbox(tmp_path / "second.db") as second:
        typed = {"company_token": second.company_token}
        assert _save(owner, second.base_url, second.token, **typed).status_code == 302
        assert _where(app) == (second.base_url, "sandbox", second.token)
        page = owner.get("/settings/api").get_data(as_text=True)
        assert f"<dd>{second.base_url}</dd>" in page


def test_the_check_follows_no_redirect(app, owner, recorder):
    """A server that answers the check with a redirect does not get the tokens sent on."""
    with FakeApi() as redirecting:
        elsewhere = recorder.base_url.replace("127.0.0.1", "localhost") + "/sandbox/v1/ping"
        redirect = Answer(307, {}, headers={"Location": elsewhere})
        redirecting.answer("GET", "/sandbox/v1/ping", redirect)
        response = _save(owner, redirecting.base_url, "a-typed-application-token")
        assert redirecting.count("GET", "/sandbox/v1/ping") == 1
    assert response.status_code == 422
    assert "Check the base URL" in response.get_data(as_text=True)
    assert recorder.received == []
    assert _connection(app) is None


def test_connect_api_keeps_to_the_allowed_hosts(app, runner, accounts, sandbox, recorder):
    from portal.config import parse_hosts

    args = ["connect-api", "--merchant", "Acme", "--environment", "sandbox",
            "--token", sandbox.token]  # fmt: skip
    app.config["API_ALLOWED_HOSTS"] = parse_hosts("localhost")
    refused = runner.invoke(args=[*args, "--base-url", recorder.base_url])
    assert refused.exit_code == 1
    assert "--base-url: This portal connects only to localhost." in refused.output
    assert recorder.received == []
    app.config["API_ALLOWED_HOSTS"] = parse_hosts("127.0.0.1")
    done = runner.invoke(args=[*args, "--base-url", sandbox.base_url])
    assert done.exit_code == 0, done.output


# --- Over HTTP, against the portal served as in production ---------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The portal served by its own process, its operator having pinned the API to 127.0.0.1."""
    folder = tmp_path_factory.mktemp("served")
    with (
        run_sandbox(folder / "sandbox.db") as sandbox,
        run_portal(folder, sandbox, env={"PORTAL_API_ALLOWED_HOSTS": "127.0.0.1"}) as server,
    ):
        yield server


def _save_over_http(server, data: dict) -> requests.Response:
    owner = server.signed_in_session(email("owner"))
    page = owner.get(f"{server.url}/settings/api", timeout=10).text
    form = {**data, "csrf_token": CSRF_FIELD.search(page).group(1)}
    return owner.post(f"{server.url}/settings/api", data=form, allow_redirects=False, timeout=30)


def test_a_stolen_owner_session_cannot_send_the_stored_token_elsewhere(served, recorder):
    answer = _save_over_http(served, {"base_url": recorder.base_url, "environment": "sandbox"})
    assert answer.status_code == 422
    assert RETYPE in _errors_of(answer.text, "token")
    assert recorder.received == [], "no request leaves, with or without the stored token"
    assert f"<dd>{served.sandbox.base_url}</dd>" in answer.text, "still connected as before"


@pytest.mark.parametrize(
    "disguise",
    ["http://localhost:{port}", "http://localhost:{port}\\@127.0.0.1:{port}"],
    ids=["another host", "a backslash before the allowed host"],
)
def test_a_host_the_operator_did_not_allow_gets_no_request(served, recorder, disguise):
    base_url = disguise.format(port=recorder.base_url.rsplit(":", 1)[1])
    data = {"base_url": base_url, "environment": "sandbox", "token": served.sandbox.token}
    answer = _save_over_http(served, data)
    assert answer.status_code == 422
    assert _errors_of(answer.text, "base_url"), "the refusal is next to the Base URL field"
    assert recorder.received == []
    assert f"<dd>{served.sandbox.base_url}</dd>" in answer.text
