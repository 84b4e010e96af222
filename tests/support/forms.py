"""Signing in through the portal's forms, with the password every test user has: `signed_in`
is the test client of a user who did."""

from __future__ import annotations

import re

from flask import session
from flask_wtf.csrf import generate_csrf

PASSWORD = "correct horse battery staple"
CSRF_FIELD = re.compile(r'name="csrf_token"[^>]*?value="([^"]+)"')


def csrf_token(client, path: str = "/login") -> str:
    """The CSRF token of the form on `path`, as a browser would have it ("" when CSRF is off)."""
    match = CSRF_FIELD.search(client.get(path).get_data(as_text=True))
    return match.group(1) if match else ""


def session_csrf_token(client) -> str:
    """The CSRF token the portal would put in any form of the client's session, made without
    rendering a page (Flask-WTF's own `generate_csrf`, on the client's session)."""
    app = client.application
    if not app.config["WTF_CSRF_ENABLED"]:
        return ""
    with client.session_transaction() as saved, app.test_request_context():
        session.update(saved)
        token = generate_csrf()
        saved.update(session)  # the token's key, if new, goes back into the client's cookie
    return token


def sign_in(client, email: str, password: str = PASSWORD, **extra: str):
    """Sign in through the form; returns the response of the POST. The form's page is not
    fetched first for its token (tests/identity shows that page): the suite signs in thousands
    of times."""
    token = session_csrf_token(client)
    data = {"email": email, "password": password, "csrf_token": token, **extra}
    return client.post("/login", data=data)


def signed_in(app, email: str):
    """A test client signed in as `email` through the real form."""
    client = app.test_client()
    response = sign_in(client, email)
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    return client
