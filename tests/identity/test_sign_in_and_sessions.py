"""Sign-in, sessions, sign-out, CSRF and the session cookie."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.support.forms import PASSWORD, csrf_token, sign_in


def test_wrong_password_and_unknown_email_say_the_same(client, accounts):
    for email, password in ((accounts.owner, "wrong password"), ("nobody@acme.test", PASSWORD)):
        response = sign_in(client, email, password)
        assert response.status_code == 401
        assert "The email or password is incorrect." in response.get_data(as_text=True)
    assert client.get("/").status_code == 302


def test_email_is_not_case_sensitive(client, accounts):
    assert sign_in(client, accounts.owner.upper()).status_code == 302
    assert client.get("/").status_code == 200


def test_an_empty_form_says_what_is_missing(client, accounts):
    response = client.post("/login", data={"csrf_token": csrf_token(client)})
    assert response.status_code == 422
    assert "This field is required." in response.get_data(as_text=True)


def test_sign_in_starts_a_new_session(client, accounts):
    client.get("/login")
    with client.session_transaction() as session:
        session["planted"] = "by an attacker"
    sign_in(client, accounts.owner)
    with client.session_transaction() as session:
        assert "planted" not in session
        assert session.permanent


def test_sign_out_is_post_only_and_revokes_the_session(client, accounts):
    sign_in(client, accounts.owner)
    assert client.get("/logout").status_code == 405
    stolen_cookie = client.get_cookie("portal_session").value
    response = client.post("/logout", data={"csrf_token": csrf_token(client, "/")})
    assert response.status_code == 302
    assert client.get("/").status_code == 302
    client.set_cookie("portal_session", stolen_cookie)
    response = client.get("/")
    assert response.status_code == 302, "the old cookie must not sign anyone in again"
    assert response.location.startswith("/login")


def test_an_expired_session_asks_to_sign_in_again(app, client, accounts):
    from portal.extensions import db
    from portal.identity.models import UserSession

    sign_in(client, accounts.owner)
    with app.app_context():
        for record in db.session.scalars(db.select(UserSession)):
            record.last_seen_at -= timedelta(hours=3)
        db.session.commit()
    response = client.get("/settings/users")
    assert response.status_code == 302
    assert response.location == "/login?next=/settings/users"
    page = client.get(response.location).get_data(as_text=True)
    assert "Your session has expired. Please sign in again." in page


def test_a_sign_in_the_audit_log_cannot_record_starts_no_session(app, client, accounts):
    """The session and the audit log's sign-in are written together: when the database refuses
    the event, nobody is signed in without the log saying so."""
    import sqlalchemy as sa

    from portal.extensions import db
    from portal.identity.models import AuditEvent, UserSession

    def refused(*_: object) -> None:
        raise sa.exc.OperationalError("INSERT INTO audit_events", {}, Exception("disk full"))

    sa.event.listen(AuditEvent, "before_insert", refused)
    try:
        with pytest.raises(sa.exc.OperationalError):
            sign_in(client, accounts.owner)
    finally:
        sa.event.remove(AuditEvent, "before_insert", refused)
    with app.app_context():
        assert db.session.scalars(db.select(UserSession)).all() == []
    assert client.get("/").status_code == 302


def test_removing_a_user_ends_their_sessions(app, client, accounts):
    from portal.identity.rules import accounts as service

    sign_in(client, accounts.operator)
    with app.app_context():
        owner = service.find_user(accounts.owner)
        service.remove_user(service.find_user(accounts.operator), by=owner)
    assert client.get("/").status_code == 302


@pytest.mark.parametrize("token", [None, "forged-token"])
def test_forms_without_a_valid_csrf_token_are_refused(client, accounts, token):
    data = {"email": accounts.owner, "password": PASSWORD}
    if token:
        data["csrf_token"] = token
    response = client.post("/login", data=data)
    assert response.status_code == 400
    assert "This form has expired" in response.get_data(as_text=True)
    assert client.get("/").status_code == 302


def test_htmx_requests_carry_the_token_in_a_header(client, accounts):
    sign_in(client, accounts.owner)
    token = csrf_token(client, "/settings/users")
    data = {"email": "new@acme.test", "role": "operator", "password": "long enough password"}
    headers = {"HX-Request": "true", "HX-Boosted": "true"}
    assert client.post("/settings/users", data=data, headers=headers).status_code == 400
    headers["X-CSRFToken"] = token
    assert client.post("/settings/users", data=data, headers=headers).status_code == 302


def test_the_page_puts_the_token_in_hx_headers(client, accounts):
    sign_in(client, accounts.owner)
    page = client.get("/").get_data(as_text=True)
    assert 'hx-headers=\'{"X-CSRFToken": "' in page


def _session_cookie_header(response) -> str:
    return next(
        v for v in response.headers.getlist("Set-Cookie") if v.startswith("portal_session=")
    )


def test_session_cookie_over_http(client, accounts):
    client.get("/login")
    header = _session_cookie_header(sign_in(client, accounts.owner))
    assert "HttpOnly" in header
    assert "SameSite=Lax" in header
    assert "Secure" not in header


def test_session_cookie_over_https(app, accounts):
    client = app.test_client()
    token = csrf_token(client)
    response = client.post(
        "/login",
        data={"email": accounts.owner, "password": PASSWORD, "csrf_token": token},
        base_url="https://localhost",
        headers={"Referer": "https://localhost/login"},  # Flask-WTF checks it over HTTPS
    )
    assert "Secure" in _session_cookie_header(response)
