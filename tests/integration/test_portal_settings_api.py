"""/settings/api and `connect-api` against the real sandbox over HTTP: every refusal in words,
nothing saved half-way, and the token never in clear anywhere."""

from __future__ import annotations

import pytest

from tests.conftest import csrf_token, sign_in
from tests.support.sandbox_server import free_port


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
    from portal.models import ApiConnection

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
