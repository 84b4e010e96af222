"""The address book against a real sandbox: money goes only to an address of the book whose
cooling-off ended (or that another owner approved); adding and removing are audited and mailed
to every owner."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.support import factories
from tests.support.forms import signed_in
from tests.support.money import post, text
from tests.support.portal_app import connected_portal, email
from tests.support.two_factor import signed_in_with_two_factor

NEW_ADDRESS = "0x" + "5a" * 20
SECOND_OWNER = "second-owner@acme.test"


@pytest.fixture
def portal(tmp_path, sandbox, mail_server):
    config = {"ADDRESS_COOLING_OFF_HOURS": 24, "SMTP_URL": mail_server.url}
    with connected_portal(tmp_path, sandbox, **config) as app:
        yield app


@pytest.fixture
def owner(portal):
    return signed_in(portal, email("owner"))


def added(client, address: str = NEW_ADDRESS):
    return post(client, "/address-book", {"currency": "ETH", "address": address, "name": "Cold"})


def withdraw(client, address: str = NEW_ADDRESS):
    return post(client, "/withdrawals/new", {"amount": "0.01", "wallet": "ETH", "address": address})


def test_a_new_address_is_refused_before_its_cooling_off_ends_and_accepted_after(
    portal, owner, sandbox, monkeypatch
):
    from portal.database import utcnow
    from portal.money.rules import address_book

    sent_before = sandbox.requests_received("POST", "/withdraw")
    unknown = withdraw(owner)
    assert unknown.status_code == 422
    assert "This ETH address is not in the address book" in text(unknown)

    assert added(owner).status_code == 302
    cooling = withdraw(owner)
    assert cooling.status_code == 422
    assert "This address (Cold) is new in the address book: money may go to it from" in text(
        cooling
    )
    assert sandbox.requests_received("POST", "/withdraw") == sent_before

    later = utcnow() + timedelta(hours=24, minutes=1)
    monkeypatch.setattr(address_book, "utcnow", lambda: later)
    review = withdraw(owner)
    assert review.status_code == 302
    assert post(owner, review.location + "/confirm").status_code == 302
    assert sandbox.operations_to(NEW_ADDRESS) == 1


def test_another_owner_approves_a_new_address_early_never_the_one_who_added_it(
    portal, owner, monkeypatch
):
    factories.user(portal, SECOND_OWNER, "owner")
    second = signed_in_with_two_factor(portal, SECOND_OWNER, monkeypatch)
    assert added(owner).status_code == 302
    entry = _entry_id(portal)

    own = post(owner, f"/address-book/{entry}/approve")
    assert own.status_code == 403 and "an owner other than you must approve it" in text(own)
    assert withdraw(owner).status_code == 422

    second.clock.advance()
    code = second.clock.code(second.secret)
    assert post(second.client, f"/address-book/{entry}/approve", {"code": code}).status_code == 302
    assert withdraw(owner).status_code == 302


def _entry_id(app) -> int:
    from portal.extensions import db
    from portal.money.models import BookAddress

    with app.app_context():
        return db.session.scalar(
            db.select(BookAddress.id).where(BookAddress.address == NEW_ADDRESS)
        )


def test_adding_and_removing_is_audited_and_mailed_to_every_owner(portal, owner, mail_server):
    from portal.extensions import db
    from portal.identity.models import AuditEvent
    from portal.live.rules import mail

    factories.user(portal, SECOND_OWNER, "owner")
    assert added(owner).status_code == 302
    assert post(owner, f"/address-book/{_entry_id(portal)}/remove").status_code == 302
    assert withdraw(owner).status_code == 422, "a removed address takes no money"
    with portal.app_context():
        mail.send_due()
        actions = db.session.scalars(
            db.select(AuditEvent.action).where(AuditEvent.action.like("address_book.%"))
        ).all()
    assert actions[-2:] == ["address_book.add", "address_book.remove"]
    about = [
        (m["To"], m["Subject"]) for m in mail_server.messages if NEW_ADDRESS in m.get_content()
    ]
    assert sorted(about) == sorted(
        (to, f"An ETH address was {what} the address book")
        for to in (email("owner"), SECOND_OWNER)
        for what in ("added to", "removed from")
    )


def test_only_owners_change_the_book_and_operators_read_it(portal):
    operator = signed_in(portal, email("operator"))
    assert operator.get("/address-book").status_code == 200
    assert added(operator).status_code == 403
    assert signed_in(portal, email("accountant")).get("/address-book").status_code == 403
