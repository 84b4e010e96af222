"""Signing in through the portal's forms, with the password every test user has: `signed_in`
is the test client of a user who did."""

from __future__ import annotations

import re

PASSWORD = "correct horse battery staple"
CSRF_FIELD = re.compile(r'name="csrf_token"[^>]*?value="([^"]+)"')


def csrf_token(client, path: str = "/login") -> str:
    """The CSRF token of the form on `path`, as a browser would have it ("" when CSRF is off)."""
    match = CSRF_FIELD.search(client.get(path).get_data(as_text=True))
    return match.group(1) if match else ""


def sign_in(client, email: str, password: str = PASSWORD, **extra: str):
    """Sign in through the form; returns the response of the POST. Without CSRF (a test about
    something else turned it off) the form's page is not fetched first for a token: the access
    matrix signs in hundreds of times."""
    token = csrf_token(client) if client.application.config["WTF_CSRF_ENABLED"] else ""
    data = {"email": email, "password": password, "csrf_token": token, **extra}
    return client.post("/login", data=data)


def signed_in(app, email: str):
    """A test client signed in as `email` through the real form."""
    client = app.test_client()
    response = sign_in(client, email)
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    return client
