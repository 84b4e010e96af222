"""Bad bytes and oversized bodies: refused in words before anything is read, sent or stored.

A NUL byte was a 500 on PostgreSQL (unauthenticated, on `POST /login`), and in an order number it
created the operation upstream before the portal's own insert failed. The 500 page itself
crashed on the broken transaction and lost the security headers. A 300 MB body was read before
the CSRF refusal.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from portal.web.access import public
from tests.support.attack import header_problems
from tests.support.forms import PASSWORD, csrf_token, signed_in

CONTROL_CHARACTERS = ["\x00", "\x01", "\x1b", "\x7f", "\x85"]


pytestmark = pytest.mark.usefixtures("each_database")  # SQLite, and PostgreSQL where NUL broke it


def audit_count(app) -> int:
    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        return db.session.scalar(sa.select(sa.func.count()).select_from(AuditEvent))


@pytest.mark.parametrize("character", CONTROL_CHARACTERS)
def test_a_control_character_at_sign_in_is_refused_in_words(app, client, accounts, character):
    before = audit_count(app)
    response = client.post(
        "/login",
        data={
            "email": f"owner{character}@acme.test",
            "password": PASSWORD,
            "csrf_token": csrf_token(client),
        },
    )
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert "The field “Email” holds a control character" in page
    assert "Nothing was sent or saved" in page
    assert audit_count(app) == before


def test_a_control_character_in_a_query_or_an_address_is_refused(app, accounts):
    owner = signed_in(app, accounts.owner)
    listed = owner.get("/audit", query_string={"action": "sign\x00in"})
    assert listed.status_code == 422
    assert "The field “Action” holds a control character" in listed.get_data(as_text=True)
    addressed = owner.get("/withdrawals/abc%00def")
    assert addressed.status_code == 422
    assert "The address of the page holds a control character" in addressed.get_data(as_text=True)


def test_tab_and_line_breaks_are_text_not_refused(app, client, accounts):
    response = client.post(
        "/login",
        data={"email": "owner@acme.test\t", "password": "x\r\n", "csrf_token": csrf_token(client)},
    )
    assert response.status_code == 401  # a wrong password, not a refused character


def test_the_500_page_survives_a_broken_transaction_and_keeps_its_headers(app, accounts):
    """A failed flush leaves the session's transaction broken; the page must still be made."""
    from portal.extensions import db
    from portal.identity.models import User

    def break_the_transaction():
        merchant_id = db.session.scalar(sa.select(User.merchant_id).limit(1))
        for _ in range(2):  # the same email twice: the flush fails
            db.session.add(User(merchant_id=merchant_id, email="twin@acme.test", role="owner"))
        db.session.add(User(merchant_id=merchant_id, email="twin@acme.test", role="owner"))
        db.session.flush()

    app.add_url_rule("/broken", view_func=public(break_the_transaction))
    app.config["PROPAGATE_EXCEPTIONS"] = False
    owner = signed_in(app, accounts.owner)
    response = owner.get("/broken")
    assert response.status_code == 500
    assert "Something went wrong" in response.get_data(as_text=True)
    assert header_problems(response) == []
    assert owner.get("/").status_code == 200  # the next request is served as usual


def test_the_500_page_is_made_without_the_database_and_keeps_its_headers(app, accounts):
    """The database went away under a signed-in user: the page cannot ask who is signed in."""
    from portal.extensions import db

    owner = signed_in(app, accounts.owner)
    app.config["PROPAGATE_EXCEPTIONS"] = False
    with app.app_context():
        db.session.execute(sa.text("DROP TABLE user_sessions"))
        db.session.commit()
    response = owner.get("/account")
    assert response.status_code == 500
    assert "Something went wrong" in response.get_data(as_text=True)
    assert header_problems(response) == []
