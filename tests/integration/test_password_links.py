"""Invitations and password resets (issue 15, point 4): a one-time link mailed through a real
local SMTP server, over real HTTP. Time moves in the database, never by sleeping."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from tests.support.forms import CSRF_FIELD, PASSWORD
from tests.support.portal_server import serve_in_thread
from tests.support.smtp import link_in, text_of
from tests.support.visitor import Visitor, signed_in

NEW_PASSWORD = "a password of my very own"
SENT = "If an account exists for that address, we sent it a link to reset the password."
DEAD = "This link has expired or was already used."


@pytest.fixture
def portal_config(portal_config, mail_server):
    return {**portal_config, "SMTP_URL": mail_server.url, "PUBLIC_URL": "http://portal.test"}


@pytest.fixture
def url(app, accounts):
    with serve_in_thread(app) as served:
        yield served


def mailed_link(app, mail_server, count: int) -> str:
    """The path of the link in the `count`-th message, once the worker's tick sent it."""
    from portal.rules import mail

    with app.app_context():
        mail.send_due()
    message = mail_server.wait_for(count)[count - 1]
    return urlsplit(link_in(message)).path


def set_password(visitor: Visitor, path: str, password: str = NEW_PASSWORD):
    data = {"new_password": password, "new_password_again": password}
    return visitor.post(path, data, page="/login")  # any page's token: a dead link has no form


def age_links(app, by: timedelta) -> None:
    """Move every link's times back, as if `by` had passed."""
    from portal.extensions import db
    from portal.models import OneTimeLink

    with app.app_context():
        for link in db.session.scalars(sa.select(OneTimeLink)):
            link.created_at -= by
            link.expires_at -= by
        db.session.commit()


def invite(owner: Visitor, email: str, role: str = "operator"):
    form = {"invite-email": email, "invite-role": role}
    return owner.post("/settings/users/invite", form, page="/settings/users")


def test_an_invited_person_sets_a_password_once_and_signs_in(app, url, accounts, mail_server):
    owner = signed_in(url, accounts.owner)
    assert invite(owner, "new@acme.test").status_code == 302
    assert "new@acme.test" in owner.get("/settings/users").text

    path = mailed_link(app, mail_server, 1)
    message = mail_server.messages[0]
    assert message["To"] == "new@acme.test"
    assert "Acme" in message["Subject"]
    assert "operator" in text_of(message)
    assert path.startswith("/invite/")

    person = Visitor(url)
    assert "Choose your password" in person.get(path).text
    assert set_password(person, path, "short").status_code == 422
    done = set_password(person, path)
    assert done.status_code == 302
    assert done.headers["Location"].endswith("/login")
    assert person.sign_in("new@acme.test", NEW_PASSWORD).status_code == 302
    assert person.get("/account").status_code == 200

    again = Visitor(url)
    assert again.get(path).status_code == 410
    assert DEAD in again.get(path).text


def test_an_invitation_expires_after_7_days(app, url, accounts, mail_server):
    owner = signed_in(url, accounts.owner)
    invite(owner, "late@acme.test")
    path = mailed_link(app, mail_server, 1)
    age_links(app, timedelta(days=7, minutes=1))
    assert Visitor(url).get(path).status_code == 410


def test_only_owners_invite(url, accounts):
    for role in ("operator", "accountant"):
        visitor = signed_in(url, accounts.by_role(role))
        refused = invite(visitor, "someone@acme.test")
        assert refused.status_code == 403


def test_forgot_password_answers_the_same_for_any_address(url, accounts, app, mail_server):
    answers = []
    for address in (accounts.owner, "nobody@acme.test"):
        visitor = Visitor(url)
        assert 'href="/password/forgot"' in visitor.get("/login").text
        sent = visitor.post("/password/forgot", {"email": address})
        page = visitor.get("/password/forgot").text
        assert SENT in page
        token = CSRF_FIELD.search(page).group(1)
        answers.append((sent.status_code, sent.headers["Location"], page.replace(token, "")))
    assert answers[0] == answers[1]

    mailed_link(app, mail_server, 1)
    assert [message["To"] for message in mail_server.messages] == [accounts.owner]


def test_a_reset_link_sets_a_password_once_and_ends_every_other_session(
    app, url, accounts, mail_server
):
    old_session = signed_in(url, accounts.operator)
    Visitor(url).post("/password/forgot", {"email": accounts.operator})
    earlier = mailed_link(app, mail_server, 1)
    Visitor(url).post("/password/forgot", {"email": accounts.operator})
    path = mailed_link(app, mail_server, 2)
    assert path.startswith("/password/reset/") and path != earlier

    person = Visitor(url)
    assert accounts.operator in person.get(path).text
    assert set_password(person, path).status_code == 302

    assert not old_session.signed_in()
    assert Visitor(url).sign_in(accounts.operator, PASSWORD).status_code == 401
    assert signed_in(url, accounts.operator, NEW_PASSWORD).signed_in()
    assert set_password(Visitor(url), path, "yet another password").status_code == 410
    assert set_password(Visitor(url), earlier, "yet another password").status_code == 410
    assert "Ask for a new link" in Visitor(url).get(path).text


def test_a_reset_link_expires_after_an_hour(app, url, accounts, mail_server):
    Visitor(url).post("/password/forgot", {"email": accounts.accountant})
    path = mailed_link(app, mail_server, 1)
    age_links(app, timedelta(minutes=59))
    assert Visitor(url).get(path).status_code == 200
    age_links(app, timedelta(minutes=2))
    assert set_password(Visitor(url), path).status_code == 410
    assert signed_in(url, accounts.accountant).signed_in()  # the old password still works


def test_reset_requests_are_limited_per_address(app, url, accounts, mail_server):
    visitor = Visitor(url)
    statuses = [
        visitor.post("/password/forgot", {"email": "nobody@acme.test"}).status_code
        for _ in range(4)
    ]
    assert statuses == [302, 302, 302, 429]  # PORTAL_RESET_LINK_LIMIT_PER_ACCOUNT: 3 per hour
    assert (
        "Too many requests" in visitor.post("/password/forgot", {"email": "nobody@acme.test"}).text
    )


def test_forms_without_their_csrf_token_are_refused(url, accounts):
    visitor = Visitor(url)
    refused = visitor.http.post(f"{url}/password/forgot", data={"email": accounts.owner})
    assert refused.status_code == 400
    owner = signed_in(url, accounts.owner)
    refused = owner.http.post(f"{url}/account/email", data={"mail-event_types": []})
    assert refused.status_code == 400
    refused = owner.http.post(f"{url}/settings/users/invite", data={"invite-email": "x@acme.test"})
    assert refused.status_code == 400
